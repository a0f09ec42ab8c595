//! Owners and privileges through real clients logged in as different roles: every read,
//! write and definition is checked (42501), GRANT and REVOKE behave as in PostgreSQL 15
//! (warnings, grant options, CASCADE), a read-only role for a BI tool sees only what it was
//! granted, members of a role share its privileges, and privileges survive a restart. The expected messages and codes are those a
//! PostgreSQL 15 server gives for the same statements.

mod support;

use support::query::rows;
use support::TestServer;
use tokio_postgres::Client;

/// The SQLSTATE and message of `sql`'s error, or "ok".
async fn outcome(client: &Client, sql: &str) -> String {
    match client.batch_execute(sql).await {
        Ok(()) => "ok".into(),
        Err(e) => match e.as_db_error() {
            Some(db) => format!("{} {}", db.code().code(), db.message()),
            None => panic!("{sql}: the connection broke: {e}"),
        },
    }
}

/// What `sql` raised as notices and warnings (`WARNING 01007 …`).
async fn notices(server: &TestServer, user: &str, sql: &str) -> Vec<String> {
    let (client, mut connection) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user={user} dbname=fluxion",
            server.port()
        ),
        tokio_postgres::NoTls,
    )
    .await
    .expect("connect");
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        use futures::StreamExt;
        while let Some(Ok(tokio_postgres::AsyncMessage::Notice(notice))) = messages.next().await {
            let _ = sender.send(format!(
                "{} {} {}",
                notice.severity(),
                notice.code().code(),
                notice.message()
            ));
        }
    });
    client.batch_execute(sql).await.expect(sql);
    drop(client);
    let mut found = Vec::new();
    while let Some(notice) = receiver.recv().await {
        found.push(notice);
    }
    found
}

async fn setup(server: &TestServer) -> Client {
    let admin = server.connect().await;
    admin
        .batch_execute(
            "CREATE ROLE bi LOGIN;
             CREATE ROLE alice LOGIN;
             CREATE TABLE t (id int PRIMARY KEY, v text);
             INSERT INTO t VALUES (1, 'a');
             CREATE TABLE secret (x int);
             CREATE VIEW tv AS SELECT id FROM t;
             GRANT SELECT ON tv TO bi;
             GRANT USAGE, CREATE ON SCHEMA public TO alice;
             GRANT SELECT, INSERT ON t TO alice WITH GRANT OPTION",
        )
        .await
        .expect("setup");
    admin
}

#[tokio::test]
async fn a_read_only_role_sees_only_what_it_was_granted() {
    let server = TestServer::start();
    let admin = setup(&server).await;
    let bi = server.connect_as("bi").await;
    assert_eq!(rows(&bi, "SELECT id FROM tv").await, ["1"]);
    for (sql, expected) in [
        ("SELECT * FROM t", "42501 permission denied for table t"),
        (
            "INSERT INTO t VALUES (2, 'b')",
            "42501 permission denied for table t",
        ),
        (
            "SELECT * FROM secret",
            "42501 permission denied for table secret",
        ),
        (
            "CREATE TABLE mine (a int)",
            "42501 permission denied for schema public",
        ),
        (
            "SELECT * FROM tv JOIN secret ON true",
            "42501 permission denied for table secret",
        ),
        ("DROP VIEW tv", "42501 must be owner of view tv"),
        (
            "SELECT * FROM pg_authid",
            "42501 permission denied for table pg_authid",
        ),
        (
            "CREATE SCHEMA own",
            "42501 permission denied for database fluxion",
        ),
    ] {
        assert_eq!(outcome(&bi, sql).await, expected, "{sql}");
    }
    assert_eq!(
        rows(
            &bi,
            "SELECT has_table_privilege('t', 'select')::text || ' ' || \
                    has_table_privilege('tv', 'SELECT')::text || ' ' || \
                    has_table_privilege('alice', 't', 'INSERT WITH GRANT OPTION')::text"
        )
        .await,
        ["false true true"]
    );
    assert_eq!(
        rows(
            &bi,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' \
             ORDER BY 1"
        )
        .await,
        ["tv"]
    );
    assert_eq!(
        rows(
            &admin,
            "SELECT relname || ' ' || coalesce(relacl::text, 'NULL') FROM pg_class \
             WHERE relname IN ('t', 'tv', 'secret') ORDER BY relname"
        )
        .await,
        [
            "secret NULL",
            "t {fluxion=arwdDxt/fluxion,alice=a*r*/fluxion}",
            "tv {fluxion=arwdDxt/fluxion,bi=r/fluxion}"
        ]
    );
}

