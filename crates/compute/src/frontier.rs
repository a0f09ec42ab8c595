//! Frontiers: how far each arrangement has got, as its workers report it.
//!
//! After every step, each worker compares the upper and compaction frontiers of its
//! arrangements with what it last reported and reports the ones that moved. The reports land
//! in one [`Frontiers`] table that the controller shares with the coordinator: a collection's
//! frontier is the least of its workers' (a time is complete only once every worker has
//! passed it). Whoever needs progress (flow control, recovery, system relations) reads that
//! table or waits on it with [`Frontiers::wait_until_complete_at`]; nobody peeks to find out.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use repr::{GlobalId, Timestamp};
use tokio::sync::watch;

use crate::controller::ComputeError;

/// The progress of one collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frontier {
    /// Every update before this time is in the arrangement ([`Timestamp::MAX`] once it is
    /// closed for good).
    pub upper: Timestamp,
    /// Reads before this time are no longer possible: the arrangement has compacted them.
    pub since: Timestamp,
}

/// What one worker last reported for one collection.
type WorkerFrontiers = Vec<Option<Frontier>>;

#[derive(Debug, Default)]
struct State {
    /// Every collection the controller created and has not dropped, with each worker's
    /// latest report (`None` until that worker built it).
    collections: BTreeMap<GlobalId, WorkerFrontiers>,
    /// Set when the workers stop: nothing will progress any more.
    shut_down: bool,
}

/// The frontiers of every arrangement, fed by the workers' reports.
#[derive(Debug, Clone)]
pub struct Frontiers {
    state: Arc<Mutex<State>>,
    /// Bumped on every report, waking whoever waits for progress.
    changed: Arc<watch::Sender<u64>>,
    workers: usize,
}

impl Frontiers {
    pub(crate) fn new(workers: usize) -> Self {
        Self {
            state: Arc::default(),
            changed: Arc::new(watch::Sender::new(0)),
            workers,
        }
    }

    /// The current frontier of every collection.
    pub fn all(&self) -> BTreeMap<GlobalId, Frontier> {
        self.lock()
            .collections
            .iter()
            .map(|(id, workers)| (*id, combine(workers)))
            .collect()
    }

    /// Waits until `id` holds every update at or before `time`. Fails with
    /// [`ComputeError::UnknownArrangement`] if `id` is not a collection or is dropped (or
    /// could not be built) before then, and with [`ComputeError::Shutdown`] if the workers stop.
    pub async fn wait_until_complete_at(
        &self,
        id: GlobalId,
        time: Timestamp,
    ) -> Result<(), ComputeError> {
        let mut changed = self.changed.subscribe();
        loop {
            {
                let state = self.lock();
                if state.shut_down {
                    return Err(ComputeError::Shutdown);
                }
                let workers = state
                    .collections
                    .get(&id)
                    .ok_or(ComputeError::UnknownArrangement(id))?;
                if combine(workers).upper > time {
                    return Ok(());
                }
            }
            changed
                .changed()
                .await
                .map_err(|_| ComputeError::Shutdown)?;
        }
    }

    /// Starts tracking `id`, which the workers are about to build.
    pub(crate) fn track(&self, id: GlobalId) {
        self.lock().collections.insert(id, vec![None; self.workers]);
    }

    /// Stops tracking `id` (dropped, or it could not be built); its waiters fail.
    pub(crate) fn forget(&self, id: GlobalId) {
        if self.lock().collections.remove(&id).is_some() {
            self.notify();
        }
    }

    /// Marks the workers stopped; every waiter fails.
    pub(crate) fn shut_down(&self) {
        self.lock().shut_down = true;
        self.notify();
    }

    /// Records `worker`'s frontier of `id`. A report for a collection dropped meanwhile is
    /// ignored.
    pub(crate) fn report(&self, worker: usize, id: GlobalId, frontier: Frontier) {
        let mut state = self.lock();
        let Some(slot) = state
            .collections
            .get_mut(&id)
            .and_then(|workers| workers.get_mut(worker))
        else {
            return;
        };
        *slot = Some(frontier);
        drop(state);
        self.notify();
    }

    fn notify(&self) {
        self.changed.send_modify(|version| *version += 1);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The frontier of a collection from its workers' reports: the least upper and since. A
/// worker that has not reported yet (it has not built the collection) holds both at 0.
fn combine(workers: &[Option<Frontier>]) -> Frontier {
    workers.iter().fold(
        Frontier {
            upper: Timestamp::MAX,
            since: Timestamp::MAX,
        },
        |acc, worker| {
            let worker = worker.unwrap_or(Frontier { upper: 0, since: 0 });
            Frontier {
                upper: acc.upper.min(worker.upper),
                since: acc.since.min(worker.since),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frontier(upper: Timestamp) -> Frontier {
        Frontier { upper, since: 0 }
    }

    #[test]
    fn a_collection_is_as_far_as_its_slowest_worker() {
        let frontiers = Frontiers::new(2);
        let id = GlobalId(1);
        frontiers.track(id);
        frontiers.report(0, id, frontier(10));
        assert_eq!(
            frontiers.all().get(&id).copied(),
            Some(frontier(0)),
            "worker 1 has not reported: nothing is complete"
        );
        frontiers.report(1, id, frontier(7));
        assert_eq!(frontiers.all().get(&id).copied(), Some(frontier(7)));
        frontiers.report(1, id, frontier(12));
        assert_eq!(frontiers.all().get(&id).copied(), Some(frontier(10)));
    }

    #[tokio::test]
    async fn waiters_wake_on_progress_and_fail_on_drop() {
        let frontiers = Frontiers::new(1);
        let id = GlobalId(1);
        frontiers.track(id);
        let waiter = tokio::spawn({
            let frontiers = frontiers.clone();
            async move { frontiers.wait_until_complete_at(id, 5).await }
        });
        frontiers.report(0, id, frontier(5));
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "upper 5 does not complete time 5");
        frontiers.report(0, id, frontier(6));
        assert!(waiter.await.unwrap().is_ok());

        let dropped = tokio::spawn({
            let frontiers = frontiers.clone();
            async move { frontiers.wait_until_complete_at(id, 100).await }
        });
        tokio::task::yield_now().await;
        frontiers.forget(id);
        assert!(matches!(
            dropped.await.unwrap(),
            Err(ComputeError::UnknownArrangement(_))
        ));
        assert!(matches!(
            frontiers.wait_until_complete_at(GlobalId(9), 0).await,
            Err(ComputeError::UnknownArrangement(_))
        ));
    }
}
