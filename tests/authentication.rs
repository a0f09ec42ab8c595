//! Roles, passwords, the access rule file and TLS, through real clients: tokio-postgres (SCRAM
//! and clear-text passwords), psql, psycopg 3 and pgjdbc over TLS with `verify-full`.
//! Every expected error is PostgreSQL 15's, SQLSTATE and text.

mod support;

use std::net::{IpAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::client_programs::{assert_success, python, setup};
use support::query::rows;
use support::TestServer;
use tokio_postgres::NoTls;

/// Connects to `server` at `host` as `user` with `password`, or returns the startup
/// failure as `SQLSTATE: message`.
async fn login(
    server: &TestServer,
    host: &str,
    user: &str,
    password: Option<&str>,
    database: &str,
) -> Result<tokio_postgres::Client, String> {
    let mut config = tokio_postgres::Config::new();
    config
        .host(host)
        .port(server.port())
        .user(user)
        .dbname(database);
    if let Some(password) = password {
        config.password(password);
    }
    match config.connect(NoTls).await {
        Ok((client, connection)) => {
            tokio::spawn(connection);
            Ok(client)
        }
        Err(error) => Err(match error.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => format!("no server error: {error}"),
        }),
    }
}

/// The startup failure of a login that must fail.
async fn refused(
    server: &TestServer,
    user: &str,
    password: Option<&str>,
    database: &str,
) -> String {
    match login(server, "127.0.0.1", user, password, database).await {
        Ok(_) => panic!("{user} logged in to {database}"),
        Err(error) => error,
    }
}

