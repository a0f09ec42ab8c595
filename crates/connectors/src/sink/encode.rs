//! A closed time's changes as a sink writes them, per `FORMAT … ENCODE …`:
//!
//! - `PLAIN ENCODE JSON`: one object per change: `_timestamp`, `_diff`, then the columns;
//! - `PLAIN ENCODE CSV`: one line per change: `_timestamp`, `_diff`, then the columns;
//! - `UPSERT ENCODE JSON`: per key that changed, its columns as the key and the row as the
//!   value, or no value when the key was deleted;
//! - `DEBEZIUM ENCODE JSON`: per key that changed, `{"before", "after", "op", "ts_ms"}`.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use repr::ChangeBatch;
use serde_json::{Map, Value};

use super::SinkSpec;
use crate::{ConnectorError, Encoding, Envelope};

/// One record a sink writes: its key (when the sink has key columns) and its value (none: the
/// key was deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedChange {
    /// The key columns, as a JSON object.
    pub key: Option<Vec<u8>>,
    /// The encoded change; `None` is a deletion (an upsert tombstone).
    pub value: Option<Vec<u8>>,
}

/// What became of one key at a time: the rows (by position in the batch) it had before and
/// has after, if any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KeyChange {
    /// A row retracted at the time.
    pub before: Option<usize>,
    /// A row inserted at the time.
    pub after: Option<usize>,
}

/// The changes of one time, encoded in the sink's format, in a deterministic order (the same
/// batch always gives the same records, which lets Kafka delivery skip what it sent before).
pub(crate) fn encode_changes(
    spec: &SinkSpec,
    batch: &ChangeBatch,
) -> Result<Vec<KeyedChange>, ConnectorError> {
    match (spec.format.envelope, spec.format.encoding) {
        (Envelope::Plain, Encoding::Csv) => csv_lines(batch, false).map(|lines| {
            lines
                .into_iter()
                .map(|line| KeyedChange {
                    key: None,
                    value: Some(line),
                })
                .collect()
        }),
        (Envelope::Plain, _) => {
            let objects = json_objects(&with_change_columns(batch)?)?;
            let keys = key_objects(spec, &batch.rows)?;
            Ok(objects
                .into_iter()
                .enumerate()
                .map(|(i, object)| KeyedChange {
                    key: keys.as_ref().map(|keys| keys[i].clone()),
                    value: Some(to_bytes(object)),
                })
                .collect())
        }
        (Envelope::Upsert, _) => {
            let rows = json_objects(&batch.rows)?;
            Ok(changes_by_key(spec, batch)?
                .into_iter()
                .map(|(key, change)| KeyedChange {
                    key: Some(key),
                    value: change.after.map(|row| to_bytes(rows[row].clone())),
                })
                .collect())
        }
        (Envelope::Debezium, _) => {
            let rows = json_objects(&batch.rows)?;
            let row = |index: Option<usize>| index.map_or(Value::Null, |i| rows[i].clone().into());
            Ok(changes_by_key(spec, batch)?
                .into_iter()
                .map(|(key, change)| {
                    let op = match (change.before, change.after) {
                        (None, _) => "c",
                        (Some(_), Some(_)) => "u",
                        (Some(_), None) => "d",
                    };
                    let mut event = Map::new();
                    event.insert("before".into(), row(change.before));
                    event.insert("after".into(), row(change.after));
                    event.insert("op".into(), op.into());
                    event.insert("ts_ms".into(), batch.time.into());
                    KeyedChange {
                        key: Some(key),
                        value: Some(to_bytes(event)),
                    }
                })
                .collect())
        }
    }
}

/// Per key (its JSON, in key order), what the time did to it. A key with only retractions
/// was deleted; with an insertion, the (last) inserted row is its new value.
pub(crate) fn changes_by_key(
    spec: &SinkSpec,
    batch: &ChangeBatch,
) -> Result<BTreeMap<Vec<u8>, KeyChange>, ConnectorError> {
    let keys = key_objects(spec, &batch.rows)?.unwrap_or_default();
    let mut changes: BTreeMap<Vec<u8>, KeyChange> = BTreeMap::new();
    for (row, key) in keys.into_iter().enumerate() {
        let change = changes.entry(key).or_default();
        if batch.diffs[row] > 0 {
            change.after = Some(row);
        } else if batch.diffs[row] < 0 {
            change.before = Some(row);
        }
    }
    Ok(changes)
}

/// The batch's rows as CSV lines (`_timestamp`, `_diff`, then the columns), after a header
/// line if `header`.
pub(crate) fn csv_lines(batch: &ChangeBatch, header: bool) -> Result<Vec<Vec<u8>>, ConnectorError> {
    let rows = with_change_columns(batch)?;
    let mut lines = Vec::with_capacity(rows.num_rows() + 1);
    if header {
        let names: Vec<String> = rows
            .schema()
            .fields()
            .iter()
            .map(|f| csv_field(f.name()))
            .collect();
        lines.push(format!("{}\n", names.join(",")).into_bytes());
    }
    for row in 0..rows.num_rows() {
        let mut line = Vec::new();
        arrow::csv::WriterBuilder::new()
            .with_header(false)
            .build(&mut line)
            .write(&rows.slice(row, 1))?;
        lines.push(line);
    }
    Ok(lines)
}

