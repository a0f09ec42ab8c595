//! Records to rows: the bytes of JSON objects, CSV lines or raw values, decoded into a batch
//! of the declared columns, with every record that does not fit kept as a [`BadRecord`].
//!
//! Each record is decoded on its own: a record that is not valid, or whose value does not fit
//! its column, is taken back and reported with its position and the reason, and decoding goes
//! on with the next one. The connectors that read records (files, webhooks, Kafka) share
//! this decoder so that the same input means the same rows everywhere.

mod column;
mod csv;

use std::collections::HashMap;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use serde_json::Value;

use self::column::Column;
use self::csv::{split_fields, CsvField};
use crate::{BadRecord, ConnectorError, Encoding, SourceOptions};

/// One record to decode, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// The record's bytes (without a line terminator).
    pub bytes: &'a [u8],
    /// Where it was (`/data/a.jsonl:12`), reported with it if it is bad.
    pub position: String,
}

/// The rows decoded from a list of records, and the records that could not be decoded.
#[derive(Debug)]
pub struct Decoded {
    /// One row per good record, in the records' order, of the decoder's schema.
    pub rows: RecordBatch,
    /// One entry per bad record, in the records' order.
    pub errors: Vec<BadRecord>,
}

/// Decodes records of one encoding into rows of one schema.
///
/// ```
/// use std::sync::Arc;
/// use arrow::datatypes::{DataType, Field, Schema};
/// use connectors::{Decoder, Encoding, RawRecord, SourceOptions};
///
/// let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
/// let decoder = Decoder::new(Encoding::Json, schema, &SourceOptions::default()).unwrap();
/// let records = [
///     RawRecord { bytes: br#"{"id": 1}"#, position: "1".into() },
///     RawRecord { bytes: br#"{"id": "one"}"#, position: "2".into() },
/// ];
/// let decoded = decoder.decode(&records).unwrap();
/// assert_eq!(decoded.rows.num_rows(), 1);
/// assert_eq!(decoded.errors[0].position, "2");
/// ```
#[derive(Debug)]
pub struct Decoder {
    schema: SchemaRef,
    /// An empty column per declared column: the template each batch starts from.
    columns: Vec<Column>,
    layout: Layout,
}

/// How a record's bytes map to the columns.
#[derive(Debug)]
enum Layout {
    /// A JSON object; columns by key, from each declared (lower-case) name to its column.
    Json { by_name: HashMap<String, usize> },
    /// A CSV line; columns by position.
    Csv { delimiter: u8 },
    /// The whole record is the one column's value.
    Bytes,
}

impl Decoder {
    /// A decoder of `encoding` records into rows of `schema`.
    ///
    /// Options: `csv.delimiter` (ENCODE CSV only; one ASCII character, or `\t`; default `,`).
    /// ENCODE BYTES needs exactly one `bytea` or `text` column; ENCODE AVRO is not read yet.
    pub fn new(
        encoding: Encoding,
        schema: SchemaRef,
        options: &SourceOptions,
    ) -> Result<Self, ConnectorError> {
        if schema.fields().is_empty() {
            return Err(ConnectorError::Schema(
                "the source must declare its columns".into(),
            ));
        }
        let columns = schema
            .fields()
            .iter()
            .map(|field| Column::new(field))
            .collect::<Result<Vec<_>, _>>()?;
        let layout = match encoding {
            Encoding::Json => Layout::Json {
                by_name: schema
                    .fields()
                    .iter()
                    .enumerate()
                    .map(|(i, field)| (field.name().clone(), i))
                    .collect(),
            },
            Encoding::Csv => Layout::Csv {
                delimiter: csv_delimiter(options)?,
            },
            Encoding::Bytes => {
                if columns.len() != 1 || !columns[0].is_text_or_binary() {
                    return Err(ConnectorError::Schema(
                        "ENCODE BYTES needs exactly one column, of type bytea or text".into(),
                    ));
                }
                Layout::Bytes
            }
            Encoding::Avro => {
                return Err(ConnectorError::InvalidFormat(
                    "ENCODE AVRO is not supported yet".into(),
                ))
            }
        };
        Ok(Self {
            schema,
            columns,
            layout,
        })
    }

