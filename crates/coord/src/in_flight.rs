//! Group commit: commits between their log append and their application.
//!
//! A commit holds the sequencer only to be ordered: it takes its timestamp, queues its WAL
//! record and registers here, then lets the sequencer go and waits for the fsync together
//! with the commits queued after it, so concurrent writers share fsyncs (the log's writer
//! syncs everything queued at once). Compute must receive commits in timestamp order, and a
//! commit is acknowledged only once reads see it, so durable commits are applied here strictly
//! in order: whoever settles a commit applies every settled commit at the front of the queue,
//! and each committer then waits until its own time is visible.
//!
//! A write that reads before it writes (UPDATE, DELETE, a primary-key check) may read after
//! earlier commits were ordered but before they are visible. It reads the last visible time
//! and overlays the table changes of the commits in flight
//! ([`InFlightCommits::overlay_with`]), so it sees every commit ordered before it (and
//! [`crate::write_conflicts`] checks, at its commit, the ones ordered after).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use repr::{Diff, GlobalId, Row, Timestamp};
use tokio::sync::watch;

/// The changes one commit makes to tables, as rows.
pub(crate) type TableChanges = Vec<(GlobalId, Arc<[(Row, Diff)]>)>;

/// Commits ordered but not yet visible, oldest first; `T` is what applying one takes.
#[derive(Debug)]
pub(crate) struct InFlightCommits<T> {
    queue: Mutex<VecDeque<Entry<T>>>,
    /// The latest time settled (applied, or failed) in order.
    settled_through: watch::Sender<Timestamp>,
}

#[derive(Debug)]
struct Entry<T> {
    time: Timestamp,
    tables: TableChanges,
    outcome: Outcome<T>,
}

#[derive(Debug)]
enum Outcome<T> {
    /// The log has not answered yet.
    Waiting,
    /// Durable: to be applied with this.
    Durable(T),
    /// Not logged: skipped.
    Failed,
}

/// What [`InFlightCommits::overlay_with`] read.
pub(crate) struct InFlightOverlay<R> {
    /// What its `read` returned.
    pub read: R,
    /// The changes in flight, by table.
    pub tables: BTreeMap<GlobalId, Vec<(Row, Diff)>>,
    /// The time of the latest commit in flight.
    pub latest: Option<Timestamp>,
}

impl<T> InFlightCommits<T> {
    /// Nothing in flight; every time up to `visible` is settled.
    pub fn new(visible: Timestamp) -> Self {
        Self {
            queue: Mutex::new(VecDeque::new()),
            settled_through: watch::Sender::new(visible),
        }
    }

    /// Registers the commit at `time` (later than every registered one), changing `tables`.
    /// The caller holds the sequencer.
    pub fn register(&self, time: Timestamp, tables: TableChanges) {
        self.lock().push_back(Entry {
            time,
            tables,
            outcome: Outcome::Waiting,
        });
    }

    /// Records the log's answer for the commit at `time` (`Some` with what applying it takes
    /// if it is durable), then applies, in time order, every commit at the front of the
    /// queue that has its answer.
    pub fn settle(&self, time: Timestamp, durable: Option<T>, mut apply: impl FnMut(Timestamp, T)) {
        let mut queue = self.lock();
        if let Some(entry) = queue.iter_mut().find(|entry| entry.time == time) {
            entry.outcome = match durable {
                Some(work) => Outcome::Durable(work),
                None => Outcome::Failed,
            };
        }
        let mut settled = None;
        while queue
            .front()
            .is_some_and(|entry| !matches!(entry.outcome, Outcome::Waiting))
        {
            let Some(entry) = queue.pop_front() else {
                break;
            };
            if let Outcome::Durable(work) = entry.outcome {
                apply(entry.time, work);
            }
            settled = Some(entry.time);
        }
        drop(queue);
        if let Some(time) = settled {
            self.settled_through
                .send_modify(|through| *through = (*through).max(time));
        }
    }

