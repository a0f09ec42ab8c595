//! Update latency of an eight-way join view: a fact table joined with seven dimensions.
//!
//! Loads `--rows` rows into `facts` and into each of seven dimension tables `d1` … `d7`; fact
//! `i` references row `(i * p) % rows` of each dimension (a different prime `p` each, so every
//! dimension row is referenced by exactly one fact). A materialized view joins all eight
//! tables (one row per fact) and a second one counts it, so that a read costs nothing. Then,
//! for each of the eight tables in turn, `--updates` single-row changes one after the other:
//! a row's deletion (the join loses one row) and its insertion back (the join gains it). Each
//! is timed from sending the write until the count shows it (commit, durable log, the join's
//! dataflow, read). A change that recomputed the join would cost the time the view took to
//! build.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use fluxion_benches::{load_series, ms, quantile, BenchServer};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement};

/// The multiplier of each dimension's reference (coprime with any power of ten).
const PRIMES: [i64; 7] = [7, 11, 13, 17, 19, 23, 29];

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Rows in each of the eight tables.
    #[arg(long, default_value_t = 100_000)]
    rows: i64,
    /// Sequential single-row changes to time per table (half deletes, half inserts).
    #[arg(long, default_value_t = 200)]
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
    let rows = args.rows;

    let started = Instant::now();
    let keys: Vec<String> = (1..=7).map(|j| format!("k{j} BIGINT")).collect();
    client
        .batch_execute(&format!(
            "CREATE TABLE facts (id BIGINT PRIMARY KEY, {})",
            keys.join(", ")
        ))
        .await
        .map_err(sql)?;
    let references: Vec<String> = PRIMES
        .iter()
        .map(|p| format!("(value * {p}) % {rows}"))
        .collect();
    load_series(
        &client,
        "facts",
        &format!("value, {}", references.join(", ")),
        rows,
    )
    .await?;
    for j in 1..=7 {
        client
            .batch_execute(&format!(
                "CREATE TABLE d{j} (id BIGINT PRIMARY KEY, name TEXT)"
            ))
            .await
            .map_err(sql)?;
        load_series(
            &client,
            &format!("d{j}"),
            &format!("value, 'd{j}-' || value"),
            rows,
        )
        .await?;
    }
    println!(
        "loaded 8 tables of {rows} rows in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let names: Vec<String> = (1..=7).map(|j| format!("d{j}.name AS name{j}")).collect();
    let joins: Vec<String> = (1..=7)
        .map(|j| format!("JOIN d{j} ON facts.k{j} = d{j}.id"))
        .collect();
    client
        .batch_execute(&format!(
            "CREATE MATERIALIZED VIEW star AS SELECT facts.id, {} FROM facts {};
             CREATE MATERIALIZED VIEW star_count AS SELECT count(*) AS n FROM star",
            names.join(", "),
            joins.join(" ")
        ))
        .await
        .map_err(sql)?;
    let count = client
        .prepare("SELECT n FROM star_count")
        .await
        .map_err(sql)?;
    let joined: i64 = client.query_one(&count, &[]).await.map_err(sql)?.get(0);
    let build = started.elapsed();
    println!(
        "eight-way join view ({joined} rows) built in {:.1} s",
        build.as_secs_f64()
    );
    if joined != rows {
        return Err(format!("the join holds {joined} rows, expected {rows}"));
    }
    if let Some(mib) = server.resident_mib() {
        println!("server resident memory with the tables and the views: {mib:.0} MiB");
    }

    let mut all = Vec::new();
    for table in std::iter::once("facts".to_string()).chain((1..=7).map(|j| format!("d{j}"))) {
        let latencies = time_table(&client, &table, &count, &args).await?;
        report(&table, &latencies);
        all.extend(latencies);
    }
    report("any table", &all);
    println!("(the build took {})", ms(build));
    Ok(())
}

/// Deletes rows of `table` and inserts them back, one change at a time; the latency of each.
async fn time_table(
    client: &Client,
    table: &str,
    count: &Statement,
    args: &Args,
) -> Result<Vec<Duration>, String> {
    let copy = client
        .prepare(&format!("SELECT * FROM {table} WHERE id = $1"))
        .await
        .map_err(sql)?;
    let columns = if table == "facts" { 8 } else { 2 };
    let placeholders: Vec<String> = (1..=columns).map(|i| format!("${i}")).collect();
    let insert = client
        .prepare(&format!(
            "INSERT INTO {table} VALUES ({})",
            placeholders.join(", ")
        ))
        .await
        .map_err(sql)?;
    let delete = client
        .prepare(&format!("DELETE FROM {table} WHERE id = $1"))
        .await
        .map_err(sql)?;
    let mut latencies = Vec::with_capacity(args.updates);
    for change in 0..args.updates as i64 / 2 {
        let id = (change * 7919) % args.rows;
        let row = client.query_one(&copy, &[&id]).await.map_err(sql)?;
        let values: Vec<Box<dyn ToSql + Sync>> = (0..row.len())
            .map(|i| -> Box<dyn ToSql + Sync> {
                match row.columns()[i].type_() == &Type::TEXT {
                    true => Box::new(row.get::<_, String>(i)),
                    false => Box::new(row.get::<_, i64>(i)),
                }
            })
            .collect();
        let parameters: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
        let t0 = Instant::now();
        client.execute(&delete, &[&id]).await.map_err(sql)?;
        let now: i64 = client.query_one(count, &[]).await.map_err(sql)?.get(0);
        latencies.push(t0.elapsed());
        expect(table, "delete", now, args.rows - 1)?;
        let t0 = Instant::now();
        client.execute(&insert, &parameters).await.map_err(sql)?;
        let now: i64 = client.query_one(count, &[]).await.map_err(sql)?.get(0);
        latencies.push(t0.elapsed());
        expect(table, "insert", now, args.rows)?;
    }
    Ok(latencies)
}

fn expect(table: &str, change: &str, actual: i64, expected: i64) -> Result<(), String> {
    match actual == expected {
        true => Ok(()),
        false => Err(format!(
            "after a {change} in {table} the join holds {actual} rows, expected {expected}"
        )),
    }
}

fn report(table: &str, latencies: &[Duration]) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    println!(
        "{table}: change → view latency over {} changes: median {}, p99 {}, max {}",
        sorted.len(),
        ms(quantile(&sorted, 0.5)),
        ms(quantile(&sorted, 0.99)),
        ms(quantile(&sorted, 1.0)),
    );
}
