//! The source decoders as fuzz targets see them (feature `fuzzing`).
//!
//! [`source_records`] decodes records as files, webhooks and Kafka hand them to the
//! [`Decoder`]; [`pgoutput_message`] decodes a message of a PostgreSQL replication stream and
//! reads each value it carries as every column type a `postgres-cdc` source may declare.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

use crate::postgres_cdc::{pgoutput, value};
use crate::{Decoder, Encoding, RawRecord, SourceOptions};

/// The column types a source decoding records may declare.
fn record_columns() -> Vec<DataType> {
    vec![
        DataType::Boolean,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
        DataType::Decimal128(12, 2),
        DataType::Utf8,
        DataType::Binary,
        DataType::Date32,
        DataType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
    ]
}

/// The column types a `postgres-cdc` source may declare: those, times and arrays.
fn replicated_columns() -> Vec<DataType> {
    let mut columns = record_columns();
    columns.push(DataType::Time64(TimeUnit::Microsecond));
    columns.push(DataType::List(Arc::new(Field::new(
        "item",
        DataType::Int32,
        true,
    ))));
    columns
}

/// Decodes the lines of `bytes` after its first as records of the encoding its first byte
/// picks (JSON, CSV or raw bytes); returns how many rows decoded. Panics if a record is
/// neither a row nor a bad record.
pub fn source_records(bytes: &[u8]) -> usize {
    let Some((&pick, input)) = bytes.split_first() else {
        return 0;
    };
    let (encoding, schema) = match pick % 3 {
        0 => (Encoding::Json, columns_named(record_columns())),
        1 => (Encoding::Csv, columns_named(record_columns())),
        _ => (Encoding::Bytes, columns_named(vec![DataType::Utf8])),
    };
    let decoder = Decoder::new(encoding, schema, &SourceOptions::default())
        .expect("a decoder of the declared columns");
    let records: Vec<RawRecord<'_>> = input
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(line, bytes)| RawRecord {
            bytes,
            position: line.to_string(),
        })
        .collect();
    let decoded = decoder
        .decode(&records)
        .expect("a batch of records decodes");
    assert_eq!(
        decoded.rows.num_rows() + decoded.errors.len(),
        records.len()
    );
    decoded.rows.num_rows()
}

/// Decodes `bytes` as one `pgoutput` message and reads every text value of its rows as each
/// supported column type; returns whether the message decoded.
pub fn pgoutput_message(bytes: &[u8]) -> bool {
    let Ok(message) = pgoutput::decode(bytes) else {
        return false;
    };
    let tuples = match message {
        pgoutput::Message::Insert { new, .. } => vec![new],
        pgoutput::Message::Update { old, new, .. } => old.into_iter().chain([new]).collect(),
        pgoutput::Message::Delete { old, .. } => vec![old],
        _ => Vec::new(),
    };
    let texts = tuples.iter().flatten().filter_map(|value| match value {
        pgoutput::TupleValue::Text(text) => Some(text),
        _ => None,
    });
    for text in texts {
        for data_type in replicated_columns() {
            let _ = value::parse(text, &data_type);
        }
    }
    true
}

/// A schema of one nullable column per type, named `c0`, `c1`, ….
fn columns_named(types: Vec<DataType>) -> Arc<Schema> {
    let fields: Vec<Field> = types
        .into_iter()
        .enumerate()
        .map(|(i, data_type)| Field::new(format!("c{i}"), data_type, true))
        .collect();
    Arc::new(Schema::new(fields))
}

/// Inputs for [`source_records`]: JSON objects, CSV lines and raw values, good and bad.
pub fn record_seeds() -> Vec<Vec<u8>> {
    let json = concat!(
        r#"{"c0": true, "c1": 7, "c2": -8, "c3": 9000000000, "c4": 1.5, "c5": 2e300, "c6": "12.34","#,
        r#" "c7": "text", "c8": "\\x0102", "c9": "2026-12-07", "c10": "2026-12-07 10:00:00","#,
        r#" "c11": "2026-12-07T10:00:00Z"}"#,
        "\n",
        r#"{"c1": "not a number", "c7": null}"#,
        "\n[1, 2]\n{\"c3\": 1e400}"
    );
    let csv = "t,1,2,3,1.5,2.5,12.34,text,\\x01,2026-12-07,2026-12-07 10:00:00,2026-12-07 10:00:00+00\n\"quoted, field\",,,\n";
    vec![
        [&[0u8][..], json.as_bytes()].concat(),
        [&[1u8][..], csv.as_bytes()].concat(),
        [&[2u8][..], "a line\nanother\n\u{e9}".as_bytes()].concat(),
    ]
}

/// `pgoutput` messages of every kind a source reads: a relation, then a row inserted,
/// updated, deleted, and the table truncated.
pub fn pgoutput_seeds() -> Vec<Vec<u8>> {
    let mut relation = vec![b'R'];
    relation.extend(16_385u32.to_be_bytes());
    relation.extend(b"public\0orders\0d");
    relation.extend(2u16.to_be_bytes());
    for (name, oid) in [("id", 23u32), ("note", 25)] {
        relation.push(1);
        relation.extend(name.as_bytes());
        relation.push(0);
        relation.extend(oid.to_be_bytes());
        relation.extend((-1i32).to_be_bytes());
    }
    let tuple = |values: &[Option<&str>]| {
        let mut bytes = (values.len() as u16).to_be_bytes().to_vec();
        for value in values {
            match value {
                Some(text) => {
                    bytes.push(b't');
                    bytes.extend((text.len() as u32).to_be_bytes());
                    bytes.extend(text.as_bytes());
                }
                None => bytes.push(b'n'),
            }
        }
        bytes
    };
    let with_relation = |kind: u8| {
        let mut bytes = vec![kind];
        bytes.extend(16_385u32.to_be_bytes());
        bytes
    };
    let mut insert = with_relation(b'I');
    insert.push(b'N');
    insert.extend(tuple(&[Some("1"), Some("{1,2,\"three\"}")]));
    let mut update = with_relation(b'U');
    update.push(b'O');
    update.extend(tuple(&[Some("1"), None]));
    update.push(b'N');
    update.extend(tuple(&[Some("2"), Some("2026-12-07 10:00:00.5+01")]));
    let mut delete = with_relation(b'D');
    delete.push(b'K');
    delete.extend(tuple(&[Some("-12.5e3"), None]));
    let mut truncate = vec![b'T'];
    truncate.extend(1u32.to_be_bytes());
    truncate.push(0);
    truncate.extend(16_385u32.to_be_bytes());
    vec![relation, insert, update, delete, truncate]
}