/// The SQLSTATE `sql` fails with.
async fn error_code(client: &tokio_postgres::Client, sql: &str) -> String {
    let full = support::query::error_code(client, sql).await;
    full.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Writes `rules` as an access rule file in `dir`.
fn rule_file(dir: &Path, rules: &str) -> PathBuf {
    let path = dir.join("fluxion_hba.conf");
    std::fs::write(&path, rules).expect("the rule file is written");
    path
}

#[tokio::test]
async fn passwords_and_access_rules_admit_and_refuse_clients_as_postgres_does() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rule_file(
        dir.path(),
        "# who must give a password\n\
         host all alice,expired,nopassword 127.0.0.1/32 scram-sha-256\n\
         host all carol 127.0.0.1/32 password\n\
         host all dave 127.0.0.1/32 reject\n\
         host fluxion all 127.0.0.1/32 trust\n\
         host all fluxion 127.0.0.1/32 trust\n",
    );
    let rules = rules.display().to_string();
    let data = dir.path().join("data");
    let mut server = TestServer::start_with_args(&data, &["--hba-file", &rules]);
    let admin = server.connect().await;
    admin
        .batch_execute(
            "CREATE ROLE alice LOGIN PASSWORD 'wonder land';
             CREATE USER carol PASSWORD 'carols';
             CREATE USER dave;
             CREATE USER nopassword;
             CREATE USER expired PASSWORD 'old' VALID UNTIL '2001-01-01 00:00:00+00';
             CREATE ROLE nologin PASSWORD 'x';
             CREATE USER limited CONNECTION LIMIT 1;",
        )
        .await
        .expect("the roles are created");

    let alice = login(
        &server,
        "127.0.0.1",
        "alice",
        Some("wonder land"),
        "fluxion",
    )
    .await
    .expect("alice logs in with SCRAM-SHA-256");
    assert_eq!(
        rows(&alice, "SELECT current_user, session_user").await,
        ["alice|alice"]
    );
    assert_eq!(
        refused(&server, "alice", Some("wonderland"), "fluxion").await,
        "28P01: password authentication failed for user \"alice\""
    );
    assert_eq!(
        refused(&server, "nopassword", Some("anything"), "fluxion").await,
        "28P01: password authentication failed for user \"nopassword\""
    );
    assert_eq!(
        refused(&server, "expired", Some("old"), "fluxion").await,
        "28P01: password authentication failed for user \"expired\""
    );
    let carol = login(&server, "127.0.0.1", "carol", Some("carols"), "fluxion")
        .await
        .expect("carol logs in with a clear-text password");
    assert_eq!(rows(&carol, "SELECT current_user").await, ["carol"]);
    assert_eq!(
        refused(&server, "carol", Some("carol"), "fluxion").await,
        "28P01: password authentication failed for user \"carol\""
    );
    assert_eq!(
        refused(&server, "dave", None, "fluxion").await,
        "28000: pg_hba.conf rejects connection for host \"127.0.0.1\", user \"dave\", database \"fluxion\", no encryption"
    );
    assert_eq!(
        refused(&server, "nobody", None, "fluxion").await,
        "28000: role \"nobody\" does not exist"
    );
    assert_eq!(
        refused(&server, "nologin", None, "fluxion").await,
        "28000: role \"nologin\" is not permitted to log in"
    );
    assert_eq!(
        refused(&server, "fluxion", None, "elsewhere").await,
        "3D000: database \"elsewhere\" does not exist"
    );
    assert_eq!(
        refused(&server, "limited", None, "other").await,
        "28000: no pg_hba.conf entry for host \"127.0.0.1\", user \"limited\", database \"other\", no encryption"
    );
    let first = login(&server, "127.0.0.1", "limited", None, "fluxion")
        .await
        .expect("the first session of a role limited to one");
    assert_eq!(
        refused(&server, "limited", None, "fluxion").await,
        "53300: too many connections for role \"limited\""
    );
    drop(first);

    // A password changed, a role renamed: both hold across a restart.
    admin
        .batch_execute("ALTER ROLE alice PASSWORD 'new'; ALTER ROLE carol RENAME TO caroline")
        .await
        .unwrap();
    drop((admin, alice, carol));
    server.kill();
    let server = TestServer::start_with_args(&data, &["--hba-file", &rules]);
    login(&server, "127.0.0.1", "alice", Some("new"), "fluxion")
        .await
        .expect("alice logs in with her new password after a restart");
    assert_eq!(
        refused(&server, "alice", Some("wonder land"), "fluxion").await,
        "28P01: password authentication failed for user \"alice\""
    );
    let admin = server.connect().await;
    assert_eq!(
        rows(
            &admin,
            "SELECT rolname, rolcanlogin, rolconnlimit, rolpassword IS NOT NULL \
             FROM pg_authid ORDER BY rolname"
        )
        .await,
        [
            "alice|t|-1|t",
            "caroline|t|-1|t",
            "dave|t|-1|f",
            "expired|t|-1|t",
            "fluxion|t|-1|f",
            "limited|t|1|f",
            "nologin|f|-1|t",
            "nopassword|t|-1|f",
        ]
    );
}

#[tokio::test]
async fn sighup_reloads_the_rule_file_and_a_broken_one_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rule_file(
        dir.path(),
        "host all fluxion 127.0.0.1/32 trust\nhost all alice 127.0.0.1/32 scram-sha-256\n",
    );
    let server = TestServer::start_with_args(
        &dir.path().join("data"),
        &["--hba-file", &rules.display().to_string()],
    );
    let admin = server.connect().await;
    admin
        .batch_execute("CREATE USER alice PASSWORD 'pw'")
        .await
        .unwrap();
    login(&server, "127.0.0.1", "alice", Some("pw"), "fluxion")
        .await
        .expect("alice logs in by the first rules");
    let rejected = "28000: pg_hba.conf rejects connection for host \"127.0.0.1\", user \"alice\", database \"fluxion\", no encryption";
    rule_file(
        dir.path(),
        "host all fluxion 127.0.0.1/32 trust\nhost all alice 127.0.0.1/32 reject\n",
    );
    server.hang_up();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while login(&server, "127.0.0.1", "alice", Some("pw"), "fluxion")
        .await
        .is_ok()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the rules were not reloaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        refused(&server, "alice", Some("pw"), "fluxion").await,
        rejected
    );
    rule_file(
        dir.path(),
        "host all all 127.0.0.1/32 trust\nhost all all nowhere ident\n",
    );
    server.hang_up();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.log_tail(20).contains("was not reloaded") {
        assert!(
            std::time::Instant::now() < deadline,
            "no word of the broken file in the log"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        refused(&server, "alice", Some("pw"), "fluxion").await,
        rejected
    );
    server.connect().await;
}

