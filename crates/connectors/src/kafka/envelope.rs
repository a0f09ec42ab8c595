//! Records to changes, as the source's `FORMAT` says what a record means.
//!
//! - `PLAIN`: each value is a new row (an insert); a record without a value is bad.
//! - `UPSERT` (a keyed output): each value is the new row of its key; a tombstone (no value)
//!   deletes the key its record key names: a JSON object with the key columns by name, or,
//!   for a one-column key, a bare JSON scalar or plain text.
//! - `DEBEZIUM`: each value is a Debezium change event (`before`, `after`, `op`, possibly
//!   wrapped in `{"schema": …, "payload": …}`): `c` and `r` add `after`, `u` replaces the key's
//!   row by `after` (an output without a key: deletes `before`, inserts `after`), `d`
//!   deletes `before`; a tombstone (which follows a delete) means nothing.
//!
//! The records of a batch become runs of changes of one kind, in order; each run is decoded
//! by the shared [`Decoder`] and gets the `INCLUDE` columns of its good records appended.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, RecordBatch};
use arrow::datatypes::{Field, Schema, SchemaRef};
use serde_json::{Map, Value};

use super::broker::KafkaRecord;
use super::metadata::MetadataColumns;
use crate::decode::{Decoder, RawRecord};
use crate::{
    BadRecord, Change, ConnectorError, Encoding, Envelope, OutputChange, SourceContext,
    SourceOptions,
};

/// What a piece of a record does to the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A new row.
    Insert,
    /// The new row of its key.
    Upsert,
    /// Deletes a whole row (an output without a key).
    DeleteRow,
    /// Deletes the row of the key whose columns it names.
    DeleteKey,
}

/// A piece of a record to decode, and what it does.
type Piece<'a> = (Kind, Cow<'a, [u8]>);
/// Consecutive pieces of one kind, each with the index of its record.
type Run<'a> = (Kind, Vec<(usize, Cow<'a, [u8]>)>);

/// The key columns of a keyed output, and how a tombstone's key is decoded into them.
#[derive(Debug)]
struct KeyColumns {
    /// Their indexes among the declared columns.
    indexes: Vec<usize>,
    /// Their names.
    names: Vec<String>,
    /// Decodes a JSON object into the key columns (each required).
    decoder: Decoder,
}

/// Turns the records of a batch into the changes of the source's relation.
#[derive(Debug)]
/// A fetch's records, decoded.
pub(crate) struct DecodedRecords {
    /// The changes, in order.
    pub changes: Vec<OutputChange>,
    /// The records that could not be read.
    pub errors: Vec<BadRecord>,
    /// The partition of each row the changes insert or upsert (see
    /// [`crate::SourceBatch::row_partitions`]).
    pub row_partitions: Vec<i32>,
}

pub(crate) struct ChangeDecoder {
    envelope: Envelope,
    /// The source's columns: the declared ones, then the `INCLUDE` ones.
    schema: SchemaRef,
    /// The columns of a delete by key: as `schema`, but every other column may be NULL.
    delete_schema: SchemaRef,
    /// Decodes a value into the declared columns.
    values: Decoder,
    keys: Option<KeyColumns>,
    metadata: MetadataColumns,
}

impl ChangeDecoder {
    /// The decoder of `context`'s format and columns; `FORMAT PLAIN ENCODE JSON` if it gives
    /// none.
    pub fn new(options: &SourceOptions, context: &SourceContext) -> Result<Self, ConnectorError> {
        let (envelope, encoding) = match context.format {
            None => (Envelope::Plain, Encoding::Json),
            Some(format) => (format.envelope, format.encoding),
        };
        if encoding == Encoding::Avro {
            return Err(ConnectorError::InvalidFormat(
                "the kafka connector does not read ENCODE AVRO yet (use JSON, CSV or BYTES)".into(),
            ));
        }
        if envelope != Envelope::Plain && encoding != Encoding::Json {
            return Err(ConnectorError::InvalidFormat(format!(
                "the kafka connector reads FORMAT {envelope:?} with ENCODE JSON only, \
                 not {encoding:?}"
            )));
        }
        let schema = context.schema();
        let (declared, metadata) = MetadataColumns::split(&schema, &context.include)?;
        let key = context.outputs[0].key.clone();
        if envelope == Envelope::Upsert && key.is_none() {
            return Err(ConnectorError::InvalidFormat(
                "FORMAT UPSERT needs a PRIMARY KEY: a tombstone deletes the row of its key".into(),
            ));
        }
        let keys = match key {
            Some(indexes) if envelope != Envelope::Plain => {
                Some(KeyColumns::new(&declared, indexes, options)?)
            }
            _ => None,
        };
        let delete_schema = Arc::new(Schema::new(
            schema
                .fields()
                .iter()
                .enumerate()
                .map(|(i, field)| {
                    let is_key = keys.as_ref().is_some_and(|k| k.indexes.contains(&i));
                    field
                        .as_ref()
                        .clone()
                        .with_nullable(field.is_nullable() || !is_key)
                })
                .collect::<Vec<Field>>(),
        ));
        Ok(Self {
            envelope,
            schema,
            delete_schema,
            values: Decoder::new(encoding, declared, options)?,
            keys,
            metadata,
        })
    }

