//! Update latency of an incrementally maintained join + GROUP BY view over a large table.
//!
//! Loads `--rows` rows into `items`, joins them with 1,000 `categories` in a materialized view
//! grouped by category name, then performs `--updates` single-row UPDATEs one after the
//! other. For each, it measures the time from sending the UPDATE until a SELECT on the view
//! returns the group with the change applied (commit, durable log, dataflow, read). Finally,
//! several clients update concurrently for a while to measure sustained updates/s. With
//! `--source-events-per-second`, a `nexmark` source ingests bids at that rate throughout (and
//! a view counts them), so the table writes share the commit path with a busy source.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::{load_series, ms, quantile, BenchServer};

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Rows in the large table.
    #[arg(long, default_value_t = 1_000_000)]
    rows: i64,
    /// Sequential single-row updates to time.
    #[arg(long, default_value_t = 10_000)]
    updates: usize,
    /// Seconds of concurrent updates for the throughput phase.
    #[arg(long, default_value_t = 10)]
    throughput_seconds: u64,
    /// Concurrent clients in the throughput phase.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Dataflow worker threads of the server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Events per second of a `nexmark` Bid source running during the measurements (0: no
    /// source).
    #[arg(long, default_value_t = 0)]
    source_events_per_second: u64,
}

const CATEGORIES: i64 = 1_000;

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let server = BenchServer::start(&args.binary, args.workers)?;
    let client = server.connect().await?;
    let sql = |e: tokio_postgres::Error| e.to_string();

    let started = Instant::now();
    client
        .batch_execute(&format!(
            "CREATE TABLE categories (id BIGINT PRIMARY KEY, name TEXT NOT NULL);
             CREATE TABLE items (id BIGINT PRIMARY KEY, category BIGINT NOT NULL, price BIGINT NOT NULL);
             INSERT INTO categories SELECT value, 'category-' || value FROM generate_series(0, {}) AS t(value);",
            CATEGORIES - 1
        ))
        .await
        .map_err(sql)?;
    load_series(
        &client,
        "items",
        &format!("value, value % {CATEGORIES}, value % 97"),
        args.rows,
    )
    .await?;
    println!(
        "loaded {} rows in {:.1} s",
        args.rows,
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    client
        .batch_execute(
            "CREATE MATERIALIZED VIEW revenue AS
                SELECT c.name, count(*) AS items, sum(i.price) AS revenue
                FROM items i JOIN categories c ON i.category = c.id
                GROUP BY c.name",
        )
        .await
        .map_err(sql)?;
    let groups = client
        .query_one("SELECT count(*) FROM revenue", &[])
        .await
        .map_err(sql)?;
    println!(
        "view over {} groups built in {:.1} s",
        groups.get::<_, i64>(0),
        started.elapsed().as_secs_f64()
    );

    if let Some(mib) = server.resident_mib() {
        println!("server resident memory with the table and the view: {mib:.0} MiB");
    }
    if args.source_events_per_second > 0 {
        client
            .batch_execute(&format!(
                "CREATE SOURCE background WITH (connector = 'nexmark', \
                   nexmark.table.type = 'Bid', nexmark.event.rate = '{}');
                 CREATE MATERIALIZED VIEW background_count AS SELECT count(*) FROM background;",
                args.source_events_per_second
            ))
            .await
            .map_err(sql)?;
        println!(
            "a nexmark source ingests {} events/s meanwhile",
            args.source_events_per_second
        );
    }
    let update = client
        .prepare("UPDATE items SET price = price + 1 WHERE id = $1")
        .await
        .map_err(sql)?;
    let read = client
        .prepare("SELECT CAST(revenue AS BIGINT) FROM revenue WHERE name = $1")
        .await
        .map_err(sql)?;
    let mut latencies = Vec::with_capacity(args.updates);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..args.updates {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let id = (state % args.rows as u64) as i64;
        let name = format!("category-{}", id % CATEGORIES);
        let before: i64 = client.query_one(&read, &[&name]).await.map_err(sql)?.get(0);
        let t0 = Instant::now();
        client.execute(&update, &[&id]).await.map_err(sql)?;
        let after: i64 = client.query_one(&read, &[&name]).await.map_err(sql)?.get(0);
        let elapsed = t0.elapsed();
        if after != before + 1 {
            return Err(format!(
                "the view shows {after} after the update, expected {}",
                before + 1
            ));
        }
        latencies.push(elapsed);
    }
    latencies.sort();
    println!(
        "update → view latency over {} single-row updates: median {}, p99 {}, max {}",
        latencies.len(),
        ms(quantile(&latencies, 0.5)),
        ms(quantile(&latencies, 0.99)),
        ms(quantile(&latencies, 1.0)),
    );

    let deadline = Instant::now() + Duration::from_secs(args.throughput_seconds);
    let mut tasks = Vec::new();
    for worker in 0..args.clients {
        let client = server.connect().await?;
        let rows = args.rows;
        tasks.push(tokio::spawn(async move {
            let update = client
                .prepare("UPDATE items SET price = price + 1 WHERE id = $1")
                .await
                .map_err(|e| e.to_string())?;
            let mut done = 0u64;
            let mut id = worker as i64;
            while Instant::now() < deadline {
                id = (id * 7919 + 13) % rows;
                client
                    .execute(&update, &[&id])
                    .await
                    .map_err(|e| e.to_string())?;
                done += 1;
            }
            Ok::<u64, String>(done)
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.map_err(|e| e.to_string())??;
    }
    println!(
        "sustained: {:.0} updates/s with {} concurrent clients over {} s",
        total as f64 / args.throughput_seconds as f64,
        args.clients,
        args.throughput_seconds
    );
    if args.source_events_per_second > 0 {
        let counted: i64 = client
            .query_one("SELECT count FROM background_count", &[])
            .await
            .map_err(sql)?
            .get(0);
        println!("the source's view counted {counted} bids");
    }
    Ok(())
}
