//! Rows of catalog relations, built column by column name and turned into Arrow batches of the
//! relation's exact PostgreSQL 15 schema.
//!
//! A row names only the columns it knows; every other column gets PostgreSQL's value for an
//! object that lacks the feature: NULL where the column is nullable, else `0`, `false`, the
//! empty string or the empty array.

use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, BinaryBuilder, BooleanBuilder, Float32Builder, Float64Builder,
    Int16Builder, Int32Builder, Int64Builder, ListBuilder, RecordBatch, StringBuilder,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use datafusion::error::{DataFusionError, Result};

use crate::column_types::relation_schema;
use crate::pg15_relations::RelationDef;

/// One value of a catalog row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    List(Vec<Value>),
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Value::Text(text.to_string())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Value::Text(text)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

impl From<u32> for Value {
    fn from(i: u32) -> Self {
        Value::Int(i64::from(i))
    }
}

impl From<i32> for Value {
    fn from(i: i32) -> Self {
        Value::Int(i64::from(i))
    }
}

impl From<char> for Value {
    fn from(c: char) -> Self {
        Value::Text(c.to_string())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(value: Option<T>) -> Self {
        value.map_or(Value::Null, Into::into)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(values: Vec<T>) -> Self {
        Value::List(values.into_iter().map(Into::into).collect())
    }
}

/// The rows of one catalog relation, in the making.
pub(crate) struct RelationRows {
    relation: &'static RelationDef,
    rows: Vec<Vec<Value>>,
}

impl RelationRows {
    /// No rows yet of `relation`.
    pub fn new(relation: &'static RelationDef) -> Self {
        Self {
            relation,
            rows: Vec::new(),
        }
    }

    /// Adds a row with the given columns; the others take their defaults.
    ///
    /// Column names are fixed in Fluxion's code, and every relation's rows are built by a unit
    /// test, so an unknown name is a bug caught there.
    pub fn push(&mut self, values: &[(&str, Value)]) {
        let mut row: Vec<Value> = vec![Value::Null; self.relation.columns.len()];
        let mut given = vec![false; row.len()];
        for (name, value) in values {
            let index = self
                .relation
                .columns
                .iter()
                .position(|c| c.name == *name)
                .unwrap_or_else(|| {
                    panic!(
                        "invariant: {}.{} has a column {name}",
                        self.relation.schema, self.relation.name
                    )
                });
            row[index] = value.clone();
            given[index] = true;
        }
        for (index, column) in self.relation.columns.iter().enumerate() {
            if !given[index] && column.not_null {
                row[index] = zero_value(column.type_oid);
            }
        }
        self.rows.push(row);
    }

    /// Adds a row given in column order (for built-in rows read from PostgreSQL's own data).
    pub fn push_ordered(&mut self, row: Vec<Value>) {
        debug_assert_eq!(row.len(), self.relation.columns.len());
        self.rows.push(row);
    }

    /// The rows as one batch of the relation's schema.
    pub fn into_batch(self) -> Result<RecordBatch> {
        let schema: SchemaRef = relation_schema(self.relation);
        let columns = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, field)| column_array(field.data_type(), self.rows.iter().map(|r| &r[i])))
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(schema, columns)?)
    }
}

/// What a NOT NULL column holds for an object that lacks the feature it describes.
fn zero_value(type_oid: u32) -> Value {
    match type_oid {
        16 => Value::Bool(false),
        20 | 21 | 23 | 24 | 26 | 28 | 29 | 2205 | 2206 | 4089 | 5069 => Value::Int(0),
        700 | 701 => Value::Float(0.0),
        22 | 30 => Value::List(Vec::new()),
        oid if crate::column_types::is_array_type(oid) => Value::List(Vec::new()),
        _ => Value::Text(String::new()),
    }
}

