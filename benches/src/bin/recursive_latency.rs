//! Update latency of a `WITH RECURSIVE` view: reachability in a large random graph.
//!
//! Loads `--edges` random edges over `--nodes` nodes into `edges`, builds a materialized view
//! of the nodes reachable from node 0 (`UNION`: each once, cycles converge) and a view
//! counting them (so that a read costs nothing), then performs
//! `--updates` single-edge changes one after the other: an edge from a reachable node to a
//! node outside the graph (the view gains a row), and its deletion (the view loses it). For
//! each, it measures the time from sending the write until a SELECT on the view shows it
//! (commit, durable log, the iteration re-deriving what the edge changes, read). A change
//! that recomputed the closure would cost the time the view took to build.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use fluxion_benches::{load_series, ms, quantile, BenchServer};

#[derive(Debug, Parser)]
struct Args {
    /// The server binary to benchmark.
    #[arg(long, default_value = "target/release/fluxion")]
    binary: PathBuf,
    /// Nodes of the graph.
    #[arg(long, default_value_t = 100_000)]
    nodes: i64,
    /// Edges of the graph.
    #[arg(long, default_value_t = 200_000)]
    edges: i64,
    /// Sequential single-edge changes to time (half inserts, half deletes).
    #[arg(long, default_value_t = 1_000)]
    updates: usize,
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

    let started = Instant::now();
    client
        .batch_execute("CREATE TABLE edges (id BIGINT PRIMARY KEY, src BIGINT, dst BIGINT)")
        .await
        .map_err(sql)?;
    // Pseudo-random endpoints from the edge's number (multiplicative hashing).
    let nodes = args.nodes;
    load_series(
        &client,
        "edges",
        &format!(
            "value, (value * 2654435761) % {nodes}, (value * 40503 + value / 3 * 69069) % {nodes}"
        ),
        args.edges,
    )
    .await?;
    println!(
        "loaded {} edges over {} nodes in {:.1} s",
        args.edges,
        args.nodes,
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    client
        .batch_execute(
            "CREATE MATERIALIZED VIEW reachable AS
                WITH RECURSIVE r(node) AS (
                    SELECT CAST(0 AS BIGINT)
                    UNION
                    SELECT e.dst FROM r JOIN edges e ON e.src = r.node
                ) SELECT node FROM r;
             CREATE MATERIALIZED VIEW reachable_count AS SELECT count(*) AS nodes FROM reachable",
        )
        .await
        .map_err(sql)?;
    let count = client
        .prepare("SELECT nodes FROM reachable_count")
        .await
        .map_err(sql)?;
    let reachable: i64 = client.query_one(&count, &[]).await.map_err(sql)?.get(0);
    let build = started.elapsed();
    println!(
        "view of {reachable} reachable nodes built in {:.1} s",
        build.as_secs_f64()
    );
    if let Some(mib) = server.resident_mib() {
        println!("server resident memory with the table and the view: {mib:.0} MiB");
    }

    let insert = client
        .prepare("INSERT INTO edges VALUES ($1, 0, $2)")
        .await
        .map_err(sql)?;
    let delete = client
        .prepare("DELETE FROM edges WHERE id = $1")
        .await
        .map_err(sql)?;
    let mut latencies = Vec::with_capacity(args.updates);
    for change in 0..args.updates as i64 / 2 {
        let (id, fresh_node) = (args.edges + change, args.nodes + change);
        for (statement, expected) in [(&insert, reachable + 1), (&delete, reachable)] {
            let t0 = Instant::now();
            if expected > reachable {
                client
                    .execute(statement, &[&id, &fresh_node])
                    .await
                    .map_err(sql)?;
            } else {
                client.execute(statement, &[&id]).await.map_err(sql)?;
            }
            let now: i64 = client.query_one(&count, &[]).await.map_err(sql)?.get(0);
            latencies.push(t0.elapsed());
            if now != expected {
                return Err(format!("the view holds {now} nodes, expected {expected}"));
            }
        }
    }
    latencies.sort();
    println!(
        "edge change → view latency over {} changes: median {}, p99 {}, max {} \
         (the build took {})",
        latencies.len(),
        ms(quantile(&latencies, 0.5)),
        ms(quantile(&latencies, 0.99)),
        ms(quantile(&latencies, 1.0)),
        ms(build),
    );
    Ok(())
}
