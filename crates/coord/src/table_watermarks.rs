//! Event time of tables: the watermark a table declares (`CREATE TABLE t (…, WATERMARK FOR
//! ts AS ts - INTERVAL '5' SECOND)`), moved by the commits that write the table, whether
//! the writes come from clients or from the upstream table of a CDC source.
//!
//! As for a source, a row written behind the watermark is late: it is still written (views
//! correct their results), and also recorded in `fluxion_catalog.late_events`. The watermark
//! moves when a commit is staged, is logged with the commit, and is visible (to
//! `fluxion_catalog.frontiers`, to the views that wait for it) when the commit is.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use pipelines::WatermarkTracker;
use repr::{Diff, GlobalId};
use system_catalog::LATE_EVENTS;

use crate::commit::CommitBatch;
use crate::coordinator::Coordinator;
use crate::error::CoordError;

/// The watermarks of the tables that declare one.
#[derive(Debug, Default)]
pub(crate) struct TableWatermarks {
    tables: Mutex<HashMap<GlobalId, TableClock>>,
}

/// One table's event time.
#[derive(Debug)]
struct TableClock {
    tracker: WatermarkTracker,
    /// The watermark of its last visible commit.
    visible: Option<i64>,
    /// When a commit last wrote rows into it.
    last_row_at: Option<Instant>,
}

/// What event time makes of rows written to a table.
#[derive(Debug, Default)]
pub(crate) struct ObservedWrite {
    /// The rows of `late_events` for the late rows, if any.
    pub late: Option<RecordBatch>,
    /// The table's watermark after the write, if it moved.
    pub watermark: Option<i64>,
}

impl TableWatermarks {
    fn lock(&self) -> MutexGuard<'_, HashMap<GlobalId, TableClock>> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts keeping table `id`'s watermark with `tracker`.
    pub fn declare(&self, id: GlobalId, tracker: WatermarkTracker) {
        let visible = tracker.watermark();
        self.lock().insert(
            id,
            TableClock {
                tracker,
                visible,
                last_row_at: None,
            },
        );
    }

    /// Forgets table `id`.
    pub fn remove(&self, id: GlobalId) {
        self.lock().remove(&id);
    }

    /// Resumes table `id`'s watermark at `watermark` (logged before a restart).
    pub fn resume(&self, id: GlobalId, watermark: i64) {
        if let Some(clock) = self.lock().get_mut(&id) {
            clock.tracker.resume(watermark);
            clock.visible = clock.visible.max(Some(watermark));
        }
    }

    /// Looks at the changes `diffs` of `rows` a commit being staged makes to table `id`
    /// (named `name`): its inserted rows that are late, and where its watermark goes. Does
    /// nothing for a table without a watermark.
    pub fn observe(
        &self,
        id: GlobalId,
        name: &str,
        rows: &RecordBatch,
        diffs: &[Diff],
    ) -> Result<ObservedWrite, CoordError> {
        let mut tables = self.lock();
        let Some(clock) = tables.get_mut(&id) else {
            return Ok(ObservedWrite::default());
        };
        let inserted = BooleanArray::from_iter(diffs.iter().map(|d| Some(*d > 0)));
        let inserted = filter_record_batch(rows, &inserted)
            .map_err(|e| CoordError::Internal(format!("inserted rows: {e}")))?;
        let now = Instant::now();
        let observed = clock.tracker.observe(&inserted, &[], now)?;
        let late = match observed.late.is_empty() {
            true => None,
            false => Some(pipelines::late_event_rows(
                name,
                &inserted,
                clock.tracker.column(),
                &observed,
            )?),
        };
        if inserted.num_rows() > 0 {
            clock.last_row_at = Some(now);
        }
        Ok(ObservedWrite {
            late,
            watermark: clock.tracker.advance(now),
        })
    }

    /// Records that table `id`'s watermark is `watermark` in a visible commit; whether `id`
    /// is a table that declares one.
    pub fn set_visible(&self, id: GlobalId, watermark: i64) -> bool {
        match self.lock().get_mut(&id) {
            Some(clock) => {
                clock.visible = clock.visible.max(Some(watermark));
                true
            }
            None => false,
        }
    }

    /// The visible watermark of every table that has one.
    pub fn visible(&self) -> Vec<(GlobalId, i64)> {
        self.lock()
            .iter()
            .filter_map(|(id, clock)| Some((*id, clock.visible?)))
            .collect()
    }

    /// The watermark of a source that feeds `tables` (CDC), as an idle partition's is kept:
    /// the least of theirs over the tables that declare one and have had rows within
    /// `idle_timeout` of `now` (`None` while one of those has no watermark yet); when every
    /// one is idle, none holds it back: the most advanced one's.
    pub fn source_watermark(
        &self,
        tables: &[GlobalId],
        idle_timeout: Duration,
        now: Instant,
    ) -> Option<i64> {
        let clocks = self.lock();
        let declared: Vec<&TableClock> = tables.iter().filter_map(|id| clocks.get(id)).collect();
        let active: Vec<&&TableClock> = declared
            .iter()
            .filter(|clock| {
                clock
                    .last_row_at
                    .is_some_and(|at| now.saturating_duration_since(at) < idle_timeout)
            })
            .collect();
        if active.is_empty() {
            return declared.iter().filter_map(|c| c.tracker.watermark()).max();
        }
        active
            .iter()
            .map(|clock| clock.tracker.watermark())
            .collect::<Option<Vec<i64>>>()?
            .into_iter()
            .min()
    }
}

impl Coordinator {
    /// Adds to `commit` what event time makes of the changes `diffs` of `rows` it makes to
    /// table `id` (named `name`), if the table declares a watermark: its late rows to
    /// `late_events` (and to `late_table`, if given), and its watermark if it moves.
    /// Returns how many rows were late.
    pub(crate) fn observe_event_time(
        &self,
        commit: &mut CommitBatch,
        id: GlobalId,
        name: &str,
        (rows, diffs): (&RecordBatch, &[Diff]),
        late_table: Option<GlobalId>,
    ) -> Result<u64, CoordError> {
        let observed = self.table_watermarks.observe(id, name, rows, diffs)?;
        commit
            .watermarks
            .extend(observed.watermark.map(|w| (id, w)));
        let Some(late) = observed.late else {
            return Ok(0);
        };
        for target in std::iter::once(LATE_EVENTS).chain(late_table) {
            let codecs = self
                .table_codecs
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(&target)
                .cloned();
            if let Some(codecs) = codecs {
                self.add_insert(commit, target, &codecs, late.clone())?;
            }
        }
        Ok(late.num_rows() as u64)
    }
}
