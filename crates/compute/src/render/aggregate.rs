//! Aggregates recomputed from a group's consolidated values: string_agg, bool_and/bool_or,
//! sums over floats, min and max over an input that may retract, and every other aggregate of
//! a GROUP BY that has one of these (DISTINCT ones included).
//!
//! Semantics on `(row, t, d)` updates: the input is arranged by group key with the aggregate
//! arguments as value; when a group changes at `t`, differential dataflow hands the group's
//! distinct argument rows with their (positive) counts to [`aggregate_group`], and the result
//! row replaces the previous one. Retractions are exact because nothing is remembered besides
//! the arranged input: deleting the current maximum yields the next one.
//! State: the arranged input and the arranged output, per group.

use std::collections::BTreeSet;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};
use datafusion::common::ScalarValue;
use plan::{AggregateExpr, AggregateFunc};
use repr::{Diff, GlobalId, Row, RowCodec};

use super::reduce::{GroupResults, ReduceSpec};
use super::{codec, RenderError};
use crate::arrangement::reduce_rows;
use crate::errors::DataflowErrors;
use crate::row_container::RowRef;

/// Renders the recomputing reduction over `(group key, arguments)` pairs.
pub(crate) fn render<'s>(
    pairs: GroupResults<'s>,
    spec: &ReduceSpec,
    errors: (GlobalId, DataflowErrors),
) -> Result<GroupResults<'s>, RenderError> {
    let arguments_schema = super::map_filter::project_schema(
        &spec.input_schema,
        &(spec.group_len..spec.input_schema.fields().len()).collect::<Vec<_>>(),
    )?;
    let arguments = codec(&arguments_schema)?;
    let output = codec(&spec.aggregates_schema()?)?;
    let aggregates: Vec<AggregateExpr> = spec
        .aggregates
        .iter()
        .map(|a| shift_columns(a, spec.group_len))
        .collect();
    let (dataflow, errors) = errors;
    Ok(reduce_rows(
        pairs,
        "Aggregate",
        move |_key, input: &[(RowRef, Diff)], out: &mut Vec<(Row, Diff)>| {
            let batch = arguments
                .decode(input.iter().map(|(row, _)| *row))
                .expect("invariant: arguments decode with the codec that encoded them");
            let counts: Vec<Diff> = input.iter().map(|(_, count)| *count).collect();
            let values = aggregates
                .iter()
                .map(|aggregate| {
                    aggregate_group(aggregate, &batch, &counts).unwrap_or_else(|error| {
                        errors.record(dataflow, 0, 1, &error);
                        ScalarValue::try_from(&aggregate.output_type).unwrap_or(ScalarValue::Null)
                    })
                })
                .collect::<Vec<_>>();
            match encode_values(&output, &values) {
                Ok(row) => out.push((row, 1)),
                Err(error) => errors.record(dataflow, 0, 1, &error),
            }
        },
    ))
}

/// The aggregate with its columns counted from the start of the argument columns.
fn shift_columns(aggregate: &AggregateExpr, group_len: usize) -> AggregateExpr {
    AggregateExpr {
        arg: aggregate.arg.map(|c| c - group_len),
        filter: aggregate.filter.map(|c| c - group_len),
        ..aggregate.clone()
    }
}

/// Encodes one row of aggregate values.
pub(crate) fn encode_values(codec: &RowCodec, values: &[ScalarValue]) -> Result<Row, String> {
    let columns = values
        .iter()
        .map(|v| v.to_array_of_size(1))
        .collect::<Result<Vec<ArrayRef>, _>>()
        .map_err(|e| e.to_string())?;
    codec
        .encode_columns(&columns, 1)
        .map_err(|e| e.to_string())?
        .pop()
        .ok_or_else(|| "no row encoded".to_string())
}

