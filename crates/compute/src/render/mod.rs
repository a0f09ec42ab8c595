//! Rendering: turns a [`Plan`] into differential dataflow operators inside a timely scope.
//!
//! One operator per file; each file's header states the operator's semantics on
//! `(row, time, diff)` updates and the state it keeps.

mod accumulable;
mod aggregate;
mod asof_join;
mod constant;
mod cross_join;
mod evaluate;
mod join;
mod lookup_join;
mod map_filter;
mod monotonic_top_k;
mod order_keys;
mod partitioned;
mod recursive;
mod reduce;
mod session;
mod temporal_filter;
mod top_k;
mod unnest;
mod window;
mod window_close;

use std::collections::{BTreeMap, HashMap};

use datafusion::arrow::datatypes::SchemaRef;
use differential_dataflow::input::InputSession;
use differential_dataflow::VecCollection;
use plan::{ClosingColumn, JoinKind, Plan};
use repr::{Diff, GlobalId, Row, RowCodec, Timestamp};
use timely::dataflow::Scope;

use crate::arrangement::ArrangementRegistry;
use crate::controller::ComputeError;
use crate::errors::DataflowErrors;
use crate::stream::StreamInputs;
use crate::watermarks::{SharedWatermarkLog, WatermarkLog};
use window_close::CloseMode;

pub(crate) use map_filter::render_key_by;

/// One update: a row, the time it happens, and its change in multiplicity.
pub(crate) type Update<T = Timestamp> = (Row, T, Diff);

/// A collection of rows inside a dataflow under construction, at times `T`: the dataflow's
/// own, or those of an iteration inside it (see [`recursive`]).
pub(crate) type Rows<'s, T> = VecCollection<'s, T, Row, Diff>;

/// A collection of rows at the dataflow's own times.
pub(crate) type RowCollection<'s> = Rows<'s, Timestamp>;

/// The multiset sum of `collections` (UNION ALL).
fn union<T: timely::progress::Timestamp + differential_dataflow::lattice::Lattice>(
    mut collections: Vec<Rows<'_, T>>,
) -> Result<Rows<'_, T>, RenderError> {
    let first = collections
        .pop()
        .ok_or_else(|| RenderError("UNION of no inputs".into()))?;
    Ok(first.concatenate(collections))
}

/// A plan that cannot be rendered.
#[derive(Debug)]
pub(crate) struct RenderError(pub String);

impl From<RenderError> for ComputeError {
    fn from(e: RenderError) -> Self {
        ComputeError::InvalidPlan(e.0)
    }
}

/// A row codec for `schema`, or why rows of it cannot exist.
pub(crate) fn codec(schema: &SchemaRef) -> Result<RowCodec, RenderError> {
    RowCodec::new(schema.clone()).map_err(|e| RenderError(e.to_string()))
}

/// Checks, before anything is sent to the workers, that every schema in the plan has a row
/// encoding, so rendering cannot fail halfway on some workers.
pub(crate) fn validate(plan: &Plan) -> Result<(), ComputeError> {
    codec(plan.schema())?;
    if let Plan::Join { key_schema, .. }
    | Plan::AsOfJoin { key_schema, .. }
    | Plan::LookupJoin { key_schema, .. } = plan
    {
        codec(key_schema)?;
    }
    plan.inputs().into_iter().try_for_each(validate)
}

/// What rendering one dataflow needs besides the plan.
pub(crate) struct RenderContext<'s, 'a> {
    pub scope: Scope<'s, Timestamp>,
    pub arrangements: &'a mut ArrangementRegistry,
    /// The streams that exist; a plan reading one gets an input of its own.
    pub streams: &'a BTreeMap<GlobalId, StreamInputs>,
    /// The inputs created for the streams this dataflow reads, to register once it is built.
    pub stream_readers: &'a mut BTreeMap<GlobalId, InputSession<Timestamp, Row, Diff>>,
    /// The collections of those inputs, so a stream read twice is fed once.
    pub stream_collections: BTreeMap<GlobalId, RowCollection<'s>>,
    /// The collection of each subplan rendered so far, by the subplan's full description: a
    /// subplan the plan holds twice (a subquery written twice, as in Nexmark q5) is rendered
    /// once and its collection read by both consumers.
    pub rendered: HashMap<String, RowCollection<'s>>,
    pub dataflow: GlobalId,
    pub errors: DataflowErrors,
    /// The watermark logs this dataflow's operators keep, with their sources, to register
    /// once it is built.
    pub watermark_logs: &'a mut Vec<(GlobalId, SharedWatermarkLog)>,
}

