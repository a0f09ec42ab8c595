//! Group totals: the accumulating reduction's state, one running total per group.
//!
//! Semantics on `((group key, ()), t, accumulation)` updates: once every update at `t` has
//! arrived (the input frontier has passed `t`), times in order, the accumulations of each group
//! at `t` are added to the group's total, the totals that changed are finished into rows
//! together (one batch per time, so the rows are encoded a column at a time), and where a
//! group's row (its key, then its aggregates) changed, the old row is retracted and the new
//! one inserted at `t`. A group whose total is zero is gone.
//! Updates are exchanged by group key, so each worker owns its groups.
//!
//! Why not differential's `reduce` over an arrangement of the accumulations: an accumulable
//! aggregate needs no history, only the current total, so sorting every update into batches,
//! merging the batches and replaying a group's history whenever it changes is work with no
//! use. Here a change costs one hash-table lookup and an addition. State: per group, its total
//! and its current row; in flight, the updates of times not complete yet.

use std::collections::BTreeMap;
use std::hash::BuildHasher;

use differential_dataflow::difference::{IsZero, Semigroup};
use differential_dataflow::hashable::Hashable;
use differential_dataflow::AsCollection;
use hashbrown::HashTable;
use repr::{Diff, Row, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;

use super::super::RowCollection;
use super::{Accumulation, AccumulationUpdates};
use crate::memory_meters::StateMeter;

/// A group's running total and the row it last finished to, key and aggregates (`None`: the
/// group has no row).
struct GroupTotal {
    key: Row,
    total: Accumulation,
    row: Option<Row>,
    /// The last time the total changed.
    changed_at: Timestamp,
}

/// Every group's state, in slots, with a hash index from keys to slots: a row's
/// accumulation costs one lookup, and the groups that changed are then handled by slot.
/// Keys are rows this process encoded, so a fast hash without protection against chosen
/// collisions is enough (the exchange already spreads keys by their hash).
#[derive(Default)]
struct Groups {
    index: HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    slots: Vec<GroupTotal>,
    /// Slots of groups that are gone, to be reused.
    free: Vec<usize>,
    /// The bytes of the groups' keys and rows.
    row_bytes: usize,
}

impl Groups {
    /// Adds `accumulation` to the total of group `key` at `time`; returns the group's slot
    /// if this is its first change at `time`.
    fn add(&mut self, key: Row, accumulation: Accumulation, time: Timestamp) -> Option<usize> {
        let hash = self.hasher.hash_one(&key);
        let slots = &mut self.slots;
        if let Some(&slot) = self.index.find(hash, |&slot| slots[slot].key == key) {
            let state = &mut slots[slot];
            state.total.plus_equals(&accumulation);
            let first = state.changed_at != time;
            state.changed_at = time;
            return first.then_some(slot);
        }
        self.row_bytes += key.as_bytes().len();
        let state = GroupTotal {
            key,
            total: accumulation,
            row: None,
            changed_at: time,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                slots[slot] = state;
                slot
            }
            None => {
                slots.push(state);
                slots.len() - 1
            }
        };
        let hasher = &self.hasher;
        self.index
            .insert_unique(hash, slot, |&s| hasher.hash_one(&slots[s].key));
        Some(slot)
    }

    /// Forgets the group in `slot` (its total is zero).
    fn remove(&mut self, slot: usize) {
        let hash = self.hasher.hash_one(&self.slots[slot].key);
        if let Ok(entry) = self.index.find_entry(hash, |&s| s == slot) {
            entry.remove();
        }
        let state = &mut self.slots[slot];
        self.row_bytes -= state.key.as_bytes().len() + state.row.as_ref().map_or(0, row_len);
        state.key = Row::default();
        state.row = None;
        self.free.push(slot);
    }

    /// Replaces the row of the group in `slot` with `row`; returns the row it had.
    fn replace_row(&mut self, slot: usize, row: Option<Row>) -> Option<Row> {
        self.row_bytes += row.as_ref().map_or(0, row_len);
        let old = std::mem::replace(&mut self.slots[slot].row, row);
        self.row_bytes -= old.as_ref().map_or(0, row_len);
        old
    }

    /// The bytes the groups hold: their slots, the index and their rows.
    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<GroupTotal>()
            + self.index.capacity() * (std::mem::size_of::<usize>() + 1)
            + self.free.capacity() * std::mem::size_of::<usize>()
            + self.row_bytes
    }
}

