//! Test support: a real Fluxion server process on a free port with its own data directory,
//! and real Postgres clients connected to it.

#![allow(dead_code)]

pub mod client_programs;
pub mod http;
pub mod pg_text;
pub mod postgres;
pub mod query;
pub mod sink_files;
pub mod wire;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `fluxion` binary.
pub struct TestServer {
    child: Option<Child>,
    port: u16,
    http_port: u16,
    data_dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

/// How far a starting server must have got before the harness hands it to a test.
#[derive(Clone, Copy, Debug)]
enum Readiness {
    /// It holds its ports (it may still be recovering).
    Listening,
    /// It has recovered and serves clients.
    Serving,
}

/// The address the servers of the tests listen on.
const LOOPBACK: &str = "127.0.0.1";

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

impl TestServer {
    /// Starts a server with a fresh, temporary data directory.
    pub fn start() -> Self {
        let temp = tempfile::tempdir().expect("a temporary directory");
        let mut server = Self::start_in(temp.path());
        server._temp = Some(temp);
        server
    }

    /// Starts a server on `data_dir` (kept after the server stops).
    pub fn start_in(data_dir: &Path) -> Self {
        Self::start_with_args(data_dir, &[])
    }

    /// Starts a server on `data_dir` with extra command-line arguments, and waits until it
    /// serves clients (it has recovered).
    ///
    /// Ports are picked free, but another process may take one before the server binds it;
    /// a server that exits because its port is taken is started again on other ports.
    pub fn start_with_args(data_dir: &Path, extra_args: &[&str]) -> Self {
        Self::start_until(data_dir, LOOPBACK, extra_args, Readiness::Serving)
    }

    /// [`Self::start_with_args`], listening on every interface of the machine (not only
    /// loopback), so that clients can connect from another of its addresses.
    pub fn start_on_every_interface(data_dir: &Path, extra_args: &[&str]) -> Self {
        Self::start_until(data_dir, "0.0.0.0", extra_args, Readiness::Serving)
    }

    /// Starts a server on `data_dir` and returns as soon as it listens, perhaps while it
    /// still recovers (clients are then refused with 57P03).
    pub fn start_listening(data_dir: &Path, extra_args: &[&str]) -> Self {
        Self::start_until(data_dir, LOOPBACK, extra_args, Readiness::Listening)
    }

    fn start_until(data_dir: &Path, host: &str, extra_args: &[&str], readiness: Readiness) -> Self {
        const ATTEMPTS: usize = 5;
        for _ in 0..ATTEMPTS {
            let mut server = Self::spawn(data_dir, host, extra_args);
            match server.wait_until(readiness) {
                Ok(()) => return server,
                Err(exited) if server.log_tail(5).contains("Address already in use") => {
                    eprintln!("fluxion exited ({exited}): a port was taken; trying other ports");
                }
                Err(exited) => panic!(
                    "fluxion exited ({exited}) before it listened\n--- its log ---\n{}",
                    server.log_tail(60)
                ),
            }
        }
        panic!("fluxion found no free ports in {ATTEMPTS} attempts");
    }

    /// Spawns the server on two free ports of `host`, its log beside `data_dir`.
    fn spawn(data_dir: &Path, host: &str, extra_args: &[&str]) -> Self {
        let port = free_port();
        let http_port = free_port();
        let log = std::fs::File::create(data_dir.with_extension("log"))
            .expect("a log file beside the data directory");
        let child = Command::new(env!("CARGO_BIN_EXE_fluxion"))
            .arg("--listen")
            .arg(format!("{host}:{port}"))
            .arg("--http-listen")
            .arg(format!("127.0.0.1:{http_port}"))
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--workers")
            .arg("2")
            .args(extra_args)
            .env(
                "RUST_LOG",
                // The harness reads the server's own "starting" and "accepting Postgres
                // connections" lines (see `wait_until`).
                format!(
                    "{},fluxion=info",
                    std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into())
                ),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the fluxion binary starts");
        Self {
            child: Some(child),
            port,
            http_port,
            data_dir: data_dir.to_path_buf(),
            _temp: None,
        }
    }

