//! Group totals: the accumulating reduction's state, one running total per group.
//!
//! Semantics on `((group key, ()), t, accumulation)` updates: once every update at `t` has
//! arrived (the input frontier has passed `t`), times in order, the accumulations of each group
//! at `t` are added to the group's total, and where the total's finished row changed, the old
//! row is retracted and the new one inserted at `t`. A group whose total is zero is gone.
//! Updates are exchanged by group key, so each worker owns its groups.
//!
//! Why not differential's `reduce` over an arrangement of the accumulations: an accumulable
//! aggregate needs no history, only the current total, so sorting every update into batches,
//! merging the batches and replaying a group's history whenever it changes is work with no
//! use. Here a change costs one hash-map lookup and an addition. State: per group, its total
//! and its current row; in flight, the updates of times not complete yet.

use std::collections::{BTreeMap, HashMap};

use differential_dataflow::difference::{IsZero, Semigroup};
use differential_dataflow::hashable::Hashable;
use differential_dataflow::AsCollection;
use repr::{Diff, Row, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;

use super::super::reduce::GroupResults;
use super::{Accumulation, AccumulationUpdates};

/// A group's running total and the row it last finished to (`None`: the group has no row).
struct GroupTotal {
    total: Accumulation,
    row: Option<Row>,
    /// The last time the total changed.
    changed_at: Timestamp,
}

/// The accumulations of the times not complete yet, each with the capability to emit at it.
type PendingTimes = BTreeMap<Timestamp, (Capability<Timestamp>, Vec<(Row, Accumulation)>)>;

/// Adds the accumulations of `changes`, all at `time`, to their groups' totals, and returns
/// the groups that changed, each once.
fn add_changes(
    groups: &mut HashMap<Row, GroupTotal>,
    changes: Vec<(Row, Accumulation)>,
    time: Timestamp,
) -> Vec<Row> {
    let mut changed = Vec::new();
    for (key, accumulation) in changes {
        match groups.get_mut(&key) {
            Some(state) => {
                state.total.plus_equals(&accumulation);
                if state.changed_at != time {
                    state.changed_at = time;
                    changed.push(key);
                }
            }
            None => {
                let state = GroupTotal {
                    total: accumulation,
                    row: None,
                    changed_at: time,
                };
                groups.insert(key.clone(), state);
                changed.push(key);
            }
        }
    }
    changed
}

/// Maintains the total of every group of `updates`, emitting each group's row as `finish`
/// makes it from the total (`None`: no row for this total).
pub(super) fn group_totals<'s, F>(
    updates: AccumulationUpdates<'s>,
    mut finish: F,
) -> GroupResults<'s>
where
    F: FnMut(&Accumulation) -> Option<Row> + 'static,
{
    let by_group =
        Exchange::new(|((key, ()), _, _): &((Row, ()), Timestamp, Accumulation)| key.hashed());
    updates
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<((Row, Row), Timestamp, Diff)>>, _, _, _>(
            by_group,
            "AccumulableAggregate",
            move |_, _| {
                let mut groups: HashMap<Row, GroupTotal> = HashMap::new();
                let mut pending = PendingTimes::new();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        let Some(capability) = capability.retain_least(0) else {
                            return;
                        };
                        for ((key, ()), time, accumulation) in data.drain(..) {
                            pending
                                .entry(time)
                                .or_insert_with(|| (capability.delayed(&time), Vec::new()))
                                .1
                                .push((key, accumulation));
                        }
                    });
                    while let Some(entry) = pending.first_entry() {
                        if frontier.frontier().less_equal(entry.key()) {
                            break;
                        }
                        let (time, (capability, changes)) = entry.remove_entry();
                        let mut session = output.session(&capability);
                        for key in add_changes(&mut groups, changes, time) {
                            let Some(state) = groups.get_mut(&key) else {
                                continue;
                            };
                            let row = finish_unless_zero(&state.total, &mut finish);
                            let old = std::mem::replace(&mut state.row, row.clone());
                            if state.total.is_zero() {
                                groups.remove(&key);
                            }
                            if row == old {
                                continue;
                            }
                            if let Some(old) = old {
                                session.give(((key.clone(), old), time, -1));
                            }
                            if let Some(new) = row {
                                session.give(((key, new), time, 1));
                            }
                        }
                    }
                }
            },
        )
        .as_collection()
}

/// The row `total` finishes to; none for a zero total (the group is gone).
fn finish_unless_zero<F>(total: &Accumulation, finish: &mut F) -> Option<Row>
where
    F: FnMut(&Accumulation) -> Option<Row>,
{
    if total.is_zero() {
        None
    } else {
        finish(total)
    }
}
