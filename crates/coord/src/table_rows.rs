//! A table's rows as written: their encoding and key, and the checks and casts that make a
//! batch of new rows fit the table (types, NOT NULL, varchar lengths, bytea input).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BinaryArray, RecordBatch, StringArray};
use datafusion::arrow::compute::{cast_with_options, concat_batches, CastOptions};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use repr::{Diff, Row, RowCodec};

use sql::{InsertTarget, SqlError};

use crate::error::CoordError;

/// How a table's rows are encoded, and its key for the arrangement.
pub(crate) struct TableCodecs {
    pub name: String,
    pub schema: SchemaRef,
    pub rows: RowCodec,
    /// The primary key columns and their codec.
    pub key: Option<(Vec<usize>, RowCodec)>,
    /// Column defaults as SQL text (for `DEFAULT` in VALUES).
    pub default_sql: HashMap<String, String>,
}

impl TableCodecs {
    pub fn new(
        name: &str,
        desc: &repr::RelationDesc,
        default_sql: HashMap<String, String>,
    ) -> Result<Self, CoordError> {
        let rows = RowCodec::new(desc.schema.clone())
            .map_err(|e| CoordError::unsupported(e.to_string()))?;
        let key = match &desc.primary_key {
            Some(columns) => {
                let schema = Arc::new(
                    desc.schema
                        .project(columns)
                        .map_err(|e| CoordError::Internal(e.to_string()))?,
                );
                let codec =
                    RowCodec::new(schema).map_err(|e| CoordError::unsupported(e.to_string()))?;
                Some((columns.clone(), codec))
            }
            None => None,
        };
        Ok(Self {
            name: name.to_string(),
            schema: desc.schema.clone(),
            rows,
            key,
            default_sql,
        })
    }

    /// The primary key row of each row of `batch` (or the row itself without a key).
    /// The table as an INSERT's rows are shaped to it.
    pub fn insert_target(&self) -> InsertTarget<'_> {
        InsertTarget {
            schema: &self.schema,
            default_sql: &self.default_sql,
        }
    }

    pub fn keys_of(&self, batch: &RecordBatch) -> Result<Vec<Row>, CoordError> {
        let encoded = match &self.key {
            Some((columns, codec)) => {
                let columns: Vec<ArrayRef> =
                    columns.iter().map(|&c| batch.column(c).clone()).collect();
                codec.encode_columns(&columns, batch.num_rows())
            }
            None => self.rows.encode(batch),
        };
        encoded.map_err(|e| CoordError::Internal(e.to_string()))
    }

    /// `(key, value)` pairs as the table's arrangement stores them.
    pub fn arrangement_pairs(
        &self,
        rows: &[(Row, Diff)],
    ) -> Result<Vec<compute::KeyedUpdate>, CoordError> {
        if self.key.is_none() {
            return Ok(rows
                .iter()
                .map(|(row, d)| ((row.clone(), Row::default()), *d))
                .collect());
        }
        let batch = self.decode(rows)?;
        let keys = self.keys_of(&batch)?;
        Ok(keys
            .into_iter()
            .zip(rows)
            .map(|(key, (row, diff))| ((key, row.clone()), *diff))
            .collect())
    }

    /// The rows of `batch`, encoded as the table stores them.
    pub fn encode(&self, batch: &RecordBatch) -> Result<Vec<Row>, CoordError> {
        self.rows
            .encode(batch)
            .map_err(|e| CoordError::Internal(e.to_string()))
    }

    pub fn decode(&self, rows: &[(Row, Diff)]) -> Result<RecordBatch, CoordError> {
        self.rows
            .decode(rows.iter().map(|(row, _)| row))
            .map_err(|e| CoordError::Internal(e.to_string()))
    }

    /// `Key (id)=(1) already exists.` for row `row` of `batch`.
    pub fn describe_key(&self, batch: &RecordBatch, row: usize) -> String {
        let columns: Vec<usize> = match &self.key {
            Some((columns, _)) => columns.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        format!(
            "{} already exists.",
            self.describe_columns(batch, row, &columns)
        )
    }

    /// `Key (a, b)=(1, 2)`: the values of `columns` in row `row` of `batch`.
    pub fn describe_columns(&self, batch: &RecordBatch, row: usize, columns: &[usize]) -> String {
        let names: Vec<&str> = columns
            .iter()
            .map(|&c| self.schema.field(c).name().as_str())
            .collect();
        let values: Vec<String> = columns
            .iter()
            .map(|&c| {
                datafusion::arrow::util::display::array_value_to_string(batch.column(c), row)
                    .unwrap_or_default()
            })
            .collect();
        format!("Key ({})=({})", names.join(", "), values.join(", "))
    }
}

