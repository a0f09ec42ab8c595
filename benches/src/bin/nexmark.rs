//! Nexmark: how fast each query's materialized view keeps up with the generator.
//!
//! For each `--query`, starts a fresh server, creates the `nexmark` sources the query reads
//! (each over the same `--events`-event sequence, generating as fast as it can) and the
//! query's view from `benches/nexmark/`, and waits until every source has delivered all its
//! rows and the view's frontier has passed the sources' last commit. It reports events/s over
//! that time, events per CPU-second (user + system time of the whole server process, the
//! generators included), the server's peak resident memory, the updates every arrangement
//! holds at the end (`fluxion_catalog.arrangement_sizes`) and the rows the view holds.
//! `groupby` is not a Nexmark query but the keyed aggregate of the performance goals:
//! `count(*)` and `max(price)` per auction over a `datagen` source with 100,000 auctions.
//!
//! The results are printed as a Markdown table (the form `docs/benchmarks.md` quotes) and, with
//! `--json FILE`, appended to FILE as one JSON object per line, which
//! `benches/nexmark_to_docs.py` turns into the table of `docs/benchmarks.md`.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::nexmark_tables::NEXMARK_TABLES;
use fluxion_benches::BenchServer;

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// The queries to run, comma-separated: `q0` … `q22`, or `groupby`.
    #[arg(long, value_delimiter = ',', default_value = "q0")]
    query: Vec<String>,
    /// Events in the generated sequence (for `groupby`: rows).
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Dataflow worker threads of the server.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Append each result to this file as a line of JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Give up on a query after this many seconds.
    #[arg(long, default_value_t = 1800)]
    timeout_seconds: u64,
    /// Run the event-time queries that have such a form (q5, q7; `benches/nexmark/eowc/`) as
    /// `EMIT ON WINDOW CLOSE` views over sources with Flink's Nexmark watermark (`date_time`
    /// minus 4 s): each window's result once, when it closes, and only the open windows'
    /// state. Other queries run as without it.
    #[arg(long)]
    emit_on_window_close: bool,
}

/// How far the sources' watermark trails `date_time` with `--emit-on-window-close`, as in
/// Flink's Nexmark DDL.
const WATERMARK_DELAY_SECONDS: u64 = 4;

/// The `EMIT ON WINDOW CLOSE` form of query `name`, if it has one.
fn window_close_sql(name: &str) -> Option<&'static str> {
    Some(match name {
        "q5" => include_str!("../../nexmark/eowc/q5.sql"),
        "q7" => include_str!("../../nexmark/eowc/q7.sql"),
        _ => return None,
    })
}

/// The text of query `name`, from `benches/nexmark/`.
fn query_sql(name: &str) -> Option<&'static str> {
    Some(match name {
        "q0" => include_str!("../../nexmark/q0.sql"),
        "q1" => include_str!("../../nexmark/q1.sql"),
        "q2" => include_str!("../../nexmark/q2.sql"),
        "q3" => include_str!("../../nexmark/q3.sql"),
        "q4" => include_str!("../../nexmark/q4.sql"),
        "q5" => include_str!("../../nexmark/q5.sql"),
        "q6" => include_str!("../../nexmark/q6.sql"),
        "q7" => include_str!("../../nexmark/q7.sql"),
        "q8" => include_str!("../../nexmark/q8.sql"),
        "q9" => include_str!("../../nexmark/q9.sql"),
        "q10" => include_str!("../../nexmark/q10.sql"),
        "q11" => include_str!("../../nexmark/q11.sql"),
        "q12" => include_str!("../../nexmark/q12.sql"),
        "q13" => include_str!("../../nexmark/q13.sql"),
        "q14" => include_str!("../../nexmark/q14.sql"),
        "q15" => include_str!("../../nexmark/q15.sql"),
        "q16" => include_str!("../../nexmark/q16.sql"),
        "q17" => include_str!("../../nexmark/q17.sql"),
        "q18" => include_str!("../../nexmark/q18.sql"),
        "q19" => include_str!("../../nexmark/q19.sql"),
        "q20" => include_str!("../../nexmark/q20.sql"),
        "q21" => include_str!("../../nexmark/q21.sql"),
        "q22" => include_str!("../../nexmark/q22.sql"),
        "groupby" => include_str!("../../nexmark/groupby.sql"),
        _ => return None,
    })
}

