//! The differential oracle: random schemas, random views from the set issue 2 requires, and
//! random streams of writes in small transactions. After every transaction, every materialized
//! view Fluxion maintains must equal the same view in a real PostgreSQL 15 given the same
//! statements (`postgres.rs`). Each view's query is also computed from scratch by DataFusion
//! over the test's own model of the tables (never over rows read back from Fluxion); where
//! DataFusion alone differs (its own SQL semantics, such as ISO 8601 timestamp text), the
//! difference is counted in the summary line.
//!
//! A case (all of it a function of its seed, see `case.rs`): 2–3 tables (`schema.rs`), a few
//! views (`query.rs`, `subquery.rs`, `expr.rs`; some read earlier views), first rows inserted
//! before or after the views exist, then ~24 transactions of inserts, updates and deletes
//! aimed at group maxima, whole groups and NULLs (`writes.rs`): autocommit statements,
//! `BEGIN … COMMIT` blocks and rolled-back blocks, over the simple and extended protocols.
//! `runner.rs` plays a case against a server and the oracle (`oracle.rs`) and compares
//! (`compare.rs`); a failure prints the seed and every statement sent. Minimized bugs live in
//! `regressions.rs`.
//!
//! Environment:
//! - `FLUXION_ORACLE_SEED=n[,m…]` runs just those case seeds (a failure report names its seed:
//!   `FLUXION_ORACLE_SEED=n cargo test --test differential_oracle random_views`);
//! - `FLUXION_ORACLE_CASES=n` runs `n` cases (default 200) from seed `FLUXION_ORACLE_BASE_SEED`
//!   (default 1);
//! - `FLUXION_ORACLE_LANES=n` runs cases on `n` servers at once (default 2);
//! - `FLUXION_ORACLE_VIEWS` / `FLUXION_ORACLE_TRANSACTIONS` size each case (default 3 / 24);
//! - `FLUXION_ORACLE_MAX_FAILURES=n` stops after `n` failing cases (default 3).

mod support;

#[path = "differential_oracle/case.rs"]
mod case;
#[path = "differential_oracle/compare.rs"]
mod compare;
#[path = "differential_oracle/expr.rs"]
mod expr;
#[path = "differential_oracle/lateral.rs"]
mod lateral;
#[path = "differential_oracle/model.rs"]
mod model;
#[path = "differential_oracle/oracle.rs"]
mod oracle;
#[path = "differential_oracle/postgres.rs"]
mod postgres;
#[path = "differential_oracle/query.rs"]
mod query;
#[path = "differential_oracle/recursive.rs"]
mod recursive;
#[path = "differential_oracle/regressions.rs"]
mod regressions;
#[path = "differential_oracle/runner.rs"]
mod runner;
#[path = "differential_oracle/schema.rs"]
mod schema;
#[path = "differential_oracle/subquery.rs"]
mod subquery;
#[path = "differential_oracle/writes.rs"]
mod writes;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use case::{Case, CaseSize};
use oracle::Oracle;
use postgres::Postgres;
use runner::{run_case, Tally};
use support::postgres::TestPostgres;
use support::TestServer;

/// What to run, from the environment.
struct Settings {
    seeds: Vec<u64>,
    lanes: usize,
    size: CaseSize,
    max_failures: usize,
}

impl Settings {
    fn from_env() -> Settings {
        let number = |name: &str, default: u64| -> u64 {
            match std::env::var(name) {
                Ok(text) => text
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name} must be a number, not {text:?}")),
                Err(_) => default,
            }
        };
        let default_size = CaseSize::default();
        let seeds = match std::env::var("FLUXION_ORACLE_SEED") {
            Ok(list) => list
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("FLUXION_ORACLE_SEED: {s:?} is not a seed"))
                })
                .collect(),
            Err(_) => {
                let base = number("FLUXION_ORACLE_BASE_SEED", 1);
                (0..number("FLUXION_ORACLE_CASES", 200))
                    .map(|i| base + i)
                    .collect()
            }
        };
        Settings {
            seeds,
            lanes: number("FLUXION_ORACLE_LANES", 2).max(1) as usize,
            size: CaseSize {
                views: number("FLUXION_ORACLE_VIEWS", default_size.views as u64) as usize,
                transactions: number(
                    "FLUXION_ORACLE_TRANSACTIONS",
                    default_size.transactions as u64,
                ) as usize,
            },
            max_failures: number("FLUXION_ORACLE_MAX_FAILURES", 3).max(1) as usize,
        }
    }
}

