//! Sources' watermarks, as the dataflows that wait for them (`EMIT ON WINDOW CLOSE`) see them.
//!
//! A source's watermark moves with the commits of its batches. The coordinator tells the
//! workers the watermark each commit left, at the commit's time, before it lets the inputs
//! pass that time; a dataflow built later is told the history of the times it will replay.
//! Each operator that waits for a source keeps a log of its own of these `(time, watermark)`
//! steps, so that when it finishes time `t` it knows the watermark as of `t`, and forgets the
//! steps it has gone past (operators of one dataflow go past them at different paces).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use repr::{GlobalId, Timestamp};

/// One source's watermark over time, as one dataflow needs it.
#[derive(Debug, Default)]
pub(crate) struct WatermarkLog {
    /// The watermark (microseconds) from each time on, until the next entry.
    steps: BTreeMap<Timestamp, i64>,
}

/// A watermark log shared between the worker, which fills it, and one operator.
pub(crate) type SharedWatermarkLog = Rc<RefCell<WatermarkLog>>;

impl WatermarkLog {
    /// Records that the watermark is `watermark` from `time` on. A watermark never moves
    /// backwards: one below the watermark already in force at `time` changes nothing.
    pub fn record(&mut self, time: Timestamp, watermark: i64) {
        if self.at(time).is_some_and(|current| current >= watermark) {
            return;
        }
        self.steps.insert(time, watermark);
    }

    /// The watermark as of `time`; `None` if there was none yet.
    pub fn at(&self, time: Timestamp) -> Option<i64> {
        self.steps.range(..=time).next_back().map(|(_, w)| *w)
    }

    /// The times in `[from, to)` (`to: None`: no end) at which the watermark moved.
    pub fn steps_between(&self, from: Timestamp, to: Option<Timestamp>) -> Vec<Timestamp> {
        match to {
            Some(to) if to <= from => Vec::new(),
            Some(to) => self.steps.range(from..to).map(|(t, _)| *t).collect(),
            None => self.steps.range(from..).map(|(t, _)| *t).collect(),
        }
    }

    /// Forgets the steps before `time`, keeping what is in force at it.
    pub fn forget_before(&mut self, time: Timestamp) {
        let kept = self.steps.split_off(&time);
        let in_force = self.steps.pop_last();
        self.steps = kept;
        if let Some((_, watermark)) = in_force {
            self.steps.entry(time).or_insert(watermark);
        }
    }
}

/// The watermark logs of every dataflow on one worker, by the source they follow.
#[derive(Default)]
pub(crate) struct WatermarkReaders {
    by_source: BTreeMap<GlobalId, Vec<(GlobalId, SharedWatermarkLog)>>,
}

impl WatermarkReaders {
    /// Registers the logs the operators of dataflow `dataflow` keep, with their sources.
    pub fn add(&mut self, dataflow: GlobalId, logs: Vec<(GlobalId, SharedWatermarkLog)>) {
        for (source, log) in logs {
            self.by_source
                .entry(source)
                .or_default()
                .push((dataflow, log));
        }
    }

    /// Tells every dataflow following `source` that its watermark is `watermark` from `time` on.
    pub fn advance(&mut self, source: GlobalId, time: Timestamp, watermark: i64) {
        for (_, log) in self.by_source.get(&source).into_iter().flatten() {
            log.borrow_mut().record(time, watermark);
        }
    }

    /// Gives dataflow `dataflow` the history of `source`'s watermark.
    pub fn hydrate(&mut self, dataflow: GlobalId, source: GlobalId, steps: &[(Timestamp, i64)]) {
        let logs = self.by_source.get(&source).into_iter().flatten();
        for (_, log) in logs.filter(|(reader, _)| *reader == dataflow) {
            let mut log = log.borrow_mut();
            for (time, watermark) in steps {
                log.record(*time, *watermark);
            }
        }
    }

    /// Forgets the logs of dataflow `dataflow`, or those of a source that was dropped.
    pub fn remove(&mut self, id: GlobalId) {
        self.by_source.remove(&id);
        for readers in self.by_source.values_mut() {
            readers.retain(|(dataflow, _)| *dataflow != id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_at_a_time_is_the_last_step_at_or_before_it() {
        let mut log = WatermarkLog::default();
        assert_eq!(log.at(5), None);
        log.record(3, 100);
        log.record(7, 200);
        log.record(9, 150);
        assert_eq!(log.at(2), None);
        assert_eq!(log.at(3), Some(100));
        assert_eq!(log.at(8), Some(200));
        assert_eq!(log.at(9), Some(200), "a watermark never moves back");
        assert_eq!(log.steps_between(3, Some(7)), vec![3]);
        assert_eq!(log.steps_between(4, None), vec![7]);
        log.forget_before(5);
        assert_eq!(log.at(5), Some(100));
        assert_eq!(log.at(7), Some(200));
        assert_eq!(log.steps_between(0, None), vec![5, 7]);
    }
}
