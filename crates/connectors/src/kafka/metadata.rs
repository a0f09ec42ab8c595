//! `INCLUDE key | partition | offset | timestamp`: the metadata columns a `kafka` source
//! appends to the declared (value) columns, one per `INCLUDE`, in order.
//!
//! Types: `key` is `bytea` (NULL for a record without a key), `partition` is `int`, `offset`
//! is `bigint`, `timestamp` is `timestamptz` (the record's timestamp, which Kafka keeps in
//! milliseconds).

use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryArray, Int32Array, Int64Array, TimestampMicrosecondArray};
use arrow::compute::{can_cast_types, cast};
use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef, TimeUnit};

use super::broker::KafkaRecord;
use crate::{ConnectorError, Include, Metadata};

/// The metadata columns at the end of a source's columns.
#[derive(Debug)]
pub(crate) struct MetadataColumns {
    /// What each column holds, with its field in the source's schema.
    columns: Vec<(Metadata, FieldRef)>,
}

impl MetadataColumns {
    /// Splits `schema` into the declared columns (returned) and the `include` columns that
    /// must end it, by name, each of a type its metadata can be cast to.
    pub fn split(
        schema: &SchemaRef,
        include: &[Include],
    ) -> Result<(SchemaRef, Self), ConnectorError> {
        let fields = schema.fields();
        let declared = fields.len().checked_sub(include.len()).ok_or_else(|| {
            ConnectorError::Schema(format!(
                "the source has {} columns, fewer than its {} INCLUDE columns",
                fields.len(),
                include.len()
            ))
        })?;
        let columns = include
            .iter()
            .zip(&fields[declared..])
            .map(|(include, field)| {
                if field.name() != &include.column {
                    return Err(ConnectorError::Schema(format!(
                        "the source's columns must end with its INCLUDE columns: found \"{}\" \
                         where \"{}\" was expected",
                        field.name(),
                        include.column
                    )));
                }
                let produced = data_type(include.what);
                if !can_cast_types(&produced, field.data_type()) {
                    return Err(ConnectorError::Schema(format!(
                        "INCLUDE {:?} column \"{}\" is {}, which cannot hold {produced}",
                        include.what,
                        field.name(),
                        field.data_type()
                    )));
                }
                Ok((include.what, Arc::clone(field)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let value_schema = Arc::new(Schema::new(fields[..declared].to_vec()));
        Ok((value_schema, Self { columns }))
    }

    /// The metadata columns of `records`, one row per record, in the source's types.
    pub fn arrays(&self, records: &[&KafkaRecord]) -> Result<Vec<ArrayRef>, ConnectorError> {
        self.columns
            .iter()
            .map(|(what, field)| {
                let array: ArrayRef = match what {
                    Metadata::Key => Arc::new(BinaryArray::from_iter(
                        records.iter().map(|r| r.key.as_deref()),
                    )),
                    Metadata::Partition => Arc::new(Int32Array::from_iter_values(
                        records.iter().map(|r| r.partition),
                    )),
                    Metadata::Offset => Arc::new(Int64Array::from_iter_values(
                        records.iter().map(|r| r.offset),
                    )),
                    Metadata::Timestamp => Arc::new(
                        TimestampMicrosecondArray::from_iter_values(
                            records.iter().map(|r| r.timestamp_micros),
                        )
                        .with_timezone("UTC"),
                    ),
                };
                if array.data_type() == field.data_type() {
                    Ok(array)
                } else {
                    Ok(cast(&array, field.data_type())?)
                }
            })
            .collect()
    }

    /// The fields of the metadata columns, in order.
    pub fn fields(&self) -> impl Iterator<Item = &FieldRef> {
        self.columns.iter().map(|(_, field)| field)
    }
}

/// The type a kind of metadata is read as.
pub(crate) fn data_type(what: Metadata) -> DataType {
    match what {
        Metadata::Key => DataType::Binary,
        Metadata::Partition => DataType::Int32,
        Metadata::Offset => DataType::Int64,
        Metadata::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Field, Int32Type, Int64Type, TimestampMicrosecondType};

    use super::*;

    fn include(what: &str, column: Option<&str>) -> Include {
        Include::parse(what, column).unwrap()
    }

    #[test]
    fn splits_declared_from_metadata_columns_and_fills_them() {
        let includes = [
            include("key", Some("k")),
            include("partition", None),
            include("offset", None),
            include("timestamp", None),
        ];
        let mut fields = vec![Field::new("id", DataType::Int64, true)];
        fields.extend(
            includes
                .iter()
                .map(|i| Field::new(&i.column, data_type(i.what), true)),
        );
        let schema = Arc::new(Schema::new(fields));
        let (declared, metadata) = MetadataColumns::split(&schema, &includes).unwrap();
        assert_eq!(declared.fields().len(), 1);
        let record = KafkaRecord {
            partition: 2,
            offset: 41,
            key: None,
            value: Some(b"{}".to_vec()),
            timestamp_micros: 1_700_000_000_000_000,
        };
        let arrays = metadata.arrays(&[&record]).unwrap();
        assert!(arrays[0].is_null(0));
        assert_eq!(arrays[1].as_primitive::<Int32Type>().value(0), 2);
        assert_eq!(arrays[2].as_primitive::<Int64Type>().value(0), 41);
        assert_eq!(
            arrays[3]
                .as_primitive::<TimestampMicrosecondType>()
                .value(0),
            1_700_000_000_000_000
        );
    }

    #[test]
    fn rejects_columns_that_do_not_end_with_the_includes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("_offset", DataType::Int64, true),
            Field::new("id", DataType::Int64, true),
        ]));
        assert!(MetadataColumns::split(&schema, &[include("offset", None)]).is_err());
        let schema = Arc::new(Schema::new(vec![Field::new(
            "_key",
            DataType::Boolean,
            true,
        )]));
        assert!(MetadataColumns::split(&schema, &[include("key", None)]).is_err());
    }
}
