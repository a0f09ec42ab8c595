//! Cross joins (a join with no equality to key on): every left row with every right row,
//! produced a bounded chunk at a time.
//!
//! Differential's join works a key at a time and a cross join has a single key, so all of its
//! output for a change would be built in one step, however large, with the worker doing
//! nothing else meanwhile: a view over a 100k × 100k cross join grew by 300 MB a second and
//! nothing could stop it. Times here are totally ordered, so once every update at `t` has
//! arrived the change at `t` is `ΔL·(R + ΔR) + L·ΔR`, where `L` and `R` are the inputs
//! accumulated before `t`. It is produced [`CHUNK_PAIRS`] pairs per activation; the operator
//! then asks to be scheduled again and yields, so its worker goes on with other dataflows,
//! reports sizes and takes commands between chunks (a view whose output outgrows its memory
//! budget is stopped; see the coordinator's `view_memory`). Both inputs go to one worker, as
//! they would to the one worker that owns differential's single key. State: both inputs,
//! accumulated, metered.

use std::collections::BTreeMap;

use differential_dataflow::AsCollection;
use indexmap::IndexMap;
use repr::{Diff, Row, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Capability, InputCapability};

use super::join::{KeyedRows, Pairs};
use crate::memory_meters::StateMeter;

/// Builds the containers of `((left row, right row), time, diff)` pairs the operator emits.
type PairBuilder = CapacityContainerBuilder<Vec<((Row, Row), Timestamp, Diff)>>;

/// Pairs produced per activation before the operator yields.
const CHUNK_PAIRS: usize = 50_000;

/// An input accumulated: each row with its multiplicity, in an order that stays put while no
/// row is added or removed (so a walk through it can pause and resume by position).
type Accumulated = IndexMap<Row, Diff>;

/// The updates of one time not yet joined: its capability, and the left and right changes.
type PendingTimes =
    BTreeMap<Timestamp, (Capability<Timestamp>, Vec<(Row, Diff)>, Vec<(Row, Diff)>)>;

/// The change at one time being produced: `left_change × right` (with the right change
/// applied), then `left × right_change` (left before its change), each walked row by row.
struct Walk {
    left_change: Vec<(Row, Diff)>,
    right_change: Vec<(Row, Diff)>,
    /// Where the walk is: in the first product (`true`) or the second, and at which pair
    /// (left position, right position).
    first: bool,
    at: (usize, usize),
}

/// The two inputs accumulated, with their rows' bytes (for the meter).
#[derive(Default)]
struct Inputs {
    left: Accumulated,
    right: Accumulated,
    row_bytes: usize,
}

impl Inputs {
    /// Adds `changes` to `side`, forgetting rows whose multiplicity is back to zero.
    fn apply(side: &mut Accumulated, row_bytes: &mut usize, changes: &[(Row, Diff)]) {
        for (row, diff) in changes {
            let entry = side.entry(row.clone()).or_insert_with(|| {
                *row_bytes += row.as_bytes().len();
                0
            });
            *entry += diff;
            if *entry == 0 {
                side.swap_remove(row);
                *row_bytes -= row.as_bytes().len();
            }
        }
    }

    /// Begins the change at one time: applies the right side's (the walk reads the right
    /// input with it), and walks both.
    fn begin(&mut self, left_change: Vec<(Row, Diff)>, right_change: Vec<(Row, Diff)>) -> Walk {
        let right_change = repr::consolidate(right_change);
        Inputs::apply(&mut self.right, &mut self.row_bytes, &right_change);
        Walk::new(repr::consolidate(left_change), right_change)
    }

    /// Ends the change `walk` made: applies the left side's.
    fn finish(&mut self, walk: &Walk) {
        Inputs::apply(&mut self.left, &mut self.row_bytes, &walk.left_change);
    }

    fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(Row, Diff)>() + std::mem::size_of::<usize>() * 2;
        (self.left.capacity() + self.right.capacity()) * entry + self.row_bytes
    }
}

impl Walk {
    /// A walk through the change `left_change`, `right_change` makes at one time.
    fn new(left_change: Vec<(Row, Diff)>, right_change: Vec<(Row, Diff)>) -> Self {
        Walk {
            left_change,
            right_change,
            first: true,
            at: (0, 0),
        }
    }

    /// Emits up to `budget` pairs of this time's change; returns whether it is all emitted.
    fn step(
        &mut self,
        inputs: &Inputs,
        mut budget: usize,
        emit: &mut impl FnMut(&Row, &Row, Diff),
    ) -> bool {
        if self.first {
            let changes = &self.left_change;
            let left = |i: usize| changes.get(i).map(|(row, diff)| (row, diff));
            if !walk(
                left,
                |j| inputs.right.get_index(j),
                &mut self.at,
                &mut budget,
                emit,
            ) {
                return false;
            }
            self.first = false;
            self.at = (0, 0);
        }
        let changes = &self.right_change;
        let right = |j: usize| changes.get(j).map(|(row, diff)| (row, diff));
        walk(
            |i| inputs.left.get_index(i),
            right,
            &mut self.at,
            &mut budget,
            emit,
        )
    }
}

