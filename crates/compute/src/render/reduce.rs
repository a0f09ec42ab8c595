//! Reduce: GROUP BY with aggregates.
//!
//! Semantics on `(row, t, d)` updates: rows are grouped by their first `group_len` columns;
//! for every group whose input changed at `t`, the old result row is retracted and the new one
//! inserted (a group whose last row is deleted disappears). Two strategies:
//! - accumulable aggregates only (count, sum and avg of integers and decimals, DISTINCT or not,
//!   and min and max over an append-only input): each update becomes a diff-weighted
//!   accumulation added to its group's running total, so a change costs O(1) regardless of the
//!   group's size (state: one total per group, plus each group's distinct values for DISTINCT
//!   aggregates);
//! - otherwise: the group's consolidated values (distinct values with their counts) are
//!   revisited when the group changes (state: the arranged input and output).
//!
//! A global aggregate (no GROUP BY) has exactly one row even over an empty input: a constant
//! default row (count 0, other aggregates NULL) stands in while no group row exists.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use differential_dataflow::VecCollection;
use plan::AggregateExpr;
use repr::{Diff, GlobalId, Row, RowCodec, Timestamp};
use timely::dataflow::Scope;

use super::evaluate::RowEvaluator;
use super::map_filter::{record_failures, render_evaluator};
use super::{
    accumulable, aggregate, codec, constant, render_key_by, RenderError, RowCollection, Update,
};
use crate::errors::DataflowErrors;

/// Everything a reduction needs to know about its input and output.
#[derive(Clone)]
pub(crate) struct ReduceSpec {
    pub input_schema: SchemaRef,
    pub group_len: usize,
    pub aggregates: Vec<AggregateExpr>,
    pub is_global: bool,
    pub output_schema: SchemaRef,
    /// No row of the input is ever retracted.
    pub append_only: bool,
}

impl ReduceSpec {
    /// The schema of the aggregate columns of the output.
    pub fn aggregates_schema(&self) -> Result<SchemaRef, RenderError> {
        let columns: Vec<usize> = (self.group_len..self.output_schema.fields().len()).collect();
        super::map_filter::project_schema(&self.output_schema, &columns)
    }
}

/// How the rows reaching a reduction become its input: as they are, or through the
/// Map/Filter that made them, fused into the reduction (its output is never encoded into rows
/// only to be decoded again).
pub(crate) enum ReduceInput {
    /// The rows are the reduction's input rows, in this encoding.
    Rows(RowCodec),
    /// The rows are the Map/Filter's input; the evaluator makes the reduction's input.
    Mapped(RowEvaluator),
}

impl ReduceInput {
    /// The input rows of the reduction that `data` makes, as columns, with each row's time and
    /// diff. Rows whose Map/Filter expressions fail are left out and counted as errors.
    pub fn columns(
        &self,
        data: &[Update],
        errors: &(GlobalId, DataflowErrors),
    ) -> (RecordBatch, Vec<(Timestamp, Diff)>) {
        match self {
            Self::Rows(codec) => {
                let batch = codec
                    .decode(data.iter().map(|(row, _, _)| row))
                    .expect("invariant: rows decode with the codec that encoded them");
                (batch, data.iter().map(|(_, t, d)| (*t, *d)).collect())
            }
            Self::Mapped(evaluator) => {
                let evaluated = evaluator.evaluate_columns(data.iter().map(|(row, _, _)| row));
                record_failures(errors, &evaluated.failures, data);
                let updates = evaluated
                    .indices
                    .iter()
                    .map(|&i| (data[i].1, data[i].2))
                    .collect();
                (evaluated.batch, updates)
            }
        }
    }
}

/// Whether every aggregate of `spec` accumulates (the reduction keeps running totals, and
/// takes its input as columns: see [`ReduceInput`]).
fn accumulates(spec: &ReduceSpec) -> bool {
    spec.aggregates
        .iter()
        .all(|a| accumulable::accumulates(a, spec.append_only))
}

/// Groups with their aggregate values: `(group key row, aggregates row)`.
pub(crate) type GroupResults<'s> = VecCollection<'s, Timestamp, (Row, Row), Diff>;

/// Renders a reduction of `rows`, which `input` makes into the reduction's input.
pub(crate) fn render<'s>(
    scope: Scope<'s, Timestamp>,
    rows: RowCollection<'s>,
    input: ReduceInput,
    spec: ReduceSpec,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let result = if accumulates(&spec) {
        accumulable::render(rows, input, &spec, errors)?
    } else {
        let rows = match input {
            ReduceInput::Rows(_) => rows,
            ReduceInput::Mapped(evaluator) => render_evaluator(rows, evaluator, errors.clone()),
        };
        let width = spec.input_schema.fields().len();
        let group_columns: Vec<usize> = (0..spec.group_len).collect();
        let argument_columns: Vec<usize> = (spec.group_len..width).collect();
        let pairs = render_key_by(
            rows,
            &spec.input_schema,
            &group_columns,
            Some(&argument_columns),
        )?;
        aggregate::render(pairs, &spec, errors)?.map(|(key, aggregates)| key.concat(&aggregates))
    };
    if !spec.is_global {
        return Ok(result);
    }
    let default_row = aggregate::empty_input_row(&spec.aggregates, &codec(&spec.output_schema)?)?;
    let present = result.clone().map(|_| ()).distinct_core::<Diff>();
    let missing = constant::render(scope, &[(default_row, 1)])
        .map(|row| ((), row))
        .antijoin(present)
        .map(|((), row)| row);
    Ok(result.concat(missing))
}
