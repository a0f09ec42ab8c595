//! UNNEST: `(row, t, d)` becomes `(row with element e of its list column, t, d)` for each
//! element `e`, vectorized over each micro-batch: the list column's offsets say which input
//! row each element came from, and the other columns are repeated by `take`. Stateless, so
//! a retraction of a row retracts exactly the rows it expanded to.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, GenericListArray, OffsetSizeTrait};
use datafusion::arrow::array::{RecordBatch, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use differential_dataflow::AsCollection;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::progress::Timestamp;

use super::{codec, RenderError, Rows, Update};

/// Renders the unnesting of list column `column` of `input` (rows of `input_schema`) into
/// rows of `output_schema`; a NULL list gives one row with a NULL element if `keep_null`.
pub(crate) fn render<'s, T: Timestamp>(
    input: Rows<'s, T>,
    input_schema: &SchemaRef,
    column: usize,
    keep_null: bool,
    output_schema: &SchemaRef,
) -> Result<Rows<'s, T>, RenderError> {
    let list_type = input_schema
        .fields()
        .get(column)
        .map(|field| field.data_type().clone());
    if !matches!(list_type, Some(DataType::List(_) | DataType::LargeList(_))) {
        return Err(RenderError(format!(
            "UNNEST of column {column}, which is {list_type:?}, not a list"
        )));
    }
    let input_codec = codec(input_schema)?;
    let output_codec = codec(output_schema)?;
    Ok(input
        .inner
        .unary::<CapacityContainerBuilder<Vec<Update<T>>>, _, _, _>(
            Pipeline,
            "Unnest",
            move |_, _| {
                move |input, output| {
                    input.for_each(|time, data| {
                        let expand = || -> Result<_, String> {
                            let batch = input_codec
                                .decode(data.iter().map(|(row, _, _)| row))
                                .map_err(|e| e.to_string())?;
                            let (sources, columns) =
                                unnest(&batch, column, keep_null).map_err(|e| e.to_string())?;
                            let rows = output_codec
                                .encode_columns(&columns, sources.len())
                                .map_err(|e| e.to_string())?;
                            Ok(sources.into_iter().zip(rows))
                        };
                        // Rows this dataflow encoded decode with the same schema, and the
                        // elements have the output column's type.
                        let expanded =
                            expand().expect("invariant: unnested rows encode with their schema");
                        let mut session = output.session(&time);
                        for (source, row) in expanded {
                            let (_, t, d) = &data[source];
                            session.give((row, t.clone(), *d));
                        }
                    });
                }
            },
        )
        .as_collection())
}

/// The columns of `batch` with list column `column` unnested, and for each output row the
/// input row it came from.
fn unnest(
    batch: &RecordBatch,
    column: usize,
    keep_null: bool,
) -> Result<(Vec<usize>, Vec<ArrayRef>), ArrowError> {
    let list = batch.column(column);
    let (sources, elements) = match list.data_type() {
        DataType::List(_) => elements_of(list.as_list::<i32>(), keep_null),
        DataType::LargeList(_) => elements_of(list.as_list::<i64>(), keep_null),
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "UNNEST of a {other}"
            )))
        }
    };
    let repeat = UInt32Array::from_iter_values(sources.iter().map(|&row| row as u32));
    let columns = (0..batch.num_columns())
        .map(|c| match c == column {
            true => match list.data_type() {
                DataType::List(_) => take(list.as_list::<i32>().values(), &elements, None),
                _ => take(list.as_list::<i64>().values(), &elements, None),
            },
            false => take(batch.column(c), &repeat, None),
        })
        .collect::<Result<_, _>>()?;
    Ok((sources, columns))
}

/// For each element of each list of `list`, in order, its row and its index among the
/// list's values (a NULL list gives its row with a NULL index if `keep_null`).
fn elements_of<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    keep_null: bool,
) -> (Vec<usize>, UInt32Array) {
    let offsets = list.value_offsets();
    let mut sources = Vec::new();
    let mut elements = Vec::new();
    for row in 0..list.len() {
        if list.is_null(row) {
            if keep_null {
                sources.push(row);
                elements.push(None);
            }
            continue;
        }
        let (start, end) = (offsets[row].as_usize(), offsets[row + 1].as_usize());
        for element in start..end {
            sources.push(row);
            elements.push(Some(element as u32));
        }
    }
    (sources, UInt32Array::from(elements))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, ListArray, StringArray};
    use datafusion::arrow::datatypes::{Field, Int64Type, Schema};

    use super::*;

    #[test]
    fn each_element_gets_its_row_and_empty_or_null_lists_none_unless_kept() {
        let lists = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![]),
            None,
            Some(vec![Some(3)]),
        ]);
        let names = StringArray::from(vec!["a", "b", "c", "d"]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("l", lists.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(names), Arc::new(lists)]).unwrap();
        let (sources, columns) = unnest(&batch, 1, false).unwrap();
        assert_eq!(sources, vec![0, 0, 3]);
        assert_eq!(
            columns[0].as_string::<i32>().iter().collect::<Vec<_>>(),
            vec![Some("a"), Some("a"), Some("d")]
        );
        let values = columns[1].as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(
            values.iter().collect::<Vec<_>>(),
            vec![Some(1), Some(2), Some(3)]
        );
        let (sources, columns) = unnest(&batch, 1, true).unwrap();
        assert_eq!(sources, vec![0, 0, 2, 3]);
        assert!(columns[1].is_null(2));
    }
}
