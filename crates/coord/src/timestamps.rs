//! The timeline: the timestamp oracle that stamps writes, and the read holds that keep
//! arrangements readable at the times running queries read at.
//!
//! Writes get strictly increasing times near the wall clock (milliseconds). A read picks the
//! time of the last committed write, so it sees every write acknowledged before it started
//! (read-your-writes, strict serializability). The oracle persists a high-water mark ahead of
//! the times it hands out, so after a restart times never go backwards.

use std::collections::BTreeMap;
use std::sync::Mutex;

use repr::{wall_clock_ms, wall_clock_ms_rounded_up, Timestamp};

/// How far ahead of handed-out times the persisted high-water mark runs (and so how far
/// ahead of the wall clock times may start after a restart).
const HIGH_WATER_STEP_MS: Timestamp = 10_000;

/// Hands out write timestamps and remembers the last committed one.
#[derive(Debug)]
pub(crate) struct TimestampOracle {
    state: Mutex<OracleState>,
}

#[derive(Debug)]
struct OracleState {
    last_allocated: Timestamp,
    last_committed: Timestamp,
    /// The wall clock when a time was last committed.
    last_commit_wall_clock: Timestamp,
    high_water: Timestamp,
}

/// What the caller must persist before using a freshly allocated time.
pub(crate) struct Allocation {
    /// The write time.
    pub time: Timestamp,
    /// A new high-water mark to persist first, if the time reached the old one.
    pub persist_high_water: Option<Timestamp>,
}

impl TimestampOracle {
    /// An oracle whose times are all later than `floor` (the last time used before a restart)
    /// and than the persisted `high_water`.
    pub fn new(floor: Timestamp, high_water: Timestamp) -> Self {
        let start = floor.max(high_water);
        Self {
            state: Mutex::new(OracleState {
                last_allocated: start,
                last_committed: floor,
                last_commit_wall_clock: 0,
                high_water: start,
            }),
        }
    }

    /// The next write time. Callers allocate and commit one write at a time.
    pub fn allocate(&self) -> Allocation {
        let mut state = self.lock();
        // Rounded up, so that a commit's time is not before the `now()` of the statement
        // that wrote it (a row stamped `now()` passes `ts <= mz_now()` at its own commit).
        let time = wall_clock_ms_rounded_up().max(state.last_allocated + 1);
        state.last_allocated = time;
        let persist_high_water = (time >= state.high_water).then(|| {
            state.high_water = time + HIGH_WATER_STEP_MS;
            state.high_water
        });
        Allocation {
            time,
            persist_high_water,
        }
    }

    /// Records that the write at `time` is durable and visible to reads.
    pub fn mark_committed(&self, time: Timestamp) {
        let mut state = self.lock();
        state.last_committed = state.last_committed.max(time);
        state.last_commit_wall_clock = wall_clock_ms();
    }

    /// How long (ms, by the wall clock) since a time was last committed. Times may run ahead
    /// of the wall clock after a restart, so this is not the read time's age.
    pub fn idle_ms(&self) -> Timestamp {
        wall_clock_ms().saturating_sub(self.lock().last_commit_wall_clock)
    }

    /// The time reads happen at: the last committed write.
    pub fn read_time(&self) -> Timestamp {
        self.lock().last_committed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OracleState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Times that running reads still need; arrangements must stay readable at the earliest.
#[derive(Debug, Default)]
pub(crate) struct ReadHolds {
    holds: Mutex<BTreeMap<Timestamp, usize>>,
}

impl ReadHolds {
    /// Holds the oracle's current read time until the returned guard drops.
    ///
    /// The read time is taken while the holds are locked. A commit marks its time committed
    /// before it asks for [`Self::earliest`] to allow compaction, so either this hold is
    /// already in place when the commit asks, or the read time already includes that
    /// commit: compaction never passes a time a reader is about to hold. (Taking the time
    /// first and the hold afterwards leaves a window in which a commit compacts past it.)
    pub fn hold_read_time(self: &std::sync::Arc<Self>, oracle: &TimestampOracle) -> ReadHold {
        let mut holds = self.holds.lock().unwrap_or_else(|p| p.into_inner());
        let time = oracle.read_time();
        *holds.entry(time).or_default() += 1;
        ReadHold {
            holds: self.clone(),
            time,
        }
    }

    /// The earliest held time, if any.
    pub fn earliest(&self) -> Option<Timestamp> {
        self.holds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .next()
            .copied()
    }
}

/// Keeps one time readable while alive.
#[derive(Debug)]
pub(crate) struct ReadHold {
    holds: std::sync::Arc<ReadHolds>,
    time: Timestamp,
}

impl ReadHold {
    /// The held time.
    pub fn time(&self) -> Timestamp {
        self.time
    }
}

impl Drop for ReadHold {
    fn drop(&mut self) {
        let mut holds = self.holds.holds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = holds.get_mut(&self.time) {
            *count -= 1;
            if *count == 0 {
                holds.remove(&self.time);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_increase_past_the_restart_floor() {
        let far_future = wall_clock_ms() + 1_000_000;
        let oracle = TimestampOracle::new(far_future, 0);
        let a = oracle.allocate().time;
        let b = oracle.allocate().time;
        assert!(a > far_future && b > a);
    }

    #[test]
    fn a_hold_keeps_the_earliest_time_until_dropped() {
        let holds = std::sync::Arc::new(ReadHolds::default());
        let oracle = TimestampOracle::new(0, 0);
        oracle.mark_committed(5);
        let first = holds.hold_read_time(&oracle);
        oracle.mark_committed(9);
        let _second = holds.hold_read_time(&oracle);
        assert_eq!(holds.earliest(), Some(5));
        drop(first);
        assert_eq!(holds.earliest(), Some(9));
    }

    /// Commits compact to the earliest hold while readers take holds concurrently: no
    /// reader may ever hold a time that a commit already allowed compaction past.
    #[test]
    fn compaction_never_passes_a_time_being_held() {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;
        let holds = Arc::new(ReadHolds::default());
        let oracle = Arc::new(TimestampOracle::new(0, 0));
        let since = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (holds, oracle, since) = (holds.clone(), oracle.clone(), since.clone());
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let hold = holds.hold_read_time(&oracle);
                        let compacted = since.load(Ordering::SeqCst);
                        assert!(
                            hold.time() >= compacted,
                            "held {} but compaction reached {compacted}",
                            hold.time()
                        );
                    }
                })
            })
            .collect();
        for _ in 0..20_000 {
            let time = oracle.allocate().time;
            oracle.mark_committed(time);
            let allowed = holds.earliest().unwrap_or(time).min(time);
            since.fetch_max(allowed, Ordering::SeqCst);
        }
        for reader in readers {
            reader.join().expect("a reader saw a compacted hold");
        }
    }
}
