//! Closing rows by watermark: `EMIT ON WINDOW CLOSE`, and forgetting the windows it has emitted.
//!
//! A row *closes* once the sources' watermarks show that no row still to come (other than a
//! late one) can change it: its value in a closing column is below the column's bound (see
//! [`plan::window_close`]). Semantics on `(row, t, d)` updates: once time `t` is complete (the
//! input frontier has passed it), the updates at `t` of rows already closed are dropped (late
//! rows cannot change a closed window), and the others are added to the rows still open.
//! Then, with the watermarks as of `t`, the open rows that close are dealt with by the mode:
//!
//! - [`CloseMode::Emit`] holds every row back and emits each once, at `t`, when it closes,
//!   with its multiplicity: the output only grows.
//! - [`CloseMode::Forget`] passes updates through at their time, and retracts each row at
//!   `t + 1`, just after it closes, so that the state downstream (an aggregation's groups)
//!   forgets closed windows. An `Emit` above closes the same rows at `t`, so it has emitted
//!   them before their retraction arrives, and drops it.
//!
//! Times at which only a watermark moved are finished the same way, so a window closes when
//! the watermark passes it even if no row arrives. Updates are exchanged by row, so each
//! worker owns its rows. State: the open rows (the windows not closed yet), indexed by their
//! closing values so that a moving watermark visits only the rows it closes, and the updates of
//! times not complete yet; their bytes count in the dataflow's memory (see `memory_meters`).