#[tokio::test]
async fn role_statements_are_checked_as_postgres_checks_them() {
    let server = TestServer::start();
    let admin = server.connect().await;
    admin
        .batch_execute(
            "CREATE USER alice PASSWORD 'a';
             CREATE USER manager CREATEROLE;
             CREATE ROLE boss SUPERUSER;",
        )
        .await
        .unwrap();
    assert_eq!(error_code(&admin, "CREATE ROLE alice").await, "42710");
    assert_eq!(error_code(&admin, "CREATE ROLE pg_monitor2").await, "42939");
    assert_eq!(error_code(&admin, "DROP ROLE nobody").await, "42704");
    assert_eq!(error_code(&admin, "ALTER ROLE nobody LOGIN").await, "42704");
    assert_eq!(error_code(&admin, "DROP ROLE fluxion").await, "55006");
    assert_eq!(
        error_code(&admin, "ALTER ROLE alice CONNECTION LIMIT -2").await,
        "22023"
    );
    assert_eq!(
        error_code(&admin, "ALTER ROLE alice LOGIN NOLOGIN").await,
        "42601"
    );
    assert_eq!(
        error_code(&admin, "BEGIN; CREATE ROLE inside").await,
        "25001"
    );
    admin.batch_execute("ROLLBACK").await.unwrap();

    let alice = login(&server, "127.0.0.1", "alice", None, "fluxion")
        .await
        .expect("loopback is trusted by default");
    assert_eq!(error_code(&alice, "CREATE ROLE x").await, "42501");
    assert_eq!(
        error_code(&alice, "ALTER ROLE manager NOLOGIN").await,
        "42501"
    );
    assert_eq!(error_code(&alice, "DROP ROLE manager").await, "42501");
    alice
        .batch_execute("ALTER ROLE alice PASSWORD 'mine'")
        .await
        .expect("a role changes its own password");
    assert_eq!(
        error_code(&alice, "ALTER ROLE alice CREATEDB").await,
        "42501"
    );
    assert_eq!(rows(&alice, "SHOW is_superuser").await, ["off"]);
    assert_eq!(rows(&alice, "SHOW ssl").await, ["off"]);

    let manager = login(&server, "127.0.0.1", "manager", None, "fluxion")
        .await
        .unwrap();
    manager
        .batch_execute("CREATE ROLE helper LOGIN; ALTER ROLE helper CREATEDB; DROP ROLE helper")
        .await
        .expect("CREATEROLE manages roles that are not superusers");
    assert_eq!(
        error_code(&manager, "CREATE ROLE s SUPERUSER").await,
        "42501"
    );
    assert_eq!(error_code(&manager, "DROP ROLE boss").await, "42501");
    assert_eq!(
        error_code(&manager, "ALTER ROLE boss NOLOGIN").await,
        "42501"
    );
    assert_eq!(error_code(&manager, "DROP ROLE manager").await, "55006");
    assert_eq!(error_code(&manager, "DROP ROLE fluxion").await, "42501");

    let boss = login(&server, "127.0.0.1", "boss", None, "fluxion").await;
    assert_eq!(
        boss.err().as_deref(),
        Some("28000: role \"boss\" is not permitted to log in")
    );
    admin.batch_execute("ALTER ROLE boss LOGIN").await.unwrap();
    let boss = login(&server, "127.0.0.1", "boss", None, "fluxion")
        .await
        .unwrap();
    assert_eq!(rows(&boss, "SHOW is_superuser").await, ["on"]);
    assert_eq!(error_code(&boss, "DROP ROLE fluxion").await, "2BP01");
    assert_eq!(
        error_code(&admin, "ALTER ROLE fluxion NOSUPERUSER").await,
        "42501"
    );
    boss.batch_execute("DROP ROLE IF EXISTS alice, nobody")
        .await
        .expect("DROP ROLE IF EXISTS skips a missing role");
    assert_eq!(
        rows(
            &admin,
            "SELECT r.rolname, r.rolsuper, r.rolcreaterole, u.usename IS NOT NULL \
             FROM pg_roles r LEFT JOIN pg_user u ON u.usesysid = r.oid ORDER BY 1"
        )
        .await,
        ["boss|t|f|t", "fluxion|t|t|t", "manager|f|t|t",]
    );
    assert_eq!(
        rows(
            &admin,
            "SELECT pg_get_userbyid(oid) FROM pg_roles WHERE rolname = 'manager'"
        )
        .await,
        ["manager"]
    );
}

