//! Accumulable aggregates: count, and sum/avg of integers and decimals.
//!
//! Semantics on `(row, t, d)` updates: each row becomes `(group key, t, d · v)` where `v` is a
//! vector of partial sums: the row count, then per aggregate its value and a 1 if the value is
//! non-NULL (and passes the aggregate's FILTER). The vector is the update's *difference*, so
//! differential dataflow adds the vectors of a group up as it consolidates; the reduction
//! just reads the one accumulated vector and finishes it (sum, or sum / count). A change costs
//! O(1) however large its group is. State: one vector per group, plus the output row.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::common::ScalarValue;
use differential_dataflow::AsCollection;
use plan::{AggregateExpr, AggregateFunc};
use repr::{Diff, GlobalId, Row, RowCodec, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;

use super::aggregate::{encode_values, finish_avg, finish_sum, integer_values};
use super::reduce::{GroupResults, ReduceSpec};
use super::{codec, RenderError, RowCollection};
use crate::errors::DataflowErrors;

/// Partial sums of one update: `[rows, (value sum, value count) per aggregate]`.
type Partials = Vec<i128>;

/// Renders the accumulating reduction of `rows`.
pub(crate) fn render<'s>(
    rows: RowCollection<'s>,
    spec: &ReduceSpec,
    errors: (GlobalId, DataflowErrors),
) -> Result<GroupResults<'s>, RenderError> {
    let input = codec(&spec.input_schema)?;
    let group_columns: Vec<usize> = (0..spec.group_len).collect();
    let key = codec(&super::map_filter::project_schema(
        &spec.input_schema,
        &group_columns,
    )?)?;
    let output = codec(&spec.aggregates_schema()?)?;
    let aggregates = spec.aggregates.clone();
    let finishing = spec.aggregates.clone();
    let (dataflow, errors) = errors;
    let partials = rows
        .inner
        .unary::<CapacityContainerBuilder<Vec<((Row, ()), Timestamp, Partials)>>, _, _, _>(
            Pipeline,
            "Accumulate",
            move |_, _| {
                move |input_handle, out| {
                    input_handle.for_each(|time, data| {
                        let batch = input
                            .decode(data.iter().map(|(row, _, _)| row))
                            .expect("invariant: rows decode with the codec that encoded them");
                        let keys = group_keys(&key, &batch, &group_columns);
                        let per_row = partial_sums(&aggregates, &batch);
                        let mut session = out.session(&time);
                        for ((key, sums), (_, t, d)) in
                            keys.into_iter().zip(per_row).zip(data.iter())
                        {
                            let weighted: Partials =
                                sums.into_iter().map(|v| v * *d as i128).collect();
                            session.give(((key, ()), *t, weighted));
                        }
                    });
                }
            },
        )
        .as_collection();
    Ok(partials.reduce_named(
        "AccumulableAggregate",
        move |_key, input: &[(&(), Partials)], out: &mut Vec<(Row, Diff)>| {
            let Some((_, totals)) = input.first() else {
                return;
            };
            if totals.first().copied().unwrap_or(0) <= 0 {
                return;
            }
            let values: Result<Vec<ScalarValue>, String> = finishing
                .iter()
                .enumerate()
                .map(|(i, aggregate)| finish(aggregate, totals[1 + 2 * i], totals[2 + 2 * i]))
                .collect();
            match values.and_then(|values| encode_values(&output, &values)) {
                Ok(row) => out.push((row, 1)),
                Err(error) => errors.record(dataflow, 0, 1, &error),
            }
        },
    ))
}

fn group_keys(key: &RowCodec, batch: &RecordBatch, group_columns: &[usize]) -> Vec<Row> {
    let columns: Vec<_> = group_columns
        .iter()
        .map(|&c| batch.column(c).clone())
        .collect();
    key.encode_columns(&columns, batch.num_rows())
        .expect("invariant: group columns encode with their own schema")
}

/// The unweighted partial sums of every row of `batch`.
fn partial_sums(aggregates: &[AggregateExpr], batch: &RecordBatch) -> Vec<Partials> {
    let rows = batch.num_rows();
    let mut partials = vec![vec![0i128; 1 + 2 * aggregates.len()]; rows];
    for row in partials.iter_mut() {
        row[0] = 1;
    }
    for (a, aggregate) in aggregates.iter().enumerate() {
        let passes: Vec<bool> = match aggregate.filter {
            Some(f) => match batch.column(f).as_boolean_opt() {
                Some(mask) => (0..rows)
                    .map(|i| mask.is_valid(i) && mask.value(i))
                    .collect(),
                None => vec![false; rows],
            },
            None => vec![true; rows],
        };
        let values: Vec<Option<i128>> = match aggregate.arg {
            None => vec![Some(1); rows],
            Some(column) if aggregate.func == AggregateFunc::Count => {
                let column = batch.column(column);
                (0..rows).map(|i| column.is_valid(i).then_some(1)).collect()
            }
            Some(column) => {
                integer_values(batch.column(column)).unwrap_or_else(|_| vec![None; rows])
            }
        };
        for (i, value) in values.into_iter().enumerate() {
            if let (true, Some(v)) = (passes[i], value) {
                partials[i][1 + 2 * a] = v;
                partials[i][2 + 2 * a] = 1;
            }
        }
    }
    partials
}

fn finish(aggregate: &AggregateExpr, sum: i128, count: i128) -> Result<ScalarValue, String> {
    let count = Diff::try_from(count).map_err(|_| "count out of range".to_string())?;
    match aggregate.func {
        AggregateFunc::Count => ScalarValue::Int64(Some(count))
            .cast_to(&aggregate.output_type)
            .map_err(|e| e.to_string()),
        AggregateFunc::Avg => {
            let input = aggregate
                .input_type
                .clone()
                .unwrap_or(datafusion::arrow::datatypes::DataType::Int64);
            finish_avg(sum, count, &input, &aggregate.output_type)
        }
        _ => finish_sum(sum, count, &aggregate.output_type),
    }
}
