//! Window functions (`OVER`): each row with its functions' values over its partition (see
//! [`plan::Plan::Window`]).
//!
//! Semantics on `((partition, row), t, d)` updates, exchanged by partition: once the input
//! frontier has passed `t`, each partition's updates at `t` are applied to its rows, kept in
//! the window's order ([`sorted`]; ties broken by the rows' bytes). A change reaches only the
//! rows whose values depend on it, as the functions' [`plan::WindowReach`] says: a `lag(x, 2)`
//! the two rows after it, `rank()` every row after it, a frame to the partition's end every
//! row before it. Those rows form a span (the spans of nearby changes merged); the functions
//! are evaluated by DataFusion over the span and the rows its values depend on, once as the
//! partition was and once as it is, and the difference goes out: the old values retracted,
//! the new inserted. With a limit only the first rows of a partition are output.
//!
//! Cost: a change costs a walk over the rows it reaches and those they depend on, O(r log n)
//! for `r` such rows; a change that reaches no row within a limit of `k` costs a walk over the
//! first `k` rows. A batch of changes touching a large part of a partition recomputes it
//! whole. State: each partition's rows in order; with a limit over an append-only input only
//! the rows that can still be among the first `k` ([`super::monotonic_top_k`]). A function
//! that fails leaves its whole partition out, counted as a view error, until a later change
//! makes the partition compute again.

mod sorted;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::SchemaRef;
use differential_dataflow::consolidation::consolidate;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use plan::{SortColumn, WindowFunction, WindowReach};
use repr::{Diff, GlobalId, Row, RowCodec};

use super::order_keys::OrderEncoder;
use super::partitioned::apply_by_time;
use super::{codec, monotonic_top_k, render_key_by, RenderError, RowCollection};
use crate::errors::DataflowErrors;
use crate::memory_meters::StateMeter;
use sorted::{join_spans, merge_spans, Position, SortedRows, Span};

/// Everything a window node needs to know about its input and output.
pub(crate) struct WindowSpec<'a> {
    pub input_schema: &'a SchemaRef,
    pub partition_by: &'a [usize],
    pub order_by: &'a [SortColumn],
    pub functions: &'a [WindowFunction],
    pub limit: Option<usize>,
    pub output_schema: &'a SchemaRef,
    /// No row of the input is ever retracted.
    pub append_only: bool,
}

/// Renders the window functions of `spec` over `rows`.
pub(crate) fn render<'s>(
    rows: RowCollection<'s>,
    spec: WindowSpec<'_>,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let width = spec.input_schema.fields().len();
    let value_columns: Vec<usize> = (width..spec.output_schema.fields().len()).collect();
    let reach = spec
        .functions
        .iter()
        .map(|f| f.reach)
        .reduce(WindowReach::join)
        .ok_or_else(|| RenderError("a window without functions".into()))?;
    let mut windows = Windows {
        window: Window {
            rows: codec(spec.input_schema)?,
            values: codec(&super::map_filter::project_schema(
                spec.output_schema,
                &value_columns,
            )?)?,
            order: OrderEncoder::new(spec.input_schema, spec.order_by)?,
            functions: spec.functions.to_vec(),
            limit: spec.limit,
            reach,
        },
        partitions: ByPartition::default(),
        errors: errors.clone(),
        bytes: 0,
        meter: StateMeter::new(),
    };
    let mut pairs = render_key_by(rows, spec.input_schema, spec.partition_by, None)?;
    if let (Some(limit), true, true) = (spec.limit, reach.is_prefix_determined(), spec.append_only)
    {
        pairs = monotonic_top_k::render(pairs, spec.input_schema, spec.order_by, limit, errors)?;
    }
    Ok(apply_by_time(pairs, "Window", move |updates| {
        windows.apply(updates)
    }))
}

/// Something for each partition, by the partition's key.
type ByPartition<T> = HashMap<Row, T, foldhash::fast::RandomState>;

/// What one partition holds besides its key's and rows' bytes (its slot in the map).
const PARTITION_BYTES: usize = std::mem::size_of::<(Row, Partition)>();

/// The state of one window operator on one worker: the partitions it owns.
struct Windows {
    window: Window,
    partitions: ByPartition<Partition>,
    errors: (GlobalId, DataflowErrors),
    /// The bytes the partitions hold, as `meter` reports them.
    bytes: usize,
    meter: StateMeter,
}

/// One partition's rows.
#[derive(Default)]
struct Partition {
    rows: SortedRows,
    /// A function failed on the partition as it is: its rows are left out of the output.
    failed: bool,
}

