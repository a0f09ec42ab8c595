//! Rows of [`Value`]s turned into an Arrow batch of the output's schema.
//!
//! A value upstream did not send (a TOASTed value that did not change, a non-key column of
//! a delete) is [`Value::Null`]; in a `NOT NULL` column it becomes the type's zero, a
//! placeholder the change's meaning says to ignore.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, ListArray, RecordBatch, StringArray,
    Time64MicrosecondArray, TimestampMicrosecondArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, SchemaRef, TimeUnit};
use arrow::error::ArrowError;

use super::value::Value;

/// The batch of `rows` (each a value per column of `schema`).
pub(crate) fn to_batch(schema: &SchemaRef, rows: &[Vec<Value>]) -> Result<RecordBatch, ArrowError> {
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let values: Vec<&Value> = rows.iter().map(|row| &row[index]).collect();
            to_array(field, &values)
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns)
}

/// One value per row of `field`'s type; a mismatched value is taken as NULL.
macro_rules! primitive {
    ($array:ty, $variant:ident, $field:expr, $values:expr) => {{
        let placeholder = if $field.is_nullable() {
            None
        } else {
            Some(Default::default())
        };
        let array: $array = $values
            .iter()
            .map(|value| match value {
                Value::$variant(v) => Some(v.clone()),
                _ => placeholder.clone(),
            })
            .collect();
        array
    }};
}

/// The column of `field` holding `values`.
fn to_array(field: &Field, values: &[&Value]) -> Result<ArrayRef, ArrowError> {
    let array: ArrayRef = match field.data_type() {
        DataType::Boolean => Arc::new(primitive!(BooleanArray, Boolean, field, values)),
        DataType::Int16 => Arc::new(primitive!(Int16Array, Int16, field, values)),
        DataType::Int32 => Arc::new(primitive!(Int32Array, Int32, field, values)),
        DataType::Int64 => Arc::new(primitive!(Int64Array, Int64, field, values)),
        DataType::Float32 => Arc::new(primitive!(Float32Array, Float32, field, values)),
        DataType::Float64 => Arc::new(primitive!(Float64Array, Float64, field, values)),
        DataType::Decimal128(precision, scale) => Arc::new(
            primitive!(Decimal128Array, Decimal, field, values)
                .with_precision_and_scale(*precision, *scale)?,
        ),
        DataType::Utf8 => Arc::new(primitive!(StringArray, Text, field, values)),
        DataType::Binary => Arc::new(primitive!(BinaryArray, Binary, field, values)),
        DataType::Date32 => Arc::new(primitive!(Date32Array, Date, field, values)),
        DataType::Time64(TimeUnit::Microsecond) => {
            Arc::new(primitive!(Time64MicrosecondArray, Time, field, values))
        }
        DataType::Timestamp(TimeUnit::Microsecond, zone) => Arc::new(
            primitive!(TimestampMicrosecondArray, Timestamp, field, values)
                .with_timezone_opt(zone.clone()),
        ),
        DataType::List(element) => Arc::new(to_list(field, element, values)?),
        other => {
            return Err(ArrowError::NotYetImplemented(format!(
                "postgres-cdc columns of type {other}"
            )))
        }
    };
    Ok(array)
}

/// The list column of `field` (elements of `element`) holding `values`.
fn to_list(
    field: &Field,
    element: &Arc<Field>,
    values: &[&Value],
) -> Result<ListArray, ArrowError> {
    let mut items: Vec<&Value> = Vec::new();
    let mut lengths = Vec::with_capacity(values.len());
    let mut valid = Vec::with_capacity(values.len());
    for value in values {
        match value {
            Value::List(list) => {
                items.extend(list.iter());
                lengths.push(list.len());
                valid.push(true);
            }
            _ => {
                lengths.push(0);
                valid.push(!field.is_nullable());
            }
        }
    }
    let nulls = field.is_nullable().then(|| NullBuffer::from(valid));
    ListArray::try_new(
        Arc::clone(element),
        OffsetBuffer::from_lengths(lengths),
        to_array(element, &items)?,
        nulls,
    )
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int32Type, Schema};

    use super::*;

    #[test]
    fn builds_a_batch_with_nulls_and_placeholders() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("note", DataType::Utf8, true),
            Field::new(
                "tags",
                DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
                true,
            ),
            Field::new(
                "at",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ]));
        let rows = vec![
            vec![
                Value::Int32(1),
                Value::Text("a".into()),
                Value::List(vec![Value::Int32(5), Value::Null]),
                Value::Timestamp(7),
            ],
            vec![Value::Null, Value::Null, Value::Null, Value::Null],
        ];
        let batch = to_batch(&schema, &rows).unwrap();
        assert_eq!(batch.num_rows(), 2);
        let ids = batch.column(0).as_primitive::<Int32Type>();
        assert_eq!(ids.values(), &[1, 0]);
        assert!(batch.column(1).is_null(1));
        let tags = batch.column(2).as_list::<i32>();
        assert!(tags.is_null(1));
        let first = tags.value(0);
        assert_eq!(first.as_primitive::<Int32Type>().value(0), 5);
        assert!(first.is_null(1));
        assert_eq!(batch.schema(), schema);
    }
}