    /// The rows of the good `records`, in order, and a [`BadRecord`] for each of the others.
    ///
    /// An error is returned only if the batch itself cannot be built; a bad record never
    /// stops decoding.
    pub fn decode(&self, records: &[RawRecord<'_>]) -> Result<Decoded, ConnectorError> {
        let mut columns: Vec<Column> = self
            .columns
            .iter()
            .map(|c| c.empty(records.len()))
            .collect();
        let mut rows = 0;
        let mut errors = Vec::new();
        for record in records {
            match self.push_record(&mut columns, record.bytes) {
                Ok(()) => rows += 1,
                Err(error) => {
                    columns.iter_mut().for_each(|c| c.truncate(rows));
                    errors.push(BadRecord {
                        position: record.position.clone(),
                        raw: String::from_utf8_lossy(record.bytes).into_owned(),
                        error,
                    });
                }
            }
        }
        let arrays = columns
            .into_iter()
            .map(Column::finish)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Decoded {
            rows: RecordBatch::try_new(self.schema.clone(), arrays)?,
            errors,
        })
    }

    /// Appends one record's values to `columns`, or says why it is bad (the columns may then
    /// hold part of it, for the caller to take back).
    fn push_record(&self, columns: &mut [Column], bytes: &[u8]) -> Result<(), String> {
        match &self.layout {
            Layout::Json { by_name } => push_json(columns, by_name, bytes),
            Layout::Csv { delimiter } => push_csv(columns, *delimiter, bytes),
            Layout::Bytes => columns
                .iter_mut()
                .try_for_each(|column| column.push_bytes(bytes)),
        }
    }
}

/// A JSON object's values by key: a key equal to a column's name, else equal ignoring case;
/// other keys are ignored and a missing key is NULL.
fn push_json(
    columns: &mut [Column],
    by_name: &HashMap<String, usize>,
    bytes: &[u8],
) -> Result<(), String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err(format!(
            "expected a JSON object, found {}",
            json_kind(&value)
        ));
    };
    let mut found: Vec<Option<(&Value, bool)>> = vec![None; columns.len()];
    for (key, value) in &object {
        if let Some(&i) = by_name.get(key.as_str()) {
            found[i] = Some((value, true));
        } else if key.chars().any(char::is_uppercase) {
            if let Some(&i) = by_name.get(key.to_lowercase().as_str()) {
                found[i].get_or_insert((value, false));
            }
        }
    }
    columns
        .iter_mut()
        .zip(found)
        .try_for_each(|(column, value)| match value {
            Some((value, _)) => column.push_json(value),
            None => column.push_null(),
        })
}

/// What kind of JSON value `value` is, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A CSV line's fields, one per column in order; an unquoted empty field is NULL.
fn push_csv(columns: &mut [Column], delimiter: u8, bytes: &[u8]) -> Result<(), String> {
    let line = std::str::from_utf8(bytes).map_err(|e| format!("invalid UTF-8: {e}"))?;
    let fields = split_fields(line, delimiter)?;
    if fields.len() != columns.len() {
        return Err(format!(
            "expected {} fields, found {}",
            columns.len(),
            fields.len()
        ));
    }
    columns
        .iter_mut()
        .zip(fields)
        .try_for_each(|(column, field)| match field {
            CsvField::Empty => column.push_null(),
            CsvField::Text(text) => column.push_text(&text),
        })
}

/// The `csv.delimiter` option: one ASCII character other than a quote or line break, or
/// `\t` for a tab.
fn csv_delimiter(options: &SourceOptions) -> Result<u8, ConnectorError> {
    let Some(text) = options.text("csv.delimiter") else {
        return Ok(b',');
    };
    let delimiter = match text.as_bytes() {
        b"\\t" => b'\t',
        [b] if b.is_ascii() && !matches!(b, b'"' | b'\n' | b'\r') => *b,
        _ => {
            return Err(ConnectorError::InvalidOption {
                option: "csv.delimiter".into(),
                reason: format!(
                    "\"{text}\" is not one ASCII character (other than a quote or line break)"
                ),
            })
        }
    };
    Ok(delimiter)
}

#[cfg(test)]
mod tests;