impl Windows {
    /// Takes in the updates of one time; returns the output's changes.
    fn apply(&mut self, updates: Vec<((Row, Row), Diff)>) -> Vec<(Row, Diff)> {
        let batch = self
            .window
            .rows
            .decode(updates.iter().map(|((_, row), _)| row))
            .expect("invariant: rows decode with the codec that encoded them");
        let orders = self.window.order.keys(&batch);
        let mut changes: ByPartition<Vec<(Position, Diff)>> = ByPartition::default();
        for (i, ((partition, row), diff)) in updates.into_iter().enumerate() {
            changes
                .entry(partition)
                .or_default()
                .push((Position::new(orders.get(i), row.as_bytes()), diff));
        }
        let mut out = Vec::new();
        for (key, mut changes) in changes {
            consolidate(&mut changes);
            if changes.is_empty() {
                continue;
            }
            let partition_bytes = PARTITION_BYTES + key.as_bytes().len();
            let mut partition = match self.partitions.entry(key) {
                Entry::Occupied(partition) => partition,
                Entry::Vacant(vacant) => {
                    self.bytes += partition_bytes;
                    vacant.insert_entry(Partition::default())
                }
            };
            let rows_before = partition.get().rows.bytes();
            let partition_rows = partition.get_mut();
            if let Err(error) = self.window.apply(partition_rows, &changes, &mut out) {
                let (dataflow, errors) = &self.errors;
                errors.record(*dataflow, partition_rows.rows.copies(), 1, &error);
            }
            self.bytes = self.bytes + partition_rows.rows.bytes() - rows_before;
            if partition_rows.rows.is_empty() {
                partition.remove();
                self.bytes -= partition_bytes;
            }
        }
        self.meter.set(self.bytes);
        consolidate(&mut out);
        out
    }
}

/// How a window's partitions are computed.
struct Window {
    /// The codec of the input rows.
    rows: RowCodec,
    /// The codec of the functions' values, appended to each row.
    values: RowCodec,
    order: OrderEncoder,
    functions: Vec<WindowFunction>,
    limit: Option<usize>,
    /// How far the functions reach, together.
    reach: WindowReach,
}

impl Window {
    /// Applies `changes` (consolidated, in order) to `partition`, adding the output's changes
    /// to `out`. If a function fails on the partition as it is, its rows are left out (and
    /// the error is returned to be counted).
    fn apply(
        &self,
        partition: &mut Partition,
        changes: &[(Position, Diff)],
        out: &mut Vec<(Row, Diff)>,
    ) -> Result<(), String> {
        let recompute_whole =
            partition.failed || changes.len().saturating_mul(4) >= partition.rows.len();
        let reached_before = self.reached(&partition.rows, changes, recompute_whole);
        for (position, diff) in changes {
            partition.rows.update(position.clone(), *diff);
        }
        let reached_after = self.reached(&partition.rows, changes, recompute_whole);
        let spans = merge_spans(join_spans(reached_before.spans, reached_after.spans));
        let last = match (
            reached_before.last_within_limit,
            reached_after.last_within_limit,
        ) {
            (Some(Some(before)), Some(Some(after))) => Some(before.max(after)),
            _ => None,
        };
        // The changes' copies: the rows around a span as the partition is, widened by that
        // many, hold those its values depend on as the partition was.
        let slack = changes
            .iter()
            .map(|(_, diff)| usize::try_from(diff.unsigned_abs()).unwrap_or(usize::MAX))
            .fold(0usize, usize::saturating_add);
        let around = Around {
            rows: &partition.rows,
            changes,
            slack,
        };
        if !recompute_whole {
            if let Ok(span_changes) = self.changes_in(&around, spans, last.as_ref()) {
                out.extend(span_changes);
                return Ok(());
            }
        }
        // The whole partition, or with a limit the rows within it.
        let whole = Span {
            from: None,
            to: last,
        };
        let (before, after) = self.slices(&around, &whole);
        if !partition.failed {
            let before = self.evaluate(&before, &whole).unwrap_or_default();
            out.extend(before.into_iter().map(|(row, diff)| (row, -diff)));
        }
        let after = self.evaluate(&after, &whole);
        partition.failed = after.is_err();
        out.extend(after?);
        Ok(())
    }

    /// What `changes` reach in `rows` (one version of the partition).
    fn reached(&self, rows: &SortedRows, changes: &[(Position, Diff)], whole: bool) -> Reached {
        Reached {
            spans: match whole {
                true => Vec::new(),
                false => changes
                    .iter()
                    .map(|(position, _)| rows.affected_by(position, self.reach))
                    .collect(),
            },
            last_within_limit: self.limit.map(|k| rows.last_within(k)),
        }
    }