use std::collections::{BTreeMap, BTreeSet};

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef, TimeUnit};
use differential_dataflow::hashable::Hashable;
use differential_dataflow::AsCollection;
use hashbrown::HashMap;
use plan::ClosingColumn;
use repr::{Diff, GlobalId, Row, RowCodec, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;

use super::{codec, RenderError, RowCollection, Update};
use crate::memory_meters::StateMeter;
use crate::watermarks::SharedWatermarkLog;

/// The rows not closed yet: each one's multiplicity so far, and, for each closing column, the
/// rows by their value in it, so that a bound that moves visits only the rows it closes.
/// A row that leaves (its multiplicity back to zero at the end of a time, or closed through
/// another column) stays in the indexes until their bound passes it, and is skipped there.
struct OpenRows {
    diffs: HashMap<Row, Diff, foldhash::fast::RandomState>,
    by_value: Vec<BTreeMap<i64, Vec<Row>>>,
    /// The rows whose multiplicity went back to zero during the time being finished.
    zeroed: Vec<Row>,
    /// About how many bytes the rows and their indexes hold.
    bytes: usize,
}

/// About the bytes one copy of `row` holds in a collection: its own and its handle's.
fn held(row: &Row) -> usize {
    row.as_bytes().len() + std::mem::size_of::<Row>()
}

/// About the bytes one update of `row` holds: the row's and its count's.
fn held_update(row: &Row) -> usize {
    held(row) + std::mem::size_of::<Diff>()
}

impl OpenRows {
    fn new(columns: usize) -> Self {
        Self {
            diffs: HashMap::default(),
            by_value: vec![BTreeMap::new(); columns],
            zeroed: Vec::new(),
            bytes: 0,
        }
    }

    /// Adds `diff` to open row `row`; whether it was open.
    fn add(&mut self, row: &Row, diff: Diff) -> bool {
        match self.diffs.get_mut(row) {
            Some(state) => {
                *state += diff;
                if *state == 0 {
                    self.zeroed.push(row.clone());
                }
                true
            }
            None => false,
        }
    }

    /// Forgets the rows whose multiplicity is zero at the end of a time.
    fn forget_zeroed(&mut self) {
        for row in std::mem::take(&mut self.zeroed) {
            if self.diffs.get(&row) == Some(&0) {
                self.diffs.remove(&row);
                self.bytes = self.bytes.saturating_sub(held_update(&row));
            }
        }
    }

    /// Opens `row` with multiplicity `diff` and its closing columns' `values`.
    fn open(&mut self, row: &Row, diff: Diff, values: &[Option<i64>]) {
        for (index, value) in self.by_value.iter_mut().zip(values) {
            if let Some(value) = value {
                index.entry(*value).or_default().push(row.clone());
                self.bytes += held(row);
            }
        }
        self.diffs.insert(row.clone(), diff);
        self.bytes += held_update(row);
    }

    /// Takes out the rows that `bounds` close and `previous` did not, each with its
    /// multiplicity (none of those back to zero).
    fn close(&mut self, previous: &[Option<i64>], bounds: &[Option<i64>]) -> Vec<(Row, Diff)> {
        let mut closed = Vec::new();
        for ((index, before), bound) in self.by_value.iter_mut().zip(previous).zip(bounds) {
            let Some(bound) = *bound else {
                continue;
            };
            if before.is_some_and(|before| before >= bound) {
                continue;
            }
            let open = index.split_off(&bound);
            for row in std::mem::replace(index, open).into_values().flatten() {
                self.bytes = self.bytes.saturating_sub(held(&row));
                match self.diffs.remove(&row) {
                    None => {}
                    Some(0) => self.bytes = self.bytes.saturating_sub(held_update(&row)),
                    Some(diff) => {
                        self.bytes = self.bytes.saturating_sub(held_update(&row));
                        closed.push((row, diff));
                    }
                }
            }
        }
        closed
    }
}

/// The closing columns and the watermarks that bound them.
struct Closing {
    columns: Vec<ClosingColumn>,
    logs: BTreeMap<GlobalId, SharedWatermarkLog>,
    codec: RowCodec,
}

impl Closing {
    /// Each closing column's bound as of `time`.
    fn bounds_at(&self, time: Timestamp) -> Vec<Option<i64>> {
        self.columns
            .iter()
            .map(|column| column.bound(|source| self.logs.get(&source)?.borrow().at(time)))
            .collect()
    }

    /// The times in `[from, to)` at which some watermark moved.
    fn steps_between(&self, from: Timestamp, to: Option<Timestamp>) -> BTreeSet<Timestamp> {
        self.logs
            .values()
            .flat_map(|log| log.borrow().steps_between(from, to))
            .collect()
    }

    fn forget_before(&self, time: Timestamp) {
        for log in self.logs.values() {
            log.borrow_mut().forget_before(time);
        }
    }

    /// The closing columns' values of each of `rows`, in microseconds.
    fn values(&self, rows: &[&Row]) -> Vec<Vec<Option<i64>>> {
        let batch = self
            .codec
            .decode(rows.iter().copied())
            .expect("invariant: rows decode with the codec of their schema");
        let columns: Vec<(Int64Array, TimeUnit)> = self
            .columns
            .iter()
            .map(|c| {
                let column = batch.column(c.column);
                let unit = match column.data_type() {
                    DataType::Timestamp(unit, _) => *unit,
                    _ => TimeUnit::Microsecond,
                };
                let raw = cast(column, &DataType::Int64)
                    .expect("invariant: closing columns are timestamps");
                (raw.as_primitive::<Int64Type>().clone(), unit)
            })
            .collect();
        (0..rows.len())
            .map(|i| {
                columns
                    .iter()
                    .map(|(column, unit)| {
                        column.is_valid(i).then(|| micros(column.value(i), *unit))
                    })
                    .collect()
            })
            .collect()
    }
}

/// A timestamp of `unit` in microseconds, rounded down.
fn micros(value: i64, unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => value.saturating_mul(1_000_000),
        TimeUnit::Millisecond => value.saturating_mul(1_000),
        TimeUnit::Microsecond => value,
        TimeUnit::Nanosecond => value.div_euclid(1_000),
    }
}

/// Whether a row with these closing values is closed under these bounds.
fn is_closed(values: &[Option<i64>], bounds: &[Option<i64>]) -> bool {
    values
        .iter()
        .zip(bounds)
        .any(|(value, bound)| matches!((value, bound), (Some(v), Some(b)) if v < b))
}

/// What happens to rows as they close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseMode {
    /// Each row is held back and emitted once, when it closes.
    Emit,
    /// Updates pass through; each row is retracted just after it closes.
    Forget,
}