/// A verifier PostgreSQL 15 made for the password `secret` (`CREATE ROLE r PASSWORD
/// 'secret'`, then `pg_authid.rolpassword`), as psql's `\password` sends one.
const POSTGRES_VERIFIER: &str = "SCRAM-SHA-256$4096:7Jw86wivp7M/tdre0zFMIw==$2p/04Ei57FJkfRlZHm5nZEkCKC9A1ThwePddTjILjdM=:UOTPhN8SpJAiBx6HEPYVNo/EK60Zt11SJJKZdczryFc=";

#[tokio::test]
async fn a_verifier_made_by_postgres_is_stored_as_it_is_and_logs_in() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rule_file(
        dir.path(),
        "host all fluxion 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
    );
    let server = TestServer::start_with_args(
        &dir.path().join("data"),
        &["--hba-file", &rules.display().to_string()],
    );
    let admin = server.connect().await;
    admin
        .batch_execute(&format!(
            "CREATE USER imported PASSWORD '{POSTGRES_VERIFIER}'"
        ))
        .await
        .unwrap();
    assert_eq!(
        rows(
            &admin,
            "SELECT rolpassword FROM pg_authid WHERE rolname = 'imported'"
        )
        .await,
        [POSTGRES_VERIFIER]
    );
    login(&server, "127.0.0.1", "imported", Some("secret"), "fluxion")
        .await
        .expect("the password PostgreSQL hashed logs in");
    assert_eq!(
        error_code(
            &admin,
            "ALTER ROLE imported PASSWORD 'md5d6a35858d61d8f3e1f6ae1e6c5e0e0d4'"
        )
        .await,
        "0A000"
    );
}

/// An address of this machine other than loopback.
fn non_loopback_address() -> IpAddr {
    // Connecting a UDP socket sends nothing; it picks the address of the route out.
    let socket = UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
    socket
        .connect("192.0.2.1:9")
        .expect("this machine has a route off loopback");
    let address = socket.local_addr().expect("its address").ip();
    assert!(!address.is_loopback(), "{address} is loopback");
    address
}

#[tokio::test]
async fn without_a_rule_file_loopback_is_trusted_and_every_other_address_needs_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_on_every_interface(dir.path(), &[]);
    let outside = non_loopback_address().to_string();
    let failure = match login(&server, &outside, "fluxion", None, "fluxion").await {
        Ok(_) => panic!("fluxion logged in from {outside} without a password"),
        Err(error) => error,
    };
    assert!(
        failure.starts_with("no server error: invalid configuration"),
        "the server asked for a password, which the client lacked: {failure}"
    );
    let failure = match login(&server, &outside, "fluxion", Some("guess"), "fluxion").await {
        Ok(_) => panic!("fluxion logged in from {outside} with a guessed password"),
        Err(error) => error,
    };
    assert_eq!(
        failure,
        "28P01: password authentication failed for user \"fluxion\""
    );
    let local = login(&server, "127.0.0.1", "fluxion", None, "fluxion")
        .await
        .expect("loopback is trusted");
    local
        .batch_execute("ALTER ROLE fluxion PASSWORD 'remote secret'")
        .await
        .unwrap();
    let remote = login(
        &server,
        &outside,
        "fluxion",
        Some("remote secret"),
        "fluxion",
    )
    .await
    .expect("with its password, fluxion logs in from another address");
    assert_eq!(
        rows(
            &remote,
            "SELECT count(*) FROM pg_stat_activity WHERE client_addr <> '127.0.0.1'"
        )
        .await,
        ["1"]
    );
}