/// An Arrow array of `data_type` holding `values`.
fn column_array<'a>(
    data_type: &DataType,
    values: impl Iterator<Item = &'a Value>,
) -> Result<ArrayRef> {
    let mut builder = builder_for(data_type)?;
    for value in values {
        append(builder.as_mut(), data_type, value)?;
    }
    Ok(builder.finish())
}

fn builder_for(data_type: &DataType) -> Result<Box<dyn ArrayBuilder>> {
    Ok(match data_type {
        DataType::Boolean => Box::new(BooleanBuilder::new()),
        DataType::Int16 => Box::new(Int16Builder::new()),
        DataType::Int32 => Box::new(Int32Builder::new()),
        DataType::Int64 => Box::new(Int64Builder::new()),
        DataType::Float32 => Box::new(Float32Builder::new()),
        DataType::Float64 => Box::new(Float64Builder::new()),
        DataType::Utf8 => Box::new(StringBuilder::new()),
        DataType::Binary => Box::new(BinaryBuilder::new()),
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            Box::new(TimestampMicrosecondBuilder::new().with_timezone_opt(tz.clone()))
        }
        DataType::List(item) => match item.data_type() {
            DataType::Int16 => {
                Box::new(ListBuilder::new(Int16Builder::new()).with_field(item.clone()))
            }
            DataType::Int32 => {
                Box::new(ListBuilder::new(Int32Builder::new()).with_field(item.clone()))
            }
            DataType::Int64 => {
                Box::new(ListBuilder::new(Int64Builder::new()).with_field(item.clone()))
            }
            DataType::Float32 => {
                Box::new(ListBuilder::new(Float32Builder::new()).with_field(item.clone()))
            }
            DataType::Float64 => {
                Box::new(ListBuilder::new(Float64Builder::new()).with_field(item.clone()))
            }
            DataType::Boolean => {
                Box::new(ListBuilder::new(BooleanBuilder::new()).with_field(item.clone()))
            }
            _ => Box::new(ListBuilder::new(StringBuilder::new()).with_field(item.clone())),
        },
        other => {
            return Err(DataFusionError::Internal(format!(
                "catalog column of unexpected type {other}"
            )))
        }
    })
}

fn mismatch(data_type: &DataType, value: &Value) -> DataFusionError {
    DataFusionError::Internal(format!(
        "catalog value {value:?} does not fit a {data_type} column"
    ))
}

fn downcast<T: 'static>(builder: &mut dyn ArrayBuilder) -> Result<&mut T> {
    builder
        .as_any_mut()
        .downcast_mut::<T>()
        .ok_or_else(|| DataFusionError::Internal("catalog column builder of another type".into()))
}

