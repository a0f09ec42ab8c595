//! Recursive queries (`WITH RECURSIVE`): the least fixed point of `rows = base ∪ step(rows)`,
//! iterated in a timely iterative scope with a differential `Variable`.
//!
//! Semantics on `(row, t, d)` updates: at every time `t` the output is the fixed point for the
//! inputs as of `t`. Differential iteration keeps every iteration's updates, so a change at `t`
//! re-derives only the rows whose derivations it changes (an edge inserted into a graph adds
//! the paths through it; deleted, it retracts exactly those with no other derivation), never
//! the whole query from its base. With `distinct` (`UNION`) each row counts once; without it
//! (`UNION ALL`) rows add up over iterations, as PostgreSQL's evaluation adds them up.
//!
//! Only the path from the recursive reference up to the step's root is rendered inside the
//! iteration (maps, joins, unions, unnests); whatever the step reads that does not
//! depend on the reference (a table, an aggregate of one) is rendered once outside and
//! entered. State: the arrangements of the joins on that path, and under `UNION` of the
//! distinct, at iteration times.
//!
//! A query that never converges (`SELECT n + 1 FROM r` without a bound) stops after
//! [`ITERATION_LIMIT`] iterations: the view holds the rows derived so far, and the error is
//! counted against the dataflow (`fluxion_catalog.view_errors`).

use std::collections::HashMap;

use differential_dataflow::operators::iterate::VecVariable;
use differential_dataflow::AsCollection;
use plan::Plan;
use repr::{Diff, GlobalId, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::Scope;
use timely::order::Product;

use super::{join, map_filter, unnest, RenderContext, RenderError, RowCollection, Rows, Update};
use crate::errors::DataflowErrors;

/// The most iterations a recursive query runs for one change of its inputs.
pub(crate) const ITERATION_LIMIT: u64 = 100_000;

/// Times inside the iteration: the dataflow's time and the iteration's number.
type IterationTime = Product<Timestamp, u64>;

/// Renders the recursive query `name` with non-recursive term `base` (already rendered) and
/// recursive term `step`.
pub(super) fn render<'s>(
    context: &mut RenderContext<'s, '_>,
    base: RowCollection<'s>,
    name: &str,
    step: &Plan,
    distinct: bool,
) -> Result<RowCollection<'s>, RenderError> {
    let outer = context.scope;
    let errors = (context.dataflow, context.errors.clone());
    outer.iterative::<u64, _, _>(|inner| {
        let (variable, previous): (VecVariable<_, _, Diff>, _) =
            VecVariable::new(inner, Product::new(0, 1));
        let mut step_context = StepContext {
            outer: context,
            scope: inner,
            name,
            previous,
            rendered: HashMap::new(),
        };
        let derived = step_context.render(step)?;
        let mut rows = base.enter(inner).concat(derived);
        if distinct {
            rows = rows.distinct_core::<Diff>();
        }
        variable.set(stop_at_limit(rows.clone(), errors));
        Ok(rows.leave(outer))
    })
}

/// Renders a recursive term inside the iteration.
struct StepContext<'c, 's, 'a, 'i> {
    /// The dataflow around the iteration, which renders what does not read the reference.
    outer: &'c mut RenderContext<'s, 'a>,
    scope: Scope<'i, IterationTime>,
    /// The recursive query's name.
    name: &'c str,
    /// The query's rows as of the previous iteration.
    previous: Rows<'i, IterationTime>,
    /// The collection of each subplan rendered inside so far, by its description.
    rendered: HashMap<String, Rows<'i, IterationTime>>,
}

impl<'i> StepContext<'_, '_, '_, 'i> {
    fn render(&mut self, plan: &Plan) -> Result<Rows<'i, IterationTime>, RenderError> {
        if plan.recursive_references(self.name) == 0 {
            return Ok(self.outer.render(plan)?.enter(self.scope));
        }
        let description = format!("{plan:?}");
        if let Some(rows) = self.rendered.get(&description) {
            return Ok(rows.clone());
        }
        let errors = (self.outer.dataflow, self.outer.errors.clone());
        let rows = match plan {
            Plan::RecursiveRef { .. } => self.previous.clone(),
            Plan::Map {
                input,
                predicate,
                projection,
                schema,
            } => {
                let rows = self.render(input)?;
                let (predicate, projection) = (predicate.clone(), projection.clone());
                map_filter::render(rows, input.schema(), predicate, projection, schema, errors)?
            }
            Plan::Join { left, right, .. } => {
                let (left_rows, right_rows) = (self.render(left)?, self.render(right)?);
                join::render(left_rows, right_rows, plan, errors)?
            }
            Plan::Union { inputs, .. } => super::union(
                inputs
                    .iter()
                    .map(|input| self.render(input))
                    .collect::<Result<_, _>>()?,
            )?,
            Plan::Unnest {
                input,
                column,
                keep_null,
                schema,
            } => {
                let rows = self.render(input)?;
                unnest::render(rows, input.schema(), *column, *keep_null, schema)?
            }
            other => {
                return Err(RenderError(format!(
                    "a recursive term reading its query through {}",
                    plan::explain(other).lines().next().unwrap_or_default()
                )))
            }
        };
        self.rendered.insert(description, rows.clone());
        Ok(rows)
    }
}

/// Passes on the updates of the first [`ITERATION_LIMIT`] iterations; later ones are dropped
/// (the iteration stops) and counted as an error of the dataflow.
fn stop_at_limit(
    rows: Rows<'_, IterationTime>,
    (dataflow, errors): (GlobalId, DataflowErrors),
) -> Rows<'_, IterationTime> {
    rows.inner
        .unary::<CapacityContainerBuilder<Vec<Update<IterationTime>>>, _, _, _>(
            Pipeline,
            "RecursionLimit",
            move |_, _| {
                move |input, output| {
                    input.for_each(|time, data| {
                        let mut session = output.session(&time);
                        let (mut beyond, mut rows) = (0u64, 0);
                        for update in data.drain(..) {
                            if update.1.inner < ITERATION_LIMIT {
                                session.give(update);
                            } else {
                                beyond += 1;
                                rows += update.2;
                            }
                        }
                        if beyond > 0 {
                            let error = format!(
                                "WITH RECURSIVE did not reach a fixed point within \
                                 {ITERATION_LIMIT} iterations; the view holds the rows derived \
                                 until then"
                            );
                            errors.record(dataflow, rows, beyond, &error);
                        }
                    });
                }
            },
        )
        .as_collection()
}