/// A certificate authority and a server certificate it signed for `localhost` and
/// 127.0.0.1, written as PEM files in `dir`: (CA certificate, server certificate, key).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Fluxion test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut server_params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    server_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let server = server_params.signed_by(&server_key, &issuer).unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, server.pem()).unwrap();
    std::fs::write(&paths.2, server_key.serialize_pem()).unwrap();
    (paths.0, paths.1, paths.2)
}

/// Runs `program` against `server` as `alice` over TLS, with libpq's environment.
fn run_tls_client(server: &TestServer, ca: &Path, program: &mut Command) -> Output {
    program
        .env("PGHOST", "localhost")
        .env("PGPORT", server.port().to_string())
        .env("PGUSER", "alice")
        .env("PGPASSWORD", "tls only")
        .env("PGDATABASE", "fluxion")
        .env("PGSSLROOTCERT", ca)
        .output()
        .expect("the client program runs")
}

/// A server with TLS whose rules let `alice` in only over TLS, with her password.
async fn tls_server(dir: &Path) -> (TestServer, PathBuf) {
    let (ca, certificate, key) = certificates(dir);
    let rules = rule_file(
        dir,
        "hostssl all alice 127.0.0.1/32 scram-sha-256\n\
         hostssl all alice ::1/128 scram-sha-256\n\
         host all fluxion 127.0.0.1/32 trust\n",
    );
    let server = TestServer::start_with_args(
        &dir.join("data"),
        &[
            "--hba-file",
            &rules.display().to_string(),
            "--tls-cert",
            &certificate.display().to_string(),
            "--tls-key",
            &key.display().to_string(),
        ],
    );
    server
        .connect()
        .await
        .batch_execute("CREATE USER alice PASSWORD 'tls only'")
        .await
        .unwrap();
    (server, ca)
}

#[tokio::test]
async fn psql_connects_over_tls_with_verify_full_and_channel_binding() {
    let dir = tempfile::tempdir().unwrap();
    let (server, ca) = tls_server(dir.path()).await;
    let psql = |connection: &str| {
        run_tls_client(
            &server,
            &ca,
            Command::new("psql")
                .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
                .arg(connection)
                .args([
                    "-c",
                    "SELECT current_user",
                    "-c",
                    "SHOW ssl",
                    "-c",
                    "\\conninfo",
                ]),
        )
    };
    let output = psql("sslmode=verify-full channel_binding=require");
    assert_success("psql sslmode=verify-full", &output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("alice\non\n"), "{stdout}");
    assert!(
        stdout.contains("SSL connection (protocol: TLSv1.3"),
        "{stdout}"
    );
    let output = psql("sslmode=disable");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"alice\", database \"fluxion\", no encryption"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn psycopg_connects_over_tls_with_verify_full() {
    let python = python("sqla2");
    let dir = tempfile::tempdir().unwrap();
    let (server, ca) = tls_server(dir.path()).await;
    let output = run_tls_client(
        &server,
        &ca,
        Command::new(python).arg("tests/clients/tls_check.py"),
    );
    assert_success("tls_check.py", &output);
}

#[tokio::test]
async fn pgjdbc_connects_over_tls_with_verify_full() {
    setup("setup_java.sh", &[]);
    let jar = "/usr/share/java/postgresql.jar";
    let classes = tempfile::tempdir().unwrap();
    let compiled = Command::new("javac")
        .arg("-cp")
        .arg(jar)
        .arg("-d")
        .arg(classes.path())
        .arg("tests/clients/jdbc/JdbcTls.java")
        .output()
        .expect("javac runs");
    assert_success("javac JdbcTls.java", &compiled);
    let dir = tempfile::tempdir().unwrap();
    let (server, ca) = tls_server(dir.path()).await;
    let output = run_tls_client(
        &server,
        &ca,
        Command::new("java")
            .arg("-cp")
            .arg(format!("{jar}:{}", classes.path().display()))
            .arg("JdbcTls"),
    );
    assert_success("JdbcTls", &output);
}
