//! Accumulable aggregates: count, sum/avg of integers and decimals, and, over an append-only
//! input, min and max of any type.
//!
//! Semantics on `(row, t, d)` updates: each row becomes `(group key, t, d · v)` where `v` is an
//! [`Accumulation`]: partial sums (the row count, then per aggregate its value and a 1 if the
//! value is non-NULL and passes the aggregate's FILTER) and, per min/max aggregate, the value
//! itself. Accumulations add up (sums add, extremes keep the larger: the accumulation is a
//! difference type, a semigroup); each group keeps the total of its accumulations and finishes
//! it into its row (sum, sum / count, or the extreme) whenever it changes ([`group_totals`]).
//! A change costs O(1) however large its group is. State: one total per group, plus its row.
//!
//! Min and max only accumulate when no row is ever retracted (the input is append-only, as a
//! stream source is): the largest value seen is then the largest value present. A retraction
//! reaching such an aggregate breaks that promise; it is counted as a view error.
//!
//! DISTINCT count, sum and avg accumulate too: a row adds nothing to them directly; instead
//! each distinct value of a group adds its accumulation once, when it first appears, and takes
//! it back when its last row leaves ([`distinct`]).

use std::rc::Rc;

use datafusion::arrow::array::{new_null_array, Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::row::{RowConverter, RowParser, SortField};
use datafusion::common::ScalarValue;
use differential_dataflow::difference::{IsZero, Semigroup};
use differential_dataflow::{AsCollection, VecCollection};
use plan::{AggregateExpr, AggregateFunc};
use repr::{Diff, GlobalId, Row, Timestamp};
use serde::{Deserialize, Serialize};
use smallvec::{smallvec, SmallVec};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::OutputBuilder;

use super::aggregate::{finish_avg, finish_sum, integer_values, is_integer};
use super::reduce::{ReduceInput, ReduceSpec};
use super::{codec, RenderError, RowCollection};
use crate::errors::DataflowErrors;

mod distinct;
mod finish;
mod group_totals;
mod threshold;

use group_totals::group_totals;

/// Updates of `(group key, ())` weighted by what they add to their group.
type AccumulationUpdates<'s> = VecCollection<'s, Timestamp, (Row, ()), Accumulation>;

/// What an update contributes to its group, and what a group's updates add up to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Accumulation {
    /// `[rows, (value sum, value count) per aggregate]`, weighted by the update's diff
    /// (inline up to two aggregates: no heap allocation per row).
    sums: SmallVec<[i128; 5]>,
    /// Per aggregate: for min and max, the value in an encoding whose byte order puts the
    /// wanted extreme last (`None`: no value yet); unused for the others.
    extremes: SmallVec<[Option<Row>; 2]>,
}

impl IsZero for Accumulation {
    fn is_zero(&self) -> bool {
        self.sums.iter().all(|s| *s == 0) && self.extremes.iter().all(Option::is_none)
    }
}

impl Semigroup for Accumulation {
    fn plus_equals(&mut self, rhs: &Self) {
        for (mine, theirs) in self.sums.iter_mut().zip(&rhs.sums) {
            *mine += theirs;
        }
        for (mine, theirs) in self.extremes.iter_mut().zip(&rhs.extremes) {
            if theirs > mine {
                mine.clone_from(theirs);
            }
        }
    }
}

/// Whether `aggregate` can be accumulated over an input that is (`append_only`) or is not
/// known to be append-only: count of anything, sum and avg of integers and decimals (DISTINCT
/// ones through [`distinct`]'s presences), and min and max over an append-only input (where
/// DISTINCT changes nothing).
pub(crate) fn accumulates(aggregate: &AggregateExpr, append_only: bool) -> bool {
    match aggregate.func {
        AggregateFunc::Count => true,
        AggregateFunc::Sum | AggregateFunc::Avg => aggregate
            .input_type
            .as_ref()
            .is_some_and(|t| is_integer(t) || matches!(t, DataType::Decimal128(..))),
        AggregateFunc::Min | AggregateFunc::Max => append_only,
        _ => false,
    }
}

/// The encoding of one min or max aggregate's values: memcomparable, descending for min, so
/// that the extreme the aggregate wants is always the largest encoding.
struct ExtremeCodec {
    converter: RowConverter,
    parser: RowParser,
    /// The encoding of NULL, decoded where a group has no value yet.
    null: Row,
}

