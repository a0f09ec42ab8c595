//! The test's own model of the tables: column types, values, and the rows each table holds.
//!
//! The oracle is built from this model only, never from what Fluxion returns: every write the
//! test sends to Fluxion is applied here too, with the SQL semantics spelled out in Rust
//! (three-valued comparisons, `col + n` staying NULL on NULL).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// The column types the generator uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlType {
    /// `integer` (Arrow Int32).
    Int,
    /// `bigint` (Arrow Int64).
    BigInt,
    /// `numeric(10,2)` (Arrow Decimal128(10, 2)); values are held as cents.
    Numeric,
    /// `text` (Arrow Utf8).
    Text,
    /// `boolean`.
    Bool,
    /// `timestamp` (without time zone; Arrow Timestamp(Microsecond)).
    Timestamp,
    /// `double precision` (Arrow Float64); values are quarters, exact in binary.
    Double,
}

impl SqlType {
    /// The type's name in a column definition.
    pub fn sql_name(self) -> &'static str {
        match self {
            SqlType::Int => "integer",
            SqlType::BigInt => "bigint",
            SqlType::Numeric => "numeric(10,2)",
            SqlType::Text => "text",
            SqlType::Bool => "boolean",
            SqlType::Timestamp => "timestamp",
            SqlType::Double => "double precision",
        }
    }

    /// The Arrow type Fluxion stores the column as.
    pub fn arrow_type(self) -> DataType {
        match self {
            SqlType::Int => DataType::Int32,
            SqlType::BigInt => DataType::Int64,
            SqlType::Numeric => DataType::Decimal128(10, 2),
            SqlType::Text => DataType::Utf8,
            SqlType::Bool => DataType::Boolean,
            SqlType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            SqlType::Double => DataType::Float64,
        }
    }

    /// Whether the type is `integer` or `bigint`.
    pub fn is_integer(self) -> bool {
        matches!(self, SqlType::Int | SqlType::BigInt)
    }

    /// Whether values of the two types can be compared with `=` without casts that could fail.
    pub fn is_comparable_with(self, other: SqlType) -> bool {
        self == other || (self.is_integer() && other.is_integer())
    }
}

/// One value of a cell.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// An `integer` or `bigint`.
    Int(i64),
    /// A `numeric(10,2)` in cents.
    Numeric(i64),
    /// A `text`.
    Text(String),
    /// A `boolean`.
    Bool(bool),
    /// A `timestamp`, in microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
    /// A `double precision` in quarters (`Double(9)` is 2.25).
    Double(i64),
}

impl Value {
    /// The value as a SQL literal.
    pub fn literal(&self) -> String {
        match self {
            Value::Null => "NULL".to_string(),
            Value::Int(v) => v.to_string(),
            Value::Numeric(cents) => numeric_text(*cents),
            Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Bool(b) => b.to_string(),
            Value::Timestamp(micros) => format!("TIMESTAMP '{}'", timestamp_text(*micros)),
            Value::Double(quarters) => {
                format!("CAST({} AS DOUBLE PRECISION)", *quarters as f64 / 4.0)
            }
        }
    }

    /// Whether this is SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// `cents / 100` as text with two decimals (`-0.50`).
pub fn numeric_text(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let magnitude = cents.unsigned_abs();
    format!("{sign}{}.{:02}", magnitude / 100, magnitude % 100)
}

/// A timestamp in PostgreSQL's text format (`2024-03-10 01:30:00`, fractions only when not
/// zero).
pub fn timestamp_text(micros: i64) -> String {
    let time = chrono::DateTime::from_timestamp_micros(micros)
        .expect("invariant: generated timestamps are in chrono's range")
        .naive_utc();
    if micros % 1_000_000 == 0 {
        time.format("%Y-%m-%d %H:%M:%S").to_string()
    } else {
        let text = time.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
        text.trim_end_matches('0').to_string()
    }
}

/// One column of a table.
#[derive(Debug, Clone)]
pub struct Column {
    /// Its name, unique in the whole schema (`a0`, `b2`, …).
    pub name: String,
    /// Its type.
    pub ty: SqlType,
    /// Whether it may hold NULL (false for primary key columns).
    pub nullable: bool,
}

/// A table and the rows the test believes it holds.
#[derive(Debug, Clone)]
pub struct Table {
    /// The table's name.
    pub name: String,
    /// Its columns in order.
    pub columns: Vec<Column>,
    /// The index of the primary key column, if the table has one.
    pub primary_key: Option<usize>,
    /// The current rows, as a multiset (order is irrelevant).
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// The `CREATE TABLE` statement.
    pub fn create_sql(&self) -> String {
        let columns = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let key = if self.primary_key == Some(i) {
                    " PRIMARY KEY"
                } else {
                    ""
                };
                format!("{} {}{key}", c.name, c.ty.sql_name())
            })
            .collect::<Vec<_>>()
            .join(", ");
        format!("CREATE TABLE {} ({columns})", self.name)
    }

    /// The Arrow schema Fluxion gives the table.
    pub fn arrow_schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|c| Field::new(&c.name, c.ty.arrow_type(), c.nullable))
                .collect::<Vec<_>>(),
        ))
    }

    /// The current rows as one Arrow batch.
    pub fn record_batch(&self) -> RecordBatch {
        let columns = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| column_array(c.ty, self.rows.iter().map(|r| &r[i])))
            .collect::<Vec<_>>();
        RecordBatch::try_new(self.arrow_schema(), columns)
            .expect("invariant: model rows match the model schema")
    }

    /// Whether some row holds `key` in the primary key column.
    pub fn has_key(&self, key: &Value) -> bool {
        self.primary_key
            .is_some_and(|k| self.rows.iter().any(|r| &r[k] == key))
    }
}

fn column_array<'a>(ty: SqlType, values: impl Iterator<Item = &'a Value>) -> ArrayRef {
    fn int(v: &Value) -> Option<i64> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    match ty {
        SqlType::Int => Arc::new(Int32Array::from_iter(values.map(|v| {
            int(v).map(|i| i32::try_from(i).expect("invariant: integer values fit in i32"))
        }))),
        SqlType::BigInt => Arc::new(Int64Array::from_iter(values.map(int))),
        SqlType::Numeric => Arc::new(
            Decimal128Array::from_iter(values.map(|v| match v {
                Value::Numeric(c) => Some(*c as i128),
                _ => None,
            }))
            .with_precision_and_scale(10, 2)
            .expect("invariant: numeric(10,2) is a valid decimal type"),
        ),
        SqlType::Text => Arc::new(StringArray::from_iter(values.map(|v| match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }))),
        SqlType::Bool => Arc::new(BooleanArray::from_iter(values.map(|v| match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        }))),
        SqlType::Double => Arc::new(Float64Array::from_iter(values.map(|v| match v {
            Value::Double(quarters) => Some(*quarters as f64 / 4.0),
            _ => None,
        }))),
        SqlType::Timestamp => Arc::new(TimestampMicrosecondArray::from_iter(values.map(
            |v| match v {
                Value::Timestamp(micros) => Some(*micros),
                _ => None,
            },
        ))),
    }
}
