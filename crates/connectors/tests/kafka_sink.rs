//! The `kafka` sink against a real Kafka-protocol broker: `tansu` (Apache-2.0), run from
//! `$HOME/.cache/fluxion/tansu/bin/tansu` on a free port with in-memory storage, one broker
//! per test. What the sink produced is read back with rskafka's own clients.
//!
//! Pins down: every change in the topic exactly once with its time and sequence headers, a
//! delivery stopped halfway through a time completed without repeats, UPSERT records per key
//! (new values, tombstones, one partition per key), positions only from the sink's own
//! records, and clear errors for bad options or a closed port.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::sync::Arc;

use arrow::array::{Array, Int32Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use connectors::{
    check_sink_options, open_sink, ConnectorError, Encoding, Envelope, Format, SinkConnection,
    SinkSpec, SourceOptions,
};
use repr::ChangeBatch;
use rskafka::chrono::Utc;
use rskafka::record::Record;
use serde_json::Value;

#[path = "support/tansu.rs"]
mod tansu;

use tansu::{read_topic, Broker, Produced};

/// One row of a test batch: `id`, `name` and its diff.
type Row = (i32, Option<&'static str>, i64);

impl Produced {
    /// The value of header `name`, parsed as a number.
    fn header(&self, name: &str) -> u64 {
        let bytes = self.record.headers.get(name).expect("the header is set");
        std::str::from_utf8(bytes)
            .expect("an ASCII header")
            .parse()
            .expect("a decimal header")
    }

    /// The value as JSON; `None` for a tombstone.
    fn json(&self) -> Option<Value> {
        self.record
            .value
            .as_ref()
            .map(|v| serde_json::from_slice(v).expect("a JSON value"))
    }
}

/// The spec of sink `identity` over columns `id int not null, name text`.
fn spec(identity: &str, envelope: Envelope, key: Option<&str>) -> SinkSpec {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    let format = Format {
        envelope,
        encoding: Encoding::Json,
    };
    SinkSpec::new(identity.into(), "s".into(), schema, key, format).expect("a valid spec")
}

/// The options of a kafka sink producing to `topic` of `address`, and `extra`.
fn options(address: &str, topic: &str, extra: &[(&str, &str)]) -> SourceOptions {
    let mut pairs = vec![
        ("connector", "kafka"),
        ("topic", topic),
        ("properties.bootstrap.server", address),
    ];
    pairs.extend_from_slice(extra);
    SourceOptions::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

/// The changes `rows` at `time`.
fn batch(spec: &SinkSpec, time: u64, rows: &[Row]) -> ChangeBatch {
    ChangeBatch {
        time,
        rows: RecordBatch::try_new(
            spec.schema.clone(),
            vec![
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1))),
            ],
        )
        .expect("a batch"),
        diffs: rows.iter().map(|r| r.2).collect(),
    }
}

/// Opens the sink and resumes it, returning the time `resume` gave.
async fn open(spec: &SinkSpec, options: &SourceOptions) -> (SinkConnection, Option<u64>) {
    let mut sink = open_sink(spec, options).await.expect("the sink opens");
    let resumed = sink.resume().await.expect("the sink resumes");
    (sink, resumed)
}

/// `(time, diff, id, name)` of every row of `batches`, sorted.
fn expected_changes(batches: &[ChangeBatch]) -> Vec<(u64, i64, i64, Option<String>)> {
    let mut changes: Vec<_> = batches
        .iter()
        .flat_map(|batch| {
            let ids = batch.rows.column(0).as_any().downcast_ref::<Int32Array>();
            let names = batch.rows.column(1).as_any().downcast_ref::<StringArray>();
            let (ids, names) = (ids.expect("ids"), names.expect("names"));
            (0..batch.rows.num_rows()).map(move |row| {
                let name = (!names.is_null(row)).then(|| names.value(row).to_string());
                (
                    batch.time,
                    batch.diffs[row],
                    i64::from(ids.value(row)),
                    name,
                )
            })
        })
        .collect();
    changes.sort();
    changes
}