impl<'s> RenderContext<'s, '_> {
    /// Renders `plan` into a collection of its rows, or returns the collection of an equal
    /// subplan rendered before.
    pub fn render(&mut self, plan: &Plan) -> Result<RowCollection<'s>, RenderError> {
        if matches!(plan, Plan::Get { .. } | Plan::Constant { .. }) {
            return self.render_operator(plan);
        }
        // Two plans with the same description compute the same rows: every field of a plan,
        // its expressions included, is in its `Debug` form.
        let description = format!("{plan:?}");
        if let Some(rows) = self.rendered.get(&description) {
            return Ok(rows.clone());
        }
        let rows = self.render_operator(plan)?;
        self.rendered.insert(description, rows.clone());
        Ok(rows)
    }

    /// Renders the operator at the root of `plan` over its inputs.
    fn render_operator(&mut self, plan: &Plan) -> Result<RowCollection<'s>, RenderError> {
        match plan {
            Plan::Get { id, .. } => self.import(*id),
            Plan::Constant { rows, .. } => Ok(constant::render(self.scope, rows)),
            Plan::Map {
                input,
                predicate,
                projection,
                schema,
            } => {
                let collection = self.render(input)?;
                map_filter::render(
                    collection,
                    input.schema(),
                    predicate.clone(),
                    projection.clone(),
                    schema,
                    (self.dataflow, self.errors.clone()),
                )
            }
            Plan::Unnest {
                input,
                column,
                keep_null,
                schema,
            } => {
                let collection = self.render(input)?;
                unnest::render(collection, input.schema(), *column, *keep_null, schema)
            }
            Plan::Join { left, right, .. } => {
                let left_rows = self.render(left)?;
                let right_rows = self.render(right)?;
                join::render(
                    left_rows,
                    right_rows,
                    plan,
                    (self.dataflow, self.errors.clone()),
                )
            }
            Plan::AsOfJoin {
                left,
                right,
                outer,
                left_key,
                right_key,
                key_schema,
                left_time,
                right_time,
                matches,
                ..
            } => {
                let (left_rows, right_rows) = (self.render(left)?, self.render(right)?);
                let spec = asof_join::AsOfSpec {
                    sides: join::JoinSides::of(left, right, (left_key, right_key), key_schema),
                    outer: *outer,
                    left_time,
                    right_time,
                    matches: *matches,
                };
                let errors = (self.dataflow, self.errors.clone());
                asof_join::render(left_rows, right_rows, spec, errors)
            }
            Plan::LookupJoin {
                left,
                right,
                kind,
                left_key,
                right_key,
                key_schema,
                ..
            } => {
                let (left_rows, right_rows) = (self.render(left)?, self.render(right)?);
                let spec = lookup_join::LookupSpec {
                    sides: join::JoinSides::of(left, right, (left_key, right_key), key_schema),
                    kind: *kind,
                };
                let errors = (self.dataflow, self.errors.clone());
                lookup_join::render(left_rows, right_rows, spec, errors)
            }
            Plan::Reduce {
                input,
                group_len,
                aggregates,
                is_global,
                schema,
            } => {
                let spec = reduce::ReduceSpec {
                    input_schema: input.schema().clone(),
                    group_len: *group_len,
                    aggregates: aggregates.clone(),
                    is_global: *is_global,
                    output_schema: schema.clone(),
                    append_only: self.is_append_only(input),
                };
                let (rows, reduce_input) = self.render_reduce_input(input)?;
                let errors = (self.dataflow, self.errors.clone());
                reduce::render(self.scope, rows, reduce_input, spec, errors)
            }
            Plan::Distinct { input } => Ok(self.render(input)?.distinct_core::<Diff>()),
            Plan::Union { inputs, .. } => union(
                inputs
                    .iter()
                    .map(|input| self.render(input))
                    .collect::<Result<_, _>>()?,
            ),
            Plan::TopK {
                input,
                group_by,
                order_by,
                offset,
                limit,
            } => {
                let rows = self.render(input)?;
                let spec = top_k::TopKSpec {
                    schema: input.schema(),
                    group_by,
                    order_by,
                    offset: *offset,
                    limit: *limit,
                    append_only: self.is_append_only(input),
                };
                top_k::render(rows, spec, (self.dataflow, self.errors.clone()))
            }
            Plan::TemporalFilter { input, bounds } => {
                let rows = self.render(input)?;
                let errors = (self.dataflow, self.errors.clone());
                temporal_filter::render(rows, input.schema(), bounds.clone(), errors)
            }
            Plan::Session {
                input,
                partition,
                time,
                gap,
                bounds,
                schema,
            } => {
                let rows = self.render(input)?;
                let spec = session::SessionSpec {
                    input_schema: input.schema(),
                    partition,
                    time: *time,
                    gap: *gap,
                    bounds,
                    output_schema: schema,
                };
                session::render(rows, spec)
            }
            Plan::Window {
                input,
                partition_by,
                order_by,
                functions,
                limit,
                schema,
            } => {
                let rows = self.render(input)?;
                let spec = window::WindowSpec {
                    input_schema: input.schema(),
                    partition_by,
                    order_by,
                    functions,
                    limit: *limit,
                    output_schema: schema,
                    append_only: self.is_append_only(input),
                };
                window::render(rows, spec, (self.dataflow, self.errors.clone()))
            }
            Plan::Recursive {
                name,
                base,
                step,
                distinct,
                ..
            } => {
                let base_rows = self.render(base)?;
                recursive::render(self, base_rows, name, step, *distinct)
            }
            Plan::RecursiveRef { name, .. } => Err(RenderError(format!(
                "a reference to the recursive query {name} outside its recursive term"
            ))),
            Plan::EmitOnWindowClose { input, closing } => {
                self.render_closing(input, closing, CloseMode::Emit)
            }
            Plan::ForgetClosed { input, closing } => {
                self.render_closing(input, closing, CloseMode::Forget)
            }
        }
    }

    /// The rows a reduction of `input` reads, and how they become its input: a Map/Filter
    /// under the reduction is fused into it (see [`reduce::ReduceInput`]).
    fn render_reduce_input(
        &mut self,
        input: &Plan,
    ) -> Result<(RowCollection<'s>, reduce::ReduceInput), RenderError> {
        if let Plan::Map {
            input: mapped,
            predicate,
            projection,
            schema,
        } = input
        {
            let evaluator = map_filter::evaluator(
                mapped.schema(),
                predicate.clone(),
                projection.clone(),
                schema,
            )?;
            return Ok((self.render(mapped)?, reduce::ReduceInput::Mapped(evaluator)));
        }
        Ok((
            self.render(input)?,
            reduce::ReduceInput::Rows(codec(input.schema())?),
        ))
    }

    /// Whether no row of `plan`'s collection is ever retracted: it is built from streams (which
    /// only append) and constants by operators that never retract a row they emitted.
    fn is_append_only(&self, plan: &Plan) -> bool {
        match plan {
            Plan::Get { id, .. } => self.streams.contains_key(id),
            Plan::Constant { rows, .. } => rows.iter().all(|(_, diff)| *diff > 0),
            Plan::Map { input, .. } | Plan::Unnest { input, .. } => self.is_append_only(input),
            Plan::Union { inputs, .. } => inputs.iter().all(|input| self.is_append_only(input)),
            Plan::Join {
                left, right, kind, ..
            } => {
                *kind == JoinKind::Inner && self.is_append_only(left) && self.is_append_only(right)
            }
            Plan::EmitOnWindowClose { .. } => true,
            // Changes of the right side never retract what was joined.
            Plan::LookupJoin { left, .. } => self.is_append_only(left),
            Plan::ForgetClosed { .. }
            | Plan::Session { .. }
            | Plan::TemporalFilter { .. }
            | Plan::AsOfJoin { .. } => false,
            Plan::Reduce { .. }
            | Plan::Distinct { .. }
            | Plan::TopK { .. }
            | Plan::Window { .. }
            | Plan::Recursive { .. }
            | Plan::RecursiveRef { .. } => false,
        }
    }

    fn import(&mut self, id: GlobalId) -> Result<RowCollection<'s>, RenderError> {
        if self.streams.contains_key(&id) {
            return Ok(self.read_stream(id));
        }
        let arrangement = self
            .arrangements
            .get_mut(&id)
            .ok_or_else(|| RenderError(format!("no arrangement for {id}")))?;
        let layout = arrangement.layout.clone();
        Ok(arrangement
            .trace
            .import_named(self.scope, &format!("Import {id}"))
            .as_collection(move |key, value| layout.row(key, value).to_row()))
    }

    /// Renders `input`, its rows closing on `closing`, in `mode`.
    fn render_closing(
        &mut self,
        input: &Plan,
        closing: &[ClosingColumn],
        mode: CloseMode,
    ) -> Result<RowCollection<'s>, RenderError> {
        let rows = self.render(input)?;
        let logs = plan::window_close::sources(closing)
            .into_iter()
            .map(|source| (source, self.watermark_log(source)))
            .collect();
        window_close::render(rows, input.schema(), closing.to_vec(), logs, mode)
    }

    /// A new log of source `source`'s watermark, for one operator of this dataflow.
    fn watermark_log(&mut self, source: GlobalId) -> SharedWatermarkLog {
        let log = std::rc::Rc::new(std::cell::RefCell::new(WatermarkLog::default()));
        self.watermark_logs.push((source, log.clone()));
        log
    }

    /// The rows of stream `id`, through an input of this dataflow's own.
    fn read_stream(&mut self, id: GlobalId) -> RowCollection<'s> {
        if let Some(collection) = self.stream_collections.get(&id) {
            return collection.clone();
        }
        let mut input = InputSession::new();
        let collection = input.to_collection(self.scope);
        self.stream_readers.insert(id, input);
        self.stream_collections.insert(id, collection.clone());
        collection
    }
}