/// Renders rows of `schema` closing on `columns` with the watermarks in `logs`, in `mode`.
pub(crate) fn render<'s>(
    rows: RowCollection<'s>,
    schema: &SchemaRef,
    columns: Vec<ClosingColumn>,
    logs: BTreeMap<GlobalId, SharedWatermarkLog>,
    mode: CloseMode,
) -> Result<RowCollection<'s>, RenderError> {
    let closing = Closing {
        columns,
        logs,
        codec: codec(schema)?,
    };
    let by_row = Exchange::new(|(row, _, _): &Update| row.hashed());
    Ok(rows
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<Update>>, _, _, _>(
            by_row,
            match mode {
                CloseMode::Emit => "EmitOnWindowClose",
                CloseMode::Forget => "ForgetClosed",
            },
            move |capability, _| {
                let mut held_back = Some(capability);
                let mut open = OpenRows::new(closing.columns.len());
                let mut pending: BTreeMap<Timestamp, Vec<(Row, Diff)>> = BTreeMap::new();
                let mut pending_bytes = 0;
                let meter = StateMeter::new();
                let mut bounds: Vec<Option<i64>> = vec![None; closing.columns.len()];
                move |(input, frontier), output| {
                    input.for_each(|_, data| {
                        for (row, time, diff) in data.drain(..) {
                            pending_bytes += held_update(&row);
                            pending.entry(time).or_default().push((row, diff));
                        }
                    });
                    let Some(capability) = held_back.as_mut() else {
                        return;
                    };
                    let upper = frontier.frontier().first().copied();
                    let from = *capability.time();
                    let mut times = closing.steps_between(from, upper);
                    times.extend(
                        pending
                            .keys()
                            .copied()
                            .take_while(|t| upper.is_none_or(|upper| *t < upper)),
                    );
                    for time in times {
                        let updates = pending.remove(&time).unwrap_or_default();
                        let taken: usize = updates.iter().map(|(row, _)| held_update(row)).sum();
                        pending_bytes -= taken;
                        let at = capability.delayed(&time);
                        let mut session = output.session(&at);
                        // The closing values of the rows not open before this time,
                        // decoded together, beside their updates.
                        let fresh: Vec<usize> = (0..updates.len())
                            .filter(|&i| !open.diffs.contains_key(&updates[i].0))
                            .collect();
                        let fresh_rows: Vec<&Row> = fresh.iter().map(|&i| &updates[i].0).collect();
                        let mut values = vec![None; updates.len()];
                        for (i, fresh_values) in fresh.into_iter().zip(closing.values(&fresh_rows))
                        {
                            values[i] = Some(fresh_values);
                        }
                        for ((row, diff), values) in updates.into_iter().zip(values) {
                            if !open.add(&row, diff) {
                                // Not open: new at this time (unless it closed already).
                                match values {
                                    Some(values) if !is_closed(&values, &bounds) => {
                                        open.open(&row, diff, &values);
                                    }
                                    _ => continue,
                                }
                            }
                            if mode == CloseMode::Forget {
                                session.give((row, time, diff));
                            }
                        }
                        drop(session);
                        open.forget_zeroed();
                        let now = closing.bounds_at(time);
                        let closed = open.close(&bounds, &now);
                        bounds = now;
                        if closed.is_empty() {
                            continue;
                        }
                        let closed_at = match mode {
                            CloseMode::Emit => time,
                            CloseMode::Forget => time.saturating_add(1),
                        };
                        let at = capability.delayed(&closed_at);
                        let mut session = output.session(&at);
                        for (row, diff) in closed {
                            let diff = match mode {
                                CloseMode::Emit => diff,
                                CloseMode::Forget => -diff,
                            };
                            session.give((row, closed_at, diff));
                        }
                    }
                    match upper {
                        Some(upper) => {
                            capability.downgrade(&upper);
                            closing.forget_before(upper);
                        }
                        None => held_back = None,
                    }
                    meter.set(open.bytes + pending_bytes);
                }
            },
        )
        .as_collection())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_closed_when_any_closing_value_is_below_its_bound() {
        assert!(!is_closed(&[Some(10)], &[None]));
        assert!(!is_closed(&[Some(10)], &[Some(10)]));
        assert!(is_closed(&[Some(9)], &[Some(10)]));
        assert!(!is_closed(&[None, Some(20)], &[Some(10), Some(10)]));
        assert!(is_closed(&[None, Some(5)], &[Some(10), Some(10)]));
    }
}
