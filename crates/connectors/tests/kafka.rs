//! The `kafka` connector against a real Kafka-protocol broker: `tansu` (Apache-2.0), run
//! from `$HOME/.cache/fluxion/tansu/bin/tansu` on a free port with in-memory storage, one
//! broker per test. Topics are created and records produced with rskafka's own clients.
//!
//! Pins down: every partition read, bad records kept with their partition and offset,
//! resuming from any batch's position without loss or repeats, the startup modes, UPSERT
//! and DEBEZIUM changes folded to the right final state, the INCLUDE columns, lag falling to
//! zero, and clear errors for an unknown topic or a closed port.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Field, Int32Type, Int64Type, Schema, TimeUnit, TimestampMicrosecondType,
};
use connectors::{
    open_source, BadRecord, Change, ConnectorError, Format, Include, OpenedSource, SourceBatch,
    SourceContext, SourceOptions, SourceReader,
};
use rskafka::chrono::{TimeZone, Utc};
use rskafka::record::Record;

#[path = "support/tansu.rs"]
mod tansu;

use tansu::Broker;

/// A port nobody listens on.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The options of a kafka source reading `topic` of `broker`, and `extra`.
fn options(broker: &Broker, topic: &str, extra: &[(&str, &str)]) -> SourceOptions {
    let mut pairs = vec![
        ("connector".to_string(), "kafka".to_string()),
        ("topic".to_string(), topic.to_string()),
        (
            "properties.bootstrap.server".to_string(),
            broker.address.clone(),
        ),
    ];
    pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    SourceOptions::new(pairs)
}

fn record(key: Option<&str>, value: Option<&str>) -> Record {
    Record {
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        headers: BTreeMap::new(),
        timestamp: Utc::now(),
    }
}

/// A context of columns `id bigint, name text` (id the key if `keyed`), then the includes.
fn context(
    format: Option<(&str, &str)>,
    keyed: bool,
    include: &[(&str, &str)],
    resume: Option<String>,
) -> SourceContext {
    let include: Vec<Include> = include
        .iter()
        .map(|(what, column)| Include::parse(what, Some(column)).unwrap())
        .collect();
    let mut fields = vec![
        Field::new("id", DataType::Int64, !keyed),
        Field::new("name", DataType::Utf8, true),
    ];
    for i in &include {
        let data_type = match i.column.as_str() {
            "k" => DataType::Binary,
            "p" => DataType::Int32,
            "o" => DataType::Int64,
            _ => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        };
        fields.push(Field::new(&i.column, data_type, true));
    }
    let mut context = SourceContext::new(Arc::new(Schema::new(fields)));
    context.outputs[0].key = keyed.then(|| vec![0]);
    context.format = format.map(|(e, c)| Format::parse(e, c).unwrap());
    context.include = include;
    context.resume = resume;
    context
}

fn open(options: &SourceOptions, context: SourceContext) -> Box<dyn SourceReader> {
    match open_source(options, context).expect("the source opens") {
        OpenedSource::Reader(reader) => reader,
        other => panic!("not a reader: {other:?}"),
    }
}

/// Batches until one is empty with no lag left (the source has caught up).
fn read_until_caught_up(reader: &mut dyn SourceReader) -> Vec<SourceBatch> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut batches = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "the source did not catch up: last batch {:?}",
            batches
                .last()
                .map(|b: &SourceBatch| (&b.position, b.lag, b.row_count()))
        );
        let batch = reader.next_batch().expect("a batch").expect("not ended");
        let is_idle = batch.changes.is_empty() && batch.errors.is_empty();
        let lag = batch.lag;
        batches.push(batch);
        if is_idle && lag == Some(0) {
            return batches;
        }
    }
}

/// The `id` column of `rows`.
fn ids(rows: &RecordBatch) -> Vec<i64> {
    rows.column(0)
        .as_primitive::<Int64Type>()
        .iter()
        .map(|id| id.expect("an id"))
        .collect()
}

/// The ids inserted by `batches`, in order.
fn inserted_ids(batches: &[SourceBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| &b.changes)
        .flat_map(|c| match &c.change {
            Change::Insert(rows) => ids(rows),
            other => panic!("not an insert: {other:?}"),
        })
        .collect()
}

fn errors(batches: &[SourceBatch]) -> Vec<BadRecord> {
    batches.iter().flat_map(|b| b.errors.clone()).collect()
}