#[tokio::test]
async fn grants_and_revokes_follow_postgres() {
    let server = TestServer::start();
    let admin = setup(&server).await;
    let alice = server.connect_as("alice").await;
    for (sql, expected) in [
        ("INSERT INTO t VALUES (2, 'b')", "ok"),
        (
            "UPDATE t SET v = 'z'",
            "42501 permission denied for table t",
        ),
        ("CREATE TABLE mine (a int)", "ok"),
        ("GRANT SELECT ON t TO bi", "ok"),
        ("GRANT SELECT ON mine TO bi", "ok"),
        ("DROP TABLE t", "42501 must be owner of table t"),
        (
            "CREATE MATERIALIZED VIEW am AS SELECT count(*) AS n FROM t",
            "ok",
        ),
        (
            "CREATE MATERIALIZED VIEW bad AS SELECT * FROM secret",
            "42501 permission denied for table secret",
        ),
        ("CREATE VIEW av AS SELECT * FROM secret", "ok"),
        (
            "SELECT * FROM av",
            "42501 permission denied for table secret",
        ),
        (
            "GRANT USAGE ON t TO bi",
            "0LP01 invalid privilege type USAGE for table",
        ),
        (
            "GRANT SELECT ON t TO PUBLIC WITH GRANT OPTION",
            "0LP01 grant options can only be granted to roles",
        ),
        (
            "ALTER TABLE mine OWNER TO bi",
            "42501 must be member of role \"bi\"",
        ),
        (
            "GRANT SELECT ON SCHEMA public TO bi",
            "0LP01 invalid privilege type SELECT for schema",
        ),
        (
            "GRANT SELECT ON nowhere TO bi",
            "42P01 relation \"nowhere\" does not exist",
        ),
        (
            "GRANT SELECT ON t TO nobody",
            "42704 role \"nobody\" does not exist",
        ),
    ] {
        assert_eq!(outcome(&alice, sql).await, expected, "{sql}");
    }
    assert_eq!(rows(&alice, "SELECT n FROM am").await, ["2"]);
    assert_eq!(
        notices(&server, "alice", "GRANT UPDATE ON t TO bi").await,
        ["WARNING 01007 no privileges were granted for \"t\""]
    );
    let bi = server.connect_as("bi").await;
    assert_eq!(rows(&bi, "SELECT count(*) FROM t").await, ["2"]);
    assert_eq!(
        outcome(&admin, "DROP ROLE alice").await,
        "2BP01 role \"alice\" cannot be dropped because some objects depend on it"
    );
    assert_eq!(
        outcome(&admin, "REVOKE SELECT ON t FROM alice").await,
        "2BP01 dependent privileges exist"
    );
    assert_eq!(
        outcome(&admin, "REVOKE SELECT ON t FROM alice CASCADE").await,
        "ok"
    );
    assert_eq!(
        outcome(&bi, "SELECT count(*) FROM t").await,
        "42501 permission denied for table t"
    );
    assert_eq!(
        rows(
            &admin,
            "SELECT relacl::text FROM pg_class WHERE relname = 't'"
        )
        .await,
        ["{fluxion=arwdDxt/fluxion,alice=a*/fluxion}"]
    );
}

