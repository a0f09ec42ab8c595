//! A throwaway PostgreSQL 15 server for tests: a fresh cluster in a temporary directory on a
//! free port, with `wal_level=logical`, stopped when dropped. Tests compare Fluxion with it
//! (catalog queries) and will read from it (CDC) and write to it (sinks).
//!
//! The binaries come from `pg_config --bindir`. PostgreSQL refuses to run as root, so when the
//! tests run as root the cluster runs as the `postgres` user.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::free_port;

/// A running PostgreSQL server.
pub struct TestPostgres {
    data_dir: PathBuf,
    bin_dir: PathBuf,
    port: u16,
    run_as: Option<String>,
    _temp: tempfile::TempDir,
}

impl TestPostgres {
    /// Creates and starts a cluster; panics with the server's log if it cannot.
    pub fn start() -> Self {
        let bin_dir = bin_dir();
        let temp = tempfile::tempdir().expect("a temporary directory");
        let run_as = is_root().then(|| "postgres".to_string());
        if let Some(user) = &run_as {
            give_to(temp.path(), user);
        }
        let data_dir = temp.path().join("data");
        let port = free_port();
        let server = Self {
            data_dir,
            bin_dir,
            port,
            run_as,
            _temp: temp,
        };
        server.run(
            "initdb",
            &[
                "-D",
                &server.data_dir.display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        );
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c wal_level=logical -c fsync=off \
             -c unix_socket_directories={}",
            server.socket_dir().display()
        );
        server.run(
            "pg_ctl",
            &[
                "-D",
                &server.data_dir.display().to_string(),
                "-o",
                &options,
                "-l",
                &server.log_path().display().to_string(),
                "-w",
                "start",
            ],
        );
        server.wait_until_ready();
        server
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A tokio-postgres connection string for database `postgres` as user `postgres`.
    pub fn connection_string(&self) -> String {
        self.database_connection_string("postgres")
    }

    fn database_connection_string(&self, database: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname={database}",
            self.port
        )
    }

    /// A client connected to database `postgres` as user `postgres`.
    pub async fn connect(&self) -> tokio_postgres::Client {
        self.connect_to("postgres").await
    }

    /// A client connected to `database` as user `postgres`.
    pub async fn connect_to(&self, database: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(
            &self.database_connection_string(database),
            tokio_postgres::NoTls,
        )
        .await
        .expect("connect to PostgreSQL");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn socket_dir(&self) -> PathBuf {
        self._temp.path().to_path_buf()
    }

    fn log_path(&self) -> PathBuf {
        self._temp.path().join("postgres.log")
    }

    fn wait_until_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("PostgreSQL did not start:\n{}", self.log());
    }

    /// Runs one of PostgreSQL's programs (as the cluster's owner), panicking on failure.
    fn run(&self, program: &str, args: &[&str]) {
        let binary = self.bin_dir.join(program);
        let output = match &self.run_as {
            Some(user) => Command::new("runuser")
                .arg("-u")
                .arg(user)
                .arg("--")
                .arg(&binary)
                .args(args)
                .output(),
            None => Command::new(&binary).args(args).output(),
        }
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
        assert!(
            output.status.success(),
            "{program} failed: {}\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let binary = self.bin_dir.join("pg_ctl");
        let data_dir = self.data_dir.display().to_string();
        let args = ["-D", data_dir.as_str(), "-m", "immediate", "-w", "stop"];
        let _ = match &self.run_as {
            Some(user) => Command::new("runuser")
                .arg("-u")
                .arg(user)
                .arg("--")
                .arg(&binary)
                .args(args)
                .output(),
            None => Command::new(&binary).args(args).output(),
        };
    }
}

/// Where PostgreSQL's programs are.
fn bin_dir() -> PathBuf {
    let output = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .expect("pg_config is installed (PostgreSQL 15 server packages)");
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Makes `path` owned by `user` (so a server running as that user can use it).
fn give_to(path: &Path, user: &str) {
    let status = Command::new("chown")
        .arg("-R")
        .arg(format!("{user}:"))
        .arg(path)
        .status()
        .expect("chown runs");
    assert!(status.success(), "chown {user} {}", path.display());
}