/// A CSV field, quoted when it must be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The batch's rows with `_timestamp` and `_diff` in front.
fn with_change_columns(batch: &ChangeBatch) -> Result<RecordBatch, ConnectorError> {
    let mut fields = vec![
        Arc::new(Field::new("_timestamp", DataType::UInt64, false)),
        Arc::new(Field::new("_diff", DataType::Int64, false)),
    ];
    fields.extend(batch.rows.schema().fields().iter().cloned());
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(vec![batch.time; batch.rows.num_rows()])),
        Arc::new(Int64Array::from(batch.diffs.clone())),
    ];
    columns.extend(batch.rows.columns().iter().cloned());
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// Each row's key columns as JSON, if the sink has key columns.
fn key_objects(
    spec: &SinkSpec,
    rows: &RecordBatch,
) -> Result<Option<Vec<Vec<u8>>>, ConnectorError> {
    if spec.key.is_empty() {
        return Ok(None);
    }
    let keys = rows.project(&spec.key)?;
    Ok(Some(
        json_objects(&keys)?.into_iter().map(to_bytes).collect(),
    ))
}

/// Each row as a JSON object (NULLs written as `null`).
pub(crate) fn json_objects(rows: &RecordBatch) -> Result<Vec<Map<String, Value>>, ConnectorError> {
    let mut text = Vec::new();
    let mut writer = arrow::json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow::json::writer::LineDelimited>(&mut text);
    writer.write(rows)?;
    writer.finish()?;
    drop(writer);
    text.split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            serde_json::from_slice(line)
                .map_err(|e| ConnectorError::Schema(format!("encoding a row as JSON: {e}")))
        })
        .collect()
}

fn to_bytes(object: Map<String, Value>) -> Vec<u8> {
    Value::Object(object).to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int32Array, StringArray};

    use super::*;
    use crate::Format;

    fn spec(envelope: Envelope, encoding: Encoding, key: Option<&str>) -> SinkSpec {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        SinkSpec::new(
            "s/1".into(),
            "s".into(),
            schema,
            key,
            Format { envelope, encoding },
        )
        .expect("a valid spec")
    }

    fn batch(spec: &SinkSpec, rows: &[(i32, Option<&str>, i64)]) -> ChangeBatch {
        ChangeBatch {
            time: 7,
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

    fn text(changes: &[KeyedChange]) -> Vec<(Option<String>, Option<String>)> {
        let text =
            |b: &Option<Vec<u8>>| b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
        changes
            .iter()
            .map(|c| (text(&c.key), text(&c.value)))
            .collect()
    }

    #[test]
    fn plain_json_carries_time_and_diff() {
        let spec = spec(Envelope::Plain, Encoding::Json, None);
        let changes = encode_changes(&spec, &batch(&spec, &[(1, Some("a"), 1), (2, None, -1)]))
            .expect("encoded");
        assert_eq!(
            text(&changes),
            [
                (
                    None,
                    Some(r#"{"_diff":1,"_timestamp":7,"id":1,"name":"a"}"#.into())
                ),
                (
                    None,
                    Some(r#"{"_diff":-1,"_timestamp":7,"id":2,"name":null}"#.into())
                ),
            ]
        );
    }

    #[test]
    fn upsert_keeps_the_new_row_and_deletes_with_no_value() {
        let spec = spec(Envelope::Upsert, Encoding::Json, Some("id"));
        let changes = encode_changes(
            &spec,
            &batch(
                &spec,
                &[
                    (1, Some("old"), -1),
                    (1, Some("new"), 1),
                    (2, Some("x"), -1),
                ],
            ),
        )
        .expect("encoded");
        assert_eq!(
            text(&changes),
            [
                (
                    Some(r#"{"id":1}"#.into()),
                    Some(r#"{"id":1,"name":"new"}"#.into())
                ),
                (Some(r#"{"id":2}"#.into()), None),
            ]
        );
    }

    #[test]
    fn debezium_pairs_before_and_after() {
        let spec = spec(Envelope::Debezium, Encoding::Json, Some("id"));
        let changes = encode_changes(
            &spec,
            &batch(
                &spec,
                &[(1, Some("old"), -1), (1, Some("new"), 1), (3, Some("c"), 1)],
            ),
        )
        .expect("encoded");
        let values: Vec<Value> = changes
            .iter()
            .map(|c| serde_json::from_slice(c.value.as_deref().expect("a value")).expect("json"))
            .collect();
        assert_eq!(values[0]["op"], "u");
        assert_eq!(values[0]["before"]["name"], "old");
        assert_eq!(values[0]["after"]["name"], "new");
        assert_eq!(values[1]["op"], "c");
        assert_eq!(values[1]["before"], Value::Null);
        assert_eq!(values[1]["ts_ms"], 7);
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let spec = spec(Envelope::Plain, Encoding::Csv, None);
        let lines = csv_lines(&batch(&spec, &[(1, Some("a,b"), 1)]), true).expect("encoded");
        let lines: Vec<String> = lines
            .into_iter()
            .map(|l| String::from_utf8(l).expect("utf-8"))
            .collect();
        assert_eq!(lines, ["_timestamp,_diff,id,name\n", "7,1,1,\"a,b\"\n"]);
    }

    #[test]
    fn upsert_without_a_key_is_refused() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        let format = Format {
            envelope: Envelope::Upsert,
            encoding: Encoding::Json,
        };
        assert!(SinkSpec::new("s/1".into(), "s".into(), schema.clone(), None, format).is_err());
        assert!(SinkSpec::new("s/1".into(), "s".into(), schema, Some("nope"), format).is_err());
    }
}