impl ExtremeCodec {
    fn new(aggregate: &AggregateExpr) -> Result<Option<Self>, RenderError> {
        let descending = match aggregate.func {
            AggregateFunc::Min => true,
            AggregateFunc::Max => false,
            _ => return Ok(None),
        };
        let data_type = aggregate
            .input_type
            .clone()
            .ok_or_else(|| RenderError("min/max without an argument".into()))?;
        let options = SortOptions {
            descending,
            nulls_first: false,
        };
        let converter = RowConverter::new(vec![SortField::new_with_options(
            data_type.clone(),
            options,
        )])
        .map_err(|e| RenderError(e.to_string()))?;
        let parser = converter.parser();
        let null = converter
            .convert_columns(&[new_null_array(&data_type, 1)])
            .map_err(|e| RenderError(e.to_string()))?;
        let null = Row::from_bytes(null.row(0).data());
        Ok(Some(Self {
            converter,
            parser,
            null,
        }))
    }

    /// Each value of `column` encoded, `None` where it is NULL.
    fn encode(&self, column: &ArrayRef) -> Result<Vec<Option<Row>>, String> {
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(column))
            .map_err(|e| e.to_string())?;
        Ok((0..column.len())
            .map(|i| {
                column
                    .is_valid(i)
                    .then(|| Row::from_bytes(rows.row(i).data()))
            })
            .collect())
    }

    /// The values `encoded` hold, as one column (NULL where there is no value).
    fn decode_all<'a>(
        &self,
        encoded: impl Iterator<Item = Option<&'a Row>>,
    ) -> Result<ArrayRef, String> {
        let rows = encoded.map(|e| self.parser.parse(e.unwrap_or(&self.null).as_bytes()));
        let mut columns = self
            .converter
            .convert_rows(rows)
            .map_err(|e| e.to_string())?;
        columns.pop().ok_or_else(|| "no column decoded".to_string())
    }
}

/// Renders the accumulating reduction of `rows`, which `input` makes into its input: a row
/// per group, its key and then its aggregates.
pub(crate) fn render<'s>(
    rows: RowCollection<'s>,
    input: ReduceInput,
    spec: &ReduceSpec,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let output = codec(&spec.aggregates_schema()?)?;
    // The operator that makes accumulations and the reduction that finishes them run on the
    // same worker thread and share the aggregates and their codecs.
    let aggregates = Rc::new(spec.aggregates.clone());
    let extremes = Rc::new(
        aggregates
            .iter()
            .map(ExtremeCodec::new)
            .collect::<Result<Vec<_>, _>>()?,
    );
    let (finishing, decoders) = (aggregates.clone(), extremes.clone());
    let input_errors = errors.clone();
    let (dataflow, errors) = errors;
    let retraction_errors = errors.clone();
    let shares = Rc::new(distinct::Share::all(&aggregates)?);
    let producing = shares.clone();
    let (partials, presences) = map_batches(
        rows,
        input,
        input_errors,
        spec,
        move |batch, keys, updates| {
            let presences = distinct::presences(&aggregates, &producing, batch, &keys, updates);
            let per_row = accumulations(&aggregates, &extremes, batch);
            let partials = keys
                .into_iter()
                .zip(per_row)
                .zip(updates)
                .map(|((key, mut update), (t, d))| {
                    update.sums.iter_mut().for_each(|v| *v *= *d as i128);
                    if *d < 0 && update.extremes.iter().any(Option::is_some) {
                        retraction_errors.record(
                            dataflow,
                            0,
                            1,
                            "a row was retracted from an append-only input of min/max",
                        );
                        update.extremes.iter_mut().for_each(|e| *e = None);
                    }
                    ((key, ()), *t, update)
                })
                .collect();
            (partials, presences)
        },
    )?;
    let partials = if shares.is_empty() {
        partials
    } else {
        partials.concat(distinct::value_accumulations(
            presences,
            shares,
            finishing.len(),
        ))
    };
    let finisher = finish::Finisher {
        aggregates: finishing,
        extremes: decoders,
        output,
        errors: (dataflow, errors),
    };
    Ok(group_totals(partials, move |totals| {
        finisher.finish(totals)
    }))
}

/// The two outputs of [`map_batches`]: the rows' accumulations and their presences.
type Mapped<'s> = (AccumulationUpdates<'s>, distinct::PresenceUpdates<'s>);

