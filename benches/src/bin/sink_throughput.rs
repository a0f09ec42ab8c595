//! Sink throughput: a `counter` source running as fast as it can → a sink, every row a change
//! to deliver.
//!
//! Creates the source (`tick = '0s'`, `--rows` rows) and a file sink on it (JSON lines,
//! rotated every 64 MiB or second), or with `--postgres-port` a PostgreSQL sink into a table
//! of that server (database `postgres`, user `postgres`), then samples
//! `fluxion_catalog.sink_stats` every second until every row is in the target for good.
//! Prints rows/s per second, the median, and the server's resident memory.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::BenchServer;

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Rows the counter emits.
    #[arg(long, default_value_t = 5_000_000)]
    rows: u64,
    /// Deliver to a table of the PostgreSQL on this port (127.0.0.1) instead of files.
    #[arg(long)]
    postgres_port: Option<u16>,
    /// Dataflow worker threads of the server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let server = BenchServer::start(&args.binary, args.workers)?;
    let client = server.connect().await?;
    let sql = |e: tokio_postgres::Error| e.to_string();
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sink = match args.postgres_port {
        Some(port) => format!(
            "connector = 'postgres', hostname = '127.0.0.1', port = '{port}', \
             username = 'postgres', database.name = 'postgres', \
             table = 'sink_bench_{}', key = 'counter'",
            std::process::id()
        ),
        None => format!(
            "connector = 'file', path = '{}', rotate.interval = '1s'",
            out.path().display()
        ),
    };
    let started = Instant::now();
    client
        .batch_execute(&format!(
            "CREATE SOURCE c WITH (connector = 'counter', tick = '0s', max = '{}');
             CREATE SINK s FROM c WITH ({sink});",
            args.rows
        ))
        .await
        .map_err(sql)?;
    println!("seconds\trows handed to the sink\trows/s (last second)\tlag ms\tresident MiB");
    let mut rates = Vec::new();
    let mut resident = Vec::new();
    let mut last = (Instant::now(), 0u64);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let row = client
            .query_one(
                "SELECT rows_delivered::bigint, lag_ms::bigint, failure \
                 FROM fluxion_catalog.sink_stats",
                &[],
            )
            .await
            .map_err(sql)?;
        let delivered = row.get::<_, i64>(0) as u64;
        let lag: i64 = row.get(1);
        if let Some(failure) = row.get::<_, Option<String>>(2) {
            return Err(format!("the sink failed: {failure}"));
        }
        let now = Instant::now();
        let rate = (delivered - last.1) as f64 / now.duration_since(last.0).as_secs_f64();
        last = (now, delivered);
        let mib = server.resident_mib().unwrap_or(0.0);
        resident.push(mib);
        println!(
            "{:.0}\t{delivered}\t{rate:.0}\t{lag}\t{mib:.0}",
            started.elapsed().as_secs_f64()
        );
        if delivered < args.rows {
            if delivered > 0 {
                rates.push(rate);
            }
            continue;
        }
        if lag == 0 {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    rates.sort_by(f64::total_cmp);
    let median = rates.get(rates.len() / 2).copied().unwrap_or(0.0);
    let peak = resident.iter().copied().fold(0.0, f64::max);
    println!(
        "{} rows in the target in {elapsed:.1} s: {:.0} rows/s overall, median {median:.0} rows/s, \
         peak resident {peak:.0} MiB",
        args.rows,
        args.rows as f64 / elapsed
    );
    Ok(())
}