/// The table schema with every column nullable, for batches built before NOT NULL checks.
pub(crate) fn batch_schema(schema: &SchemaRef) -> SchemaRef {
    Arc::new(datafusion::arrow::datatypes::Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ))
}

/// One batch in the table's column types.
pub(crate) fn conform(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<RecordBatch, CoordError> {
    let relaxed = batch_schema(schema);
    let mut conformed = Vec::with_capacity(batches.len());
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(column, field)| cast_column(column, field.data_type()))
            .collect::<Result<Vec<_>, _>>()?;
        conformed.push(
            RecordBatch::try_new(relaxed.clone(), columns)
                .map_err(|e| CoordError::Internal(e.to_string()))?,
        );
    }
    concat_batches(&relaxed, &conformed).map_err(|e| CoordError::Internal(e.to_string()))
}

/// A column cast to a table column's type. Text becomes `bytea` by Postgres's input rules
/// (`\x` followed by hex digits), not byte for byte.
pub(crate) fn cast_column(column: &ArrayRef, data_type: &DataType) -> Result<ArrayRef, CoordError> {
    if column.data_type() == data_type {
        return Ok(column.clone());
    }
    if let (Some(text), DataType::List(_)) =
        (column.as_any().downcast_ref::<StringArray>(), data_type)
    {
        return repr::pg_array::text_to_list(text, data_type)
            .map_err(|e| CoordError::invalid_value(e.to_string()));
    }
    if data_type == &DataType::Binary {
        if let Some(text) = column.as_any().downcast_ref::<StringArray>() {
            return text
                .iter()
                .map(|v| v.map(bytea_from_text).transpose())
                .collect::<Result<BinaryArray, _>>()
                .map(|a| Arc::new(a) as ArrayRef);
        }
    }
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(column, data_type, &strict)
        .map_err(|e| CoordError::invalid_value(e.to_string()))
}

/// Postgres `bytea` input: `\x` and hex digits, or the text's own bytes.
fn bytea_from_text(text: &str) -> Result<Vec<u8>, CoordError> {
    let Some(hex) = text.strip_prefix("\\x") else {
        return Ok(text.as_bytes().to_vec());
    };
    if hex.len() % 2 != 0 {
        return Err(CoordError::invalid_value(format!(
            "invalid hexadecimal data: odd number of digits in \"{text}\""
        )));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| {
                CoordError::invalid_value(format!("invalid hexadecimal digit in \"{text}\""))
            })
        })
        .collect()
}

/// Rejects NULLs in NOT NULL columns and strings longer than a `varchar(n)` allows.
pub(crate) fn check_not_null(codecs: &TableCodecs, batch: &RecordBatch) -> Result<(), CoordError> {
    for (column, field) in batch.columns().iter().zip(codecs.schema.fields()) {
        if !field.is_nullable() && column.null_count() > 0 {
            return Err(CoordError::NotNullViolation {
                column: field.name().clone(),
                relation: codecs.name.clone(),
            });
        }
        if let Some(limit) = varchar_limit(field) {
            if let Some(text) = column.as_any().downcast_ref::<StringArray>() {
                if text.iter().flatten().any(|v| v.chars().count() > limit) {
                    return Err(CoordError::Sql(SqlError::StringTooLong(format!(
                        "value too long for type character varying({limit})"
                    ))));
                }
            }
        }
    }
    Ok(())
}

/// The `n` of a column declared `varchar(n)`.
fn varchar_limit(field: &datafusion::arrow::datatypes::Field) -> Option<usize> {
    let declared = field.metadata().get(repr::pg_type::DECLARED_TYPE_KEY)?;
    let inside = declared
        .strip_prefix("character varying(")?
        .strip_suffix(')')?;
    inside.trim().parse().ok()
}