/// Emits the pairs of the `left` rows with the `right` rows (each read by position), from
/// position `at` on, until `budget` is spent; returns whether every pair is emitted.
fn walk<'a>(
    left: impl Fn(usize) -> Option<(&'a Row, &'a Diff)>,
    right: impl Fn(usize) -> Option<(&'a Row, &'a Diff)>,
    at: &mut (usize, usize),
    budget: &mut usize,
    emit: &mut impl FnMut(&Row, &Row, Diff),
) -> bool {
    while let Some((left_row, left_diff)) = left(at.0) {
        while let Some((right_row, right_diff)) = right(at.1) {
            if *budget == 0 {
                return false;
            }
            emit(left_row, right_row, left_diff.wrapping_mul(*right_diff));
            *budget -= 1;
            at.1 += 1;
        }
        at.0 += 1;
        at.1 = 0;
    }
    true
}

/// Adds `updates`, received under `capability`, to the changes waiting for their times: to
/// the left side's if `left`, else to the right side's.
fn wait(
    pending: &mut PendingTimes,
    capability: &InputCapability<Timestamp>,
    updates: &mut Vec<((Row, Row), Timestamp, Diff)>,
    left: bool,
) {
    for ((_, row), time, diff) in updates.drain(..) {
        let (_, lefts, rights) = pending
            .entry(time)
            .or_insert_with(|| (capability.delayed(&time, 0), Vec::new(), Vec::new()));
        match left {
            true => lefts.push((row, diff)),
            false => rights.push((row, diff)),
        }
    }
}

/// Every `(left row, right row)` pair of `left` and `right` (whose keys are ignored: a cross
/// join's are all empty), a chunk at a time.
pub(super) fn cross_pairs<'s>(left: KeyedRows<'s>, right: KeyedRows<'s>) -> Pairs<'s> {
    let to_first_worker = || Exchange::new(|_: &((Row, Row), Timestamp, Diff)| 0);
    let scope = left.inner.scope();
    left.inner
        .binary_frontier::<_, PairBuilder, _, _, _, _>(
            right.inner,
            to_first_worker(),
            to_first_worker(),
            "CrossJoin",
            move |_, info| {
                let activator = scope.activator_for(info.address.clone());
                let meter = StateMeter::new();
                let mut inputs = Inputs::default();
                let mut pending = PendingTimes::new();
                let mut work: Option<(Capability<Timestamp>, Walk)> = None;
                move |(lefts, left_frontier), (rights, right_frontier), output| {
                    lefts.for_each(|capability, data| wait(&mut pending, &capability, data, true));
                    rights
                        .for_each(|capability, data| wait(&mut pending, &capability, data, false));
                    let mut budget = CHUNK_PAIRS;
                    loop {
                        if work.is_none() {
                            let Some(entry) = pending.first_entry() else {
                                break;
                            };
                            let time = *entry.key();
                            if left_frontier.less_equal(&time) || right_frontier.less_equal(&time) {
                                break;
                            }
                            let (capability, left_change, right_change) = entry.remove();
                            let walk = inputs.begin(left_change, right_change);
                            work = Some((capability, walk));
                        }
                        let Some((capability, walk)) = work.as_mut() else {
                            break;
                        };
                        let time = *capability.time();
                        let mut emitted = 0;
                        let done = {
                            let mut session = output.session(&*capability);
                            walk.step(&inputs, budget, &mut |left, right, diff| {
                                emitted += 1;
                                session.give(((left.clone(), right.clone()), time, diff));
                            })
                        };
                        budget -= emitted;
                        if !done {
                            activator.activate();
                            break;
                        }
                        if let Some((_, finished)) = work.take() {
                            inputs.finish(&finished);
                        }
                    }
                    meter.set(inputs.heap_bytes());
                }
            },
        )
        .as_collection()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(byte: u8) -> Row {
        Row::from_bytes(&[byte])
    }

    /// Runs `work` to the end, `budget` pairs at a time; returns the pairs and the steps.
    fn run(mut work: Walk, inputs: &Inputs, budget: usize) -> (Vec<(u8, u8, Diff)>, usize) {
        let mut pairs = Vec::new();
        let mut steps = 1;
        let mut emit = |l: &Row, r: &Row, d| pairs.push((l.as_bytes()[0], r.as_bytes()[0], d));
        while !work.step(inputs, budget, &mut emit) {
            steps += 1;
        }
        pairs.sort();
        (pairs, steps)
    }

    #[test]
    fn a_change_joins_in_chunks_and_matches_the_product() {
        let mut inputs = Inputs::default();
        let mut bytes = 0;
        Inputs::apply(&mut inputs.left, &mut bytes, &[(row(1), 1), (row(2), 2)]);
        // The right change is applied before the walk.
        Inputs::apply(
            &mut inputs.right,
            &mut bytes,
            &[(row(7), 1), (row(8), 1), (row(9), -1)],
        );
        inputs.row_bytes = bytes;
        let work = || Walk::new(vec![(row(3), 1)], vec![(row(9), -1)]);
        let expected = vec![(1, 9, -1), (2, 9, -2), (3, 7, 1), (3, 8, 1), (3, 9, -1)];
        assert_eq!(run(work(), &inputs, 1000), (expected.clone(), 1));
        let (pairs, steps) = run(work(), &inputs, 2);
        assert_eq!(pairs, expected);
        assert_eq!(steps, 3, "five pairs, two per step");
    }

    #[test]
    fn rows_back_to_zero_are_forgotten() {
        let mut side = Accumulated::new();
        let mut bytes = 0;
        Inputs::apply(&mut side, &mut bytes, &[(row(1), 2), (row(2), 1)]);
        Inputs::apply(&mut side, &mut bytes, &[(row(1), -2)]);
        assert_eq!(side.len(), 1);
        assert_eq!(bytes, 1);
    }
}
