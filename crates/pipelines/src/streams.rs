//! Streams: append-only sources, kept in stream logs and fed to dataflows, never arranged.
//!
//! A source without a primary key whose records are plain inserts only ever grows. Arranged
//! like a table, it would hold its whole history in memory and every checkpoint would rewrite
//! it. As a stream, its batches commit in a change log of its own, each with one fsync and no
//! WAL record: the frame holds the rows, the source's position after them and its bad
//! records, and opening the log after a crash keeps every whole frame (see
//! [`storage::ChangeLog`]). Compute keeps nothing of a stream: each dataflow that reads it is
//! fed its history once, when it is built (or rebuilt after a restart), then every new batch.
//! A `SELECT` from the stream itself reads the log while the query runs ([`StreamScan`]).
//!
//! The cost moves to where it belongs: memory follows what the views keep, disk follows the
//! stream's history, and a new view over a long stream reads that history from disk once.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use repr::{GlobalId, Timestamp};
use storage::{ChangeLog, LogAppend, WalRecord};

use crate::error::PipelineError;

/// What the stream logs' files are called (`stream-<id>.log`).
const STREAM_LOG_KIND: &str = "stream";

/// The stream logs of the streams that exist.
#[derive(Debug)]
pub struct Streams {
    dir: PathBuf,
    logs: RwLock<HashMap<GlobalId, Arc<ChangeLog>>>,
    /// The length of each stream log that the WAL or the checkpoint committed last, read at
    /// recovery.
    recovered_ends: Mutex<HashMap<GlobalId, u64>>,
    /// The commits that the opened logs held after those lengths, not yet taken by recovery.
    recovered_commits: Mutex<Vec<WalRecord>>,
    /// Each log's length through its last visible commit: what a checkpoint records.
    visible_ends: Mutex<HashMap<GlobalId, u64>>,
}

