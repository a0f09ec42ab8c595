//! Kafka sources through the real server, against a real Kafka-protocol broker (tansu): all
//! partitions of a topic, bad records kept, a SIGKILL mid-stream resumed with nothing lost or
//! repeated, and FORMAT UPSERT folding updates and tombstones.

mod support;

#[path = "../crates/connectors/tests/support/tansu.rs"]
mod tansu;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rskafka::chrono::Utc;
use rskafka::record::Record;
use support::query::{row, wait_for};
use support::TestServer;
use tansu::Broker;

fn record(key: Option<&str>, value: Option<&str>) -> Record {
    Record {
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        headers: BTreeMap::new(),
        timestamp: Utc::now(),
    }
}

/// Produces ids `from..=to` as JSON over 3 partitions (id % 3), one request per 100 ids, every
/// tenth value malformed.
fn produce_ids(broker: &Broker, from: u64, to: u64) {
    for start in (from..=to).step_by(100) {
        for partition in 0..3u64 {
            let records = (start..=(start + 99).min(to))
                .filter(|id| id % 3 == partition)
                .map(|id| {
                    let value = if id % 10 == 0 {
                        format!("{{\"id\": {id}, oops")
                    } else {
                        format!("{{\"id\": {id}, \"name\": \"n{id}\"}}")
                    };
                    record(None, Some(&value))
                })
                .collect();
            broker.produce("clicks", partition as i32, records);
        }
    }
}

/// count, distinct ids and sum of the good ids among `1..=n`.
fn expected(n: u64) -> [Option<String>; 3] {
    let good: Vec<u64> = (1..=n).filter(|id| id % 10 != 0).collect();
    [
        Some(good.len().to_string()),
        Some(good.len().to_string()),
        Some(good.iter().sum::<u64>().to_string()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_read_across_a_crash_arrives_exactly_once() {
    let broker = Broker::start();
    broker.create_topic("clicks", 3);
    produce_ids(&broker, 1, 6_000);
    let data = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(data.path());
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE clicks (id bigint NOT NULL, name text)
               WITH (connector = 'kafka', topic = 'clicks',
                     properties.bootstrap.server = '{}')
               FORMAT PLAIN ENCODE JSON INCLUDE partition, offset AS kafka_offset;
             CREATE MATERIALIZED VIEW totals AS
               SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS id_sum FROM clicks;",
            broker.address
        ))
        .await
        .expect("source and view");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n: u64 = row(&client, "SELECT n FROM totals").await[0]
            .as_deref()
            .unwrap_or("0")
            .parse()
            .expect("a count");
        if n > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "nothing arrived from kafka");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill();
    produce_ids(&broker, 6_001, 9_000);
    let server = TestServer::start_in(data.path());
    let client = server.connect().await;
    let [count, _, _] = expected(9_000);
    wait_for(
        &client,
        "SELECT n FROM totals",
        count.as_deref().unwrap_or_default(),
        Duration::from_secs(120),
    )
    .await;
    assert_eq!(
        row(&client, "SELECT n, ids, id_sum FROM totals").await,
        expected(9_000)
    );
    assert_eq!(
        row(
            &client,
            "SELECT count(*), count(DISTINCT _partition::text || '/' || kafka_offset::text), \
             min(_partition), max(_partition) FROM clicks"
        )
        .await,
        [count.clone(), count, Some("0".into()), Some("2".into())]
    );
    assert_eq!(
        row(
            &client,
            "SELECT count(*), count(DISTINCT position) FROM fluxion_catalog.source_errors \
             WHERE source = 'clicks'"
        )
        .await,
        [Some("900".into()), Some("900".into())],
        "each malformed record kept once"
    );
    wait_for(
        &client,
        "SELECT lag FROM fluxion_catalog.source_stats WHERE source_name = 'clicks'",
        "0",
        Duration::from_secs(30),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upsert_keeps_the_latest_value_per_key_and_tombstones_delete() {
    let broker = Broker::start();
    broker.create_topic("users", 1);
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE users (id bigint PRIMARY KEY, name text)
               WITH (connector = 'kafka', topic = 'users',
                     properties.bootstrap.server = '{}')
               FORMAT UPSERT ENCODE JSON;
             CREATE MATERIALIZED VIEW user_count AS SELECT count(*) AS n FROM users;",
            broker.address
        ))
        .await
        .expect("source and view");
    let mut model: BTreeMap<u64, String> = BTreeMap::new();
    let mut records = Vec::new();
    for round in 0..4u64 {
        for id in 1..=50u64 {
            let key = format!("{{\"id\": {id}}}");
            if (id + round) % 7 == 0 {
                records.push(record(Some(&key), None));
                model.remove(&id);
            } else {
                let name = format!("u{id}r{round}");
                let value = format!("{{\"id\": {id}, \"name\": \"{name}\"}}");
                records.push(record(Some(&key), Some(&value)));
                model.insert(id, name);
            }
        }
    }
    broker.produce("users", 0, records);
    wait_for(
        &client,
        "SELECT lag FROM fluxion_catalog.source_stats WHERE source_name = 'users'",
        "0",
        Duration::from_secs(60),
    )
    .await;
    wait_for(
        &client,
        "SELECT n FROM user_count",
        &model.len().to_string(),
        Duration::from_secs(30),
    )
    .await;
    let rows = client
        .simple_query("SELECT id, name FROM users ORDER BY id")
        .await
        .expect("users");
    let found: Vec<(u64, String)> = rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some((
                r.get(0).unwrap_or("0").parse().expect("an id"),
                r.get(1).unwrap_or_default().to_string(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(found, model.into_iter().collect::<Vec<_>>());
}
