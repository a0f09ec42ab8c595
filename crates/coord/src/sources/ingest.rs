//! Running a source: its reader on a thread of its own, its batches committed in order.
//!
//! The reader thread hands batches to the ingest task through a bounded channel, so a
//! source whose batches cannot be committed as fast as it reads them waits instead of
//! buffering without bound (backpressure); the ingest task in turn waits for the dataflows
//! reading the source (`flow_control`). Each batch is committed like a transaction: one
//! new timestamp, the rows and the connector's position after them in one log record (an
//! append-only source's rows go to its stream log first, and the record holds the log's new
//! length), then the rows go to compute.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use connectors::{Change, ConnectorError, DurablePosition, SourceBatch, SourceReader};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use repr::{Diff, GlobalId, Row, Timestamp};
use system_catalog::SOURCE_ERRORS;
use tokio::sync::mpsc;

use super::errors::bad_record_rows;
use super::flow_control::CommitWindow;
use crate::commit::{ArrangedChange, CommitBatch, StreamedRows};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::table_rows::TableCodecs;

/// Batches read ahead of the one being committed.
const READ_AHEAD: usize = 4;

/// Rows past which batches waiting to be committed are not merged into one commit.
const MERGE_ROWS: usize = 256 * 1024;

/// Starts reading `reader` on a thread and committing its batches on a task, until `stop` is
/// set, the source ends or fails, or the coordinator goes away.
pub(super) fn spawn(
    coordinator: Weak<Coordinator>,
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
            let Some(coordinator) = coordinator.upgrade() else {
                break;
            };
            match next {
                Ok(Some(mut batch)) => {
                    // Batches read while the last commit ran are committed with this one: a
                    // source that delivers small batches faster than commits (an fsync
                    // each) can happen then commits more rows per fsync, not fewer.
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
                    let committed = match window.wait_for_readers(&coordinator, id).await {
                        Ok(()) => coordinator.commit_source_batch(&wiring, batch).await,
                        Err(e) => Err(e),
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
                            coordinator.sources.update(id, |stats| {
                                stats.status = "failed";
                                stats.last_error = Some(e.to_string());
                            });
                            break;
                        }
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

/// Where a source's batches go: its outputs (output 0 is the source itself) and the table
/// its `error_table` option names.
#[derive(Debug, Clone)]
pub(crate) struct SourceWiring {
    /// The source's name, as `source_errors` records it.
    pub name: String,
    /// The relation of each output index.
    pub outputs: Vec<GlobalId>,
    /// The user table that also receives bad records.
    pub error_table: Option<GlobalId>,
    /// Set when this run of the source is stopped: its batches are no longer committed.
    pub stop: Arc<AtomicBool>,
}

impl Coordinator {
    /// Makes one batch of the source wired as `wiring` durable with its position, then
    /// visible: its changes, its bad records (in `source_errors` and the error table) and
    /// its position in one log record, at one timestamp, which it returns (`None` if there
    /// was nothing to commit).
    pub(crate) async fn commit_source_batch(
        &self,
        wiring: &SourceWiring,
        batch: SourceBatch,
    ) -> Result<Option<Timestamp>, CoordError> {
        let id = wiring.outputs[0];
        let _sequencer = self.sequencer.clone().lock_owned().await;
        if wiring.stop.load(Ordering::Acquire) {
            // Stopped (dropped, or restarted with new outputs) while the batch was on its
            // way: the next run reads it again from the last durable position.
            return Ok(None);
        }
        // The codecs of the relations this batch may write, and no others: this runs for
        // every batch.
        let codecs: HashMap<GlobalId, Arc<TableCodecs>> = {
            let all = self.table_codecs.read().unwrap_or_else(|p| p.into_inner());
            let targets = wiring
                .outputs
                .iter()
                .chain(&wiring.error_table)
                .chain(std::iter::once(&SOURCE_ERRORS));
            targets
                .filter_map(|target| Some((*target, all.get(target)?.clone())))
                .collect()
        };
        if !codecs.contains_key(&id) {
            return Ok(None);
        }
        let unchanged_position = self
            .sources
            .position(id)
            .is_some_and(|p| p == batch.position);
        if batch.changes.is_empty() && batch.errors.is_empty() && unchanged_position {
            return Ok(None);
        }
        let rows = batch.row_count() as u64;
        let mut bytes = 0;
        let mut by_output: BTreeMap<usize, Vec<Change>> = BTreeMap::new();
        for change in batch.changes {
            by_output
                .entry(change.output)
                .or_default()
                .push(change.change);
        }
        let mut commit = CommitBatch {
            progress: vec![(id, batch.position.clone())],
            ..CommitBatch::default()
        };
        for (output, output_changes) in by_output {
            let table = *wiring.outputs.get(output).ok_or_else(|| {
                CoordError::Internal(format!("source {id} wrote to unknown output {output}"))
            })?;
            let Some(codecs) = codecs.get(&table) else {
                continue;
            };
            let append_only = codecs.key.is_none()
                && output_changes
                    .iter()
                    .all(|c| matches!(c, Change::Insert(_)));
            if self.streams.contains(table) && !append_only {
                return Err(CoordError::Internal(format!(
                    "source {id} updated or deleted rows of the append-only stream {table}"
                )));
            }
            if append_only {
                let inserted: Vec<RecordBatch> = output_changes
                    .into_iter()
                    .filter_map(|change| match change {
                        Change::Insert(rows) if rows.num_rows() > 0 => Some(rows),
                        _ => None,
                    })
                    .collect();
                let Some(first) = inserted.first() else {
                    continue;
                };
                let rows = concat_batches(&first.schema(), &inserted)
                    .map_err(|e| CoordError::Internal(e.to_string()))?;
                bytes += rows.get_array_memory_size() as u64;
                self.add_insert(&mut commit, table, codecs, rows)?;
                continue;
            }
            let updates = self.source_updates(table, codecs, output_changes).await?;
            if updates.is_empty() {
                continue;
            }
            let decoded = codecs.decode(&updates)?;
            bytes += decoded.get_array_memory_size() as u64;
            commit.arranged.push(ArrangedChange {
                id: table,
                diffs: updates.iter().map(|(_, d)| *d).collect(),
                pairs: codecs.arrangement_pairs(&updates)?,
                rows: decoded,
            });
        }
        let errors = batch.errors.len() as u64;
        if !batch.errors.is_empty() {
            let bad = bad_record_rows(&wiring.name, &batch.errors)?;
            let targets = std::iter::once(SOURCE_ERRORS).chain(wiring.error_table);
            for target in targets {
                if let Some(codecs) = codecs.get(&target) {
                    self.add_insert(&mut commit, target, codecs, bad.clone())?;
                }
            }
        }
        let time = self.commit_changes(commit).await?;
        self.sources.update(id, |stats| {
            stats.record_batch(rows, bytes, errors, batch.position, batch.lag)
        });
        Ok(Some(time))
    }
}

impl Coordinator {
    /// Adds the insertion of `rows` into `table` (a stream, or an arranged relation) to
    /// `commit`.
    fn add_insert(
        &self,
        commit: &mut CommitBatch,
        table: GlobalId,
        codecs: &TableCodecs,
        rows: RecordBatch,
    ) -> Result<(), CoordError> {
        if rows.num_rows() == 0 {
            return Ok(());
        }
        let updates: Vec<(Row, Diff)> = codecs
            .rows
            .encode(&rows)
            .map_err(|e| CoordError::Internal(e.to_string()))?
            .into_iter()
            .map(|row| (row, 1))
            .collect();
        if self.streams.contains(table) {
            commit.streamed.push(StreamedRows {
                id: table,
                rows,
                updates,
            });
            return Ok(());
        }
        commit.arranged.push(ArrangedChange {
            id: table,
            diffs: vec![1; rows.num_rows()],
            pairs: codecs.arrangement_pairs(&updates)?,
            rows,
        });
        Ok(())
    }
}
