//! Running a source: its reader on a thread of its own, its batches committed in order.
//!
//! The reader thread hands batches to the ingest task through a bounded channel, so a
//! source whose batches cannot be committed as fast as it reads them waits instead of
//! buffering without bound (backpressure). Each batch is committed like a transaction: one
//! new timestamp, the rows and the connector's position after them in one log record, then
//! the rows go to compute.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use connectors::{Change, ConnectorError, SourceBatch, SourceReader};
use repr::{Diff, GlobalId, Row};
use tokio::sync::mpsc;

use crate::coordinator::Coordinator;
use crate::error::CoordError;

/// Batches read ahead of the one being committed.
const READ_AHEAD: usize = 4;

/// Starts reading `reader` on a thread and committing its batches on a task, until `stop` is
/// set, the source ends or fails, or the coordinator goes away.
pub(super) fn spawn(
    coordinator: Weak<Coordinator>,
    id: GlobalId,
    name: String,
    mut reader: Box<dyn SourceReader>,
    stop: Arc<AtomicBool>,
) {
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
        });
    if let Err(e) = spawned {
        tracing::error!(source = %name, error = %e, "could not start the source's reader thread");
        return;
    }
    tokio::spawn(async move {
        tracing::info!(source = %name, "source started");
        while let Some(next) = received.recv().await {
            if stop.load(Ordering::Acquire) {
                break;
            }
            let Some(coordinator) = coordinator.upgrade() else {
                break;
            };
            match next {
                Ok(Some(batch)) => {
                    if let Err(e) = coordinator.commit_source_batch(id, batch).await {
                        tracing::error!(source = %name, error = %e, "source stopped: a batch could not be committed");
                        coordinator.sources.update(id, |stats| {
                            stats.status = "failed";
                            stats.last_error = Some(e.to_string());
                        });
                        break;
                    }
                }
                Ok(None) => {
                    tracing::info!(source = %name, "source ended");
                    coordinator
                        .sources
                        .update(id, |stats| stats.status = "ended");
                    break;
                }
                Err(e) => {
                    tracing::error!(source = %name, error = %e, "source failed");
                    coordinator.sources.update(id, |stats| {
                        stats.status = "failed";
                        stats.last_error = Some(e.to_string());
                    });
                    break;
                }
            }
        }
    });
}

impl Coordinator {
    /// Makes one batch of source `id` durable with its position, then visible.
    pub(crate) async fn commit_source_batch(
        &self,
        id: GlobalId,
        batch: SourceBatch,
    ) -> Result<(), CoordError> {
        let _sequencer = self.sequencer.clone().lock_owned().await;
        let Some(codecs) = self
            .table_codecs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
        else {
            // Dropped while the batch was on its way.
            return Ok(());
        };
        let rows = batch.row_count();
        let mut bytes = 0;
        let mut changes = Vec::new();
        let mut appends = Vec::new();
        for change in batch.changes {
            let Change::Insert(inserted) = change.change else {
                return Err(CoordError::Internal(
                    "a source sent a change other than an insert".into(),
                ));
            };
            if inserted.num_rows() == 0 {
                continue;
            }
            bytes += inserted.get_array_memory_size() as u64;
            let updates: Vec<(Row, Diff)> = codecs
                .rows
                .encode(&inserted)
                .map_err(|e| CoordError::Internal(e.to_string()))?
                .into_iter()
                .map(|row| (row, 1))
                .collect();
            appends.push((id, codecs.arrangement_pairs(&updates)?));
            let count = inserted.num_rows();
            changes.push((id, inserted, vec![1; count]));
        }
        self.commit_changes(changes, appends, vec![(id, batch.position.clone())])
            .await?;
        let errors = batch.errors.len() as u64;
        self.sources.update(id, |stats| {
            stats.record_batch(rows as u64, bytes, errors, batch.position)
        });
        Ok(())
    }
}