    /// What `records` say: their changes, in order, the records that could not be read, and
    /// the partition of each row the changes insert or upsert.
    pub fn changes(&self, records: &[KafkaRecord]) -> Result<DecodedRecords, ConnectorError> {
        let mut row_partitions = Vec::new();
        let mut errors: Vec<(usize, BadRecord)> = Vec::new();
        let mut runs: Vec<Run<'_>> = Vec::new();
        for (index, record) in records.iter().enumerate() {
            match self.interpret(record) {
                Ok(pieces) => {
                    for (kind, bytes) in pieces {
                        match runs.last_mut() {
                            Some((last, run)) if *last == kind => run.push((index, bytes)),
                            _ => runs.push((kind, vec![(index, bytes)])),
                        }
                    }
                }
                Err(error) => errors.push((index, bad_record(record, error))),
            }
        }
        let mut changes = Vec::new();
        for (kind, run) in runs {
            let raw: Vec<RawRecord<'_>> = run
                .iter()
                .map(|(index, bytes)| RawRecord {
                    bytes,
                    position: index.to_string(),
                })
                .collect();
            let decoder = match (&self.keys, kind) {
                (Some(keys), Kind::DeleteKey) => &keys.decoder,
                _ => &self.values,
            };
            let decoded = decoder.decode(&raw)?;
            let mut bad = HashSet::new();
            for error in decoded.errors {
                let index: usize = error
                    .position
                    .parse()
                    .expect("invariant: a run's positions are record indexes");
                bad.insert(index);
                errors.push((index, bad_record(&records[index], error.error)));
            }
            let good: Vec<&KafkaRecord> = run
                .iter()
                .filter(|(index, _)| !bad.contains(index))
                .map(|(index, _)| &records[*index])
                .collect();
            if good.is_empty() {
                continue;
            }
            if matches!(kind, Kind::Insert | Kind::Upsert) {
                row_partitions.extend(good.iter().map(|record| record.partition));
            }
            let change = match kind {
                Kind::Insert => Change::Insert(self.rows(decoded.rows, &good)?),
                Kind::Upsert => Change::Upsert {
                    rows: self.rows(decoded.rows, &good)?,
                    unchanged: Vec::new(),
                },
                Kind::DeleteRow => Change::Delete(self.rows(decoded.rows, &good)?),
                Kind::DeleteKey => Change::Delete(self.delete_rows(decoded.rows, &good)?),
            };
            changes.push(OutputChange { output: 0, change });
        }
        errors.sort_by_key(|(index, _)| *index);
        Ok(DecodedRecords {
            changes,
            errors: errors.into_iter().map(|(_, e)| e).collect(),
            row_partitions,
        })
    }

    /// What `record` means under the envelope: the pieces to decode, each with its kind.
    fn interpret<'a>(&self, record: &'a KafkaRecord) -> Result<Vec<Piece<'a>>, String> {
        let value = record.value.as_deref();
        match (self.envelope, value, &self.keys) {
            (Envelope::Plain, Some(value), _) => Ok(vec![(Kind::Insert, Cow::Borrowed(value))]),
            (Envelope::Plain, None, _) => Err("the record has no value".into()),
            (Envelope::Upsert, Some(value), _) => Ok(vec![(Kind::Upsert, Cow::Borrowed(value))]),
            (Envelope::Upsert, None, Some(keys)) => {
                let key = record
                    .key
                    .as_deref()
                    .ok_or("a tombstone (a record without a value) has no key to delete")?;
                Ok(vec![(Kind::DeleteKey, Cow::Owned(keys.key_object(key)?))])
            }
            (Envelope::Upsert, None, None) => {
                Err("FORMAT UPSERT without a key cannot delete".into())
            }
            (Envelope::Debezium, None, _) => Ok(Vec::new()),
            (Envelope::Debezium, Some(value), keys) => debezium(value, keys.is_some()),
        }
    }

    /// The source's rows: the decoded declared columns, then the metadata of `records`.
    fn rows(
        &self,
        declared: RecordBatch,
        records: &[&KafkaRecord],
    ) -> Result<RecordBatch, ConnectorError> {
        let mut columns = declared.columns().to_vec();
        columns.extend(self.metadata.arrays(records)?);
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }

    /// The rows of a delete by key: the key columns, NULL in the other declared columns,
    /// then the metadata of `records`.
    fn delete_rows(
        &self,
        keys: RecordBatch,
        records: &[&KafkaRecord],
    ) -> Result<RecordBatch, ConnectorError> {
        let key_columns = self
            .keys
            .as_ref()
            .expect("invariant: deletes by key are made for keyed outputs only");
        let declared = self.delete_schema.fields().len() - self.metadata.fields().count();
        let mut columns: Vec<ArrayRef> = (0..declared)
            .map(|i| match key_columns.indexes.iter().position(|&k| k == i) {
                Some(j) => Arc::clone(keys.column(j)),
                None => new_null_array(self.delete_schema.field(i).data_type(), keys.num_rows()),
            })
            .collect();
        columns.extend(self.metadata.arrays(records)?);
        Ok(RecordBatch::try_new(
            Arc::clone(&self.delete_schema),
            columns,
        )?)
    }
}

