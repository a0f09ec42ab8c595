//! One column of a batch being decoded.
//!
//! Values are kept in plain vectors of the column's own type while a batch is decoded, so
//! that a record found bad halfway through its columns can be taken back
//! ([`Column::truncate`]) before the next record: the finished array holds exactly the good
//! records. Text is parsed as PostgreSQL's input functions would read it; JSON values are
//! taken by their JSON type where that is unambiguous (a number for a number column) and as
//! text otherwise.
//!
//! A timestamp is RFC 3339 or `YYYY-MM-DD HH:MM:SS[.ffffff][+zz[:zz]]` text; without an
//! offset it is UTC, and a `timestamp` (without time zone) column keeps the UTC time of one
//! with an offset. A `numeric` value with more fractional digits than the column's scale is
//! truncated to the scale; one with too many integer digits is bad.

use std::num::{IntErrorKind, ParseIntError};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::compute::kernels::cast_utils::{parse_decimal, string_to_datetime};
use arrow::datatypes::{DataType, Decimal128Type, Field, TimeUnit};
use arrow::error::ArrowError;
use chrono::{NaiveDate, Utc};
use serde_json::{Number, Value};

use crate::ConnectorError;

/// The values of one column, record by record, with the column's name for error messages.
#[derive(Debug)]
pub(super) struct Column {
    name: String,
    is_nullable: bool,
    values: Values,
    /// Per row, whether it has a value (`false` = NULL).
    valid: Vec<bool>,
}

/// A column's values in its own type; a NULL row holds a default value.
#[derive(Debug)]
enum Values {
    Int16(Vec<i16>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Decimal {
        values: Vec<i128>,
        precision: u8,
        scale: i8,
    },
    Boolean(Vec<bool>),
    /// Days since 1970-01-01.
    Date(Vec<i32>),
    /// Microseconds since 1970-01-01 00:00 UTC.
    Timestamp {
        micros: Vec<i64>,
        zone: Option<Arc<str>>,
    },
    Text(Bytes),
    Binary(Bytes),
}

/// Variable-length values laid out as Arrow does: one buffer and the end of each value.
#[derive(Debug, Default)]
struct Bytes {
    data: Vec<u8>,
    /// `offsets[i]..offsets[i + 1]` is row `i`; starts with 0.
    offsets: Vec<i32>,
}

impl Column {
    /// An empty column for `field`, or an error naming the column if its type cannot be
    /// decoded.
    pub(super) fn new(field: &Field) -> Result<Self, ConnectorError> {
        let values = match field.data_type() {
            DataType::Int16 => Values::Int16(Vec::new()),
            DataType::Int32 => Values::Int32(Vec::new()),
            DataType::Int64 => Values::Int64(Vec::new()),
            DataType::Float32 => Values::Float32(Vec::new()),
            DataType::Float64 => Values::Float64(Vec::new()),
            DataType::Decimal128(precision, scale) => Values::Decimal {
                values: Vec::new(),
                precision: *precision,
                scale: *scale,
            },
            DataType::Boolean => Values::Boolean(Vec::new()),
            DataType::Date32 => Values::Date(Vec::new()),
            DataType::Timestamp(TimeUnit::Microsecond, zone) => Values::Timestamp {
                micros: Vec::new(),
                zone: zone.clone(),
            },
            DataType::Utf8 => Values::Text(Bytes::new(0)),
            DataType::Binary => Values::Binary(Bytes::new(0)),
            other => {
                return Err(ConnectorError::Schema(format!(
                    "column \"{}\" has type {other}, which cannot be decoded from records",
                    field.name()
                )))
            }
        };
        Ok(Self {
            name: field.name().clone(),
            is_nullable: field.is_nullable(),
            values,
            valid: Vec::new(),
        })
    }