/// The row a global aggregate has over an empty input: counts are 0, everything else NULL.
pub(crate) fn empty_input_row(
    aggregates: &[AggregateExpr],
    output: &RowCodec,
) -> Result<Row, RenderError> {
    let values = aggregates
        .iter()
        .map(|a| match a.func {
            AggregateFunc::Count => ScalarValue::Int64(Some(0)).cast_to(&a.output_type),
            _ => ScalarValue::try_from(&a.output_type),
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RenderError(e.to_string()))?;
    encode_values(output, &values).map_err(RenderError)
}

/// Computes one aggregate over a group: `batch` holds the distinct argument rows, `counts`
/// their multiplicities.
fn aggregate_group(
    aggregate: &AggregateExpr,
    batch: &RecordBatch,
    counts: &[Diff],
) -> Result<ScalarValue, String> {
    let selected: Vec<usize> = (0..batch.num_rows())
        .filter(|&i| counts[i] > 0)
        .filter(|&i| match aggregate.filter {
            Some(f) => {
                let mask = batch.column(f).as_boolean_opt();
                mask.is_some_and(|m| m.is_valid(i) && m.value(i))
            }
            None => true,
        })
        .collect();
    let Some(arg) = aggregate.arg else {
        let rows: Diff = selected.iter().map(|&i| counts[i]).sum();
        return cast_scalar(ScalarValue::Int64(Some(rows)), &aggregate.output_type);
    };
    let column = batch.column(arg);
    let present: Vec<usize> = selected
        .into_iter()
        .filter(|&i| column.is_valid(i))
        .collect();
    // With DISTINCT each value counts once; rows are already distinct argument rows, but one
    // value can still appear in several rows when other arguments differ.
    let weights = distinct_weights(aggregate.distinct, column, &present, counts)?;
    let value = match &aggregate.func {
        AggregateFunc::Count => ScalarValue::Int64(Some(weights.iter().map(|(_, w)| *w).sum())),
        AggregateFunc::Sum | AggregateFunc::Avg => sum_or_avg(aggregate, column, &weights)?,
        AggregateFunc::Min => extreme(column, &weights, false)?,
        AggregateFunc::Max => extreme(column, &weights, true)?,
        AggregateFunc::StringAgg { separator } => string_agg(column, &weights, separator)?,
        AggregateFunc::BoolAnd | AggregateFunc::BoolOr => {
            let values = column
                .as_boolean_opt()
                .ok_or("bool_and/bool_or of a non-boolean")?;
            let wanted = matches!(aggregate.func, AggregateFunc::BoolOr);
            if weights.is_empty() {
                ScalarValue::Boolean(None)
            } else {
                let any_match = weights.iter().any(|(i, _)| values.value(*i) == wanted);
                ScalarValue::Boolean(Some(if wanted { any_match } else { !any_match }))
            }
        }
    };
    cast_scalar(value, &aggregate.output_type)
}

/// `(row index, weight)` of the non-NULL values: their counts, or 1 per distinct value.
fn distinct_weights(
    distinct: bool,
    column: &ArrayRef,
    present: &[usize],
    counts: &[Diff],
) -> Result<Vec<(usize, Diff)>, String> {
    if !distinct {
        return Ok(present.iter().map(|&i| (i, counts[i])).collect());
    }
    let encoded = encode_column(column)?;
    let mut seen = BTreeSet::new();
    Ok(present
        .iter()
        .filter(|&&i| seen.insert(encoded[i].clone()))
        .map(|&i| (i, 1))
        .collect())
}

/// Each value of `column` as a memcomparable row.
fn encode_column(column: &ArrayRef) -> Result<Vec<Row>, String> {
    let field = datafusion::arrow::datatypes::Field::new("v", column.data_type().clone(), true);
    let codec = RowCodec::new(std::sync::Arc::new(
        datafusion::arrow::datatypes::Schema::new(vec![field]),
    ))
    .map_err(|e| e.to_string())?;
    codec
        .encode_columns(std::slice::from_ref(column), column.len())
        .map_err(|e| e.to_string())
}

fn extreme(
    column: &ArrayRef,
    weights: &[(usize, Diff)],
    largest: bool,
) -> Result<ScalarValue, String> {
    let encoded = encode_column(column)?;
    let chosen = if largest {
        weights
            .iter()
            .max_by(|a, b| encoded[a.0].cmp(&encoded[b.0]))
    } else {
        weights
            .iter()
            .min_by(|a, b| encoded[a.0].cmp(&encoded[b.0]))
    };
    match chosen {
        Some((i, _)) => ScalarValue::try_from_array(column, *i).map_err(|e| e.to_string()),
        None => ScalarValue::try_from(column.data_type()).map_err(|e| e.to_string()),
    }
}

fn string_agg(
    column: &ArrayRef,
    weights: &[(usize, Diff)],
    separator: &str,
) -> Result<ScalarValue, String> {
    if weights.is_empty() {
        return Ok(ScalarValue::Utf8(None));
    }
    let encoded = encode_column(column)?;
    let text = cast(column, &DataType::Utf8).map_err(|e| e.to_string())?;
    let text = text.as_string::<i32>();
    let mut ordered: Vec<&(usize, Diff)> = weights.iter().collect();
    ordered.sort_by(|a, b| encoded[a.0].cmp(&encoded[b.0]));
    let parts: Vec<&str> = ordered
        .iter()
        .flat_map(|(i, w)| std::iter::repeat_n(text.value(*i), (*w).max(0) as usize))
        .collect();
    Ok(ScalarValue::Utf8(Some(parts.join(separator))))
}

fn sum_or_avg(
    aggregate: &AggregateExpr,
    column: &ArrayRef,
    weights: &[(usize, Diff)],
) -> Result<ScalarValue, String> {
    let count: Diff = weights.iter().map(|(_, w)| *w).sum();
    if matches!(aggregate.output_type, DataType::Float32 | DataType::Float64)
        && !matches!(column.data_type(), DataType::Decimal128(..))
        && !is_integer(column.data_type())
    {
        let floats = cast(column, &DataType::Float64).map_err(|e| e.to_string())?;
        let floats = floats.as_primitive::<Float64Type>();
        let sum: f64 = weights
            .iter()
            .map(|(i, w)| floats.value(*i) * *w as f64)
            .sum();
        return Ok(match (count, &aggregate.func) {
            (0, _) => ScalarValue::Float64(None),
            (_, AggregateFunc::Avg) => ScalarValue::Float64(Some(sum / count as f64)),
            _ => ScalarValue::Float64(Some(sum)),
        });
    }
    let values = integer_values(column)?;
    let sum: i128 = weights
        .iter()
        .map(|(i, w)| values[*i].unwrap_or(0) * *w as i128)
        .sum();
    match aggregate.func {
        AggregateFunc::Avg => finish_avg(sum, count, column.data_type(), &aggregate.output_type),
        _ => finish_sum(sum, count, &aggregate.output_type),
    }
}

/// Whether values of this type are summed exactly as integers.
pub(crate) fn is_integer(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
    )
}

