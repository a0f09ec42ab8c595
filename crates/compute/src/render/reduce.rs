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

use datafusion::arrow::datatypes::SchemaRef;
use differential_dataflow::VecCollection;
use plan::AggregateExpr;
use repr::{Diff, GlobalId, Row, Timestamp};
use timely::dataflow::Scope;

use super::{accumulable, aggregate, codec, constant, render_key_by, RenderError, RowCollection};
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

/// Groups with their aggregate values: `(group key row, aggregates row)`.
pub(crate) type GroupResults<'s> = VecCollection<'s, Timestamp, (Row, Row), Diff>;

/// Renders a reduction of `rows`.
pub(crate) fn render<'s>(
    scope: Scope<'s, Timestamp>,
    rows: RowCollection<'s>,
    spec: ReduceSpec,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let groups = if spec
        .aggregates
        .iter()
        .all(|a| accumulable::accumulates(a, spec.append_only))
    {
        accumulable::render(rows, &spec, errors)?
    } else {
        let width = spec.input_schema.fields().len();
        let group_columns: Vec<usize> = (0..spec.group_len).collect();
        let argument_columns: Vec<usize> = (spec.group_len..width).collect();
        let pairs = render_key_by(
            rows,
            &spec.input_schema,
            &group_columns,
            Some(&argument_columns),
        )?;
        aggregate::render(pairs, &spec, errors)?
    };
    let result = groups.map(|(key, aggregates)| key.concat(&aggregates));
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
