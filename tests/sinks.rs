//! Sinks through the real server: a view's changes written to files and to a table of a real
//! PostgreSQL, with the server SIGKILLed in the middle of the stream; what the target holds
//! at the end adds up to the view exactly (nothing lost, nothing twice).

mod support;

#[path = "../crates/connectors/tests/support/tansu.rs"]
mod tansu;

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::postgres::TestPostgres;
use support::query::{converge, error_code, row, sorted_rows, wait_for};
use support::sink_files::file_lines;
use support::TestServer;
use tansu::{read_topic, Broker};

/// The view the sinks deliver: per bucket of ids, how many rows and their total.
const VIEW: &str = "CREATE TABLE t (id INT PRIMARY KEY, v INT);
    CREATE MATERIALIZED VIEW buckets AS
        SELECT id % 5 AS bucket, count(*) AS n, sum(v) AS total FROM t GROUP BY id % 5;";

/// `writes` random inserts, updates and deletes of ids 1..=40, one transaction each.
async fn random_writes(client: &tokio_postgres::Client, rng: &mut StdRng, writes: usize) {
    for _ in 0..writes {
        let id = rng.random_range(1..=40);
        let v = rng.random_range(-100..=100);
        let sql = match rng.random_range(0..3) {
            0 => format!("DELETE FROM t WHERE id = {id}"),
            1 => format!("UPDATE t SET v = {v} WHERE id = {id}"),
            _ => format!("INSERT INTO t VALUES ({id}, {v}) ON CONFLICT (id) DO UPDATE SET v = {v}"),
        };
        client.batch_execute(&sql).await.expect(&sql);
    }
}

/// What PLAIN JSON changes add up to: each row (`bucket|n|total`) that is there (a row there
/// more than once, or less than not at all, fails), and how many times each (time, row)
/// change was written.
fn net_rows(changes: &[Vec<u8>]) -> (Vec<String>, BTreeMap<(u64, String), i64>) {
    let mut net: BTreeMap<String, i64> = BTreeMap::new();
    let mut written: BTreeMap<(u64, String), i64> = BTreeMap::new();
    for change in changes {
        let change: serde_json::Value = serde_json::from_slice(change).expect("a JSON change");
        let row = ["bucket", "n", "total"]
            .map(|c| match &change[c] {
                serde_json::Value::Null => "NULL".to_string(),
                value => value.to_string(),
            })
            .join("|");
        let diff = change["_diff"].as_i64().expect("a diff");
        let time = change["_timestamp"].as_u64().expect("a time");
        *net.entry(row.clone()).or_default() += diff;
        *written.entry((time, row)).or_default() += 1;
    }
    let mut rows = Vec::new();
    for (row, count) in net {
        assert!((0..=1).contains(&count), "row {row} is there {count} times");
        if count == 1 {
            rows.push(row);
        }
    }
    (rows, written)
}

