//! Arrangement sizes: how many updates, in how many batches, each collection's dataflow holds,
//! and the bytes its state holds; and how many rows, and bytes of rows, each input holds,
//! counted as they are appended (what PostgreSQL's catalogs show as a table's row estimate and
//! size).
//!
//! Differential's spines log every batch they gain, every merge they complete (two batches
//! become one) and every batch they drop with their trace; summed per spine, these events give
//! the updates and batches it holds. Its batchers log the bytes they hold. Each worker listens
//! to them ([`SizeLog`]) and counts each spine and batcher for the collection whose dataflow
//! created it, so a view's internal arrangements (join inputs, reductions, distinct presences)
//! count for the view; the bytes of spines and of Fluxion's own operators' state come from the
//! dataflow's meters (see `memory_meters`). After a step, a worker reports the totals that
//! changed to one [`ArrangementSizes`] table that the controller shares with the coordinator,
//! as it does frontiers.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Range;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use differential_dataflow::logging::{DifferentialEvent, DifferentialEventBuilder};
use repr::GlobalId;

use crate::memory_meters::Meter;

/// How often a worker reads its dataflows' meters: at most this often, and this often even
/// without events (an operator's state changes without one).
const METER_INTERVAL: Duration = Duration::from_millis(100);

/// The updates and batches held by some arrangements, and the bytes their dataflow's state
/// holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArrangementSize {
    /// Updates (`(key, value, time, diff)`), counted in every batch held, merges in progress
    /// included.
    pub records: i64,
    /// Batches held.
    pub batches: i64,
    /// Bytes allocated for the dataflow's state: its spines' batches, its batchers' pending
    /// updates and its own operators' state.
    pub bytes: i64,
}

impl ArrangementSize {
    fn add(&mut self, other: ArrangementSize) {
        self.records += other.records;
        self.batches += other.batches;
        self.bytes += other.bytes;
    }

    /// The change one logged event makes to its spine's or batcher's size.
    fn change(event: &DifferentialEvent) -> Option<(usize, ArrangementSize)> {
        let (operator, records, batches, bytes) = match event {
            DifferentialEvent::Batch(batch) => (batch.operator, count(batch.length), 1, 0),
            DifferentialEvent::Merge(merge) => {
                let merged = merge.complete?;
                let inputs = count(merge.length1) + count(merge.length2);
                (merge.operator, count(merged) - inputs, -1, 0)
            }
            DifferentialEvent::Drop(dropped) => (dropped.operator, -count(dropped.length), -1, 0),
            DifferentialEvent::Batcher(batcher) => {
                (batcher.operator, 0, 0, batcher.capacity_diff as i64)
            }
            _ => return None,
        };
        Some((
            operator,
            ArrangementSize {
                records,
                batches,
                bytes,
            },
        ))
    }
}

fn count(length: usize) -> i64 {
    i64::try_from(length).unwrap_or(i64::MAX)
}

/// What an input holds: the sum of the diffs appended to it, and of each diff times its row's
/// encoded bytes (key and value, as its arrangement holds them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InputSize {
    /// Rows.
    pub rows: i64,
    /// Bytes of the rows' encodings.
    pub bytes: i64,
}

/// The arrangement sizes of every collection, fed by the workers' reports, and the rows of
/// every input, counted as they are appended.
#[derive(Debug, Clone)]
pub struct ArrangementSizes {
    /// Each tracked collection with each worker's latest report.
    state: Arc<Mutex<BTreeMap<GlobalId, Vec<ArrangementSize>>>>,
    /// What each input holds.
    inputs: Arc<Mutex<BTreeMap<GlobalId, InputSize>>>,
    workers: usize,
}

impl ArrangementSizes {
    pub(crate) fn new(workers: usize) -> Self {
        Self {
            state: Arc::default(),
            inputs: Arc::default(),
            workers,
        }
    }

