//! Rows as arrow-row bytes.
//!
//! The arrow-row format is memcomparable (byte order is SQL order), and a row of a schema
//! `A ++ B` is the byte concatenation of a row of `A` and a row of `B`. Dataflows sort, hash
//! and join rows as opaque bytes and only decode them, a batch at a time, to evaluate
//! expressions.

use std::fmt;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow_row::{RowConverter, RowParser, SortField};
use serde::{Deserialize, Serialize};

use crate::ReprError;

/// One row of a relation, encoded in arrow-row format for that relation's schema.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Row(Box<[u8]>);

impl Row {
    /// Wraps bytes produced by a [`RowCodec`].
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Row(bytes.into())
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The row of schema `A ++ B` made of this row of `A` followed by `other` of `B`.
    pub fn concat(&self, other: &Row) -> Row {
        let mut bytes = Vec::with_capacity(self.0.len() + other.0.len());
        bytes.extend_from_slice(&self.0);
        bytes.extend_from_slice(&other.0);
        Row(bytes.into())
    }

    /// The number of encoded bytes.
    pub fn len_bytes(&self) -> usize {
        self.0.len()
    }
}

impl AsRef<[u8]> for Row {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Row(")?;
        for b in self.0.iter() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// Encodes Arrow columns of one schema into [`Row`]s and decodes them back.
pub struct RowCodec {
    schema: SchemaRef,
    relaxed_schema: SchemaRef,
    converter: RowConverter,
    parser: RowParser,
}

impl fmt::Debug for RowCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowCodec")
            .field("schema", &self.schema)
            .finish()
    }
}

impl RowCodec {
    /// A codec for rows of `schema`.
    pub fn new(schema: SchemaRef) -> Result<Self, ReprError> {
        let fields: Vec<SortField> = schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        if !RowConverter::supports_fields(&fields) {
            let bad = schema
                .fields()
                .iter()
                .find(|f| !RowConverter::supports_fields(&[SortField::new(f.data_type().clone())]))
                .map(|f| f.data_type().to_string())
                .unwrap_or_default();
            return Err(ReprError::UnsupportedType(bad));
        }
        let converter = RowConverter::new(fields)?;
        let parser = converter.parser();
        let relaxed_schema = Arc::new(Schema::new(
            schema
                .fields()
                .iter()
                .map(|f| Field::new(f.name(), f.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        Ok(Self {
            schema,
            relaxed_schema,
            converter,
            parser,
        })
    }

    /// The schema rows of this codec have.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Encodes `columns` (one array per schema field, equal lengths) as rows.
    pub fn encode_columns(
        &self,
        columns: &[ArrayRef],
        num_rows: usize,
    ) -> Result<Vec<Row>, ReprError> {
        if columns.is_empty() {
            return Ok(vec![Row::default(); num_rows]);
        }
        let columns = self.cast_to_schema(columns)?;
        let rows = self.converter.convert_columns(&columns)?;
        Ok(rows.iter().map(|r| Row::from_bytes(r.data())).collect())
    }

    /// Encodes every row of `batch`.
    pub fn encode(&self, batch: &RecordBatch) -> Result<Vec<Row>, ReprError> {
        self.encode_columns(batch.columns(), batch.num_rows())
    }

    /// Decodes rows (each a [`Row`] or the bytes of one) into one batch of this codec's schema.
    ///
    /// Where the data violates the schema's nullability (a NULL padded in by an outer join), the
    /// batch uses the same schema with every column nullable.
    pub fn decode<I>(&self, rows: I) -> Result<RecordBatch, ReprError>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let rows: Vec<I::Item> = rows.into_iter().collect();
        let parsed: Vec<_> = rows.iter().map(|r| self.parser.parse(r.as_ref())).collect();
        let num_rows = parsed.len();
        let columns = if self.schema.fields().is_empty() {
            Vec::new()
        } else {
            self.converter.convert_rows(parsed)?
        };
        let options = RecordBatchOptions::new().with_row_count(Some(num_rows));
        match RecordBatch::try_new_with_options(self.schema.clone(), columns.clone(), &options) {
            Ok(batch) => Ok(batch),
            Err(_) => Ok(RecordBatch::try_new_with_options(
                self.relaxed_schema.clone(),
                columns,
                &options,
            )?),
        }
    }

    /// Encodes one row of all NULLs (the padding an outer join adds).
    pub fn null_row(&self) -> Result<Row, ReprError> {
        let columns: Vec<ArrayRef> = self
            .schema
            .fields()
            .iter()
            .map(|f| arrow::array::new_null_array(f.data_type(), 1))
            .collect();
        Ok(self.encode_columns(&columns, 1)?.remove(0))
    }

    fn cast_to_schema(&self, columns: &[ArrayRef]) -> Result<Vec<ArrayRef>, ReprError> {
        columns
            .iter()
            .zip(self.schema.fields())
            .map(|(c, f)| {
                if c.data_type() == f.data_type() {
                    Ok(c.clone())
                } else {
                    Ok(arrow::compute::cast(c, f.data_type())?)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::DataType;

    fn schema(fields: &[(&str, DataType)]) -> SchemaRef {
        Arc::new(Schema::new(
            fields
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), true))
                .collect::<Vec<_>>(),
        ))
    }

    #[test]
    fn rows_round_trip_through_a_batch() {
        let s = schema(&[("a", DataType::Int64), ("b", DataType::Utf8)]);
        let codec = RowCodec::new(s.clone()).unwrap();
        let batch = RecordBatch::try_new(
            s,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(-3)])),
                Arc::new(StringArray::from(vec![Some("x"), Some("yy"), None])),
            ],
        )
        .unwrap();
        let rows = codec.encode(&batch).unwrap();
        assert_eq!(codec.decode(&rows).unwrap(), batch);
    }

    #[test]
    fn concatenated_rows_decode_as_the_joined_schema() {
        let left = RowCodec::new(schema(&[("a", DataType::Int64)])).unwrap();
        let right = RowCodec::new(schema(&[("b", DataType::Utf8)])).unwrap();
        let both = RowCodec::new(schema(&[("a", DataType::Int64), ("b", DataType::Utf8)])).unwrap();
        let l = left
            .encode_columns(&[Arc::new(Int64Array::from(vec![7]))], 1)
            .unwrap();
        let r = right.null_row().unwrap();
        let joined = both.decode([&l[0].concat(&r)]).unwrap();
        assert_eq!(joined.num_rows(), 1);
        assert!(joined.column(1).is_null(0));
    }

    #[test]
    fn byte_order_is_sql_order() {
        let codec = RowCodec::new(schema(&[("a", DataType::Int64)])).unwrap();
        let rows = codec
            .encode_columns(&[Arc::new(Int64Array::from(vec![-5, 3, 100]))], 3)
            .unwrap();
        assert!(rows[0] < rows[1] && rows[1] < rows[2]);
    }

    #[test]
    fn zero_column_rows_keep_their_count() {
        let codec = RowCodec::new(schema(&[])).unwrap();
        let rows = codec.encode_columns(&[], 4).unwrap();
        assert_eq!(codec.decode(&rows).unwrap().num_rows(), 4);
    }
}