/// Results shared by the lanes.
#[derive(Default)]
struct Outcome {
    cases: usize,
    tally: Tally,
    failures: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_views_equal_their_queries_recomputed_after_every_transaction() {
    let settings = Arc::new(Settings::from_env());
    let started = Instant::now();
    let queue = Arc::new(Mutex::new(
        settings.seeds.iter().copied().collect::<VecDeque<_>>(),
    ));
    let outcome = Arc::new(Mutex::new(Outcome::default()));
    let postgres = Arc::new(
        tokio::task::spawn_blocking(TestPostgres::start)
            .await
            .expect("starting PostgreSQL panicked"),
    );
    let lanes: Vec<_> = (0..settings.lanes.min(settings.seeds.len()))
        .map(|lane| {
            tokio::spawn(run_lane(
                lane,
                settings.clone(),
                queue.clone(),
                outcome.clone(),
                postgres.clone(),
            ))
        })
        .collect();
    for lane in lanes {
        lane.await.expect("a lane panicked");
    }
    let outcome = outcome.lock().unwrap();
    println!(
        "differential oracle: {} cases, {} transactions, {} view comparisons ({} of an empty view, {} rows; {} also with PostgreSQL, {} only with it, {} where the oracle alone differed; {} with rows failing) in {:.1?}",
        outcome.cases,
        outcome.tally.transactions,
        outcome.tally.comparisons,
        outcome.tally.empty,
        outcome.tally.rows,
        outcome.tally.postgres_comparisons,
        outcome.tally.postgres_only,
        outcome.tally.oracle_differs,
        outcome.tally.rows_failed,
        started.elapsed()
    );
    if !outcome.failures.is_empty() {
        panic!(
            "{} failing case(s):\n\n{}",
            outcome.failures.len(),
            outcome.failures.join("\n\n")
        );
    }
}

/// Runs cases from `queue` one after another on one server, replacing the server after a
/// failure so the next case starts clean.
async fn run_lane(
    lane: usize,
    settings: Arc<Settings>,
    queue: Arc<Mutex<VecDeque<u64>>>,
    outcome: Arc<Mutex<Outcome>>,
    postgres_server: Arc<TestPostgres>,
) {
    let oracle = Oracle::new();
    let postgres = Postgres::for_lane(&postgres_server, lane).await;
    let mut server = start_server().await;
    let mut client = server.connect().await;
    loop {
        if outcome.lock().unwrap().failures.len() >= settings.max_failures {
            return;
        }
        let Some(seed) = queue.lock().unwrap().pop_front() else {
            return;
        };
        let case = Case::generate(seed, settings.size);
        let result = run_case(&case, &client, &oracle, &postgres).await;
        let failed = {
            let mut shared = outcome.lock().unwrap();
            shared.cases += 1;
            match result {
                Ok(tally) => {
                    shared.tally.transactions += tally.transactions;
                    shared.tally.comparisons += tally.comparisons;
                    shared.tally.rows += tally.rows;
                    shared.tally.empty += tally.empty;
                    shared.tally.postgres_comparisons += tally.postgres_comparisons;
                    shared.tally.postgres_only += tally.postgres_only;
                    shared.tally.oracle_differs += tally.oracle_differs;
                    shared.tally.rows_failed += tally.rows_failed;
                    false
                }
                Err(report) => {
                    let headline: Vec<&str> = report.lines().take(3).collect();
                    eprintln!("{}\n  …(full report at the end)", headline.join("\n"));
                    shared.failures.push(report);
                    true
                }
            }
        };
        if failed {
            drop(client);
            server = start_server().await;
            client = server.connect().await;
        }
    }
}

/// A fresh server, started off the async threads (starting waits for the port).
async fn start_server() -> TestServer {
    tokio::task::spawn_blocking(TestServer::start)
        .await
        .expect("starting the server panicked")
}