    /// An empty column of the same name and type, with room for `rows` values.
    pub(super) fn empty(&self, rows: usize) -> Self {
        let values = match &self.values {
            Values::Int16(_) => Values::Int16(Vec::with_capacity(rows)),
            Values::Int32(_) => Values::Int32(Vec::with_capacity(rows)),
            Values::Int64(_) => Values::Int64(Vec::with_capacity(rows)),
            Values::Float32(_) => Values::Float32(Vec::with_capacity(rows)),
            Values::Float64(_) => Values::Float64(Vec::with_capacity(rows)),
            Values::Decimal {
                precision, scale, ..
            } => Values::Decimal {
                values: Vec::with_capacity(rows),
                precision: *precision,
                scale: *scale,
            },
            Values::Boolean(_) => Values::Boolean(Vec::with_capacity(rows)),
            Values::Date(_) => Values::Date(Vec::with_capacity(rows)),
            Values::Timestamp { zone, .. } => Values::Timestamp {
                micros: Vec::with_capacity(rows),
                zone: zone.clone(),
            },
            Values::Text(_) => Values::Text(Bytes::new(rows)),
            Values::Binary(_) => Values::Binary(Bytes::new(rows)),
        };
        Self {
            name: self.name.clone(),
            is_nullable: self.is_nullable,
            values,
            valid: Vec::with_capacity(rows),
        }
    }

    /// Whether the column holds text or bytes, so that any record's bytes can be its value.
    pub(super) fn is_text_or_binary(&self) -> bool {
        matches!(self.values, Values::Text(_) | Values::Binary(_))
    }

    /// Keeps only the first `rows` values.
    pub(super) fn truncate(&mut self, rows: usize) {
        self.valid.truncate(rows);
        match &mut self.values {
            Values::Int16(v) => v.truncate(rows),
            Values::Int32(v) => v.truncate(rows),
            Values::Int64(v) => v.truncate(rows),
            Values::Float32(v) => v.truncate(rows),
            Values::Float64(v) => v.truncate(rows),
            Values::Decimal { values, .. } => values.truncate(rows),
            Values::Boolean(v) => v.truncate(rows),
            Values::Date(v) => v.truncate(rows),
            Values::Timestamp { micros, .. } => micros.truncate(rows),
            Values::Text(b) | Values::Binary(b) => b.truncate(rows),
        }
    }

    /// Appends NULL, or says why the column cannot hold it.
    pub(super) fn push_null(&mut self) -> Result<(), String> {
        if !self.is_nullable {
            return Err(format!("column \"{}\" cannot be null", self.name));
        }
        match &mut self.values {
            Values::Int16(v) => v.push(0),
            Values::Int32(v) => v.push(0),
            Values::Int64(v) => v.push(0),
            Values::Float32(v) => v.push(0.0),
            Values::Float64(v) => v.push(0.0),
            Values::Decimal { values, .. } => values.push(0),
            Values::Boolean(v) => v.push(false),
            Values::Date(v) => v.push(0),
            Values::Timestamp { micros, .. } => micros.push(0),
            Values::Text(b) | Values::Binary(b) => b.push(&[])?,
        }
        self.valid.push(false);
        Ok(())
    }

    /// Appends the value `text` spells (a CSV field, a JSON string), or says why it does not
    /// fit the column.
    pub(super) fn push_text(&mut self, text: &str) -> Result<(), String> {
        let type_name = self.type_name();
        let invalid = || {
            format!(
                "column \"{}\": \"{text}\" is not a valid {type_name}",
                self.name
            )
        };
        let out_of_range = || {
            format!(
                "column \"{}\": \"{text}\" is out of range for {type_name}",
                self.name
            )
        };
        let integer = |e: ParseIntError| match e.kind() {
            IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => out_of_range(),
            _ => invalid(),
        };
        let trimmed = text.trim();
        match &mut self.values {
            Values::Int16(v) => v.push(trimmed.parse().map_err(integer)?),
            Values::Int32(v) => v.push(trimmed.parse().map_err(integer)?),
            Values::Int64(v) => v.push(trimmed.parse().map_err(integer)?),
            Values::Float32(v) => {
                let wide = parse_float(trimmed).ok_or_else(invalid)?;
                v.push(narrow(wide).ok_or_else(out_of_range)?);
            }
            Values::Float64(v) => v.push(parse_float(trimmed).ok_or_else(invalid)?),
            Values::Decimal {
                values,
                precision,
                scale,
            } => values.push(
                parse_decimal::<Decimal128Type>(trimmed, *precision, *scale)
                    .map_err(|_| invalid())?,
            ),
            Values::Boolean(v) => v.push(parse_bool(trimmed).ok_or_else(invalid)?),
            Values::Date(v) => v.push(parse_date(trimmed).ok_or_else(invalid)?),
            Values::Timestamp { micros, .. } => micros.push(
                string_to_datetime(&Utc, trimmed)
                    .map_err(|_| invalid())?
                    .timestamp_micros(),
            ),
            Values::Text(b) => b.push(text.as_bytes())?,
            Values::Binary(b) => b.push(text.as_bytes())?,
        }
        self.valid.push(true);
        Ok(())
    }

