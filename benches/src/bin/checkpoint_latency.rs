//! Write latency while the log is checkpointed, against the same writes with no checkpoint.
//!
//! Each round starts two servers one after the other, loads `--rows` rows into a table in
//! each, and then times single-row INSERTs (each one a durable commit) for `--seconds`, one
//! every `--interval-ms` (open loop): each latency counts from when the insert was due, not
//! from when the previous one returned, so a stall counts once for every insert it holds up
//! (a closed loop would send few inserts during a stall and hide it in the percentiles):
//!
//! - *without*: the server never checkpoints in that time (`--checkpoint-after-rows` far
//!   above what the round writes);
//! - *with*: the server checkpoints after every `--checkpoint-every` logged rows, so snapshots
//!   of the whole table are written back to back while the inserts run.
//!
//! A poller counts the snapshot files that appear in the *with* server's log directory
//! during the timed phase, so a run in which no checkpoint overlapped the writes (and which
//! therefore could not show a stall) says so and fails. The result is each round's p50, p99
//! and max for both servers, and the medians over the rounds with their ratio.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::{load_series, ms, quantile, BenchServer};

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Rows in the table a checkpoint writes out.
    #[arg(long, default_value_t = 1_000_000)]
    rows: i64,
    /// Seconds of timed single-row inserts per server.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Logged rows after which the *with* server checkpoints.
    #[arg(long, default_value_t = 1_000)]
    checkpoint_every: u64,
    /// Rounds (each: one server without checkpoints, one with).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Milliseconds between the inserts' due times.
    #[arg(long, default_value_t = 10)]
    interval_ms: u64,
    /// Dataflow worker threads of the server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

/// The latencies of one timed phase.
struct Phase {
    latencies: Vec<Duration>,
    /// Snapshots written while the inserts ran.
    checkpoints: usize,
}

impl Phase {
    fn p(&self, q: f64) -> Duration {
        quantile(&self.latencies, q)
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let never = (args.rows as u64 * 1_000).to_string();
    let every = args.checkpoint_every.to_string();
    let mut without = Vec::new();
    let mut with = Vec::new();
    for round in 1..=args.rounds {
        for checkpoints in [false, true] {
            let threshold = if checkpoints { &every } else { &never };
            let server = BenchServer::start_with_args(
                &args.binary,
                args.workers,
                &["--checkpoint-after-rows", threshold],
            )?;
            let phase = run_phase(&server, &args).await?;
            println!(
                "round {round}, {}: {} inserts, p50 {}, p99 {}, max {}; {} checkpoints during the inserts",
                if checkpoints { "with checkpoints" } else { "without checkpoints" },
                phase.latencies.len(),
                ms(phase.p(0.5)),
                ms(phase.p(0.99)),
                ms(phase.p(1.0)),
                phase.checkpoints,
            );
            if checkpoints && phase.checkpoints == 0 {
                return Err(
                    "no checkpoint ran during the timed inserts: nothing was measured".into(),
                );
            }
            if checkpoints {
                with.push(phase);
            } else {
                without.push(phase);
            }
        }
    }
    let median = |phases: &[Phase], q: f64| {
        let mut values: Vec<Duration> = phases.iter().map(|p| p.p(q)).collect();
        values.sort();
        values[values.len() / 2]
    };
    let (p99_without, p99_with) = (median(&without, 0.99), median(&with, 0.99));
    println!(
        "median over {} rounds: p50 {} without, {} with; p99 {} without, {} with ({:.2}x)",
        args.rounds,
        ms(median(&without, 0.5)),
        ms(median(&with, 0.5)),
        ms(p99_without),
        ms(p99_with),
        p99_with.as_secs_f64() / p99_without.as_secs_f64(),
    );
    Ok(())
}

/// Loads the table into `server`, then times single-row inserts for `args.seconds` while
/// counting the snapshots its log writes meanwhile.
async fn run_phase(server: &BenchServer, args: &Args) -> Result<Phase, String> {
    let client = server.connect().await?;
    let sql = |e: tokio_postgres::Error| e.to_string();
    client
        .batch_execute("CREATE TABLE items (id BIGINT PRIMARY KEY, price BIGINT NOT NULL)")
        .await
        .map_err(sql)?;
    load_series(&client, "items", "value, value % 97", args.rows).await?;

    let wal = server.data_dir().join("wal");
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let before = snapshots(&wal);
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (seen, stop, wal) = (seen.clone(), stop.clone(), wal.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(snapshots(&wal));
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    let insert = client
        .prepare("INSERT INTO items VALUES ($1, $2)")
        .await
        .map_err(sql)?;
    let mut latencies = Vec::new();
    let start = Instant::now();
    let interval = Duration::from_millis(args.interval_ms);
    let inserts = args.seconds * 1000 / args.interval_ms.max(1);
    for n in 0..inserts {
        let due = start + interval * n as u32;
        tokio::time::sleep_until(due.into()).await;
        let id = args.rows + n as i64;
        client
            .execute(&insert, &[&id, &(id % 97)])
            .await
            .map_err(sql)?;
        latencies.push(due.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    let _ = poller.join();
    latencies.sort();
    let checkpoints = seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .difference(&before)
        .count();
    Ok(Phase {
        latencies,
        checkpoints,
    })
}

/// The names of the finished snapshot files in the log directory `wal`.
fn snapshots(wal: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(wal) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.starts_with("snapshot-") && name.ends_with(".arrow"))
        .collect()
}