/// Folds keyed changes into the current row per key: id → name.
fn fold(batches: &[SourceBatch], state: &mut BTreeMap<i64, Option<String>>) {
    for change in batches.iter().flat_map(|b| &b.changes) {
        match &change.change {
            Change::Insert(rows) | Change::Upsert { rows, .. } => {
                let names = rows.column(1).as_string::<i32>();
                for (i, id) in ids(rows).into_iter().enumerate() {
                    state.insert(id, names.is_valid(i).then(|| names.value(i).to_string()));
                }
            }
            Change::Delete(rows) => {
                for id in ids(rows) {
                    state.remove(&id);
                }
            }
            Change::Truncate => state.clear(),
        }
    }
}

/// Produces ids `from..to` as JSON spread over 3 partitions (id % 3), every tenth value
/// malformed; returns the good ids and the (partition, offset) of each bad one.
fn produce_wave(
    broker: &Broker,
    topic: &str,
    from: i64,
    to: i64,
    next_offsets: &mut [i64; 3],
) -> (BTreeSet<i64>, BTreeSet<String>) {
    let mut good = BTreeSet::new();
    let mut bad = BTreeSet::new();
    for (partition, next_offset) in (0..3).zip(next_offsets.iter_mut()) {
        let mut records = Vec::new();
        for id in (from..to).filter(|id| id % 3 == i64::from(partition)) {
            let offset = *next_offset;
            *next_offset += 1;
            if id % 10 == 7 {
                records.push(record(None, Some(&format!("{{\"id\": {id}, oops"))));
                bad.insert(format!("partition {partition} offset {offset}"));
            } else {
                records.push(record(
                    None,
                    Some(&format!(r#"{{"id":{id},"name":"n{id}"}}"#)),
                ));
                good.insert(id);
            }
        }
        broker.produce(topic, partition, records);
    }
    (good, bad)
}

#[test]
fn plain_json_over_three_partitions_keeps_bad_records_and_resumes_from_every_position() {
    let broker = Broker::start();
    broker.create_topic("clicks", 3);
    let options = || options(&broker, "clicks", &[]);
    let mut reader = open(&options(), context(None, false, &[], None));
    let mut next_offsets = [0; 3];
    let mut expected_good = BTreeSet::new();
    let mut expected_bad = BTreeSet::new();
    let mut batches = Vec::new();
    for wave in 0..3 {
        let (good, bad) = produce_wave(
            &broker,
            "clicks",
            wave * 100,
            (wave + 1) * 100,
            &mut next_offsets,
        );
        expected_good.extend(good);
        expected_bad.extend(bad);
        batches.extend(read_until_caught_up(reader.as_mut()));
    }
    let read = inserted_ids(&batches);
    assert_eq!(read.len(), 270, "every good record once");
    assert_eq!(read.iter().copied().collect::<BTreeSet<_>>(), expected_good);
    let bad = errors(&batches);
    assert_eq!(bad.len(), 30);
    let bad_positions: BTreeSet<String> = bad.iter().map(|e| e.position.clone()).collect();
    assert_eq!(bad_positions, expected_bad);
    assert!(bad
        .iter()
        .all(|e| e.raw.contains("oops") && e.error.contains("JSON")));
    let last = batches.last().unwrap();
    assert_eq!(
        last.position,
        format!(
            r#"{{"partitions":{{"0":{},"1":{},"2":{}}}}}"#,
            next_offsets[0], next_offsets[1], next_offsets[2]
        )
    );
    // Reopened after any batch, the source reads exactly what came after it.
    // (Each distinct position once: idle batches repeat the one before them.)
    for (i, batch) in batches.iter().enumerate() {
        if i > 0 && batches[i - 1].position == batch.position {
            continue;
        }
        let mut resumed = open(
            &options(),
            context(None, false, &[], Some(batch.position.clone())),
        );
        let rest = inserted_ids(&read_until_caught_up(resumed.as_mut()));
        let mut expected: Vec<i64> = inserted_ids(&batches[i + 1..]);
        let mut rest_sorted = rest.clone();
        rest_sorted.sort();
        expected.sort();
        assert_eq!(rest_sorted, expected, "resumed after batch {i}");
    }
}

#[test]
fn startup_modes_choose_where_a_fresh_source_starts_and_a_position_overrides_them() {
    let broker = Broker::start();
    broker.create_topic("events", 2);
    // One record per produce request: tansu 0.6 answers a fetch from an offset inside a
    // record batch with nothing (Kafka returns the batch), so every offset starts one here.
    for partition in 0..2 {
        for i in 0..10 {
            let id = partition * 100 + i;
            let value = format!(r#"{{"id":{id}}}"#);
            broker.produce("events", partition, vec![record(None, Some(&value))]);
        }
    }
    let read = |extra: &[(&str, &str)], resume: Option<String>| {
        let mut reader = open(
            &options(&broker, "events", extra),
            context(None, false, &[], resume),
        );
        let mut ids = inserted_ids(&read_until_caught_up(reader.as_mut()));
        ids.sort();
        (ids, reader)
    };
    let (earliest, _) = read(&[("scan.startup.mode", "earliest")], None);
    assert_eq!(earliest.len(), 20);
    let (latest, mut reader) = read(&[("scan.startup.mode", "latest")], None);
    assert!(latest.is_empty());
    broker.produce("events", 1, vec![record(None, Some(r#"{"id":110}"#))]);
    assert_eq!(
        inserted_ids(&read_until_caught_up(reader.as_mut())),
        vec![110]
    );
    let (from_offsets, _) = read(
        &[
            ("scan.startup.mode", "offset"),
            ("scan.startup.specific.offsets", "0:5,1:8"),
        ],
        None,
    );
    assert_eq!(from_offsets, vec![5, 6, 7, 8, 9, 108, 109, 110]);
    let (resumed, _) = read(
        &[("scan.startup.mode", "latest")],
        Some(r#"{"partitions":{"0":9,"1":10}}"#.into()),
    );
    assert_eq!(resumed, vec![9, 110]);
}

#[test]
fn upsert_values_and_tombstones_fold_to_the_latest_row_per_key() {
    let broker = Broker::start();
    broker.create_topic("users", 3);
    let mut model: BTreeMap<i64, Option<String>> = BTreeMap::new();
    let mut per_partition: [Vec<Record>; 3] = Default::default();
    for round in 0..4 {
        for id in 0..30i64 {
            let partition = (id % 3) as usize;
            let is_tombstone = (id + round) % 4 == 0;
            let key = if id % 2 == 0 {
                format!(r#"{{"id":{id}}}"#)
            } else {
                id.to_string()
            };
            if is_tombstone {
                per_partition[partition].push(record(Some(&key), None));
                model.remove(&id);
            } else {
                let name = format!("v{round}-{id}");
                let value = format!(r#"{{"id":{id},"name":"{name}"}}"#);
                per_partition[partition].push(record(Some(&key), Some(&value)));
                model.insert(id, Some(name));
            }
        }
    }
    for (partition, records) in per_partition.into_iter().enumerate() {
        broker.produce("users", partition as i32, records);
    }
    broker.produce("users", 0, vec![record(Some("[not a key]"), None)]);
    let mut reader = open(
        &options(&broker, "users", &[]),
        context(Some(("UPSERT", "JSON")), true, &[("key", "k")], None),
    );
    let batches = read_until_caught_up(reader.as_mut());
    let mut state = BTreeMap::new();
    fold(&batches, &mut state);
    assert_eq!(state, model);
    let bad = errors(&batches);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].position, "partition 0 offset 40");
    assert!(batches
        .iter()
        .flat_map(|b| &b.changes)
        .any(|c| matches!(c.change, Change::Delete(_))));
}

#[test]
fn debezium_creates_updates_and_deletes_fold_to_the_upstream_table() {
    let broker = Broker::start();
    broker.create_topic("orders", 1);
    let event = |op: &str, before: &str, after: &str| {
        format!(r#"{{"schema":{{}},"payload":{{"before":{before},"after":{after},"op":"{op}"}}}}"#)
    };
    let values = [
        Some(event("r", "null", r#"{"id":1,"name":"a"}"#)),
        Some(event("c", "null", r#"{"id":2,"name":"b"}"#)),
        Some(event("c", "null", r#"{"id":3,"name":"c"}"#)),
        Some(event(
            "u",
            r#"{"id":1,"name":"a"}"#,
            r#"{"id":1,"name":"a2"}"#,
        )),
        Some(event("d", r#"{"id":2,"name":"b"}"#, "null")),
        None,
        Some(r#"{"before":null,"after":{"id":4,"name":"d"},"op":"c"}"#.to_string()),
        Some(event("t", "null", "null")),
    ];
    broker.produce(
        "orders",
        0,
        values
            .iter()
            .map(|v| record(Some("k"), v.as_deref()))
            .collect(),
    );
    let mut reader = open(
        &options(&broker, "orders", &[]),
        context(Some(("DEBEZIUM", "JSON")), true, &[], None),
    );
    let batches = read_until_caught_up(reader.as_mut());
    let mut state = BTreeMap::new();
    fold(&batches, &mut state);
    let expected: BTreeMap<i64, Option<String>> = [(1, "a2"), (3, "c"), (4, "d")]
        .into_iter()
        .map(|(id, name)| (id, Some(name.to_string())))
        .collect();
    assert_eq!(state, expected);
    let bad = errors(&batches);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].position, "partition 0 offset 7");
}

#[test]
fn include_columns_carry_key_partition_offset_and_timestamp() {
    let broker = Broker::start();
    broker.create_topic("meta", 2);
    let at = Utc.timestamp_millis_opt(1_700_000_000_123).unwrap();
    let mut keyed = record(Some("user-7"), Some(r#"{"id":7}"#));
    keyed.timestamp = at;
    broker.produce("meta", 0, vec![record(None, Some(r#"{"id":1}"#))]);
    broker.produce("meta", 1, vec![record(None, Some(r#"{"id":2}"#)), keyed]);
    let includes = [
        ("key", "k"),
        ("partition", "p"),
        ("offset", "o"),
        ("timestamp", "ts"),
    ];
    let mut reader = open(
        &options(&broker, "meta", &[]),
        context(None, false, &includes, None),
    );
    let batches = read_until_caught_up(reader.as_mut());
    let mut rows = Vec::new();
    for change in batches.iter().flat_map(|b| &b.changes) {
        let Change::Insert(batch) = &change.change else {
            panic!("not an insert")
        };
        assert_eq!(batch.num_columns(), 6);
        let keys = batch.column(2).as_binary::<i32>();
        let partitions = batch.column(3).as_primitive::<Int32Type>();
        let offsets = batch.column(4).as_primitive::<Int64Type>();
        let times = batch.column(5).as_primitive::<TimestampMicrosecondType>();
        for (i, id) in ids(batch).into_iter().enumerate() {
            let key = keys.is_valid(i).then(|| keys.value(i).to_vec());
            rows.push((
                id,
                key,
                partitions.value(i),
                offsets.value(i),
                times.value(i),
            ));
        }
    }
    rows.sort();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        (rows[0].0, rows[0].1.clone(), rows[0].2, rows[0].3),
        (1, None, 0, 0)
    );
    assert_eq!((rows[1].0, rows[1].2, rows[1].3), (2, 1, 0));
    assert_eq!(
        rows[2],
        (7, Some(b"user-7".to_vec()), 1, 1, 1_700_000_000_123_000)
    );
    assert!(rows[0].4 > 1_700_000_000_123_000, "a recent timestamp");
}

#[test]
fn lag_falls_to_zero_once_the_source_has_caught_up() {
    let broker = Broker::start();
    broker.create_topic("bulk", 3);
    for partition in 0..3 {
        let records = (0..5_000)
            .map(|i| record(None, Some(&format!(r#"{{"id":{i}}}"#))))
            .collect();
        broker.produce("bulk", partition, records);
    }
    let mut reader = open(
        &options(&broker, "bulk", &[]),
        context(None, false, &[], None),
    );
    let batches = read_until_caught_up(reader.as_mut());
    let lags: Vec<u64> = batches.iter().map(|b| b.lag.expect("a lag")).collect();
    assert!(batches[0].row_count() <= 10_000);
    assert!(
        lags[0] >= 5_000,
        "the first batch leaves records behind: {lags:?}"
    );
    assert!(lags.windows(2).all(|w| w[1] <= w[0]), "{lags:?}");
    assert_eq!(*lags.last().unwrap(), 0);
    assert_eq!(inserted_ids(&batches).len(), 15_000);
}

#[test]
fn opening_fails_clearly_for_an_unknown_topic_or_a_closed_port() {
    let broker = Broker::start();
    let failure = |options: SourceOptions| {
        let started = Instant::now();
        let error =
            open_source(&options, context(None, false, &[], None)).expect_err("opening fails");
        assert!(started.elapsed() < Duration::from_secs(15), "fails fast");
        error
    };
    let error = failure(options(&broker, "nope", &[]));
    assert!(
        matches!(&error, ConnectorError::Upstream(m) if m.contains("\"nope\" does not exist")),
        "{error}"
    );
    let closed = SourceOptions::new([
        ("connector".to_string(), "kafka".to_string()),
        ("topic".to_string(), "t".to_string()),
        (
            "properties.bootstrap.server".to_string(),
            format!("127.0.0.1:{}", free_port()),
        ),
    ]);
    let error = failure(closed);
    assert!(
        matches!(&error, ConnectorError::Upstream(m) if m.contains("127.0.0.1")),
        "{error}"
    );
    let error = failure(options(&broker, "t", &[("scan.startup.mod", "latest")]));
    assert!(
        matches!(error, ConnectorError::UnknownOption { .. }),
        "{error}"
    );
}