/// Checks that `produced` holds each change of the PLAIN `batches` exactly once, with a
/// time header and record timestamp matching the change's time, and sequences counting
/// 0, 1, … per time and partition.
fn assert_exactly_once(produced: &[Produced], batches: &[ChangeBatch]) {
    let mut changes = Vec::new();
    let mut sequences: BTreeMap<(i32, u64), Vec<u64>> = BTreeMap::new();
    for p in produced {
        let value = p.json().expect("PLAIN has no tombstones");
        let time = value["_timestamp"].as_u64().expect("a time");
        assert_eq!(p.header("fluxion.timestamp"), time, "{p:?}");
        assert_eq!(p.record.timestamp.timestamp_millis(), time as i64, "{p:?}");
        let sequence = p.header("fluxion.sequence");
        sequences
            .entry((p.partition, time))
            .or_default()
            .push(sequence);
        changes.push((
            time,
            value["_diff"].as_i64().expect("a diff"),
            value["id"].as_i64().expect("an id"),
            value["name"].as_str().map(str::to_string),
        ));
    }
    changes.sort();
    assert_eq!(changes, expected_changes(batches));
    for ((partition, time), sequence) in sequences {
        let counting: Vec<u64> = (0..sequence.len() as u64).collect();
        assert_eq!(sequence, counting, "partition {partition}, time {time}");
    }
}

/// The PLAIN batches at times 10 to 14, each touching every one of three partitions.
fn plain_batches(spec: &SinkSpec) -> Vec<ChangeBatch> {
    vec![
        batch(
            spec,
            10,
            &[
                (1, Some("a"), 1),
                (2, Some("b"), 1),
                (3, Some("c"), 1),
                (4, Some("d"), 1),
            ],
        ),
        batch(
            spec,
            11,
            &[(2, Some("b"), -1), (5, Some("e"), 1), (6, None, 1)],
        ),
        batch(
            spec,
            12,
            &[
                (1, Some("a"), -1),
                (7, Some("g"), 1),
                (8, Some("h"), 1),
                (9, Some("i"), 1),
            ],
        ),
        batch(
            spec,
            13,
            &[
                (10, Some("j"), 1),
                (11, Some("k"), 1),
                (3, Some("c"), -1),
                (12, None, 1),
                (13, Some("m"), 1),
            ],
        ),
        batch(
            spec,
            14,
            &[(14, Some("n"), 1), (5, Some("e"), -1), (15, Some("o"), 1)],
        ),
    ]
}

#[tokio::test]
async fn plain_changes_reach_the_topic_once_each_with_their_time_and_sequence() {
    let broker = Broker::start();
    let spec = spec("public.s/1", Envelope::Plain, None);
    let options = options(&broker.address, "changes", &[("topic.partitions", "3")]);
    let batches = &plain_batches(&spec)[..3];
    let (mut sink, resumed) = open(&spec, &options).await;
    assert_eq!(resumed, None);
    sink.deliver(&batches[..2]).await.expect("delivered");
    sink.deliver(&batches[2..]).await.expect("delivered");
    assert_eq!(sink.delivered_through(), Some(12));

    let produced = read_topic(&broker.address, "changes").await;
    let partitions: BTreeSet<i32> = produced.iter().map(|p| p.partition).collect();
    assert_eq!(partitions, BTreeSet::from([0, 1, 2]));
    assert_exactly_once(&produced, batches);
}

#[tokio::test]
async fn a_delivery_stopped_halfway_through_a_time_is_completed_without_repeats() {
    let broker = Broker::start();
    let spec = spec("public.s/1", Envelope::Plain, None);
    let options = options(&broker.address, "changes", &[("topic.partitions", "3")]);
    let batches = plain_batches(&spec);
    let (mut first, _) = open(&spec, &options).await;
    first.deliver(&batches[..3]).await.expect("delivered");
    let partial = ChangeBatch {
        time: 13,
        rows: batches[3].rows.slice(0, 2),
        diffs: batches[3].diffs[..2].to_vec(),
    };
    first.deliver(&[partial]).await.expect("delivered");
    drop(first);

    let (mut second, resumed) = open(&spec, &options).await;
    assert_eq!(resumed, Some(12), "one partition holds nothing of time 13");
    assert_eq!(second.delivered_through(), Some(11));
    let from_resumed: Vec<ChangeBatch> = batches.iter().filter(|b| b.time >= 12).cloned().collect();
    second.deliver(&from_resumed).await.expect("delivered");
    assert_eq!(second.delivered_through(), Some(14));
    drop(second);

    let (mut third, resumed) = open(&spec, &options).await;
    assert_eq!(resumed, Some(14));
    third.deliver(&batches).await.expect("delivered again");

    assert_exactly_once(&read_topic(&broker.address, "changes").await, &batches);
}