/// Applies `logic` to every batch of `rows`, made once into input columns by `input`, with
/// each input row's group key, time and diff; `logic` returns the rows' accumulations and
/// their DISTINCT presences, sent on as two collections.
fn map_batches<'s, L>(
    rows: RowCollection<'s>,
    input: ReduceInput,
    errors: (GlobalId, DataflowErrors),
    spec: &ReduceSpec,
    mut logic: L,
) -> Result<Mapped<'s>, RenderError>
where
    L: FnMut(
            &RecordBatch,
            Vec<Row>,
            &[(Timestamp, Diff)],
        ) -> (
            Vec<((Row, ()), Timestamp, Accumulation)>,
            Vec<((Row, ()), Timestamp, distinct::MemberCounts)>,
        ) + 'static,
{
    let group_columns: Vec<usize> = (0..spec.group_len).collect();
    let key = codec(&super::map_filter::project_schema(
        &spec.input_schema,
        &group_columns,
    )?)?;
    let mut builder = OperatorBuilder::new("Accumulate".to_owned(), rows.inner.scope());
    let mut input_handle = builder.new_input(rows.inner, Pipeline);
    let (accumulations, accumulation_stream) = builder.new_output();
    let (presences, presence_stream) = builder.new_output();
    let mut accumulations = OutputBuilder::<_, CapacityContainerBuilder<_>>::from(accumulations);
    let mut presences = OutputBuilder::<_, CapacityContainerBuilder<_>>::from(presences);
    builder.build(move |_| {
        move |_frontiers| {
            let mut accumulations = accumulations.activate();
            let mut presences = presences.activate();
            input_handle.for_each(|time, data| {
                let (batch, updates) = input.columns(data, &errors);
                let columns: Vec<_> = group_columns
                    .iter()
                    .map(|&c| batch.column(c).clone())
                    .collect();
                let keys = key
                    .encode_columns(&columns, batch.num_rows())
                    .expect("invariant: group columns encode with their own schema");
                let (rows, values) = logic(&batch, keys, &updates);
                accumulations.session(&time).give_iterator(rows.into_iter());
                presences.session(&time).give_iterator(values.into_iter());
            });
        }
    });
    Ok((
        accumulation_stream.as_collection(),
        presence_stream.as_collection(),
    ))
}

/// The unweighted accumulation of every row of `batch`.
fn accumulations(
    aggregates: &[AggregateExpr],
    extremes: &[Option<ExtremeCodec>],
    batch: &RecordBatch,
) -> Vec<Accumulation> {
    let rows = batch.num_rows();
    let mut sums: Vec<SmallVec<[i128; 5]>> = vec![smallvec![0i128; 1 + 2 * aggregates.len()]; rows];
    let mut values: Vec<SmallVec<[Option<Row>; 2]>> = vec![smallvec![None; aggregates.len()]; rows];
    for row in sums.iter_mut() {
        row[0] = 1;
    }
    for (a, aggregate) in aggregates.iter().enumerate() {
        if distinct::counts_values(aggregate) {
            continue;
        }
        let passes = passes_filter(aggregate, batch);
        if let (Some(codec), Some(column)) = (&extremes[a], aggregate.arg) {
            let encoded = codec
                .encode(batch.column(column))
                .unwrap_or_else(|_| vec![None; rows]);
            for (i, value) in encoded.into_iter().enumerate() {
                if passes[i] {
                    values[i][a] = value;
                }
            }
            continue;
        }
        let column_values: Vec<Option<i128>> = match aggregate.arg {
            None => vec![Some(1); rows],
            Some(column) if aggregate.func == AggregateFunc::Count => {
                let column = batch.column(column);
                (0..rows).map(|i| column.is_valid(i).then_some(1)).collect()
            }
            Some(column) => {
                integer_values(batch.column(column)).unwrap_or_else(|_| vec![None; rows])
            }
        };
        for (i, value) in column_values.into_iter().enumerate() {
            if let (true, Some(v)) = (passes[i], value) {
                sums[i][1 + 2 * a] = v;
                sums[i][2 + 2 * a] = 1;
            }
        }
    }
    sums.into_iter()
        .zip(values)
        .map(|(sums, extremes)| Accumulation { sums, extremes })
        .collect()
}

/// Per row of `batch`: whether it takes part in `aggregate` (passes its FILTER).
fn passes_filter(aggregate: &AggregateExpr, batch: &RecordBatch) -> Vec<bool> {
    let rows = batch.num_rows();
    match aggregate.filter {
        Some(f) => match batch.column(f).as_boolean_opt() {
            Some(mask) => (0..rows)
                .map(|i| mask.is_valid(i) && mask.value(i))
                .collect(),
            None => vec![false; rows],
        },
        None => vec![true; rows],
    }
}

fn finish(aggregate: &AggregateExpr, sum: i128, count: i128) -> Result<ScalarValue, String> {
    let count = Diff::try_from(count).map_err(|_| "count out of range".to_string())?;
    match aggregate.func {
        AggregateFunc::Count => ScalarValue::Int64(Some(count))
            .cast_to(&aggregate.output_type)
            .map_err(|e| e.to_string()),
        AggregateFunc::Avg => {
            let input = aggregate.input_type.clone().unwrap_or(DataType::Int64);
            finish_avg(sum, count, &input, &aggregate.output_type)
        }
        _ => finish_sum(sum, count, &aggregate.output_type),
    }
}