    /// Waits until the commit at `time`, and every one before it, is settled.
    pub async fn wait_settled(&self, time: Timestamp) {
        let mut settled = self.settled_through.subscribe();
        // The sender lives as long as `self`, which the caller borrows.
        let _ = settled.wait_for(|through| *through >= time).await;
    }

    /// Waits until nothing is in flight. The caller holds the sequencer, so nothing new
    /// comes in meanwhile.
    pub async fn drain(&self) {
        let latest = self.lock().back().map(|entry| entry.time);
        if let Some(time) = latest {
            self.wait_settled(time).await;
        }
    }

    /// Runs `read` (which takes the read time) with the table changes of every commit in
    /// flight then, oldest first, by table, and the time of the latest of them: no commit
    /// becomes visible in between, so the time and the changes together are every commit
    /// ordered so far, each once.
    pub fn overlay_with<R>(&self, read: impl FnOnce() -> R) -> InFlightOverlay<R> {
        let queue = self.lock();
        let read = read();
        let mut overlay: BTreeMap<GlobalId, Vec<(Row, Diff)>> = BTreeMap::new();
        for entry in queue.iter() {
            for (table, rows) in &entry.tables {
                overlay
                    .entry(*table)
                    .or_default()
                    .extend(rows.iter().cloned());
            }
        }
        InFlightOverlay {
            read,
            tables: overlay,
            latest: queue.back().map(|entry| entry.time),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry<T>>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(byte: u8) -> Row {
        Row::from_bytes(&[byte])
    }

    #[test]
    fn commits_apply_in_time_order_whatever_order_they_settle_in() {
        let commits = InFlightCommits::new(0);
        for time in [1, 2, 3] {
            commits.register(time, Vec::new());
        }
        let mut applied = Vec::new();
        commits.settle(3, Some("c"), |t, w| applied.push((t, w)));
        commits.settle(2, Some("b"), |t, w| applied.push((t, w)));
        assert!(applied.is_empty(), "nothing before the oldest is applied");
        commits.settle(1, Some("a"), |t, w| applied.push((t, w)));
        assert_eq!(applied, vec![(1, "a"), (2, "b"), (3, "c")]);
        assert_eq!(*commits.settled_through.borrow(), 3);
    }

    #[test]
    fn a_failed_commit_is_skipped_but_settles() {
        let commits = InFlightCommits::new(0);
        commits.register(1, Vec::new());
        commits.register(2, Vec::new());
        let mut applied = Vec::new();
        commits.settle(1, None, |t, w: &str| applied.push((t, w)));
        commits.settle(2, Some("b"), |t, w| applied.push((t, w)));
        assert_eq!(applied, vec![(2, "b")]);
        assert_eq!(*commits.settled_through.borrow(), 2);
    }

    #[test]
    fn the_overlay_holds_what_is_in_flight_only() {
        let commits = InFlightCommits::new(0);
        let table = GlobalId(7);
        commits.register(1, vec![(table, Arc::from(vec![(row(1), 1)]))]);
        commits.register(2, vec![(table, Arc::from(vec![(row(1), -1), (row(2), 1)]))]);
        assert_eq!(
            commits.overlay_with(|| ()).tables.get(&table),
            Some(&vec![(row(1), 1), (row(1), -1), (row(2), 1)])
        );
        commits.settle(1, Some(()), |_, _| {});
        assert_eq!(
            commits.overlay_with(|| ()).tables.get(&table),
            Some(&vec![(row(1), -1), (row(2), 1)])
        );
        assert_eq!(commits.overlay_with(|| ()).latest, Some(2));
        commits.settle(2, Some(()), |_, _| {});
        let settled = commits.overlay_with(|| ());
        assert!(settled.tables.is_empty());
        assert_eq!(settled.latest, None);
    }

    #[tokio::test]
    async fn drain_waits_for_the_latest_commit() {
        let commits = Arc::new(InFlightCommits::new(0));
        commits.register(5, Vec::new());
        let settler = {
            let commits = commits.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                commits.settle(5, Some(()), |_, _| {});
            })
        };
        commits.drain().await;
        assert_eq!(*commits.settled_through.borrow(), 5);
        settler.await.unwrap();
    }
}
