//! The crash harness: a source → view → sinks (files, PostgreSQL, Kafka) and a durable
//! subscription pipeline under load, the server SIGKILLed at random moments and restarted each time; at the end, what
//! every consumer received adds up to exactly the expected view, and no change arrived twice.
//!
//! CI runs the short form (3 kills). The long form is the same test with more kills and
//! more rows, see `docs/subscribe-and-sinks.md`:
//!
//! ```sh
//! FLUXION_CRASH_KILLS=20 cargo test --test crash_harness -- --nocapture
//! ```
//!
//! `FLUXION_CRASH_SEED` replays a run's kill moments.

mod support;

#[path = "../crates/connectors/tests/support/tansu.rs"]
mod tansu;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::postgres::TestPostgres;
use support::query::{converge, sorted_rows};
use support::sink_files::file_lines;
use support::TestServer;
use tansu::{read_topic, Broker};
use tokio_postgres::SimpleQueryMessage;

/// Rows the counter source emits per kill (at about 1000 a second).
const ROWS_PER_KILL: u64 = 3_000;

/// Buckets of the view: `counter % BUCKETS`.
const BUCKETS: u64 = 7;

/// How long every consumer may take to catch up after the last restart.
const PATIENCE: Duration = Duration::from_secs(120);

/// One change a consumer received: time, diff, row (`bucket|n|total`).
type Change = (u64, i64, String);

/// The view's rows once the counter has emitted `1..=rows`.
fn expected_rows(rows: u64) -> Vec<String> {
    let mut buckets: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for value in 1..=rows {
        let bucket = buckets.entry(value % BUCKETS).or_default();
        bucket.0 += 1;
        bucket.1 += value;
    }
    buckets
        .into_iter()
        .map(|(bucket, (n, total))| format!("{bucket}|{n}|{total}"))
        .collect()
}

/// What `changes` add up to; fails if a row ends up there more than once or less than not
/// at all, or if the same change (time and row) arrived twice.
fn net(consumer: &str, changes: &[Change]) -> Vec<String> {
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    let mut seen: BTreeMap<(u64, &str), usize> = BTreeMap::new();
    for (time, diff, row) in changes {
        *counts.entry(row).or_default() += diff;
        let times = seen.entry((*time, row)).or_default();
        *times += 1;
        assert_eq!(*times, 1, "{consumer} received {row} at {time} twice");
    }
    counts
        .into_iter()
        .filter_map(|(row, count)| {
            assert!(
                (0..=1).contains(&count),
                "{consumer}: row {row} is there {count} times"
            );
            (count == 1).then(|| row.to_string())
        })
        .collect()
}

/// A PLAIN JSON change as a harness change.
fn json_change(change: &[u8]) -> Change {
    let change: serde_json::Value = serde_json::from_slice(change).expect("a JSON change");
    let row = ["bucket", "n", "total"]
        .map(|column| change[column].to_string())
        .join("|");
    (
        change["_timestamp"].as_u64().expect("a time"),
        change["_diff"].as_i64().expect("a diff"),
        row,
    )
}

/// The changes in a Kafka sink's topic.
async fn topic_changes(broker: &Broker, topic: &str) -> Vec<Change> {
    read_topic(&broker.address, topic)
        .await
        .iter()
        .filter_map(|p| p.record.value.as_deref().map(json_change))
        .collect()
}

/// The changes in the finished files of a file sink.
fn file_changes(dir: &Path) -> Vec<Change> {
    file_lines(dir)
        .iter()
        .map(|line| json_change(line))
        .collect()
}

