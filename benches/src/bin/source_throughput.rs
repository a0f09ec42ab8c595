//! Source throughput: the nexmark generator → the durable log → a `count(*)` view.
//!
//! Creates a `nexmark` Bid source running as fast as it can (`nexmark.event.rate = 0`) over
//! `--events` events and a materialized view counting its rows, then samples, every second,
//! the rows the source has made durable, the rows the view has counted (their difference is
//! how far compute trails the source: flow control keeps it to a few batches), and the
//! server's resident memory, until every bid has arrived. Prints the sustained events/s
//! (events of the whole sequence, all three tables' worth, per second), the memory over the
//! run, and the data directory's size on disk. With `--watermark-seconds`, the source declares
//! a watermark on `date_time`, and the run ends with the watermark and the late rows.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::nexmark_tables::BID;
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
    /// Declare a watermark on the bids' `date_time` trailing by this many seconds (the cost
    /// of tracking event time and lateness on every batch).
    #[arg(long)]
    watermark_seconds: Option<u64>,
}

/// One sample of the run.
struct Sample {
    seconds: f64,
    counted: u64,
    resident_mib: f64,
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let server = BenchServer::start(&args.binary, args.workers)?;
    let client = server.connect().await?;
    let sql = |e: tokio_postgres::Error| e.to_string();
    let bids = BID.rows(args.events);
    let started = Instant::now();
    let columns = match args.watermark_seconds {
        Some(delay) => format!(
            "(auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, \
              date_time TIMESTAMP, extra TEXT, \
              WATERMARK FOR date_time AS date_time - INTERVAL '{delay}' SECOND)"
        ),
        None => String::new(),
    };
    client
        .batch_execute(&format!(
            "CREATE SOURCE bid {columns} WITH (connector = 'nexmark', nexmark.table.type = 'Bid', \
               nexmark.event.rate = '0', nexmark.event.num = '{}');
             CREATE MATERIALIZED VIEW bid_count AS SELECT count(*) AS n FROM bid;",
            args.events
        ))
        .await
        .map_err(sql)?;
    println!("seconds\tbids counted\tbids durable\tview behind source\tevents/s (last second)\tresident MiB");
    let mut samples: Vec<Sample> = Vec::new();
    let mut last = (Instant::now(), 0u64);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let row = client
            .query_one(
                "SELECT (SELECT n FROM bid_count), \
                   (SELECT rows::bigint FROM fluxion_catalog.source_stats WHERE source_name = 'bid')",
                &[],
            )
            .await
            .map_err(sql)?;
        let counted = row.get::<_, i64>(0) as u64;
        let durable = row.get::<_, Option<i64>>(1).unwrap_or(0) as u64;
        let now = Instant::now();
        let events_per_second =
            (counted - last.1) as f64 * 50.0 / 46.0 / now.duration_since(last.0).as_secs_f64();
        last = (now, counted);
        let sample = Sample {
            seconds: started.elapsed().as_secs_f64(),
            counted,
            resident_mib: server.resident_mib().unwrap_or(f64::NAN),
        };
        println!(
            "{:.0}\t{counted}\t{durable}\t{}\t{events_per_second:.0}\t{:.0}",
            sample.seconds,
            durable.saturating_sub(counted),
            sample.resident_mib
        );
        samples.push(sample);
        if counted >= bids {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    if args.watermark_seconds.is_some() {
        let row = client
            .query_one(
                "SELECT watermark::text, late_rows::bigint FROM fluxion_catalog.source_stats \
                 WHERE source_name = 'bid'",
                &[],
            )
            .await
            .map_err(sql)?;
        println!(
            "watermark {}, late rows {}",
            row.get::<_, Option<String>>(0).unwrap_or_default(),
            row.get::<_, i64>(1)
        );
    }
    println!(
        "{} events ({bids} bids) in {elapsed:.1} s: {:.0} events/s sustained",
        args.events,
        args.events as f64 / elapsed
    );
    println!("resident memory when the view had counted a share of the bids:");
    for percent in [10, 25, 50, 75, 100] {
        let target = bids * percent / 100;
        if let Some(sample) = samples.iter().find(|s| s.counted >= target) {
            println!(
                "  {percent:>3}%: {:.0} MiB at {:.0} s",
                sample.resident_mib, sample.seconds
            );
        }
    }
    let peak = samples.iter().map(|s| s.resident_mib).fold(0.0, f64::max);
    println!("  peak: {peak:.0} MiB");
    println!(
        "data directory: {:.0} MiB",
        server.data_bytes() as f64 / (1 << 20) as f64
    );
    Ok(())
}
