//! Rate limiting: a generator asked for N rows a second releases rows when they are due, in
//! batches of at least [`BATCH_INTERVAL`] worth (or of the most asked for), so a slow rate does
//! not turn into one tiny batch (and one log write) per row.

use std::time::{Duration, Instant};

/// The longest a due item waits for others to share its batch.
const BATCH_INTERVAL: Duration = Duration::from_millis(20);

/// Releases items at a steady rate from the moment it is created (`0` = as fast as possible).
#[derive(Debug)]
pub(crate) struct Pacer {
    per_second: f64,
    started: Instant,
    released: u64,
    last_release: Duration,
}

impl Pacer {
    /// A pacer for `per_second` items a second.
    pub fn new(per_second: f64) -> Self {
        Self {
            per_second,
            started: Instant::now(),
            released: 0,
            last_release: Duration::ZERO,
        }
    }

    /// How many items may be released now (at most `max`, at least 1), sleeping until `max`
    /// are due or the oldest due item has waited [`BATCH_INTERVAL`].
    pub fn take(&mut self, max: u64) -> u64 {
        let max = max.max(1);
        if self.per_second <= 0.0 {
            self.released += max;
            return max;
        }
        loop {
            let now = self.started.elapsed();
            let due = ((now.as_secs_f64() * self.per_second) as u64).saturating_sub(self.released);
            if due >= max || (due > 0 && now >= self.last_release + BATCH_INTERVAL) {
                let released = due.min(max);
                self.released += released;
                self.last_release = now;
                return released;
            }
            let at = |count: u64| Duration::from_secs_f64(count as f64 / self.per_second);
            let all_due = at(self.released + max);
            let first_due = at(self.released + 1);
            let wake = all_due.min(first_due.max(self.last_release + BATCH_INTERVAL));
            std::thread::sleep(
                wake.saturating_sub(now)
                    .clamp(Duration::from_micros(100), Duration::from_millis(100)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_releases_everything_at_once() {
        let mut pacer = Pacer::new(0.0);
        assert_eq!(pacer.take(1000), 1000);
    }

    #[test]
    fn limited_releases_what_is_due_in_batches() {
        let mut pacer = Pacer::new(10_000.0);
        let started = Instant::now();
        let mut batches = 0;
        let mut released = 0;
        while released < 2_000 {
            released += pacer.take(100_000);
            batches += 1;
        }
        let elapsed = started.elapsed().as_secs_f64();
        assert!(elapsed >= 0.19, "2000 items at 10000/s took {elapsed} s");
        assert!(batches <= 15, "{batches} batches for 0.2 s of items");
    }
}
