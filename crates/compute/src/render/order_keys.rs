//! Memcomparable order keys: a row's values in an `ORDER BY`'s columns, encoded so that
//! comparing the bytes compares the rows in that order (directions and NULL placement
//! included).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use plan::SortColumn;

use super::RenderError;

/// Encodes the order keys of rows of one schema.
pub(super) struct OrderEncoder {
    converter: RowConverter,
    columns: Vec<usize>,
}

impl OrderEncoder {
    /// An encoder of `order_by`'s columns of `schema`.
    pub(super) fn new(schema: &SchemaRef, order_by: &[SortColumn]) -> Result<Self, RenderError> {
        let fields = order_by
            .iter()
            .map(|c| {
                SortField::new_with_options(
                    schema.field(c.column).data_type().clone(),
                    SortOptions {
                        descending: c.descending,
                        nulls_first: c.nulls_first,
                    },
                )
            })
            .collect();
        Ok(Self {
            converter: RowConverter::new(fields).map_err(|e| RenderError(e.to_string()))?,
            columns: order_by.iter().map(|c| c.column).collect(),
        })
    }

    /// The order keys of `batch`'s rows.
    pub(super) fn keys(&self, batch: &RecordBatch) -> OrderKeys {
        if self.columns.is_empty() {
            return OrderKeys(None);
        }
        let columns: Vec<_> = self
            .columns
            .iter()
            .map(|&c| batch.column(c).clone())
            .collect();
        OrderKeys(Some(self.converter.convert_columns(&columns).expect(
            "invariant: order columns encode with the types of their schema",
        )))
    }
}

/// The order keys of a batch's rows (all empty for an empty `ORDER BY`).
pub(super) struct OrderKeys(Option<Rows>);

impl OrderKeys {
    /// The key of row `i`.
    pub(super) fn get(&self, i: usize) -> &[u8] {
        self.0.as_ref().map_or(&[], |rows| rows.row(i).data())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, true)]));
        RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from(vec![Some(1), None, Some(2)]))],
        )
        .unwrap()
    }

    #[test]
    fn keys_compare_in_the_order_by_direction_and_null_placement() {
        let batch = batch();
        let descending_nulls_last = SortColumn {
            column: 0,
            descending: true,
            nulls_first: false,
        };
        let encoder = OrderEncoder::new(&batch.schema(), &[descending_nulls_last]).unwrap();
        let keys = encoder.keys(&batch);
        assert!(keys.get(2) < keys.get(0));
        assert!(keys.get(0) < keys.get(1));
    }

    #[test]
    fn no_order_by_gives_every_row_the_same_empty_key() {
        let batch = batch();
        let keys = OrderEncoder::new(&batch.schema(), &[])
            .unwrap()
            .keys(&batch);
        assert_eq!(keys.get(0), keys.get(2));
        assert!(keys.get(1).is_empty());
    }
}