    /// What each input (table, keyed source) holds, by what was appended to it.
    pub fn inputs(&self) -> BTreeMap<GlobalId, InputSize> {
        self.inputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Counts `appended` (sums over the updates appended) to input `id`.
    pub(crate) fn count_appended(&self, id: GlobalId, appended: InputSize) {
        let mut inputs = self.inputs.lock().unwrap_or_else(|p| p.into_inner());
        let size = inputs.entry(id).or_default();
        size.rows += appended.rows;
        size.bytes += appended.bytes;
    }

    /// The size of every collection, summed over the workers.
    pub fn all(&self) -> BTreeMap<GlobalId, ArrangementSize> {
        self.lock()
            .iter()
            .map(|(id, workers)| {
                let mut total = ArrangementSize::default();
                workers.iter().for_each(|size| total.add(*size));
                (*id, total)
            })
            .collect()
    }

    /// Starts tracking `id`, which the workers are about to build.
    pub(crate) fn track(&self, id: GlobalId) {
        self.lock()
            .insert(id, vec![ArrangementSize::default(); self.workers]);
    }

    /// Stops tracking `id`: it is dropped.
    pub(crate) fn forget(&self, id: GlobalId) {
        self.lock().remove(&id);
        self.inputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    /// Records `worker`'s size of `id`. A report for a collection not tracked (dropped
    /// meanwhile) is ignored.
    fn report(&self, worker: usize, id: GlobalId, size: ArrangementSize) {
        if let Some(slot) = self
            .lock()
            .get_mut(&id)
            .and_then(|workers| workers.get_mut(worker))
        {
            *slot = size;
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<GlobalId, Vec<ArrangementSize>>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The spines' sizes by operator, as one worker's log events left them.
#[derive(Default)]
struct OperatorSizes {
    sizes: BTreeMap<usize, ArrangementSize>,
    /// Set by every event, cleared by every report.
    changed: bool,
}

/// One worker's account of its spines: their sizes, and which collection each belongs to.
pub(crate) struct SizeLog {
    operators: Rc<RefCell<OperatorSizes>>,
    /// The operator identifiers each collection's dataflow took, by the first of them.
    owners: BTreeMap<usize, (Range<usize>, GlobalId)>,
    /// The meters of each collection's dataflow.
    meters: BTreeMap<GlobalId, Vec<Meter>>,
    /// What each collection's meters read when they were last read.
    metered: BTreeMap<GlobalId, i64>,
    /// When the meters were last read.
    metered_at: Instant,
    /// What this worker last reported, by collection.
    reported: BTreeMap<GlobalId, ArrangementSize>,
}

impl SizeLog {
    /// Starts listening to the spines of `worker`; they log to it from then on, so this comes
    /// before any dataflow is built.
    pub(crate) fn install(worker: &timely::worker::Worker) -> Self {
        let operators = Rc::new(RefCell::new(OperatorSizes::default()));
        if let Some(mut register) = worker.log_register() {
            let logged = operators.clone();
            register.insert::<DifferentialEventBuilder, _>(
                "differential/arrange",
                move |_, events| {
                    let mut logged = logged.borrow_mut();
                    for (_, event) in events.iter().flatten() {
                        if let Some((operator, change)) = ArrangementSize::change(event) {
                            logged.sizes.entry(operator).or_default().add(change);
                            logged.changed = true;
                        }
                    }
                },
            );
        }
        Self {
            operators,
            owners: BTreeMap::new(),
            meters: BTreeMap::new(),
            metered: BTreeMap::new(),
            metered_at: Instant::now(),
            reported: BTreeMap::new(),
        }
    }

    /// Counts the spines and batchers of the operators with `identifiers` (all those a
    /// dataflow built), and what `meters` read, for collection `id`.
    pub(crate) fn own(&mut self, id: GlobalId, identifiers: Range<usize>, meters: Vec<Meter>) {
        self.owners.insert(identifiers.start, (identifiers, id));
        self.meters.insert(id, meters);
    }

    /// Reads every collection's meters (dropping those whose holders are gone) into
    /// `metered`. Meters are read at most every [`METER_INTERVAL`], not at every step: a
    /// busy worker logs events at every step, and reading a spine's meter walks its batches.
    fn read_meters(&mut self) {
        self.metered_at = Instant::now();
        self.metered.clear();
        for (id, meters) in &mut self.meters {
            let mut bytes = 0;
            meters.retain_mut(|meter| match meter.read() {
                Some(read) => {
                    bytes += read;
                    true
                }
                None => false,
            });
            self.metered.insert(*id, count(bytes));
        }
    }

    /// Stops counting for `id`: it is dropped.
    pub(crate) fn forget(&mut self, id: GlobalId) {
        self.owners.retain(|_, (_, owner)| *owner != id);
        self.meters.remove(&id);
        self.metered.remove(&id);
        self.reported.remove(&id);
        self.operators.borrow_mut().changed = true;
    }

    /// Reports to `sizes` the collections whose size changed since the last report. Spines
    /// no collection owns any more (dropped ones, which log their last batches after the
    /// drop) are forgotten.
    pub(crate) fn report(&mut self, worker: usize, sizes: &ArrangementSizes) {
        let changed = std::mem::take(&mut self.operators.borrow_mut().changed);
        let meter = self.metered_at.elapsed() >= METER_INTERVAL;
        if !changed && !meter {
            return;
        }
        if meter {
            self.read_meters();
        }
        let mut operators = self.operators.borrow_mut();
        let mut totals: BTreeMap<GlobalId, ArrangementSize> = self
            .metered
            .iter()
            .map(|(id, bytes)| {
                let size = ArrangementSize {
                    bytes: *bytes,
                    ..ArrangementSize::default()
                };
                (*id, size)
            })
            .collect();
        operators.sizes.retain(|operator, size| {
            let owner = self
                .owners
                .range(..=*operator)
                .next_back()
                .filter(|(_, (identifiers, _))| identifiers.contains(operator));
            match owner {
                Some((_, (_, id))) => {
                    totals.entry(*id).or_default().add(*size);
                    true
                }
                None => false,
            }
        });
        for (id, total) in totals {
            if self.reported.insert(id, total) != Some(total) {
                sizes.report(worker, id, total);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use differential_dataflow::logging::{BatchEvent, BatcherEvent, DropEvent, MergeEvent};

    use super::*;

    fn apply(events: &[DifferentialEvent]) -> ArrangementSize {
        let mut size = ArrangementSize::default();
        for event in events {
            if let Some((_, change)) = ArrangementSize::change(event) {
                size.add(change);
            }
        }
        size
    }

    #[test]
    fn batches_merges_and_drops_balance() {
        let batch = |length| {
            DifferentialEvent::Batch(BatchEvent {
                operator: 3,
                length,
            })
        };
        let batcher = |capacity_diff| {
            DifferentialEvent::Batcher(BatcherEvent {
                operator: 3,
                records_diff: 0,
                size_diff: 0,
                capacity_diff,
                allocations_diff: 0,
            })
        };
        let merge = |complete| {
            DifferentialEvent::Merge(MergeEvent {
                operator: 3,
                scale: 0,
                length1: 10,
                length2: 5,
                complete,
            })
        };
        let held = apply(&[batch(10), batch(5), merge(None)]);
        assert_eq!(
            held,
            ArrangementSize {
                records: 15,
                batches: 2,
                bytes: 0
            },
            "a merge in progress holds both"
        );
        let merged = apply(&[batch(10), batch(5), merge(None), merge(Some(12))]);
        assert_eq!(
            merged,
            ArrangementSize {
                records: 12,
                batches: 1,
                bytes: 0
            },
            "consolidation cancelled 3"
        );
        let pending = apply(&[batcher(4096), batcher(1024), batcher(-4096)]);
        assert_eq!(
            pending,
            ArrangementSize {
                records: 0,
                batches: 0,
                bytes: 1024
            },
            "a batcher's chains count as bytes, not as updates"
        );
        let dropped = apply(&[
            batch(10),
            batch(5),
            merge(Some(12)),
            DifferentialEvent::Drop(DropEvent {
                operator: 3,
                length: 12,
            }),
        ]);
        assert_eq!(dropped, ArrangementSize::default());
    }

    #[test]
    fn sizes_sum_over_workers_and_ignore_untracked_collections() {
        let sizes = ArrangementSizes::new(2);
        let id = GlobalId(1);
        sizes.track(id);
        sizes.report(
            0,
            id,
            ArrangementSize {
                records: 4,
                batches: 1,
                bytes: 0,
            },
        );
        sizes.report(
            1,
            id,
            ArrangementSize {
                records: 6,
                batches: 2,
                bytes: 0,
            },
        );
        sizes.report(
            1,
            GlobalId(2),
            ArrangementSize {
                records: 1,
                batches: 1,
                bytes: 0,
            },
        );
        let all = sizes.all();
        assert_eq!(
            all.get(&id),
            Some(&ArrangementSize {
                records: 10,
                batches: 3,
                bytes: 0,
            })
        );
        assert_eq!(all.len(), 1);
        sizes.forget(id);
        assert!(sizes.all().is_empty());
    }
}