#[tokio::test]
async fn upsert_writes_each_changed_key_once_in_the_keys_own_partition() {
    let broker = Broker::start();
    broker.create_topic("upserts", 3);
    let spec = spec("public.s/1", Envelope::Upsert, Some("id"));
    let options = options(&broker.address, "upserts", &[("key", "id")]);
    let batches = [
        batch(
            &spec,
            10,
            &[
                (1, Some("a"), 1),
                (2, Some("b"), 1),
                (3, Some("c"), 1),
                (4, Some("d"), 1),
            ],
        ),
        batch(
            &spec,
            11,
            &[
                (1, Some("a"), -1),
                (1, Some("a2"), 1),
                (2, Some("b"), -1),
                (0, Some("z"), 1),
            ],
        ),
    ];
    let (mut sink, _) = open(&spec, &options).await;
    sink.deliver(&batches).await.expect("delivered");

    let produced = read_topic(&broker.address, "upserts").await;
    let mut by_key: BTreeMap<i64, Vec<&Produced>> = BTreeMap::new();
    for p in &produced {
        let key: Value =
            serde_json::from_slice(p.record.key.as_deref().expect("a key")).expect("a JSON key");
        by_key
            .entry(key["id"].as_i64().expect("an id"))
            .or_default()
            .push(p);
    }
    let names = |id: i64| -> Vec<(u64, Option<String>)> {
        by_key[&id]
            .iter()
            .map(|p| {
                let name = p
                    .json()
                    .map(|v| v["name"].as_str().expect("a name").to_string());
                (p.header("fluxion.timestamp"), name)
            })
            .collect()
    };
    assert_eq!(names(0), [(11, Some("z".into()))]);
    assert_eq!(names(1), [(10, Some("a".into())), (11, Some("a2".into()))]);
    assert_eq!(names(2), [(10, Some("b".into())), (11, None)]);
    assert_eq!(names(3), [(10, Some("c".into()))]);
    assert_eq!(names(4), [(10, Some("d".into()))]);
    for (id, records) in &by_key {
        let partitions: BTreeSet<i32> = records.iter().map(|p| p.partition).collect();
        assert_eq!(partitions.len(), 1, "key {id} in partitions {partitions:?}");
    }
    let partitions: BTreeSet<i32> = produced.iter().map(|p| p.partition).collect();
    assert!(
        partitions.len() > 1,
        "all keys in partitions {partitions:?}"
    );
}

#[tokio::test]
async fn only_the_sinks_own_last_records_give_a_position() {
    let broker = Broker::start();
    let mine = spec("public.s/1", Envelope::Plain, None);
    let options = options(&broker.address, "shared", &[]);
    let (mut sink, _) = open(&mine, &options).await;
    sink.deliver(&plain_batches(&mine)[..1])
        .await
        .expect("delivered");
    drop(sink);

    assert_eq!(open(&mine, &options).await.1, Some(10));
    let theirs = spec("public.s/2", Envelope::Plain, None);
    assert_eq!(open(&theirs, &options).await.1, None);
    let foreign = Record {
        key: None,
        value: Some(b"{}".to_vec()),
        headers: BTreeMap::new(),
        timestamp: Utc::now(),
    };
    broker.produce("shared", 0, vec![foreign]);
    assert_eq!(open(&mine, &options).await.1, None);
}

#[test]
fn bad_options_are_refused_before_connecting() {
    let spec = spec("public.s/1", Envelope::Plain, None);
    let address = "127.0.0.1:9";
    let missing_topic = SourceOptions::new([
        ("connector".to_string(), "kafka".to_string()),
        (
            "properties.bootstrap.server".to_string(),
            address.to_string(),
        ),
    ]);
    assert!(matches!(
        check_sink_options(&spec, &missing_topic),
        Err(ConnectorError::MissingOption { option, .. }) if option == "topic"
    ));
    assert!(matches!(
        check_sink_options(&spec, &options(address, "t", &[("topic.partition", "3")])),
        Err(ConnectorError::UnknownOption { option, .. }) if option == "topic.partition"
    ));
    assert!(matches!(
        check_sink_options(&spec, &options(address, "t", &[("topic.partitions", "0")])),
        Err(ConnectorError::InvalidOption { option, .. }) if option == "topic.partitions"
    ));
    check_sink_options(
        &spec,
        &options(address, "t", &[("key", "id"), ("topic.partitions", "2")]),
    )
    .expect("valid options");
}

#[tokio::test]
async fn a_closed_port_is_a_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let address = format!("127.0.0.1:{port}");
    let spec = spec("public.s/1", Envelope::Plain, None);
    let error = open_sink(&spec, &options(&address, "t", &[]))
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(&error, ConnectorError::Upstream(message) if message.contains(&address)),
        "{error}"
    );
}