/// A durable subscriber: reads `feed` through a cursor (whole timestamps per FETCH), and
/// after any failure reconnects to wherever the server now listens and resumes `AS OF` the
/// last timestamp it holds + 1.
async fn subscribe_forever(address: Arc<Mutex<String>>, received: Arc<Mutex<Vec<Change>>>) {
    loop {
        let connection_string = address.lock().expect("the address").clone();
        let last = received
            .lock()
            .expect("the changes")
            .iter()
            .map(|c| c.0)
            .max();
        let _ = follow(&connection_string, last, &received).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn follow(
    connection_string: &str,
    last: Option<u64>,
    received: &Mutex<Vec<Change>>,
) -> Result<(), tokio_postgres::Error> {
    let (client, connection) =
        tokio_postgres::connect(connection_string, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let start = last.map_or(String::new(), |t| {
        format!(" WITH (SNAPSHOT = false) AS OF {}", t + 1)
    });
    client
        .batch_execute(&format!(
            "BEGIN; DECLARE c CURSOR FOR SUBSCRIBE TO feed{start}"
        ))
        .await?;
    loop {
        let messages = client
            .simple_query("FETCH ALL c WITH (timeout = '500ms')")
            .await?;
        let changes: Vec<Change> = messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some((
                    row.get(0)?.parse().ok()?,
                    row.get(1)?.parse().ok()?,
                    (2..5)
                        .map(|i| row.get(i).unwrap_or("NULL"))
                        .collect::<Vec<_>>()
                        .join("|"),
                )),
                _ => None,
            })
            .collect();
        received.lock().expect("the changes").extend(changes);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_consumer_gets_every_change_once_through_random_kills() {
    let kills: u64 = std::env::var("FLUXION_CRASH_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("FLUXION_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("crash harness: {kills} kills, seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let total_rows = kills.max(1) * ROWS_PER_KILL;
    let pg = TestPostgres::start();
    let broker = Broker::start();
    let data = tempfile::tempdir().expect("a data directory");
    let out = tempfile::tempdir().expect("a sink directory");
    let mut server = TestServer::start_in(data.path());
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE ticks WITH (connector = 'counter', tick = '1ms', max = '{total_rows}');
             CREATE MATERIALIZED VIEW counts AS
                 SELECT counter % {BUCKETS} AS bucket, count(*) AS n, sum(counter) AS total
                 FROM ticks GROUP BY counter % {BUCKETS};
             CREATE SINK files FROM counts WITH (connector = 'file', path = '{}',
                 rotate.interval = '300ms');
             CREATE SINK copy FROM counts WITH (connector = 'postgres', hostname = '127.0.0.1',
                 port = '{}', username = 'postgres', database.name = 'postgres',
                 table = 'counts_copy', key = 'bucket');
             CREATE SINK topic FROM counts WITH (connector = 'kafka', topic = 'counts',
                 properties.bootstrap.server = '{}', topic.partitions = '3');
             CREATE SUBSCRIPTION feed FROM counts;",
            out.path().display(),
            pg.port(),
            broker.address
        ))
        .await
        .expect("the pipeline");
    drop(client);
    let address = Arc::new(Mutex::new(server.connection_string()));
    let received = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tokio::spawn(subscribe_forever(address.clone(), received.clone()));

    for kill in 1..=kills {
        let wait = Duration::from_millis(rng.random_range(300..2_500));
        tokio::time::sleep(wait).await;
        server.kill();
        println!("kill {kill}/{kills} after {wait:?}");
        server = TestServer::start_in(data.path());
        *address.lock().expect("the address") = server.connection_string();
    }

    let client = server.connect().await;
    let expected = expected_rows(total_rows);
    converge("the view", &expected, PATIENCE, || {
        sorted_rows(&client, "SELECT * FROM counts")
    })
    .await;
    converge("the file sink", &expected, PATIENCE, || async {
        net("the file sink", &file_changes(out.path()))
    })
    .await;
    let target = pg.connect().await;
    converge("the postgres sink", &expected, PATIENCE, || {
        sorted_rows(&target, "SELECT bucket, n, total FROM counts_copy")
    })
    .await;
    converge("the kafka sink", &expected, PATIENCE, || async {
        net("the kafka sink", &topic_changes(&broker, "counts").await)
    })
    .await;
    converge("the subscriber", &expected, PATIENCE, || async {
        net("the subscriber", &received.lock().expect("the changes"))
    })
    .await;
    subscriber.abort();
    println!(
        "crash harness passed: {kills} kills, {total_rows} rows, {} file changes, {} subscribed changes",
        file_changes(out.path()).len(),
        received.lock().expect("the changes").len()
    );
}