    /// Appends `bytes` as the value of a text or binary column (`ENCODE BYTES`).
    pub(super) fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), String> {
        match &mut self.values {
            Values::Binary(b) => b.push(bytes)?,
            Values::Text(b) => match std::str::from_utf8(bytes) {
                Ok(text) => b.push(text.as_bytes())?,
                Err(e) => return Err(format!("column \"{}\": invalid UTF-8: {e}", self.name)),
            },
            _ => {
                return Err(format!(
                    "column \"{}\" is {}, not text or bytea",
                    self.name,
                    self.type_name()
                ))
            }
        }
        self.valid.push(true);
        Ok(())
    }

    /// Appends a JSON value: `null` is NULL, a string is read as text, a number or boolean by
    /// its value, and an object or array only by a text column (as its JSON text).
    pub(super) fn push_json(&mut self, value: &Value) -> Result<(), String> {
        match value {
            Value::Null => self.push_null(),
            Value::String(text) => self.push_text(text),
            Value::Number(number) => self.push_number(number),
            Value::Bool(b) => match &mut self.values {
                Values::Boolean(v) => {
                    v.push(*b);
                    self.valid.push(true);
                    Ok(())
                }
                Values::Text(_) => self.push_text(if *b { "true" } else { "false" }),
                _ => Err(self.mismatch("a boolean")),
            },
            Value::Array(_) | Value::Object(_) => match &mut self.values {
                Values::Text(b) => {
                    b.push(value.to_string().as_bytes())?;
                    self.valid.push(true);
                    Ok(())
                }
                _ => Err(self.mismatch(if value.is_array() {
                    "an array"
                } else {
                    "an object"
                })),
            },
        }
    }

    /// Appends a JSON number to a number or text column.
    fn push_number(&mut self, number: &Number) -> Result<(), String> {
        let type_name = self.type_name();
        let out_of_range = || {
            format!(
                "column \"{}\": {number} is out of range for {type_name}",
                self.name
            )
        };
        let not_integer = || format!("column \"{}\": {number} is not an integer", self.name);
        let integer = || json_integer(number).ok_or_else(not_integer);
        match &mut self.values {
            Values::Int16(v) => v.push(integer()?.try_into().map_err(|_| out_of_range())?),
            Values::Int32(v) => v.push(integer()?.try_into().map_err(|_| out_of_range())?),
            Values::Int64(v) => v.push(integer()?.try_into().map_err(|_| out_of_range())?),
            Values::Float32(v) => {
                let wide = number.as_f64().ok_or_else(out_of_range)?;
                v.push(narrow(wide).ok_or_else(out_of_range)?);
            }
            Values::Float64(v) => v.push(number.as_f64().ok_or_else(out_of_range)?),
            Values::Decimal { .. } | Values::Text(_) => return self.push_text(&number.to_string()),
            _ => return Err(self.mismatch("a number")),
        }
        self.valid.push(true);
        Ok(())
    }

    /// Why a JSON value of kind `found` cannot go in this column.
    fn mismatch(&self, found: &str) -> String {
        format!(
            "column \"{}\": expected {}, found {found}",
            self.name,
            self.type_name()
        )
    }

    /// The column's type as SQL names it.
    fn type_name(&self) -> String {
        match &self.values {
            Values::Int16(_) => "smallint".into(),
            Values::Int32(_) => "integer".into(),
            Values::Int64(_) => "bigint".into(),
            Values::Float32(_) => "real".into(),
            Values::Float64(_) => "double precision".into(),
            Values::Decimal {
                precision, scale, ..
            } => format!("numeric({precision},{scale})"),
            Values::Boolean(_) => "boolean".into(),
            Values::Date(_) => "date".into(),
            Values::Timestamp { zone: None, .. } => "timestamp".into(),
            Values::Timestamp { zone: Some(_), .. } => "timestamptz".into(),
            Values::Text(_) => "text".into(),
            Values::Binary(_) => "bytea".into(),
        }
    }

