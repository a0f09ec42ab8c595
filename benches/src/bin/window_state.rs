//! Window state: whether a windowed view's memory stays flat over a long stream.
//!
//! Creates a `nexmark` Bid source running as fast as it can over `--events` events, with a
//! watermark trailing `date_time` by 4 seconds, and one view (`--view`):
//! - `tumble`: 10-second tumbling windows that keep per-window state growing with the
//!   window's contents, `count(*)` and `count(DISTINCT bidder)`;
//! - `interval-join`: an Auction source too (same sequence and watermark), and the bids made
//!   within 10 seconds of their auction's start, joined by an interval condition and counted
//!   per 10 seconds of auction start.
//!
//! With `--emit-on-window-close` the view ends in `EMIT ON WINDOW CLOSE`, and the state of
//! every window (and every auction and bid) that has closed should be forgotten; without it,
//! everything stays (late rows may still correct it). Every second it samples
//! the bids the source has made durable, the records the view's arrangements hold and the
//! server's resident memory; it prints them at each tenth of the run and at 10M, 50M and
//! 100M events, with the events/s sustained and the peak resident memory.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use fluxion_benches::nexmark_tables::{AUCTION, BID};
use fluxion_benches::BenchServer;

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Events in the generated sequence (46 of every 50 are bids).
    #[arg(long, default_value_t = 100_000_000)]
    events: u64,
    /// Dataflow worker threads of the server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// End the view in `EMIT ON WINDOW CLOSE`.
    #[arg(long)]
    emit_on_window_close: bool,
    /// The view whose state is watched.
    #[arg(long, value_enum, default_value_t = View::Tumble)]
    view: View,
    /// Events per second each source generates (0: as fast as it can). The interval join's
    /// two sources each generate the whole sequence: at one rate their event times keep
    /// step, where unpaced the auctions (a few of every 50 events) run far ahead of the bids
    /// and wait in the join for them.
    #[arg(long, default_value_t = 0)]
    rate: u64,
}

/// The views the benchmark can watch.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum View {
    /// A count and a distinct count per 10-second tumbling window of bids.
    Tumble,
    /// Bids within 10 seconds of their auction's start, counted per 10 seconds.
    IntervalJoin,
}

impl View {
    /// The sources and the view `per_window`, over `events` events.
    fn sql(self, events: u64, rate: u64, emit: &str) -> String {
        let watermarked = |table: &fluxion_benches::nexmark_tables::NexmarkTable| {
            table.create_source(events, rate, Some(4))
        };
        match self {
            View::Tumble => format!(
                "{}
                 CREATE MATERIALIZED VIEW per_window AS
                   SELECT window_start, count(*) AS bids, count(DISTINCT bidder) AS bidders
                   FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_start {emit};",
                watermarked(BID)
            ),
            View::IntervalJoin => format!(
                "{}
                 {}
                 CREATE MATERIALIZED VIEW per_window AS
                   SELECT date_bin(INTERVAL '10' SECOND, a.date_time, TIMESTAMP '1970-01-01')
                       AS window_start, count(*) AS bids
                   FROM auction a JOIN bid b ON b.auction = a.id
                     AND b.date_time BETWEEN a.date_time AND a.date_time + INTERVAL '10' SECOND
                   GROUP BY 1 {emit};",
                watermarked(AUCTION),
                watermarked(BID)
            ),
        }
    }
}

/// One sample of the run.
struct Sample {
    seconds: f64,
    /// Events of the sequence made durable (bids, scaled to all events).
    events: u64,
    /// Records in the view's arrangements.
    records: i64,
    resident_mib: f64,
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let server = BenchServer::start(&args.binary, args.workers)?;
    let client = server.connect().await?;
    let sql = |e: tokio_postgres::Error| e.to_string();
    let bids = BID.rows(args.events);
    let emit = if args.emit_on_window_close {
        "EMIT ON WINDOW CLOSE"
    } else {
        ""
    };
    client
        .batch_execute(&args.view.sql(args.events, args.rate, emit))
        .await
        .map_err(sql)?;
    let started = Instant::now();
    println!("seconds\tevents durable\tview records\tresident MiB");
    let mut samples: Vec<Sample> = Vec::new();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let row = client
            .query_one(
                "SELECT (SELECT rows::bigint FROM fluxion_catalog.source_stats \
                   WHERE source_name = 'bid'), \
                 (SELECT sum(records)::bigint FROM fluxion_catalog.arrangement_sizes \
                   WHERE object_name = 'per_window')",
                &[],
            )
            .await
            .map_err(sql)?;
        let durable = row.get::<_, Option<i64>>(0).unwrap_or(0) as u64;
        let sample = Sample {
            seconds: started.elapsed().as_secs_f64(),
            events: durable * 50 / 46,
            records: row.get::<_, Option<i64>>(1).unwrap_or(0),
            resident_mib: server.resident_mib().unwrap_or(f64::NAN),
        };
        println!(
            "{:.0}\t{}\t{}\t{:.0}",
            sample.seconds, sample.events, sample.records, sample.resident_mib
        );
        samples.push(sample);
        if durable >= bids {
            break;
        }
    }
    // The view catches up with the last batches.
    client
        .query_one("SELECT count(*) FROM per_window", &[])
        .await
        .map_err(sql)?;
    let elapsed = started.elapsed().as_secs_f64();
    let windows: i64 = client
        .query_one("SELECT count(*) FROM per_window", &[])
        .await
        .map_err(sql)?
        .get(0);
    println!(
        "{} events in {elapsed:.1} s: {:.0} events/s sustained; the view holds {windows} windows",
        args.events,
        args.events as f64 / elapsed
    );
    println!("events\tview records\tresident MiB");
    let marks =
        (1..=10)
            .map(|tenth| args.events * tenth / 10)
            .chain([10_000_000, 50_000_000, 100_000_000]);
    let mut marks: Vec<u64> = marks.filter(|m| *m <= args.events).collect();
    marks.sort_unstable();
    marks.dedup();
    for mark in marks {
        if let Some(sample) = samples.iter().find(|s| s.events >= mark) {
            println!("{mark}\t{}\t{:.0}", sample.records, sample.resident_mib);
        }
    }
    println!(
        "peak resident: {:.0} MiB",
        server.peak_resident_mib().unwrap_or(f64::NAN)
    );
    Ok(())
}