fn row_len(row: &Row) -> usize {
    row.as_bytes().len()
}

/// One update of a group's accumulation.
type AccumulationUpdate = ((Row, ()), Timestamp, Accumulation);

/// The accumulations of the times not complete yet, each with the capability to emit at it,
/// in the containers they arrived in (a container of one time is kept whole, not copied).
type PendingTimes = BTreeMap<Timestamp, (Capability<Timestamp>, Vec<Vec<AccumulationUpdate>>)>;

/// Maintains the total of every group of `updates`, emitting each group's row: its key, then
/// the aggregates `finish` makes from its total. `finish` takes the non-zero totals that
/// changed at one time and returns their aggregates in the same order (`None`: no row for that
/// total).
pub(super) fn group_totals<'s, F>(
    updates: AccumulationUpdates<'s>,
    mut finish: F,
) -> RowCollection<'s>
where
    F: FnMut(&[&Accumulation]) -> Vec<Option<Row>> + 'static,
{
    let by_group =
        Exchange::new(|((key, ()), _, _): &((Row, ()), Timestamp, Accumulation)| key.hashed());
    updates
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<(Row, Timestamp, Diff)>>, _, _, _>(
            by_group,
            "AccumulableAggregate",
            move |_, _| {
                let mut groups = Groups::default();
                let mut pending = PendingTimes::new();
                let meter = StateMeter::new();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        let Some(capability) = capability.retain_least(0) else {
                            return;
                        };
                        let mut by_time: BTreeMap<Timestamp, Vec<AccumulationUpdate>> =
                            BTreeMap::new();
                        match data.first().map(|(_, time, _)| *time) {
                            Some(first) if data.iter().all(|(_, time, _)| *time == first) => {
                                by_time.insert(first, std::mem::take(data));
                            }
                            _ => {
                                for update in data.drain(..) {
                                    by_time.entry(update.1).or_default().push(update);
                                }
                            }
                        }
                        for (time, updates) in by_time {
                            pending
                                .entry(time)
                                .or_insert_with(|| (capability.delayed(&time), Vec::new()))
                                .1
                                .push(updates);
                        }
                    });
                    while let Some(entry) = pending.first_entry() {
                        if frontier.frontier().less_equal(entry.key()) {
                            break;
                        }
                        let (time, (capability, changes)) = entry.remove_entry();
                        let mut session = output.session(&capability);
                        let changed: Vec<usize> = changes
                            .into_iter()
                            .flatten()
                            .filter_map(|((key, ()), _, accumulation)| {
                                groups.add(key, accumulation, time)
                            })
                            .collect();
                        let mut aggregates =
                            finish_changed(&groups, &changed, &mut finish).into_iter();
                        for slot in changed {
                            let state = &mut groups.slots[slot];
                            let zero = state.total.is_zero();
                            let row = match zero {
                                true => None,
                                false => aggregates
                                    .next()
                                    .flatten()
                                    .map(|aggregates| state.key.concat(&aggregates)),
                            };
                            if row != state.row {
                                if let Some(old) = groups.replace_row(slot, row) {
                                    session.give((old, time, -1));
                                }
                                if let Some(new) = &groups.slots[slot].row {
                                    session.give((new.clone(), time, 1));
                                }
                            }
                            if zero {
                                groups.remove(slot);
                            }
                        }
                    }
                    meter.set(groups.heap_bytes() + pending_bytes(&pending));
                }
            },
        )
        .as_collection()
}

/// The bytes of the updates waiting for their times to complete (their keys' bytes aside).
fn pending_bytes(pending: &PendingTimes) -> usize {
    pending
        .values()
        .flat_map(|(_, containers)| containers)
        .map(|updates| updates.capacity() * std::mem::size_of::<AccumulationUpdate>())
        .sum()
}

/// The rows the non-zero totals of the groups in the `changed` slots finish to, in order.
fn finish_changed<F>(groups: &Groups, changed: &[usize], finish: &mut F) -> Vec<Option<Row>>
where
    F: FnMut(&[&Accumulation]) -> Vec<Option<Row>>,
{
    let totals: Vec<&Accumulation> = changed
        .iter()
        .map(|&slot| &groups.slots[slot].total)
        .filter(|total| !total.is_zero())
        .collect();
    if totals.is_empty() {
        return Vec::new();
    }
    finish(&totals)
}