impl Streams {
    /// No streams yet; their logs live in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            logs: RwLock::new(HashMap::new()),
            recovered_ends: Mutex::new(HashMap::new()),
            recovered_commits: Mutex::new(Vec::new()),
            visible_ends: Mutex::new(HashMap::new()),
        }
    }

    /// Remembers the stream log lengths the recovered WAL records (and checkpoint) committed
    /// last.
    pub fn set_committed_ends(&self, records: &[WalRecord]) {
        let mut ends = lock(&self.recovered_ends);
        for record in records {
            ends.extend(record.stream_ends.iter().copied());
        }
    }

    /// Opens stream `id`'s log: what the WAL committed, and every batch after it that
    /// committed itself (see [`ChangeLog::open`]). Those batches are kept for
    /// [`Streams::take_recovered_commits`].
    pub fn open(&self, id: GlobalId) -> Result<(), PipelineError> {
        let committed_len = lock(&self.recovered_ends).remove(&id).unwrap_or(0);
        let (log, commits) = ChangeLog::open(&self.dir, STREAM_LOG_KIND, id, committed_len)?;
        if !commits.is_empty() {
            tracing::info!(stream = %id, batches = commits.len(), "stream log holds batches committed after the last checkpoint");
        }
        lock(&self.recovered_commits).extend(commits);
        lock(&self.visible_ends).insert(id, log.len_bytes());
        self.logs_mut().insert(id, Arc::new(log));
        Ok(())
    }

    /// The batches the opened logs committed after the WAL and the last checkpoint, as log
    /// records in time order: recovery replays what else they changed (bad records) and
    /// resumes their sources after their positions.
    pub fn take_recovered_commits(&self) -> Vec<WalRecord> {
        let mut commits = std::mem::take(&mut *lock(&self.recovered_commits));
        commits.sort_by_key(|record| record.time);
        commits
    }

    /// Whether `id` is a stream.
    pub fn contains(&self, id: GlobalId) -> bool {
        self.read().contains_key(&id)
    }

    /// Stream `id`'s log.
    pub fn get(&self, id: GlobalId) -> Option<Arc<ChangeLog>> {
        self.read().get(&id).cloned()
    }

    /// Forgets stream `id` and deletes its log (it was dropped).
    pub fn remove(&self, id: GlobalId) {
        lock(&self.visible_ends).remove(&id);
        if self.logs_mut().remove(&id).is_some() {
            if let Err(e) = ChangeLog::delete(&self.dir, STREAM_LOG_KIND, id) {
                tracing::warn!(stream = %id, error = %e, "could not delete a dropped stream's log");
            }
        }
    }

    /// Deletes the logs in the directory that belong to no stream (left by a crash between
    /// dropping a stream and deleting its log).
    pub fn remove_orphans(&self) -> Result<(), PipelineError> {
        let known: HashSet<GlobalId> = self.read().keys().copied().collect();
        for id in ChangeLog::list(&self.dir, STREAM_LOG_KIND)? {
            if !known.contains(&id) {
                tracing::info!(stream = %id, "deleting the log of a stream that no longer exists");
                ChangeLog::delete(&self.dir, STREAM_LOG_KIND, id)?;
            }
        }
        Ok(())
    }

    /// Each stream log's length through its last visible commit (what a checkpoint
    /// records as committed).
    pub fn visible_ends(&self) -> Vec<(GlobalId, u64)> {
        lock(&self.visible_ends)
            .iter()
            .map(|(id, end)| (*id, *end))
            .collect()
    }

    /// Records that the commit that ended stream `id`'s log at `end` is visible.
    pub fn mark_visible(&self, id: GlobalId, end: u64) {
        if let Some(visible) = lock(&self.visible_ends).get_mut(&id) {
            *visible = (*visible).max(end);
        }
    }

    /// Writes `record`, the commit of a batch of stream `id` (its rows, the source's
    /// position, any bad records), to the stream's log as one frame. It is not durable yet:
    /// [`StreamWrite::durable`] waits for that. The caller orders writes (it holds the
    /// coordinator's sequencer).
    pub async fn write(
        &self,
        id: GlobalId,
        record: WalRecord,
    ) -> Result<StreamWrite, PipelineError> {
        let log = self
            .get(id)
            .ok_or_else(|| PipelineError::Internal(format!("stream {id} has no log")))?;
        let writer = log.clone();
        let append = tokio::task::spawn_blocking(move || writer.write(&record))
            .await
            .map_err(|e| PipelineError::Internal(format!("stream write task failed: {e}")))??;
        Ok(StreamWrite { log, append })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<GlobalId, Arc<ChangeLog>>> {
        self.logs.read().unwrap_or_else(|p| p.into_inner())
    }

    fn logs_mut(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<GlobalId, Arc<ChangeLog>>> {
        self.logs.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// A stream commit written to its log, not yet durable.
#[derive(Debug)]
pub struct StreamWrite {
    log: Arc<ChangeLog>,
    /// Where the frame went.
    pub append: LogAppend,
}

impl StreamWrite {
    /// Waits until the frame is durable: the commit point of the batch. Commits waiting at
    /// once share one fsync.
    pub async fn durable(self) -> Result<(), PipelineError> {
        let StreamWrite { log, append } = self;
        tokio::task::spawn_blocking(move || log.sync_through(append.end))
            .await
            .map_err(|e| PipelineError::Internal(format!("stream fsync task failed: {e}")))??;
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A scan of a stream's rows as of one time, read from its log while the query runs (a
/// stream may hold far more rows than fit in memory).
#[derive(Debug)]
pub struct StreamScan {
    /// The stream's log.
    pub log: Arc<ChangeLog>,
    /// The time the rows are read as of.
    pub time: Timestamp,
    /// The schema the batches are given (the relation's planning schema).
    pub schema: SchemaRef,
}

/// Batches a scan reads ahead of the query consuming them.
const SCAN_READ_AHEAD: usize = 2;

impl PartitionStream for StreamScan {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _context: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (sender, receiver) = tokio::sync::mpsc::channel(SCAN_READ_AHEAD);
        let (log, time, schema) = (self.log.clone(), self.time, self.schema.clone());
        // The log is read on a blocking thread; the query stops it by dropping the stream.
        tokio::task::spawn_blocking(move || {
            let batches = match log.read_through(time) {
                Ok(batches) => batches,
                Err(e) => {
                    let _ = sender.blocking_send(Err(external(e)));
                    return;
                }
            };
            for batch in batches {
                let rows = batch
                    .map_err(external)
                    .and_then(|batch| stream_rows(&log, batch, &schema));
                if sender.blocking_send(rows).is_err() {
                    return;
                }
            }
        });
        let batches = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|batch| (batch, receiver))
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), batches))
    }
}

/// A logged batch of stream `log` as rows of `schema`.
fn stream_rows(
    log: &ChangeLog,
    batch: repr::ChangeBatch,
    schema: &SchemaRef,
) -> datafusion::error::Result<RecordBatch> {
    if batch.diffs.iter().any(|d| *d != 1) {
        return Err(DataFusionError::Internal(format!(
            "stream {} holds a change that is not an insertion",
            log.id()
        )));
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.rows.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        batch.rows.columns().to_vec(),
        &options,
    )?)
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
