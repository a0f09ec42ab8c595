//! Flow control: a source waits for the dataflows that read it instead of running ahead.
//!
//! A committed batch is handed to compute through the workers' command queues, which do not
//! push back: a source that commits faster than its views can digest would fill them (and the
//! dataflows' own queues) without bound. So each running source keeps the times of its last
//! commits, and before committing more than [`COMMITS_IN_FLIGHT`] beyond what its readers have
//! processed, it waits until every arranged reader (materialized view or index, however far
//! downstream) reports a frontier past the oldest of them. The reader thread, in turn, blocks on
//! the bounded channel to the committer. Memory then holds a few batches per source, whatever
//! the speed of either side.

use std::collections::VecDeque;

use compute::{ComputeError, Frontiers};
use repr::{GlobalId, Timestamp};

/// Commits a source may have ahead of the dataflows that read it.
const COMMITS_IN_FLIGHT: usize = 4;

/// The recent commit times of one source.
#[derive(Debug, Default)]
pub(crate) struct CommitWindow {
    times: VecDeque<Timestamp>,
}

impl CommitWindow {
    /// Notes a commit of the source at `time`.
    pub fn committed(&mut self, time: Timestamp) {
        self.times.push_back(time);
    }

    /// Waits, if the source has [`COMMITS_IN_FLIGHT`] commits or more outstanding, until
    /// every arranged reader of the source (`readers` tells them) has processed the oldest
    /// of them, as `frontiers` report it.
    pub async fn wait_for_readers(
        &mut self,
        readers: impl FnOnce() -> Vec<GlobalId>,
        frontiers: &Frontiers,
    ) -> Result<(), ComputeError> {
        if self.times.len() < COMMITS_IN_FLIGHT {
            return Ok(());
        }
        let Some(oldest) = self.times.pop_front() else {
            return Ok(());
        };
        for reader in readers() {
            match frontiers.wait_until_complete_at(reader, oldest).await {
                Ok(()) => {}
                // Dropped meanwhile: nothing to wait for.
                Err(ComputeError::UnknownArrangement(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
