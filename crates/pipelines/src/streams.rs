//! Streams: append-only sources, kept in stream logs and fed to dataflows, never arranged.
//!
//! A source without a primary key whose records are plain inserts only ever grows. Arranged
//! like a table, it would hold its whole history in memory and every checkpoint would rewrite
//! it. As a stream, its rows go to a change log of its own (durable before the WAL record
//! that commits them, which stores the log's new length), and compute keeps nothing of it:
//! each dataflow that reads the stream is fed its history once, when it is built (or rebuilt
//! after a restart), then every new batch. A `SELECT` from the stream itself reads the log
//! while the query runs ([`StreamScan`]).
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
use storage::{ChangeLog, LogAppend};

use crate::error::PipelineError;

/// What the stream logs' files are called (`stream-<id>.log`).
const STREAM_LOG_KIND: &str = "stream";

/// The stream logs of the streams that exist.
#[derive(Debug)]
pub struct Streams {
    dir: PathBuf,
    logs: RwLock<HashMap<GlobalId, Arc<ChangeLog>>>,
    /// The length of each stream log that the WAL committed last, read at recovery.
    committed: Mutex<HashMap<GlobalId, u64>>,
}

impl Streams {
    /// No streams yet; their logs live in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            logs: RwLock::new(HashMap::new()),
            committed: Mutex::new(HashMap::new()),
        }
    }

    /// Remembers the stream log lengths the recovered WAL records committed last.
    pub fn set_committed_ends(&self, records: &[storage::WalRecord]) {
        let mut committed = self.committed.lock().unwrap_or_else(|p| p.into_inner());
        for record in records {
            committed.extend(record.stream_ends.iter().copied());
        }
    }

    /// Opens stream `id`'s log, cut back to the length the WAL committed last (nothing, for a
    /// new stream; see [`ChangeLog::open`]).
    pub fn open(&self, id: GlobalId) -> Result<(), PipelineError> {
        let committed_len = self
            .committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id)
            .unwrap_or(0);
        let log = ChangeLog::open(&self.dir, STREAM_LOG_KIND, id, committed_len)?;
        self.write().insert(id, Arc::new(log));
        Ok(())
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
        if self.write().remove(&id).is_some() {
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

    /// Every stream's log length (what a checkpoint keeps).
    pub fn ends(&self) -> Vec<(GlobalId, u64)> {
        self.read()
            .iter()
            .map(|(id, log)| (*id, log.len_bytes()))
            .collect()
    }

    /// Appends each of `rows` (a stream and its new rows) to the stream's log at `time`,
    /// durably; returns where each went. The caller commits them with a WAL record holding
    /// the ends, or undoes them ([`Streams::undo_appends`]).
    pub async fn append(
        &self,
        time: Timestamp,
        rows: Vec<(GlobalId, RecordBatch)>,
    ) -> Result<Vec<(GlobalId, LogAppend)>, PipelineError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let work: Vec<_> = rows
            .into_iter()
            .map(|(id, rows)| {
                let log = self
                    .get(id)
                    .ok_or_else(|| PipelineError::Internal(format!("stream {id} has no log")))?;
                let batch = repr::ChangeBatch {
                    time,
                    diffs: vec![1; rows.num_rows()],
                    rows,
                };
                Ok((log, batch))
            })
            .collect::<Result<_, PipelineError>>()?;
        let appended = tokio::task::spawn_blocking(move || {
            let mut done = Vec::with_capacity(work.len());
            for (log, batch) in work {
                match log.append(std::slice::from_ref(&batch)) {
                    Ok(append) => done.push((log.id(), append)),
                    Err(e) => return Err((done, e)),
                }
            }
            Ok(done)
        })
        .await
        .map_err(|e| PipelineError::Internal(format!("stream append task failed: {e}")))?;
        appended.map_err(|(done, e)| {
            self.undo_appends(&done);
            e.into()
        })
    }

    /// Cuts back appends whose commit failed.
    pub fn undo_appends(&self, appends: &[(GlobalId, LogAppend)]) {
        for (id, append) in appends {
            if let Some(log) = self.get(*id) {
                if let Err(e) = log.truncate(append.start) {
                    tracing::error!(stream = %id, error = %e, "could not undo a failed stream append; it is cut back at the next start");
                }
            }
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<GlobalId, Arc<ChangeLog>>> {
        self.logs.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<GlobalId, Arc<ChangeLog>>> {
        self.logs.write().unwrap_or_else(|p| p.into_inner())
    }
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
