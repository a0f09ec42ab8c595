//! Change latency: from a table write to a SUBSCRIBE subscriber receiving it.
//!
//! A writer inserts `--writes` rows one at a time (each its own transaction, `--interval-ms`
//! apart) into `events (id BIGINT PRIMARY KEY, sent_us BIGINT)`, stamping each with the
//! microseconds since the benchmark started, just before sending the INSERT. Each of
//! `--subscribers` connections runs `SUBSCRIBE events WITH (SNAPSHOT = false)` and notes, for
//! every row it receives, how long ago it was sent: commit (log fsync), the dataflow, the
//! merge of the workers' frontiers and the flush to the client, all included. Prints the
//! median, p99 and max over every (row, subscriber) pair, for each subscriber count.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::{ms, quantile, BenchServer};
use futures::StreamExt;
use tokio_postgres::SimpleQueryMessage;

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Subscriber counts to measure, one run each.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    subscribers: Vec<usize>,
    /// Rows written per run.
    #[arg(long, default_value_t = 1000)]
    writes: usize,
    /// Pause between writes.
    #[arg(long, default_value_t = 5)]
    interval_ms: u64,
    /// Dataflow worker threads of the server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    println!("subscribers\tsamples\tmedian\tp99\tmax\tresident MiB");
    for &subscribers in &args.subscribers {
        let server = BenchServer::start(&args.binary, args.workers)?;
        let (samples, resident) = run(&server, &args, subscribers).await?;
        let mut samples = samples;
        samples.sort();
        println!(
            "{subscribers}\t{}\t{}\t{}\t{}\t{resident:.0}",
            samples.len(),
            ms(quantile(&samples, 0.5)),
            ms(quantile(&samples, 0.99)),
            ms(samples.last().copied().unwrap_or_default()),
        );
    }
    Ok(())
}

/// One run with `subscribers` subscribers: every (row, subscriber) latency, and the server's
/// resident memory at the end.
async fn run(
    server: &BenchServer,
    args: &Args,
    subscribers: usize,
) -> Result<(Vec<Duration>, f64), String> {
    let sql = |e: tokio_postgres::Error| e.to_string();
    let writer = server.connect().await?;
    writer
        .batch_execute("CREATE TABLE events (id BIGINT PRIMARY KEY, sent_us BIGINT NOT NULL)")
        .await
        .map_err(sql)?;
    let started = Arc::new(Instant::now());
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let client = server.connect().await?;
        let started = started.clone();
        let expected = args.writes;
        let (ready, is_ready) = tokio::sync::oneshot::channel();
        readers.push((
            tokio::spawn(async move {
                let stream = client
                    .simple_query_raw("SUBSCRIBE events WITH (SNAPSHOT = false)")
                    .await
                    .map_err(|e| e.to_string())?;
                futures::pin_mut!(stream);
                let mut ready = Some(ready);
                let mut latencies = Vec::with_capacity(expected);
                while latencies.len() < expected {
                    let message = match stream.next().await {
                        Some(message) => message.map_err(|e| e.to_string())?,
                        None => return Err("the subscription ended".to_string()),
                    };
                    match message {
                        SimpleQueryMessage::RowDescription(_) => {
                            if let Some(ready) = ready.take() {
                                let _ = ready.send(());
                            }
                        }
                        SimpleQueryMessage::Row(row) => {
                            let sent_us: u64 = row
                                .get(3)
                                .and_then(|v| v.parse().ok())
                                .ok_or("a row without sent_us")?;
                            let now_us = started.elapsed().as_micros() as u64;
                            latencies.push(Duration::from_micros(now_us.saturating_sub(sent_us)));
                        }
                        _ => {}
                    }
                }
                Ok::<_, String>(latencies)
            }),
            is_ready,
        ));
    }
    let mut tasks = Vec::new();
    for (task, is_ready) in readers {
        is_ready
            .await
            .map_err(|_| "a subscriber did not start".to_string())?;
        tasks.push(task);
    }
    let insert = writer
        .prepare("INSERT INTO events VALUES ($1, $2)")
        .await
        .map_err(sql)?;
    for id in 0..args.writes as i64 {
        let sent_us = started.elapsed().as_micros() as i64;
        writer
            .execute(&insert, &[&id, &sent_us])
            .await
            .map_err(sql)?;
        tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
    }
    let mut samples = Vec::new();
    for task in tasks {
        let latencies = tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .map_err(|_| "a subscriber did not receive every row".to_string())?
            .map_err(|e| e.to_string())??;
        samples.extend(latencies);
    }
    Ok((samples, server.resident_mib().unwrap_or(f64::NAN)))
}
