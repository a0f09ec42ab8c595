//! Running a source: its reader on a thread of its own, its batches committed in order.
//!
//! The reader thread hands batches to the ingest task through a bounded channel, so a
//! source whose batches cannot be committed as fast as it reads them waits instead of
//! buffering without bound (backpressure); the ingest task in turn waits for the dataflows
//! reading the source (`flow_control`). Each batch is committed like a transaction: one
//! new timestamp, the rows and the connector's position after them in one log record (for
//! an append-only source, a frame of its stream log instead of a WAL record), then the rows
//! go to compute.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use connectors::{ConnectorError, DurablePosition, SourceBatch, SourceReader};
use repr::{GlobalId, Timestamp};
use tokio::sync::mpsc;

use super::flow_control::CommitWindow;
use super::registry::{SourceRegistry, SourceStats};
use super::watermark::WatermarkTracker;

/// Batches read ahead of the one being committed: while commits or the views reading the
/// source are slower than the source, this many wait to be merged into the next commit.
const READ_AHEAD: usize = 32;

/// Rows past which batches waiting to be committed are not merged into one commit.
const MERGE_ROWS: usize = 256 * 1024;

/// What commits a source's batches (the coordinator), and what the ingest task needs of it.
pub trait SourceCommitter: Send + Sync + 'static {
    /// Why a batch could not be committed.
    type Error: std::fmt::Display + From<compute::ComputeError> + Send;

    /// Makes one batch of the source wired as `wiring` durable with its position, then
    /// visible; returns its time (`None` if there was nothing to commit).
    fn commit(
        &self,
        wiring: &SourceWiring,
        batch: SourceBatch,
    ) -> impl Future<Output = Result<Option<Timestamp>, Self::Error>> + Send;

    /// The materialized views and indexes that read `source`, directly or through others.
    fn arranged_readers(&self, source: GlobalId) -> Vec<GlobalId>;

    /// The frontiers of the dataflows.
    fn frontiers(&self) -> &compute::Frontiers;

    /// The running sources.
    fn sources(&self) -> &SourceRegistry;
}

/// Starts reading `reader` on a thread and committing its batches with `committer` on a
/// task, until `stop` is set, the source ends or fails, or the committer goes away.
pub fn spawn_ingest<C: SourceCommitter>(
    committer: Weak<C>,
    wiring: SourceWiring,
    mut reader: Box<dyn SourceReader>,
    exited: Arc<AtomicBool>,
    durable: DurablePosition,
) {
    let id = wiring.outputs[0];
    let name = wiring.name.clone();
    let stop = wiring.stop.clone();
    let (batches, mut received) =
        mpsc::channel::<Result<Option<SourceBatch>, ConnectorError>>(READ_AHEAD);
    let reader_stop = stop.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("source-{name}"))
        .spawn(move || {
            while !reader_stop.load(Ordering::Acquire) {
                let next = reader.next_batch();
                let more = matches!(next, Ok(Some(_)));
                if batches.blocking_send(next).is_err() || !more {
                    break;
                }
            }
            drop(reader);
            exited.store(true, Ordering::Release);
        });
    if let Err(e) = spawned {
        tracing::error!(source = %name, error = %e, "could not start the source's reader thread");
        return;
    }
    tokio::spawn(async move {
        tracing::info!(source = %name, "source started");
        let mut window = CommitWindow::default();
        let mut pending = None;
        loop {
            let next = match pending.take() {
                Some(next) => next,
                None => match received.recv().await {
                    Some(next) => next,
                    None => break,
                },
            };
            if stop.load(Ordering::Acquire) {
                break;
            }
            let Some(committer) = committer.upgrade() else {
                break;
            };
            match next {
                Ok(Some(mut batch)) => {
                    let waited = window
                        .wait_for_readers(|| committer.arranged_readers(id), committer.frontiers())
                        .await;
                    // Batches read while the readers caught up or the last commit ran are
                    // committed with this one: a source faster than its commits (an fsync
                    // each) or its views then commits more rows at a time, not more times,
                    // and every aggregate downstream emits a group's change once per commit.
                    while batch.row_count() < MERGE_ROWS {
                        match received.try_recv() {
                            Ok(Ok(Some(later))) => batch.absorb(later),
                            Ok(other) => {
                                pending = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    let position = batch.position.clone();
                    let committed = match waited {
                        Ok(()) => committer.commit(&wiring, batch).await,
                        Err(e) => Err(C::Error::from(e)),
                    };
                    match committed {
                        Ok(time) => {
                            durable.set(&position);
                            if let Some(time) = time {
                                window.committed(time);
                            }
                        }
                        Err(e) => {
                            tracing::error!(source = %name, error = %e, "source stopped: a batch could not be committed");
                            committer
                                .sources()
                                .update(id, |stats| stats.fail(e.to_string()));
                            break;
                        }
                    }
                }
                Ok(None) => {
                    tracing::info!(source = %name, "source ended");
                    committer.sources().update(id, SourceStats::end);
                    break;
                }
                Err(e) => {
                    tracing::error!(source = %name, error = %e, "source failed");
                    committer
                        .sources()
                        .update(id, |stats| stats.fail(e.to_string()));
                    break;
                }
            }
        }
    });
}

/// Where a source's batches go: its outputs (output 0 is the source itself) and the tables
/// its `error_table` and `late_table` options name.
#[derive(Debug, Clone)]
pub struct SourceWiring {
    /// The source's name, as `source_errors` records it.
    pub name: String,
    /// The relation of each output index.
    pub outputs: Vec<GlobalId>,
    /// The user table that also receives bad records.
    pub error_table: Option<GlobalId>,
    /// The user table that also receives late rows.
    pub late_table: Option<GlobalId>,
    /// Set when this run of the source is stopped: its batches are no longer committed.
    pub stop: Arc<AtomicBool>,
    /// The source's watermark, if it declares one (`WATERMARK FOR`).
    pub event_time: Option<Arc<Mutex<WatermarkTracker>>>,
    /// How long a partition, or a table the source feeds, may send nothing before it stops
    /// holding the source's watermark back.
    pub idle_timeout: Duration,
}