    /// Waits until the server is as ready as `readiness` says; `Err` with its exit status
    /// if it exits first. Panics, with its log and its threads' stacks, if it does neither
    /// in 300 s.
    ///
    /// A port that answers is not enough: another test's server may have taken it between
    /// `free_port` and this server's bind (this server then exits). The server logs
    /// "starting" only once it holds both its ports, and "accepting Postgres connections"
    /// once it has recovered.
    fn wait_until(&mut self, readiness: Readiness) -> Result<(), std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(300);
        while Instant::now() < deadline {
            let ready = match readiness {
                Readiness::Listening => self.log_says(" fluxion: starting "),
                Readiness::Serving => self.log_says("accepting Postgres connections"),
            };
            if ready && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            if let Some(child) = &mut self.child {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(status);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "fluxion did not get {readiness:?} on port {} within 300 s\n\
             --- last lines of its log ---\n{}\n--- its threads ---\n{}",
            self.port,
            self.log_tail(60),
            self.thread_stacks(),
        );
    }

    /// Whether the server's log has `line`.
    fn log_says(&self, line: &str) -> bool {
        std::fs::read_to_string(self.log_path()).is_ok_and(|log| log.contains(line))
    }

    /// The path of the server's log (stderr), beside its data directory.
    pub fn log_path(&self) -> PathBuf {
        self.data_dir.with_extension("log")
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Every thread's stack of the running server, from gdb (for diagnosing a hang).
    fn thread_stacks(&self) -> String {
        let Some(child) = &self.child else {
            return "(not running)".into();
        };
        Command::new("gdb")
            .args([
                "-p",
                &child.id().to_string(),
                "-batch",
                "-ex",
                "thread apply all bt 30",
            ])
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_else(|e| format!("(gdb failed: {e})"))
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port of the HTTP listener (webhooks).
    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// A libpq-style connection string for this server.
    pub fn connection_string(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=fluxion dbname=fluxion",
            self.port
        )
    }

    /// Connects a tokio-postgres client (the connection runs on a spawned task).
    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.connection_string(), tokio_postgres::NoTls)
                .await
                .expect("connect to fluxion");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Connects a tokio-postgres client whose notices arrive on the receiver, each with its
    /// SQLSTATE, its message and when it arrived.
    pub async fn connect_with_notices(
        &self,
    ) -> (
        tokio_postgres::Client,
        tokio::sync::mpsc::UnboundedReceiver<(tokio_postgres::error::SqlState, String, Instant)>,
    ) {
        let (client, mut connection) =
            tokio_postgres::connect(&self.connection_string(), tokio_postgres::NoTls)
                .await
                .expect("connect to fluxion");
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = futures::StreamExt::next(&mut messages).await {
                if let tokio_postgres::AsyncMessage::Notice(notice) = message {
                    let code = notice.code().clone();
                    let _ = sender.send((code, notice.message().to_string(), Instant::now()));
                }
            }
        });
        (client, receiver)
    }

    /// Connects a tokio-postgres client as role `user` (loopback connections are trusted).
    pub async fn connect_as(&self, user: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(
            &format!(
                "host=127.0.0.1 port={} user={user} dbname=fluxion",
                self.port
            ),
            tokio_postgres::NoTls,
        )
        .await
        .unwrap_or_else(|e| panic!("connect to fluxion as {user}: {e}"));
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Kills the server with SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends the server SIGHUP (it reads its access rule file again).
    pub fn hang_up(&self) {
        let child = self.child.as_ref().expect("the server runs");
        // SAFETY: sending a signal to a child process we own.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGHUP);
        }
    }

    /// Stops the server with SIGTERM and waits for it to exit; returns whether it exited 0.
    pub fn terminate(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        // SAFETY: sending a signal to a child process we own.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        false
    }
}

impl Drop for TestServer {
    /// Kills the server; its log is kept only when the test failed. A test whose server
    /// panicked anywhere (a thread or a task: no client input may panic it) fails.
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            return;
        }
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        if let Some(line) = log.lines().position(|l| l.contains("panicked at")) {
            let lines: Vec<&str> = log.lines().collect();
            let context = lines[line.saturating_sub(5)..(line + 20).min(lines.len())].join("\n");
            panic!(
                "the server panicked (log kept at {}):\n{context}",
                self.log_path().display()
            );
        }
        let _ = std::fs::remove_file(self.log_path());
    }
}