/// Integer and decimal values as exact `i128`s (decimals unscaled).
pub(crate) fn integer_values(column: &ArrayRef) -> Result<Vec<Option<i128>>, String> {
    match column.data_type() {
        DataType::Decimal128(..) => Ok(column.as_primitive::<Decimal128Type>().iter().collect()),
        t if is_integer(t) => {
            let wide = cast(column, &DataType::Int64).map_err(|e| e.to_string())?;
            Ok(wide
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.map(i128::from))
                .collect())
        }
        other => Err(format!("cannot sum values of type {other}")),
    }
}

/// The SQL `sum` of `count` non-NULL values adding up to `sum` (unscaled for decimals).
pub(crate) fn finish_sum(sum: i128, count: Diff, output: &DataType) -> Result<ScalarValue, String> {
    if count == 0 {
        return ScalarValue::try_from(output).map_err(|e| e.to_string());
    }
    match output {
        DataType::Int64 => i64::try_from(sum)
            .map(|v| ScalarValue::Int64(Some(v)))
            .map_err(|_| "bigint out of range".to_string()),
        DataType::Decimal128(p, s) => Ok(ScalarValue::Decimal128(Some(sum), *p, *s)),
        other => cast_scalar(ScalarValue::Decimal128(Some(sum), 38, 0), other),
    }
}

/// The SQL `avg` of `count` non-NULL values of type `input` adding up to `sum`.
pub(crate) fn finish_avg(
    sum: i128,
    count: Diff,
    input: &DataType,
    output: &DataType,
) -> Result<ScalarValue, String> {
    if count == 0 {
        return ScalarValue::try_from(output).map_err(|e| e.to_string());
    }
    let input_scale = match input {
        DataType::Decimal128(_, s) => *s as i32,
        _ => 0,
    };
    match output {
        DataType::Decimal128(p, s) => {
            let shift = *s as i32 - input_scale;
            let scaled = if shift >= 0 {
                sum.checked_mul(10i128.pow(shift as u32))
            } else {
                Some(sum / 10i128.pow((-shift) as u32))
            }
            .ok_or("numeric field overflow")?;
            Ok(ScalarValue::Decimal128(
                Some(scaled / count as i128),
                *p,
                *s,
            ))
        }
        _ => {
            let value = sum as f64 / 10f64.powi(input_scale) / count as f64;
            cast_scalar(ScalarValue::Float64(Some(value)), output)
        }
    }
}

fn cast_scalar(value: ScalarValue, output: &DataType) -> Result<ScalarValue, String> {
    if &value.data_type() == output {
        return Ok(value);
    }
    value.cast_to(output).map_err(|e| e.to_string())
}
