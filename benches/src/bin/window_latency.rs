//! Update latency of window-function views over a large table.
//!
//! Loads `--rows` rows into `events` (`--groups` groups of equal size), then builds two
//! materialized views: the top 10 of each group by score (`row_number() … <= 10`), indexed by
//! group, and each row with the score of the row before it in id order (`lag` over the whole
//! table, one partition of `--rows` rows), indexed by id; the reads are point reads. It then times `--updates` single-row changes
//! against each, one after the other, from sending the write until a SELECT shows its effect
//! (commit, durable log, dataflow, read):
//!
//! - top 10: a row that enters a group's top at rank 1 (every rank of the group's top moves),
//!   then its deletion;
//! - lag: a row inserted between two existing ids (the next row's `lag` changes), then its
//!   deletion.
//!
//! A change that recomputed its partition would cost a sort of the group (top 10) or of the
//! whole table (lag).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::{load_series, ms, quantile, BenchServer};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Rows in the table.
    #[arg(long, default_value_t = 1_000_000)]
    rows: i64,
    /// Groups of the top-10 view (each holds rows / groups rows).
    #[arg(long, default_value_t = 100)]
    groups: i64,
    /// Sequential single-row changes to time per view (half inserts, half deletes).
    #[arg(long, default_value_t = 1_000)]
    updates: usize,
    /// Dataflow worker threads of the server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

fn sql(e: tokio_postgres::Error) -> String {
    e.to_string()
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let server = BenchServer::start(&args.binary, args.workers)?;
    let client = server.connect().await?;

    let started = Instant::now();
    client
        .batch_execute("CREATE TABLE events (id BIGINT PRIMARY KEY, grp BIGINT, score BIGINT)")
        .await
        .map_err(sql)?;
    // Ids are even, so that a row can be inserted between two; scores are pseudo-random.
    load_series(
        &client,
        "events",
        &format!(
            "value * 2, value % {}, (value * 2654435761) % 1000000",
            args.groups
        ),
        args.rows,
    )
    .await?;
    println!(
        "loaded {} rows in {} groups in {:.1} s",
        args.rows,
        args.groups,
        started.elapsed().as_secs_f64()
    );

    let top = build(
        &client,
        "top 10 per group",
        "CREATE MATERIALIZED VIEW top10 AS
            SELECT grp, id, score, rn FROM (
                SELECT grp, id, score,
                       row_number() OVER (PARTITION BY grp ORDER BY score DESC, id) AS rn
                FROM events) AS ranked
            WHERE rn <= 10;
         CREATE INDEX top10_by_group ON top10 (grp)",
    )
    .await?;
    let lag = build(
        &client,
        "lag over the whole table",
        "CREATE MATERIALIZED VIEW lagged AS
            SELECT id, score, lag(score) OVER (ORDER BY id) AS previous FROM events;
         CREATE INDEX lagged_by_id ON lagged (id)",
    )
    .await?;
    if let Some(mib) = server.resident_mib() {
        println!("server resident memory with the table and both views: {mib:.0} MiB");
    }

    let top_latencies = time_top10(&client, &args).await?;
    report("top 10 per group", &top_latencies, top);
    let lag_latencies = time_lag(&client, &args).await?;
    report("lag over the whole table", &lag_latencies, lag);
    Ok(())
}

/// Runs `ddl` and waits until the view it creates can be read; the time that took.
async fn build(client: &Client, name: &str, ddl: &str) -> Result<Duration, String> {
    let started = Instant::now();
    client.batch_execute(ddl).await.map_err(sql)?;
    let view = if ddl.contains("top10") {
        "top10"
    } else {
        "lagged"
    };
    let rows: i64 = client
        .query_one(&format!("SELECT count(*) FROM {view}"), &[])
        .await
        .map_err(sql)?
        .get(0);
    let took = started.elapsed();
    println!(
        "view {name} ({rows} rows) built in {:.1} s",
        took.as_secs_f64()
    );
    Ok(took)
}

/// Inserts rows that enter a group's top at rank 1, then deletes them; the latency of each.
async fn time_top10(client: &Client, args: &Args) -> Result<Vec<Duration>, String> {
    let insert = prepare(client, "INSERT INTO events VALUES ($1, $2, 2000000)").await?;
    let delete = prepare(client, "DELETE FROM events WHERE id = $1").await?;
    let first = prepare(client, "SELECT id FROM top10 WHERE grp = $1 AND rn = 1").await?;
    let mut latencies = Vec::with_capacity(args.updates);
    for change in 0..args.updates as i64 / 2 {
        let group = change % args.groups;
        let read = Read(&first, &group);
        let before = read.value(client).await?;
        // Odd ids are not in the table.
        let id = 2 * args.rows + 2 * change + 1;
        latencies.push(timed(client, (&insert, &[&id, &group]), &read, id).await?);
        latencies.push(timed(client, (&delete, &[&id]), &read, before).await?);
    }
    Ok(latencies)
}

/// Inserts rows between two existing ids, then deletes them; the latency of each, read from
/// the `lag` of the row after.
async fn time_lag(client: &Client, args: &Args) -> Result<Vec<Duration>, String> {
    let insert = prepare(client, "INSERT INTO events VALUES ($1, 0, $2)").await?;
    let delete = prepare(client, "DELETE FROM events WHERE id = $1").await?;
    let previous = prepare(client, "SELECT previous FROM lagged WHERE id = $1").await?;
    let mut latencies = Vec::with_capacity(args.updates);
    for change in 0..args.updates as i64 / 2 {
        // Spread over the table: the row after id `2k` is `2k + 2`.
        let k = (change * 7919) % (args.rows - 1);
        let (id, next) = (2 * k + 1, 2 * k + 2);
        let read = Read(&previous, &next);
        let before = read.value(client).await?;
        let score = 3_000_000 + change;
        latencies.push(timed(client, (&insert, &[&id, &score]), &read, score).await?);
        latencies.push(timed(client, (&delete, &[&id]), &read, before).await?);
    }
    Ok(latencies)
}

/// A point read of one value, with its parameter.
struct Read<'a>(&'a Statement, &'a i64);

impl Read<'_> {
    async fn value(&self, client: &Client) -> Result<i64, String> {
        Ok(client
            .query_one(self.0, &[self.1])
            .await
            .map_err(sql)?
            .get(0))
    }
}

/// The time from sending `write` until `read` returns (checked to be `expected`).
async fn timed(
    client: &Client,
    (write, parameters): (&Statement, &[&(dyn ToSql + Sync)]),
    read: &Read<'_>,
    expected: i64,
) -> Result<Duration, String> {
    let t0 = Instant::now();
    client.execute(write, parameters).await.map_err(sql)?;
    let now = read.value(client).await?;
    let took = t0.elapsed();
    match now == expected {
        true => Ok(took),
        false => Err(format!("the view shows {now}, expected {expected}")),
    }
}

async fn prepare(client: &Client, query: &str) -> Result<Statement, String> {
    client.prepare(query).await.map_err(sql)
}

fn report(name: &str, latencies: &[Duration], build: Duration) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    println!(
        "{name}: change → view latency over {} changes: median {}, p99 {}, max {} \
         (the build took {})",
        sorted.len(),
        ms(quantile(&sorted, 0.5)),
        ms(quantile(&sorted, 0.99)),
        ms(quantile(&sorted, 1.0)),
        ms(build),
    );
}