fn append(builder: &mut dyn ArrayBuilder, data_type: &DataType, value: &Value) -> Result<()> {
    match (data_type, value) {
        (DataType::Boolean, Value::Bool(b)) => {
            downcast::<BooleanBuilder>(builder)?.append_value(*b)
        }
        (DataType::Boolean, Value::Null) => downcast::<BooleanBuilder>(builder)?.append_null(),
        (DataType::Int16, Value::Int(i)) => downcast::<Int16Builder>(builder)?
            .append_value(i16::try_from(*i).map_err(|_| mismatch(data_type, value))?),
        (DataType::Int16, Value::Null) => downcast::<Int16Builder>(builder)?.append_null(),
        (DataType::Int32, Value::Int(i)) => downcast::<Int32Builder>(builder)?
            .append_value(i32::try_from(*i).map_err(|_| mismatch(data_type, value))?),
        (DataType::Int32, Value::Null) => downcast::<Int32Builder>(builder)?.append_null(),
        (DataType::Int64, Value::Int(i)) => downcast::<Int64Builder>(builder)?.append_value(*i),
        (DataType::Int64, Value::Null) => downcast::<Int64Builder>(builder)?.append_null(),
        (DataType::Float32, Value::Float(f)) => {
            downcast::<Float32Builder>(builder)?.append_value(*f as f32)
        }
        (DataType::Float32, Value::Int(i)) => {
            downcast::<Float32Builder>(builder)?.append_value(*i as f32)
        }
        (DataType::Float32, Value::Null) => downcast::<Float32Builder>(builder)?.append_null(),
        (DataType::Float64, Value::Float(f)) => {
            downcast::<Float64Builder>(builder)?.append_value(*f)
        }
        (DataType::Float64, Value::Int(i)) => {
            downcast::<Float64Builder>(builder)?.append_value(*i as f64)
        }
        (DataType::Float64, Value::Null) => downcast::<Float64Builder>(builder)?.append_null(),
        (DataType::Utf8, Value::Text(t)) => downcast::<StringBuilder>(builder)?.append_value(t),
        (DataType::Utf8, Value::Int(i)) => {
            downcast::<StringBuilder>(builder)?.append_value(i.to_string())
        }
        (DataType::Utf8, Value::Null) => downcast::<StringBuilder>(builder)?.append_null(),
        (DataType::Binary, Value::Text(t)) => {
            downcast::<BinaryBuilder>(builder)?.append_value(t.as_bytes())
        }
        (DataType::Binary, Value::Null) => downcast::<BinaryBuilder>(builder)?.append_null(),
        (DataType::Timestamp(..), Value::Int(micros)) => {
            downcast::<TimestampMicrosecondBuilder>(builder)?.append_value(*micros)
        }
        (DataType::Timestamp(..), Value::Null) => {
            downcast::<TimestampMicrosecondBuilder>(builder)?.append_null()
        }
        (DataType::List(item), Value::List(values)) => {
            append_list(builder, item.data_type(), values)?
        }
        (DataType::List(item), Value::Null) => append_null_list(builder, item.data_type())?,
        _ => return Err(mismatch(data_type, value)),
    }
    Ok(())
}

macro_rules! list_of {
    ($builder:expr, $inner:ty, $values:expr, $item:expr) => {{
        let list = downcast::<ListBuilder<$inner>>($builder)?;
        for value in $values {
            append(list.values(), $item, value)?;
        }
        list.append(true);
    }};
}

fn append_list(builder: &mut dyn ArrayBuilder, item: &DataType, values: &[Value]) -> Result<()> {
    match item {
        DataType::Int16 => list_of!(builder, Int16Builder, values, item),
        DataType::Int32 => list_of!(builder, Int32Builder, values, item),
        DataType::Int64 => list_of!(builder, Int64Builder, values, item),
        DataType::Float32 => list_of!(builder, Float32Builder, values, item),
        DataType::Float64 => list_of!(builder, Float64Builder, values, item),
        DataType::Boolean => list_of!(builder, BooleanBuilder, values, item),
        _ => list_of!(builder, StringBuilder, values, item),
    }
    Ok(())
}

fn append_null_list(builder: &mut dyn ArrayBuilder, item: &DataType) -> Result<()> {
    match item {
        DataType::Int16 => downcast::<ListBuilder<Int16Builder>>(builder)?.append(false),
        DataType::Int32 => downcast::<ListBuilder<Int32Builder>>(builder)?.append(false),
        DataType::Int64 => downcast::<ListBuilder<Int64Builder>>(builder)?.append(false),
        DataType::Float32 => downcast::<ListBuilder<Float32Builder>>(builder)?.append(false),
        DataType::Float64 => downcast::<ListBuilder<Float64Builder>>(builder)?.append(false),
        DataType::Boolean => downcast::<ListBuilder<BooleanBuilder>>(builder)?.append(false),
        _ => downcast::<ListBuilder<StringBuilder>>(builder)?.append(false),
    }
    Ok(())
}

/// An empty batch of `relation`'s schema.
pub(crate) fn empty_batch(relation: &'static RelationDef) -> Result<RecordBatch> {
    RelationRows::new(relation).into_batch()
}