/// The Nexmark tables Nexmark query `query` reads.
fn nexmark_sources_of(query: &str) -> &'static [&'static str] {
    match query {
        "q3" => &["person", "auction"],
        "q8" => &["person", "auction"],
        "q4" | "q6" | "q9" | "q20" => &["auction", "bid"],
        _ => &["bid"],
    }
}

/// The `CREATE SOURCE` statements for `query`'s sources over `events` events (with a watermark
/// trailing `date_time` by `watermark_delay_seconds` if given), and the sources with the rows
/// each will deliver.
fn sources_for(
    query: &str,
    events: u64,
    watermark_delay_seconds: Option<u64>,
) -> (String, Vec<(&'static str, u64)>) {
    if query == "groupby" {
        let ddl = format!(
            "CREATE SOURCE bids (seq BIGINT, auction BIGINT, price BIGINT) WITH ( \
               connector = 'datagen', datagen.rows.per.second = '0', \
               fields.seq.kind = 'sequence', fields.seq.start = '1', fields.seq.end = '{events}', \
               fields.auction.min = '0', fields.auction.max = '99999', fields.auction.seed = '1', \
               fields.price.min = '1', fields.price.max = '1000000', fields.price.seed = '2');"
        );
        return (ddl, vec![("bids", events)]);
    }
    let mut ddl = String::new();
    let mut used = Vec::new();
    for table in &NEXMARK_TABLES {
        if nexmark_sources_of(query).contains(&table.name) {
            ddl.push_str(&table.create_source(events, 0, watermark_delay_seconds));
            used.push((table.name, table.rows(events)));
        }
    }
    (ddl, used)
}

/// The name of the materialized view `sql` creates.
fn view_name(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let start = lower.find("create materialized view")? + "create materialized view".len();
    lower[start..]
        .split_whitespace()
        .next()
        .map(|name| name.trim_end_matches('(').to_string())
}

/// What one query's run measured.
struct Outcome {
    query: String,
    /// Whether the view was the query's `EMIT ON WINDOW CLOSE` form.
    emit_on_window_close: bool,
    events: u64,
    seconds: f64,
    cpu_seconds: f64,
    peak_resident_mib: f64,
    /// Updates held by every arrangement of the server when the view had caught up.
    arrangement_records: Option<i64>,
    view_rows: i64,
}

impl Outcome {
    fn events_per_second(&self) -> f64 {
        self.events as f64 / self.seconds
    }

    fn events_per_cpu_second(&self) -> f64 {
        self.events as f64 / self.cpu_seconds
    }

    fn json(&self, workers: usize) -> serde_json::Value {
        serde_json::json!({
            "query": self.query,
            "emit_on_window_close": self.emit_on_window_close,
            "events": self.events,
            "workers": workers,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "events_per_second": self.events_per_second(),
            "events_per_cpu_second": self.events_per_cpu_second(),
            "peak_resident_mib": self.peak_resident_mib,
            "arrangement_records": self.arrangement_records,
            "view_rows": self.view_rows,
        })
    }
}

/// Runs `query` on a fresh server and measures it.
async fn run(args: &Args, query: &str) -> Result<Outcome, String> {
    let window_close = window_close_sql(query).filter(|_| args.emit_on_window_close);
    let sql = window_close
        .or_else(|| query_sql(query))
        .ok_or_else(|| format!("unknown query {query}"))?;
    let view = view_name(sql).ok_or_else(|| format!("{query} creates no materialized view"))?;
    let delay = window_close.map(|_| WATERMARK_DELAY_SECONDS);
    let (sources, expected) = sources_for(query, args.events, delay);
    let server = BenchServer::start(&args.binary, args.workers)?;
    let client = server.connect().await?;
    let fail = |e: tokio_postgres::Error| match e.as_db_error() {
        Some(db) => format!("{query}: {} ({})", db.message(), db.code().code()),
        None => format!("{query}: {e}"),
    };
    let cpu_before = server.cpu_seconds().unwrap_or(0.0);
    let started = Instant::now();
    // Sources and view in one batch: the generators start at once, so the clock starts here.
    client
        .batch_execute(&format!("{sources}\n{sql}"))
        .await
        .map_err(fail)?;
    let deadline = started + Duration::from_secs(args.timeout_seconds);
    let mut last_report = Instant::now();
    let mut delivered_at: Option<i64> = None;
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if Instant::now() > deadline {
            return Err(format!(
                "{query}: not caught up in {} s",
                args.timeout_seconds
            ));
        }
        let status = client
            .query(
                "SELECT source_name, rows::bigint, status, last_error \
                 FROM fluxion_catalog.source_stats",
                &[],
            )
            .await
            .map_err(fail)?;
        // Commit timestamps are milliseconds of the wall clock (later only when several
        // commits share a millisecond): once every row has been delivered, the view has
        // caught up when its frontier passes the time delivery was first seen complete.
        let seen_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_millis() as i64;
        let mut done = true;
        let mut delivered = 0i64;
        for row in &status {
            let name: String = row.get(0);
            let rows: i64 = row.get(1);
            if row.get::<_, String>(2) == "failed" {
                let error: Option<String> = row.get(3);
                return Err(format!("{query}: source {name} failed: {error:?}"));
            }
            delivered += rows;
            let wanted = expected.iter().find(|(n, _)| *n == name).map(|(_, r)| *r);
            done &= wanted.is_some_and(|wanted| rows as u64 >= wanted);
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!(
                "{query}: {:.0} s, {delivered} source rows delivered",
                started.elapsed().as_secs_f64()
            );
            last_report = Instant::now();
        }
        if !done {
            continue;
        }
        let delivered_at = *delivered_at.get_or_insert(seen_at);
        let upper: Option<i64> = client
            .query_opt(
                "SELECT upper::bigint FROM fluxion_catalog.frontiers WHERE object_name = $1",
                &[&view],
            )
            .await
            .map_err(fail)?
            .and_then(|row| row.get(0));
        if upper.is_some_and(|upper| upper > delivered_at) {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = server.cpu_seconds().unwrap_or(f64::NAN) - cpu_before;
    let peak_resident_mib = server.peak_resident_mib().unwrap_or(f64::NAN);
    // A server from before `arrangement_sizes` existed (run side by side) has none to report.
    let arrangement_records: Option<i64> = client
        .query_one(
            "SELECT coalesce(sum(records), 0)::bigint FROM fluxion_catalog.arrangement_sizes",
            &[],
        )
        .await
        .ok()
        .map(|row| row.get(0));
    let view_rows: i64 = client
        .query_one(&format!("SELECT count(*) FROM {view}"), &[])
        .await
        .map_err(fail)?
        .get(0);
    Ok(Outcome {
        query: query.to_string(),
        emit_on_window_close: window_close.is_some(),
        events: args.events,
        seconds,
        cpu_seconds,
        peak_resident_mib,
        arrangement_records,
        view_rows,
    })
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    println!(
        "| query | events | seconds | events/s | CPU s | events per CPU-s | peak RSS MiB | arrangement records | view rows |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut failures = Vec::new();
    for query in &args.query {
        match run(&args, query).await {
            Ok(outcome) => {
                println!(
                    "| {}{} | {} | {:.1} | {:.0} | {:.1} | {:.0} | {:.0} | {} | {} |",
                    outcome.query,
                    if outcome.emit_on_window_close {
                        " (EOWC)"
                    } else {
                        ""
                    },
                    outcome.events,
                    outcome.seconds,
                    outcome.events_per_second(),
                    outcome.cpu_seconds,
                    outcome.events_per_cpu_second(),
                    outcome.peak_resident_mib,
                    outcome
                        .arrangement_records
                        .map_or("—".to_string(), |records| records.to_string()),
                    outcome.view_rows
                );
                if let Some(path) = &args.json {
                    let mut file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    writeln!(file, "{}", outcome.json(args.workers))
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
            }
            Err(error) => {
                println!("| {query} | {} | failed: {error} ||||||", args.events);
                failures.push(query.clone());
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("failed: {}", failures.join(", ")))
    }
}