#[tokio::test]
async fn owners_change_and_privileges_outlive_a_restart_and_a_rollback() {
    let data = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(data.path());
    let admin = setup(&server).await;
    admin
        .batch_execute(
            "CREATE TABLE handed (a int);
             ALTER TABLE handed OWNER TO alice;
             BEGIN; GRANT SELECT ON secret TO bi; GRANT CREATE ON SCHEMA public TO bi; ROLLBACK;
             BEGIN; GRANT INSERT ON secret TO bi; COMMIT;",
        )
        .await
        .expect("owner change and grants");
    let alice = server.connect_as("alice").await;
    assert_eq!(outcome(&alice, "INSERT INTO handed VALUES (1)").await, "ok");
    assert_eq!(
        outcome(&alice, "ALTER TABLE handed RENAME TO renamed").await,
        "ok"
    );
    drop(alice);
    drop(admin);
    drop(server);

    let server = TestServer::start_in(data.path());
    let admin = server.connect().await;
    assert_eq!(
        rows(
            &admin,
            "SELECT c.relname || ' ' || r.rolname FROM pg_class c JOIN pg_roles r \
             ON r.oid = c.relowner WHERE c.relname IN ('renamed', 't') ORDER BY 1"
        )
        .await,
        ["renamed alice", "t fluxion"]
    );
    assert_eq!(
        rows(
            &admin,
            "SELECT relacl::text FROM pg_class WHERE relname = 'secret'"
        )
        .await,
        ["{fluxion=arwdDxt/fluxion,bi=a/fluxion}"]
    );
    let bi = server.connect_as("bi").await;
    assert_eq!(
        outcome(&bi, "SELECT * FROM secret").await,
        "42501 permission denied for table secret"
    );
    assert_eq!(outcome(&bi, "INSERT INTO secret VALUES (1)").await, "ok");
    assert_eq!(
        outcome(&bi, "CREATE TABLE mine (a int)").await,
        "42501 permission denied for schema public"
    );
    assert_eq!(
        outcome(
            &bi,
            "CREATE SOURCE f WITH (connector = 'file', path = '/etc/passwd')"
        )
        .await,
        "42501 permission denied to use the file connector: only superusers may read or \
         write files on the server"
    );
}

#[tokio::test]
async fn a_role_signals_only_its_own_backends() {
    let server = TestServer::start();
    let _admin = setup(&server).await;
    let alice = server.connect_as("alice").await;
    let _bi = server.connect_as("bi").await;
    let _other_alice = server.connect_as("alice").await;
    let pid_of = |user: &'static str| {
        format!(
            "(SELECT max(pid) FROM pg_stat_activity WHERE usename = '{user}' \
             AND pid <> pg_backend_pid())"
        )
    };
    assert_eq!(
        outcome(
            &alice,
            &format!("SELECT pg_terminate_backend({})", pid_of("bi"))
        )
        .await,
        "42501 must be a member of the role whose process is being terminated or member of \
         pg_signal_backend"
    );
    assert_eq!(
        outcome(
            &alice,
            &format!("SELECT pg_cancel_backend({})", pid_of("fluxion"))
        )
        .await,
        "42501 must be a superuser to cancel superuser query"
    );
    assert_eq!(
        rows(
            &alice,
            &format!("SELECT pg_terminate_backend({})::text", pid_of("alice"))
        )
        .await,
        ["true"]
    );
}

