use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Int64Type};

use super::*;
use crate::{Format, Include};

fn context(
    format: Option<(&str, &str)>,
    key: Option<Vec<usize>>,
    include: &[&str],
) -> SourceContext {
    let include: Vec<Include> = include
        .iter()
        .map(|what| Include::parse(what, None).unwrap())
        .collect();
    let mut fields = vec![
        Field::new("id", DataType::Int64, key.is_none()),
        Field::new("name", DataType::Utf8, true),
    ];
    fields.extend(
        include
            .iter()
            .map(|i| Field::new(&i.column, super::super::metadata::data_type(i.what), true)),
    );
    let mut context = SourceContext::new(Arc::new(Schema::new(fields)));
    context.outputs[0].key = key;
    context.format = format.map(|(e, c)| Format::parse(e, c).unwrap());
    context.include = include;
    context
}

fn record(offset: i64, key: Option<&str>, value: Option<&str>) -> KafkaRecord {
    KafkaRecord {
        partition: 1,
        offset,
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        timestamp_micros: offset * 1000,
    }
}

/// Each change as (kind, ids).
fn summary(changes: &[OutputChange]) -> Vec<(&'static str, Vec<i64>)> {
    changes
        .iter()
        .map(|c| {
            let (kind, rows) = match &c.change {
                Change::Insert(rows) => ("insert", rows),
                Change::Upsert { rows, .. } => ("upsert", rows),
                Change::Delete(rows) => ("delete", rows),
                Change::Truncate => panic!("no truncates here"),
            };
            let ids = rows.column(0).as_primitive::<Int64Type>();
            (kind, ids.iter().map(|id| id.unwrap()).collect())
        })
        .collect()
}

#[test]
fn plain_values_are_inserts_and_bad_ones_are_kept_with_their_offsets() {
    let decoder =
        ChangeDecoder::new(&SourceOptions::default(), &context(None, None, &["offset"])).unwrap();
    let records = [
        record(0, None, Some(r#"{"id":1,"name":"a"}"#)),
        record(1, None, Some("not json")),
        record(2, None, None),
        record(3, None, Some(r#"{"id":2}"#)),
    ];
    let DecodedRecords {
        changes,
        errors,
        row_partitions: partitions,
    } = decoder.changes(&records).unwrap();
    assert_eq!(summary(&changes), [("insert", vec![1, 2])]);
    assert_eq!(partitions.len(), 2, "one partition per inserted row");
    let Change::Insert(rows) = &changes[0].change else {
        unreachable!()
    };
    let offsets = rows.column(2).as_primitive::<Int64Type>();
    assert_eq!(offsets.values(), &[0, 3]);
    let positions: Vec<&str> = errors.iter().map(|e| e.position.as_str()).collect();
    assert_eq!(positions, ["partition 1 offset 1", "partition 1 offset 2"]);
    assert_eq!(errors[0].raw, "not json");
}

#[test]
fn upsert_tombstones_delete_the_key_the_record_key_names() {
    let decoder = ChangeDecoder::new(
        &SourceOptions::default(),
        &context(Some(("UPSERT", "JSON")), Some(vec![0]), &["key"]),
    )
    .unwrap();
    let records = [
        record(0, Some("1"), Some(r#"{"id":1,"name":"a"}"#)),
        record(1, Some("2"), Some(r#"{"id":2,"name":"b"}"#)),
        record(2, Some(r#"{"id":1}"#), None),
        record(3, Some("2"), None),
        record(4, Some("\"3\""), None),
        record(5, Some("[1]"), None),
        record(6, None, None),
        record(7, Some("x"), None),
    ];
    let DecodedRecords {
        changes, errors, ..
    } = decoder.changes(&records).unwrap();
    assert_eq!(
        summary(&changes),
        [("upsert", vec![1, 2]), ("delete", vec![1, 2, 3])]
    );
    let Change::Delete(rows) = &changes[1].change else {
        unreachable!()
    };
    assert!(rows.column(1).is_null(0));
    assert_eq!(rows.column(2).as_binary::<i32>().value(0), br#"{"id":1}"#);
    let positions: Vec<&str> = errors.iter().map(|e| e.position.as_str()).collect();
    assert_eq!(
        positions,
        [
            "partition 1 offset 5",
            "partition 1 offset 6",
            "partition 1 offset 7"
        ]
    );
}

#[test]
fn upsert_needs_a_key_and_json() {
    let options = SourceOptions::default();
    assert!(ChangeDecoder::new(&options, &context(Some(("UPSERT", "JSON")), None, &[])).is_err());
    assert!(ChangeDecoder::new(
        &options,
        &context(Some(("UPSERT", "CSV")), Some(vec![0]), &[])
    )
    .is_err());
    assert!(ChangeDecoder::new(&options, &context(Some(("PLAIN", "AVRO")), None, &[])).is_err());
}

#[test]
fn debezium_events_become_upserts_and_deletes_of_a_keyed_output() {
    let decoder = ChangeDecoder::new(
        &SourceOptions::default(),
        &context(Some(("DEBEZIUM", "JSON")), Some(vec![0]), &[]),
    )
    .unwrap();
    let records = [
        record(
            0,
            None,
            Some(r#"{"before":null,"after":{"id":1,"name":"a"},"op":"c"}"#),
        ),
        record(
            1,
            None,
            Some(
                r#"{"schema":{},"payload":{"before":{"id":1},"after":{"id":1,"name":"b"},"op":"u"}}"#,
            ),
        ),
        record(
            2,
            None,
            Some(r#"{"before":{"id":1,"name":"b"},"after":null,"op":"d"}"#),
        ),
        record(3, None, None),
        record(4, None, Some(r#"{"after":{"id":5},"op":"x"}"#)),
        record(5, None, Some(r#"{"before":null,"after":null,"op":"d"}"#)),
        record(
            6,
            None,
            Some(r#"{"before":null,"after":{"id":6},"op":"r"}"#),
        ),
    ];
    let DecodedRecords {
        changes, errors, ..
    } = decoder.changes(&records).unwrap();
    assert_eq!(
        summary(&changes),
        [
            ("upsert", vec![1, 1]),
            ("delete", vec![1]),
            ("upsert", vec![6])
        ]
    );
    let positions: Vec<&str> = errors.iter().map(|e| e.position.as_str()).collect();
    assert_eq!(positions, ["partition 1 offset 4", "partition 1 offset 5"]);
}

#[test]
fn debezium_updates_of_an_output_without_a_key_delete_before_and_insert_after() {
    let decoder = ChangeDecoder::new(
        &SourceOptions::default(),
        &context(Some(("DEBEZIUM", "JSON")), None, &[]),
    )
    .unwrap();
    let records = [
        record(0, None, Some(r#"{"after":{"id":1,"name":"a"},"op":"c"}"#)),
        record(
            1,
            None,
            Some(r#"{"before":{"id":1,"name":"a"},"after":{"id":2,"name":"b"},"op":"u"}"#),
        ),
        record(2, None, Some(r#"{"before":{"id":2,"name":"b"},"op":"d"}"#)),
    ];
    let DecodedRecords {
        changes, errors, ..
    } = decoder.changes(&records).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        summary(&changes),
        [
            ("insert", vec![1]),
            ("delete", vec![1]),
            ("insert", vec![2]),
            ("delete", vec![2])
        ]
    );
}
