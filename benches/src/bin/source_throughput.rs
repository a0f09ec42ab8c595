//! Source throughput: the nexmark generator → the durable log → a `count(*)` view.
//!
//! Creates a `nexmark` Bid source running as fast as it can (`nexmark.event.rate = 0`) over
//! `--events` events and a materialized view counting its rows, then samples the view and
//! the server's resident memory every second until every bid has arrived. Prints the
//! sustained events/s (events of the whole sequence, all three tables' worth, per second)
//! and the memory curve.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::BenchServer;

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Events in the generated sequence (46 of every 50 are bids).
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
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
    let bids = args.events / 50 * 46 + (args.events % 50).saturating_sub(4);
    let started = Instant::now();
    client
        .batch_execute(&format!(
            "CREATE SOURCE bid WITH (connector = 'nexmark', nexmark.table.type = 'Bid', \
               nexmark.event.rate = '0', nexmark.event.num = '{}');
             CREATE MATERIALIZED VIEW bid_count AS SELECT count(*) AS n FROM bid;",
            args.events
        ))
        .await
        .map_err(sql)?;
    println!("seconds\tbids\tevents/s (last second)\tresident MiB");
    let mut last = (Instant::now(), 0u64);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let n: i64 = client
            .query_one("SELECT n FROM bid_count", &[])
            .await
            .map_err(sql)?
            .get(0);
        let n = n as u64;
        let now = Instant::now();
        let events_per_second =
            (n - last.1) as f64 * 50.0 / 46.0 / now.duration_since(last.0).as_secs_f64();
        last = (now, n);
        println!(
            "{:.0}\t{n}\t{events_per_second:.0}\t{:.0}",
            started.elapsed().as_secs_f64(),
            server.resident_mib().unwrap_or(f64::NAN)
        );
        if n >= bids {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{} events ({bids} bids) in {elapsed:.1} s: {:.0} events/s sustained",
        args.events,
        args.events as f64 / elapsed
    );
    Ok(())
}
