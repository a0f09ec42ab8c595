//! What the WAL's writer measures of group commit: how many records each fsync made durable,
//! and how long a record waited from being queued until it was durable (the commit's share of
//! a write's latency).

/// Counts of observed values in fixed buckets, as Prometheus histograms keep them.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// The buckets' inclusive upper bounds, ascending; a last bucket above them is implied.
    pub bounds: &'static [f64],
    /// Observations per bucket (not cumulative): one per bound, then those above every bound.
    pub counts: Vec<u64>,
    /// The sum of every observed value.
    pub sum: f64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
        }
    }

    fn observe(&mut self, value: f64) {
        let bucket = self.bounds.partition_point(|bound| *bound < value);
        self.counts[bucket] += 1;
        self.sum += value;
    }

    /// The number of observations.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Records per fsync: one, then doubling.
const GROUP_RECORDS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// Seconds from queueing to durable: 100 µs to 1 s.
const DURABLE_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// The WAL writer's measurements since the log was opened.
#[derive(Clone, Debug, PartialEq)]
pub struct WalStats {
    /// Records each successful fsync made durable.
    pub group_records: Histogram,
    /// Seconds each durable record waited from being queued until its group was fsynced.
    pub durable_seconds: Histogram,
}

impl Default for WalStats {
    fn default() -> Self {
        WalStats {
            group_records: Histogram::new(GROUP_RECORDS),
            durable_seconds: Histogram::new(DURABLE_SECONDS),
        }
    }
}

impl WalStats {
    /// Counts a group of records made durable, each with the seconds it waited.
    pub(super) fn observe_group(&mut self, waits: impl ExactSizeIterator<Item = f64>) {
        self.group_records.observe(waits.len() as f64);
        for wait in waits {
            self.durable_seconds.observe(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fall_into_the_first_bucket_bounding_them() {
        let mut stats = WalStats::default();
        stats.observe_group([0.0001, 0.0003, 2.0].into_iter());
        stats.observe_group([0.001].into_iter());
        let groups = &stats.group_records;
        assert_eq!((groups.counts[0], groups.counts[2]), (1, 1), "{groups:?}");
        assert_eq!(groups.count(), 2);
        assert_eq!(groups.sum, 4.0);
        let waits = &stats.durable_seconds;
        assert_eq!(waits.counts[0], 1, "at the bound counts in it");
        assert_eq!(waits.counts[2], 1);
        assert_eq!(waits.counts[3], 1);
        assert_eq!(waits.counts[DURABLE_SECONDS.len()], 1, "above every bound");
        assert_eq!(waits.count(), 4);
    }
}