    /// The output's changes in `spans`: their rows' values before the changes retracted, and
    /// after them inserted. Only rows up to `last` (the last one within a limit, if the
    /// partition has more rows than that) have values.
    fn changes_in(
        &self,
        around: &Around<'_>,
        spans: Vec<Span>,
        last: Option<&Position>,
    ) -> Result<Vec<(Row, Diff)>, String> {
        let mut out = Vec::new();
        for mut span in spans {
            if let Some(last) = last {
                if span.from.as_ref().is_some_and(|from| from > last) {
                    continue;
                }
                if span.to.as_ref().is_none_or(|to| to > last) {
                    span.to = Some(last.clone());
                }
            }
            let (before, after) = self.slices(around, &span);
            let before = self.evaluate(&before, &span)?;
            out.extend(before.into_iter().map(|(row, diff)| (row, -diff)));
            out.extend(self.evaluate(&after, &span)?);
        }
        Ok(out)
    }

    /// The rows `span`'s values depend on, with their multiplicities, as the partition was
    /// before the changes and as it is.
    fn slices<'a>(&self, around: &Around<'a>, span: &Span) -> (Slice<'a>, Slice<'a>) {
        let mut context = around.rows.context_of(span, self.reach, around.slack);
        if self.limit.is_some() {
            // A limit counts positions from the partition's start.
            context.from = None;
        }
        let after: Slice<'a> = around.rows.in_span(&context).collect();
        let before = undo(&after, around.changes, &context);
        (before, after)
    }

    /// The values of the rows of `slice` (a run of the partition, with its multiplicities)
    /// that lie in `span`, each copy of a row with its own values. With a limit, `slice`
    /// starts at the partition's start.
    fn evaluate(
        &self,
        slice: &[(&Position, Diff)],
        span: &Span,
    ) -> Result<Vec<(Row, Diff)>, String> {
        let copies: Vec<&Position> = slice
            .iter()
            .flat_map(|(position, copies)| {
                std::iter::repeat_n(*position, usize::try_from(*copies).unwrap_or(0))
            })
            .collect();
        let first = copies.partition_point(|p| span.from.as_ref().is_some_and(|from| *p < from));
        let end = copies.partition_point(|p| span.to.as_ref().is_none_or(|to| *p <= to));
        let end = end.min(self.limit.unwrap_or(usize::MAX));
        if first >= end {
            return Ok(Vec::new());
        }
        let batch = self
            .rows
            .decode(copies.iter().map(|p| p.row()))
            .map_err(|e| e.to_string())?;
        let values = self
            .functions
            .iter()
            .map(|f| Ok(f.expr.evaluate(&batch)?.slice(first, end - first)))
            .collect::<Result<Vec<ArrayRef>, datafusion::error::DataFusionError>>()
            .map_err(|e| e.to_string())?;
        let encoded = self
            .values
            .encode_columns(&values, end - first)
            .map_err(|e| e.to_string())?;
        Ok(copies[first..end]
            .iter()
            .zip(encoded)
            .map(|(position, values)| {
                let mut row = Vec::with_capacity(position.row().len() + values.len_bytes());
                row.extend_from_slice(position.row());
                row.extend_from_slice(values.as_bytes());
                (Row::from_bytes(&row), 1)
            })
            .collect())
    }
}

/// What a time's changes reach in one version of a partition.
struct Reached {
    /// The span each change reaches (none when the partition is recomputed whole).
    spans: Vec<Span>,
    /// With a limit: the last row within it, or `None` if every row is.
    last_within_limit: Option<Option<Position>>,
}

/// A run of a partition's rows, in order, with their multiplicities.
type Slice<'a> = Vec<(&'a Position, Diff)>;

/// A partition after a time's changes, with the changes.
struct Around<'a> {
    rows: &'a SortedRows,
    /// The changes, consolidated and in order.
    changes: &'a [(Position, Diff)],
    /// The number of their copies.
    slack: usize,
}

/// `slice` (rows of the partition after `changes`, in order) as it was before them, within
/// `context`.
fn undo<'a>(
    slice: &[(&'a Position, Diff)],
    changes: &'a [(Position, Diff)],
    context: &Span,
) -> Slice<'a> {
    let start = changes.partition_point(|(p, _)| context.from.as_ref().is_some_and(|f| p < f));
    let end = changes.partition_point(|(p, _)| context.to.as_ref().is_none_or(|t| p <= t));
    let mut changes = changes[start..end.max(start)].iter().peekable();
    let mut undone = Vec::with_capacity(slice.len() + changes.len());
    for &(position, copies) in slice {
        while let Some((changed, diff)) = changes.next_if(|(changed, _)| changed < position) {
            undone.push((changed, -diff));
        }
        match changes.next_if(|(changed, _)| changed == position) {
            Some((_, diff)) => undone.push((position, copies - diff)),
            None => undone.push((position, copies)),
        }
    }
    undone.extend(changes.map(|(changed, diff)| (changed, -diff)));
    undone.retain(|(_, copies)| *copies > 0);
    undone
}