/// Waits until `check` returns what the view holds.
async fn wait_until_delivered<F, Fut>(client: &tokio_postgres::Client, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let expected = sorted_rows(client, "SELECT * FROM buckets").await;
    converge("the target", &expected, Duration::from_secs(60), check).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_sink_writes_every_change_once_across_a_crash() {
    let dir = tempfile::tempdir().expect("a data directory");
    let out = tempfile::tempdir().expect("an output directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    let mut rng = StdRng::seed_from_u64(7);
    client
        .batch_execute(VIEW)
        .await
        .expect("a table and a view");
    random_writes(&client, &mut rng, 20).await;
    client
        .batch_execute(&format!(
            "CREATE SINK out FROM buckets WITH (connector = 'file', path = '{}', \
             rotate.interval = '200ms')",
            out.path().display()
        ))
        .await
        .expect("a file sink");
    random_writes(&client, &mut rng, 30).await;
    wait_for(
        &client,
        "SELECT rows_delivered > 0 AND last_timestamp IS NOT NULL \
         FROM fluxion_catalog.sink_stats WHERE sink_name = 'out'",
        "t",
        Duration::from_secs(30),
    )
    .await;
    random_writes(&client, &mut rng, 10).await;
    server.kill();
    drop(client);

    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    random_writes(&client, &mut rng, 30).await;
    wait_until_delivered(&client, || async { net_rows(&file_lines(out.path())).0 }).await;
    let (_, changes) = net_rows(&file_lines(out.path()));
    let repeated: Vec<_> = changes.iter().filter(|(_, count)| **count > 1).collect();
    assert!(repeated.is_empty(), "changes written twice: {repeated:?}");
    let stats = row(
        &client,
        "SELECT connector, from_name, failure IS NULL FROM fluxion_catalog.sink_stats",
    )
    .await;
    assert_eq!(stats, ["file", "buckets", "t"].map(|v| Some(v.to_string())));
    assert_eq!(
        sorted_rows(&client, "SHOW SINKS")
            .await
            .first()
            .map(|r| r.starts_with("out")),
        Some(true)
    );
    client
        .batch_execute("DROP SINK out")
        .await
        .expect("drop the sink");
    let gone = row(&client, "SELECT count(*) FROM fluxion_catalog.sink_stats").await;
    assert_eq!(gone, [Some("0".to_string())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_sink_upserts_the_view_exactly_across_a_crash() {
    let pg = TestPostgres::start();
    let target = pg.connect().await;
    let dir = tempfile::tempdir().expect("a data directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    let mut rng = StdRng::seed_from_u64(11);
    client
        .batch_execute(VIEW)
        .await
        .expect("a table and a view");
    random_writes(&client, &mut rng, 20).await;
    let create = format!(
        "CREATE SINK copy FROM buckets WITH (connector = 'postgres', hostname = '127.0.0.1', \
         port = '{}', username = 'postgres', database.name = 'postgres', \
         table = 'public.buckets_copy', key = 'bucket')",
        pg.port()
    );
    client
        .batch_execute(&create)
        .await
        .expect("a postgres sink");
    random_writes(&client, &mut rng, 30).await;
    let target_rows = || async { sorted_rows(&target, "SELECT * FROM buckets_copy").await };
    wait_until_delivered(&client, target_rows).await;
    random_writes(&client, &mut rng, 10).await;
    server.kill();
    drop(client);

    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    random_writes(&client, &mut rng, 30).await;
    wait_until_delivered(&client, target_rows).await;
    let progress = sorted_rows(
        &target,
        "SELECT sink, last_timestamp > 0 FROM fluxion_sink_progress",
    )
    .await;
    assert_eq!(progress.len(), 1, "{progress:?}");
    assert!(progress[0].starts_with("public.copy/"), "{progress:?}");
    assert!(progress[0].ends_with("|t"), "{progress:?}");

    // The target going away is a failure shown in sink_stats, and delivery resumes after.
    let unreachable = error_code(
        &client,
        &create
            .replace("copy FROM", "other FROM")
            .replace(&pg.port().to_string(), "1"),
    )
    .await;
    assert!(unreachable.starts_with("08001"), "{unreachable}");
    let no_key = error_code(
        &client,
        &create
            .replace("copy FROM", "keyless FROM")
            .replace(", key = 'bucket'", ""),
    )
    .await;
    assert!(no_key.starts_with("22023"), "{no_key}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_options_are_checked() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(VIEW)
        .await
        .expect("a table and a view");
    let unknown = error_code(
        &client,
        "CREATE SINK s FROM buckets WITH (connector = 'carrier-pigeon')",
    )
    .await;
    assert!(unknown.starts_with("22023"), "{unknown}");
    let no_path = error_code(
        &client,
        "CREATE SINK s FROM buckets WITH (connector = 'file')",
    )
    .await;
    assert!(no_path.starts_with("22023"), "{no_path}");
    let bad_format = error_code(
        &client,
        "CREATE SINK s FROM buckets WITH (connector = 'file', path = '/tmp/x') \
         FORMAT UPSERT ENCODE CSV",
    )
    .await;
    assert!(bad_format.starts_with("22023"), "{bad_format}");
    let missing = error_code(
        &client,
        "CREATE SINK s FROM nowhere WITH (connector = 'file', path = '/tmp/x')",
    )
    .await;
    assert!(missing.starts_with("42P01"), "{missing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_sink_writes_every_change_once_across_a_crash() {
    let broker = Broker::start();
    let dir = tempfile::tempdir().expect("a data directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    let mut rng = StdRng::seed_from_u64(13);
    client
        .batch_execute(VIEW)
        .await
        .expect("a table and a view");
    random_writes(&client, &mut rng, 20).await;
    client
        .batch_execute(&format!(
            "CREATE SINK feed FROM buckets WITH (connector = 'kafka', topic = 'buckets', \
             properties.bootstrap.server = '{}', topic.partitions = '3') \
             FORMAT PLAIN ENCODE JSON",
            broker.address
        ))
        .await
        .expect("a kafka sink");
    random_writes(&client, &mut rng, 30).await;
    let topic_rows = || async {
        let records = read_topic(&broker.address, "buckets").await;
        let values: Vec<Vec<u8>> = records
            .into_iter()
            .map(|p| p.record.value.expect("a value"))
            .collect();
        net_rows(&values).0
    };
    wait_until_delivered(&client, topic_rows).await;
    random_writes(&client, &mut rng, 10).await;
    server.kill();
    drop(client);

    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    random_writes(&client, &mut rng, 30).await;
    wait_until_delivered(&client, topic_rows).await;
    let records = read_topic(&broker.address, "buckets").await;
    let values: Vec<Vec<u8>> = records
        .iter()
        .filter_map(|p| p.record.value.clone())
        .collect();
    let (_, written) = net_rows(&values);
    let repeated: Vec<_> = written.iter().filter(|(_, count)| **count > 1).collect();
    assert!(repeated.is_empty(), "changes written twice: {repeated:?}");
    let partitions: std::collections::BTreeSet<i32> = records.iter().map(|p| p.partition).collect();
    assert_eq!(
        partitions.len(),
        3,
        "records spread over the topic's partitions"
    );
}