    /// The column as an Arrow array of its declared type.
    pub(super) fn finish(self) -> Result<ArrayRef, ArrowError> {
        let nulls = if self.valid.iter().all(|v| *v) {
            None
        } else {
            Some(NullBuffer::from(self.valid))
        };
        Ok(match self.values {
            Values::Int16(v) => Arc::new(Int16Array::new(v.into(), nulls)),
            Values::Int32(v) => Arc::new(Int32Array::new(v.into(), nulls)),
            Values::Int64(v) => Arc::new(Int64Array::new(v.into(), nulls)),
            Values::Float32(v) => Arc::new(Float32Array::new(v.into(), nulls)),
            Values::Float64(v) => Arc::new(Float64Array::new(v.into(), nulls)),
            Values::Decimal {
                values,
                precision,
                scale,
            } => Arc::new(
                Decimal128Array::new(values.into(), nulls)
                    .with_precision_and_scale(precision, scale)?,
            ),
            Values::Boolean(v) => Arc::new(BooleanArray::new(v.into(), nulls)),
            Values::Date(v) => Arc::new(Date32Array::new(v.into(), nulls)),
            Values::Timestamp { micros, zone } => Arc::new(
                TimestampMicrosecondArray::new(micros.into(), nulls).with_timezone_opt(zone),
            ),
            Values::Text(b) => {
                let (offsets, data) = b.into_buffers();
                Arc::new(StringArray::try_new(offsets, data, nulls)?)
            }
            Values::Binary(b) => {
                let (offsets, data) = b.into_buffers();
                Arc::new(BinaryArray::try_new(offsets, data, nulls)?)
            }
        })
    }
}

impl Bytes {
    fn new(rows: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Self {
            data: Vec::new(),
            offsets,
        }
    }

    /// Appends one value; a batch holds at most 2 GiB of text (Arrow's 32-bit offsets).
    fn push(&mut self, value: &[u8]) -> Result<(), String> {
        let end = i32::try_from(self.data.len() + value.len())
            .map_err(|_| "the batch's values exceed 2 GiB".to_string())?;
        self.data.extend_from_slice(value);
        self.offsets.push(end);
        Ok(())
    }

    fn truncate(&mut self, rows: usize) {
        self.offsets.truncate(rows + 1);
        let end = self.offsets.last().copied().unwrap_or(0);
        self.data.truncate(usize::try_from(end).unwrap_or(0));
    }

    fn into_buffers(self) -> (OffsetBuffer<i32>, Buffer) {
        (
            OffsetBuffer::new(ScalarBuffer::from(self.offsets)),
            Buffer::from_vec(self.data),
        )
    }
}

/// A JSON number's integer value, if it has no fraction (`3`, `3.0`, `3e2`).
fn json_integer(number: &Number) -> Option<i128> {
    if let Some(i) = number.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = number.as_u64() {
        return Some(i128::from(u));
    }
    let f = number.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 1e38).then_some(f as i128)
}

/// A floating-point number as PostgreSQL spells one (`1.5`, `-2e10`, `NaN`, `Infinity`); a
/// number too large for a double (`1e400`) is not one.
fn parse_float(text: &str) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    (!value.is_infinite() || text.to_ascii_lowercase().contains("inf")).then_some(value)
}

/// `value` as a `real`, unless it is finite and too large for one.
fn narrow(value: f64) -> Option<f32> {
    let narrow = value as f32;
    (!narrow.is_infinite() || value.is_infinite()).then_some(narrow)
}

/// A boolean as PostgreSQL spells one (`true`, `f`, `yes`, `off`, `1`, …; any case).
fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "on" | "1" => Some(true),
        "f" | "false" | "n" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// A `YYYY-MM-DD` date as days since 1970-01-01.
fn parse_date(text: &str) -> Option<i32> {
    let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from(date.signed_duration_since(epoch).num_days()).ok()
}
