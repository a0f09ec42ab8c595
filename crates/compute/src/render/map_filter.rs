//! Map/Filter/Project: `(row, t, d)` becomes `(f(row), t, d)` for rows where the predicate is
//! true, evaluated vectorized over each micro-batch the operator receives. Stateless.
//!
//! A row whose expressions fail is left out and counted against the dataflow (errors are data,
//! they never stop the dataflow).

use datafusion::arrow::datatypes::SchemaRef;
use differential_dataflow::AsCollection;
use plan::ScalarExpr;
use repr::{GlobalId, Row, RowCodec};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::progress::Timestamp;

use super::evaluate::RowEvaluator;
use super::{codec, RenderError, RowCollection, Rows, Update};
use crate::errors::DataflowErrors;

/// Renders `predicate` and `projection` over `input`.
pub(crate) fn render<'s, T: Timestamp>(
    input: Rows<'s, T>,
    input_schema: &SchemaRef,
    predicate: Option<ScalarExpr>,
    projection: Vec<ScalarExpr>,
    output_schema: &SchemaRef,
    errors: (GlobalId, DataflowErrors),
) -> Result<Rows<'s, T>, RenderError> {
    Ok(render_evaluator(
        input,
        evaluator(input_schema, predicate, projection, output_schema)?,
        errors,
    ))
}

/// The evaluator of `predicate` and `projection` from rows of `input_schema` to rows of
/// `output_schema`.
pub(crate) fn evaluator(
    input_schema: &SchemaRef,
    predicate: Option<ScalarExpr>,
    projection: Vec<ScalarExpr>,
    output_schema: &SchemaRef,
) -> Result<RowEvaluator, RenderError> {
    Ok(RowEvaluator::new(
        codec(input_schema)?,
        codec(output_schema)?,
        predicate,
        projection,
    ))
}

/// Renders the map and filter of `evaluator` over `input`.
pub(crate) fn render_evaluator<'s, T: Timestamp>(
    input: Rows<'s, T>,
    evaluator: RowEvaluator,
    errors: (GlobalId, DataflowErrors),
) -> Rows<'s, T> {
    input
        .inner
        .unary::<CapacityContainerBuilder<Vec<Update<T>>>, _, _, _>(
            Pipeline,
            "MapFilter",
            move |_, _| {
                move |input, output| {
                    input.for_each(|time, data| {
                        let evaluated = evaluator.evaluate(data.iter().map(|(row, _, _)| row));
                        record_failures(&errors, &evaluated.failures, data);
                        let mut session = output.session(&time);
                        for (index, row) in evaluated.rows {
                            let (_, t, d) = &data[index];
                            session.give((row, t.clone(), *d));
                        }
                    });
                }
            },
        )
        .as_collection()
}

/// Counts the rows of `data` whose expressions failed (`failures`: their indices and errors)
/// against the dataflow, with the first error.
pub(crate) fn record_failures<T>(
    (dataflow, errors): &(GlobalId, DataflowErrors),
    failures: &[(usize, String)],
    data: &[Update<T>],
) {
    if let Some((_, error)) = failures.first() {
        let rows: i64 = failures.iter().map(|(i, _)| data[*i].2).sum();
        errors.record(*dataflow, rows, failures.len() as u64, error);
    }
}

/// Splits each row into `(key, value)` pairs: the key holds `key_columns`, the value holds
/// `value_columns` (or the whole row when `value_columns` is `None`). Vectorized like
/// [`render`]; used to arrange collections for joins, reductions and indexes.
pub(crate) fn render_key_by<'s>(
    input: RowCollection<'s>,
    input_schema: &SchemaRef,
    key_columns: &[usize],
    value_columns: Option<&[usize]>,
) -> Result<
    differential_dataflow::VecCollection<'s, repr::Timestamp, (Row, Row), repr::Diff>,
    RenderError,
> {
    let input_codec = codec(input_schema)?;
    let key_codec = codec(&project_schema(input_schema, key_columns)?)?;
    let value_codec = match value_columns {
        Some(columns) => Some((
            codec(&project_schema(input_schema, columns)?)?,
            columns.to_vec(),
        )),
        None => None,
    };
    let key_columns = key_columns.to_vec();
    Ok(input
        .inner
        .unary::<CapacityContainerBuilder<Vec<((Row, Row), repr::Timestamp, repr::Diff)>>, _, _, _>(
            Pipeline,
            "KeyBy",
            move |_, _| {
                move |input, output| {
                    input.for_each(|time, data| {
                        let pairs = split_rows(
                            &input_codec,
                            &key_codec,
                            value_codec.as_ref(),
                            &key_columns,
                            data,
                        );
                        let mut session = output.session(&time);
                        for ((key, value), (row, t, d)) in pairs.into_iter().zip(data.iter()) {
                            session.give(((key, value.unwrap_or_else(|| row.clone())), *t, *d));
                        }
                    });
                }
            },
        )
        .as_collection())
}

fn split_rows(
    input: &RowCodec,
    key: &RowCodec,
    value: Option<&(RowCodec, Vec<usize>)>,
    key_columns: &[usize],
    data: &[Update],
) -> Vec<(Row, Option<Row>)> {
    let encode = || -> Result<Vec<(Row, Option<Row>)>, repr::ReprError> {
        let batch = input.decode(data.iter().map(|(row, _, _)| row))?;
        let n = batch.num_rows();
        let keys = key.encode_columns(&pick(&batch, key_columns), n)?;
        let values = match value {
            Some((codec, columns)) => codec
                .encode_columns(&pick(&batch, columns), n)?
                .into_iter()
                .map(Some)
                .collect(),
            None => vec![None; n],
        };
        Ok(keys.into_iter().zip(values).collect())
    };
    // Decoding rows this operator's own upstream encoded with the same schema cannot fail.
    encode().expect("invariant: rows decode with the schema that encoded them")
}

fn pick(
    batch: &datafusion::arrow::array::RecordBatch,
    columns: &[usize],
) -> Vec<datafusion::arrow::array::ArrayRef> {
    columns.iter().map(|&c| batch.column(c).clone()).collect()
}

/// The schema of `columns` of `schema`, in that order.
pub(crate) fn project_schema(
    schema: &SchemaRef,
    columns: &[usize],
) -> Result<SchemaRef, RenderError> {
    Ok(std::sync::Arc::new(
        schema
            .project(columns)
            .map_err(|e| RenderError(e.to_string()))?,
    ))
}
