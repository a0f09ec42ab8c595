//! Shared pieces of the benchmarks: starting a server, timing, percentiles, the Nexmark tables.

pub mod nexmark_tables;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `fluxion` server process started for a benchmark, stopped on drop.
pub struct BenchServer {
    child: Child,
    /// The Postgres port.
    pub port: u16,
    data: tempfile::TempDir,
}

impl BenchServer {
    /// Starts `binary` on a free port with a fresh data directory.
    pub fn start(binary: &PathBuf, workers: usize) -> Result<Self, String> {
        Self::start_with_args(binary, workers, &[])
    }

    /// Starts `binary` like [`Self::start`], with `extra` command-line arguments.
    pub fn start_with_args(
        binary: &PathBuf,
        workers: usize,
        extra: &[&str],
    ) -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| e.to_string())?;
        let data = tempfile::tempdir().map_err(|e| e.to_string())?;
        let child = Command::new(binary)
            .args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--http-listen",
                "127.0.0.1:0",
                "--workers",
                &workers.to_string(),
            ])
            .args(extra)
            .arg("--data-dir")
            .arg(data.path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err("the server did not start listening".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Self { child, port, data })
    }

    /// The server's resident memory, in MiB (Linux only; `None` elsewhere).
    pub fn resident_mib(&self) -> Option<f64> {
        self.status_mib("VmRSS:")
    }

    /// The most resident memory the server has had so far, in MiB (Linux only).
    pub fn peak_resident_mib(&self) -> Option<f64> {
        self.status_mib("VmHWM:")
    }

    /// A memory field of `/proc/<pid>/status` (given in kB), in MiB.
    fn status_mib(&self, field: &str) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix(field))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    }

    /// The CPU time the server has used so far, user and system, over all its threads
    /// (Linux only; `None` elsewhere).
    pub fn cpu_seconds(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        // The command name (field 2) may hold spaces; the fields after it are plain numbers.
        let after_name = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the whole line, in clock ticks of 1/100 s
        // (`getconf CLK_TCK` is 100 on every Linux this runs on).
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        Some(ticks as f64 / 100.0)
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> &std::path::Path {
        self.data.path()
    }

    /// The bytes of the server's data directory on disk (catalog, log, stream logs).
    pub fn data_bytes(&self) -> u64 {
        fn walk(dir: &std::path::Path) -> u64 {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return 0;
            };
            entries
                .flatten()
                .map(|entry| match entry.metadata() {
                    Ok(meta) if meta.is_dir() => walk(&entry.path()),
                    Ok(meta) => meta.len(),
                    Err(_) => 0,
                })
                .sum()
        }
        walk(self.data.path())
    }

    /// Connects a client.
    pub async fn connect(&self) -> Result<tokio_postgres::Client, String> {
        connect(&format!("host=127.0.0.1 port={} user=fluxion", self.port)).await
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Connects a tokio-postgres client, driving its connection on a task.
pub async fn connect(url: &str) -> Result<tokio_postgres::Client, String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Inserts one row for each `value` in `0..rows` into `table`, `columns` being the select
/// list over `value` (`value, value % 97`), in statements of 100,000 rows.
pub async fn load_series(
    client: &tokio_postgres::Client,
    table: &str,
    columns: &str,
    rows: i64,
) -> Result<(), String> {
    const CHUNK: i64 = 100_000;
    let mut loaded = 0;
    while loaded < rows {
        let end = (loaded + CHUNK).min(rows) - 1;
        client
            .batch_execute(&format!(
                "INSERT INTO {table} SELECT {columns} FROM generate_series({loaded}, {end}) AS t(value)"
            ))
            .await
            .map_err(|e| e.to_string())?;
        loaded = end + 1;
    }
    Ok(())
}

/// The value at quantile `q` (0..=1) of sorted `samples`.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index]
}

/// Milliseconds with three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}