impl KeyColumns {
    fn new(
        declared: &SchemaRef,
        indexes: Vec<usize>,
        options: &SourceOptions,
    ) -> Result<Self, ConnectorError> {
        let fields = indexes
            .iter()
            .map(|&i| {
                if i >= declared.fields().len() {
                    return Err(ConnectorError::Schema(
                        "the primary key must be made of declared columns, not INCLUDE ones".into(),
                    ));
                }
                Ok(declared.field(i).clone().with_nullable(false))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let names = fields.iter().map(|f| f.name().clone()).collect();
        let decoder = Decoder::new(Encoding::Json, Arc::new(Schema::new(fields)), options)?;
        Ok(Self {
            indexes,
            names,
            decoder,
        })
    }

    /// A tombstone's key as a JSON object of the key columns: the key itself if it is one,
    /// else, for a one-column key, that column's value (a JSON scalar or plain text).
    fn key_object(&self, key: &[u8]) -> Result<Vec<u8>, String> {
        let single = match self.names.as_slice() {
            [name] => Some(name),
            _ => None,
        };
        let value = match (serde_json::from_slice::<Value>(key), single) {
            (Ok(Value::Object(_)), _) => return Ok(key.to_vec()),
            (Ok(scalar @ (Value::Number(_) | Value::String(_) | Value::Bool(_))), Some(_)) => {
                scalar
            }
            (Err(_), Some(_)) => match std::str::from_utf8(key) {
                Ok(text) => Value::String(text.to_string()),
                Err(_) => return Err("the record's key is neither JSON nor UTF-8 text".into()),
            },
            (_, Some(name)) => {
                return Err(format!(
                    "the record's key must be a JSON object, a JSON scalar or text for key \
                     column \"{name}\""
                ))
            }
            (_, None) => {
                return Err(format!(
                    "the record's key must be a JSON object with the key columns ({})",
                    self.names.join(", ")
                ))
            }
        };
        let name = single.expect("invariant: only a one-column key takes a bare value");
        let object = Value::Object(Map::from_iter([(name.clone(), value)]));
        serde_json::to_vec(&object).map_err(|e| format!("cannot write the key as JSON: {e}"))
    }
}

/// The pieces of a Debezium change event, for an output with or without a key.
fn debezium(value: &[u8], is_keyed: bool) -> Result<Vec<Piece<'static>>, String> {
    let event: Value = serde_json::from_slice(value).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(mut event) = event else {
        return Err("a Debezium event must be a JSON object".into());
    };
    if !event.contains_key("op") {
        if let Some(Value::Object(payload)) = event.remove("payload") {
            event = payload;
        }
    }
    let op = match event.get("op") {
        Some(Value::String(op)) => op.clone(),
        _ => return Err("a Debezium event needs an \"op\" (c, r, u or d)".into()),
    };
    let row = |name: &str| match event.get(name) {
        Some(object @ Value::Object(_)) => serde_json::to_vec(object)
            .map(Cow::Owned)
            .map_err(|e| format!("cannot write \"{name}\" as JSON: {e}")),
        _ => Err(format!(
            "a Debezium \"{op}\" event needs a \"{name}\" object"
        )),
    };
    match (op.as_str(), is_keyed) {
        ("c" | "r", true) => Ok(vec![(Kind::Upsert, row("after")?)]),
        ("c" | "r", false) => Ok(vec![(Kind::Insert, row("after")?)]),
        ("u", true) => Ok(vec![(Kind::Upsert, row("after")?)]),
        ("u", false) => Ok(vec![
            (Kind::DeleteRow, row("before")?),
            (Kind::Insert, row("after")?),
        ]),
        ("d", true) => Ok(vec![(Kind::DeleteKey, row("before")?)]),
        ("d", false) => Ok(vec![(Kind::DeleteRow, row("before")?)]),
        (other, _) => Err(format!(
            "unknown Debezium op \"{other}\" (known: c, r, u, d)"
        )),
    }
}

/// A record that could not be read: its value as text (its key for a tombstone).
fn bad_record(record: &KafkaRecord, error: String) -> BadRecord {
    let raw = record
        .value
        .as_deref()
        .or(record.key.as_deref())
        .unwrap_or_default();
    BadRecord {
        position: record.position(),
        raw: String::from_utf8_lossy(raw).into_owned(),
        error,
    }
}

#[cfg(test)]
mod tests;