#[tokio::test]
async fn bad_and_late_records_show_only_the_sources_a_role_may_read() {
    let server = TestServer::start();
    let admin = setup(&server).await;
    admin
        .batch_execute(
            "CREATE TABLE open_events (ts timestamp, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
             CREATE TABLE hidden_events (ts timestamp, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
             INSERT INTO open_events VALUES ('2026-01-01 10:00:00');
             INSERT INTO open_events VALUES ('2026-01-01 09:00:00');
             INSERT INTO hidden_events VALUES ('2026-01-01 10:00:00');
             INSERT INTO hidden_events VALUES ('2026-01-01 09:00:00');
             GRANT SELECT ON open_events TO bi, alice;",
        )
        .await
        .expect("two tables with a late row each");
    let all = "SELECT source FROM fluxion_catalog.late_events ORDER BY 1";
    assert_eq!(rows(&admin, all).await, ["hidden_events", "open_events"]);
    let bi = server.connect_as("bi").await;
    assert_eq!(
        rows(&bi, all).await,
        ["open_events"],
        "a superuser sees all, bi its own"
    );
    assert_eq!(
        rows(&bi, "SELECT count(*) FROM fluxion_catalog.source_errors").await,
        ["0"]
    );
    // Whatever reads the records as they change would hold every source's: superusers only.
    let refused = "42501 permission denied to maintain a dataflow over late_events: only \
                   superusers may; SELECT from it shows the records of the sources you may read";
    assert_eq!(
        outcome(
            &bi,
            "BEGIN; DECLARE c CURSOR FOR SUBSCRIBE TO (SELECT * FROM fluxion_catalog.late_events)"
        )
        .await,
        refused
    );
    bi.batch_execute("ROLLBACK").await.expect("rollback");
    let alice = server.connect_as("alice").await;
    assert_eq!(
        outcome(
            &alice,
            "CREATE VIEW mine AS SELECT * FROM fluxion_catalog.late_events"
        )
        .await,
        "ok",
        "a plain view reads with the reader's filter"
    );
    assert_eq!(
        rows(&alice, "SELECT source FROM mine").await,
        ["open_events"]
    );
    assert_eq!(
        outcome(
            &alice,
            "CREATE MATERIALIZED VIEW kept AS SELECT * FROM mine"
        )
        .await,
        refused
    );
    assert_eq!(
        rows(&admin, "SELECT count(*) FROM fluxion_catalog.views").await,
        ["0"],
        "the refused view left nothing behind"
    );
}

#[tokio::test]
async fn members_of_a_role_share_its_privileges_and_default_privileges_apply() {
    let data = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(data.path());
    let admin = setup(&server).await;
    admin
        .batch_execute(
            "CREATE ROLE readers;
             CREATE ROLE carol LOGIN NOINHERIT;
             GRANT SELECT ON t TO readers;
             GRANT readers TO bi, carol",
        )
        .await
        .expect("grant a role");

    // bi inherits what readers holds; taking on a role it is not a member of is refused.
    let bi = server.connect_as("bi").await;
    assert_eq!(rows(&bi, "SELECT v FROM t").await, ["a"]);
    assert_eq!(
        outcome(&bi, "SET ROLE alice").await,
        "42501 permission denied to set role \"alice\""
    );
    assert_eq!(
        outcome(&bi, "SET ROLE fluxion").await,
        "42501 permission denied to set role \"fluxion\""
    );
    assert_eq!(
        outcome(&bi, "GRANT readers TO alice").await,
        "42501 must have admin option on role \"readers\""
    );

    // carol is a member but does not inherit: she reads once she takes the role on, and then
    // acts as it (she cannot create where readers may not).
    let carol = server.connect_as("carol").await;
    assert_eq!(
        outcome(&carol, "SELECT v FROM t").await,
        "42501 permission denied for table t"
    );
    carol
        .batch_execute("SET ROLE readers")
        .await
        .expect("SET ROLE");
    assert_eq!(rows(&carol, "SELECT v FROM t").await, ["a"]);
    assert_eq!(
        rows(&carol, "SELECT current_user || ' ' || session_user").await,
        ["readers carol"]
    );
    assert_eq!(
        outcome(&carol, "INSERT INTO t VALUES (2, 'b')").await,
        "42501 permission denied for table t"
    );
    // A connection pool's reset ends the role taken on.
    carol
        .batch_execute("DISCARD ALL")
        .await
        .expect("DISCARD ALL");
    assert_eq!(rows(&carol, "SHOW role").await, ["none"]);
    assert_eq!(
        outcome(&carol, "SELECT v FROM t").await,
        "42501 permission denied for table t"
    );

    // A superuser that takes on a role has only that role's privileges.
    admin.batch_execute("SET ROLE bi").await.expect("SET ROLE");
    assert_eq!(
        outcome(&admin, "SELECT * FROM secret").await,
        "42501 permission denied for table secret"
    );
    admin.batch_execute("RESET ROLE").await.expect("RESET ROLE");
    assert_eq!(rows(&admin, "SELECT count(*) FROM secret").await, ["0"]);

    // Memberships and default privileges are durable; a dropped role's memberships go.
    admin
        .batch_execute("ALTER DEFAULT PRIVILEGES FOR ROLE alice GRANT SELECT ON TABLES TO bi")
        .await
        .expect("default privileges");
    drop((admin, bi, carol));
    drop(server);
    let server = TestServer::start_in(data.path());
    let bi = server.connect_as("bi").await;
    assert_eq!(rows(&bi, "SELECT v FROM t").await, ["a"]);
    let alice = server.connect_as("alice").await;
    alice
        .batch_execute("CREATE TABLE alices (n int); INSERT INTO alices VALUES (7)")
        .await
        .expect("alice creates a table");
    assert_eq!(rows(&bi, "SELECT n FROM alices").await, ["7"]);
    let admin = server.connect().await;
    admin
        .batch_execute("REVOKE SELECT ON t FROM readers; DROP ROLE readers")
        .await
        .expect("drop the role");
    assert_eq!(
        rows(&admin, "SELECT count(*) FROM pg_auth_members").await,
        ["0"]
    );
    assert_eq!(
        outcome(&bi, "SELECT v FROM t").await,
        "42501 permission denied for table t"
    );
}
