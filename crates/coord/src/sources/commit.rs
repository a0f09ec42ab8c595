//! Committing a source's batches: the coordinator's side of ingest (see
//! [`pipelines::SourceCommitter`]).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use connectors::{Change, SourceBatch};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use pipelines::{bad_record_rows, SourceCommitter, SourceRegistry, SourceWiring};
use repr::{Diff, GlobalId, ItemKind, Row, Timestamp};
use system_catalog::{LATE_EVENTS, SOURCE_ERRORS};

use super::event_time::observe_batch;
use crate::commit::{ArrangedChange, CommitBatch, StreamBatch, StreamedRows};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::table_rows::TableCodecs;

impl SourceCommitter for Coordinator {
    type Error = CoordError;

    fn commit(
        &self,
        wiring: &SourceWiring,
        batch: SourceBatch,
    ) -> impl Future<Output = Result<Option<Timestamp>, CoordError>> + Send {
        self.commit_source_batch(wiring, batch)
    }

    fn arranged_readers(&self, source: GlobalId) -> Vec<GlobalId> {
        let catalog = crate::catalog::read(&self.catalog);
        catalog
            .dependents(source)
            .into_iter()
            .filter(|id| {
                catalog.get(*id).is_some_and(|item| {
                    matches!(item.kind, ItemKind::MaterializedView | ItemKind::Index)
                })
            })
            .collect()
    }

    fn frontiers(&self) -> &compute::Frontiers {
        self.compute.frontiers()
    }

    fn sources(&self) -> &SourceRegistry {
        &self.sources
    }
}

impl Coordinator {
    /// Makes one batch of the source wired as `wiring` durable with its position, then
    /// visible: its changes, its bad records (in `source_errors` and the error table), its
    /// late rows (in `late_events`), its position and its watermark in one log record, at
    /// one timestamp, which it returns (`None` if there was nothing to commit).
    pub(crate) async fn commit_source_batch(
        &self,
        wiring: &SourceWiring,
        batch: SourceBatch,
    ) -> Result<Option<Timestamp>, CoordError> {
        let id = wiring.outputs[0];
        let sequencer = self.sequencer.clone().lock_owned().await;
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
                .chain(&wiring.late_table)
                .chain([&SOURCE_ERRORS, &LATE_EVENTS]);
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
        let (late, watermark) = match &wiring.event_time {
            Some(tracker) => observe_batch(&wiring.name, tracker, &batch)?,
            None => (None, None),
        };
        let snapshot = batch.snapshot;
        if batch.changes.is_empty()
            && batch.errors.is_empty()
            && unchanged_position
            && watermark.is_none()
        {
            // Nothing to commit, but a snapshot may have ended.
            if let Some(progress) = snapshot {
                self.sources
                    .update(id, |stats| stats.record_snapshot(progress));
            }
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
            watermarks: watermark.map(|w| (id, w)).into_iter().collect(),
            // A stream's batches, rows or not, commit in its log: its position is there.
            stream: self
                .streams
                .contains(id)
                .then_some(StreamBatch { id, rows: None }),
            ..CommitBatch::default()
        };
        let mut table_late_rows = 0;
        for (output, output_changes) in by_output {
            let table = *wiring.outputs.get(output).ok_or_else(|| {
                CoordError::Internal(format!("source {id} wrote to unknown output {output}"))
            })?;
            let Some(codecs) = codecs.get(&table) else {
                continue;
            };
            // The tables a source feeds (outputs after its own) may declare watermarks.
            let observe =
                |commit: &mut CommitBatch, rows: &RecordBatch, diffs: &[Diff]| match output {
                    0 => Ok(0),
                    _ => self.observe_event_time(
                        commit,
                        table,
                        &codecs.name,
                        (rows, diffs),
                        wiring.late_table,
                    ),
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
                table_late_rows += observe(&mut commit, &rows, &vec![1; rows.num_rows()])?;
                self.add_insert(&mut commit, table, codecs, rows)?;
                continue;
            }
            let updates = self.source_updates(table, codecs, output_changes).await?;
            if updates.is_empty() {
                continue;
            }
            let decoded = codecs.decode(&updates)?;
            bytes += decoded.get_array_memory_size() as u64;
            let diffs: Vec<Diff> = updates.iter().map(|(_, d)| *d).collect();
            table_late_rows += observe(&mut commit, &decoded, &diffs)?;
            commit.arranged.push(ArrangedChange {
                id: table,
                diffs,
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
        let late_rows = late.as_ref().map_or(0, |late| late.num_rows() as u64) + table_late_rows;
        // A source that feeds tables (CDC) has the least of their watermarks.
        let combined = self
            .table_watermarks
            .source_watermark(&wiring.outputs[1..], wiring.idle_timeout, Instant::now())
            .filter(|combined| self.sources.watermark(id).is_none_or(|w| *combined > w));
        commit.watermarks.extend(combined.map(|w| (id, w)));
        if let Some(late) = late {
            for target in std::iter::once(LATE_EVENTS).chain(wiring.late_table) {
                if let Some(codecs) = codecs.get(&target) {
                    self.add_insert(&mut commit, target, codecs, late.clone())?;
                }
            }
        }
        let time = self.commit_changes(commit, sequencer).await?;
        self.sources.update(id, |stats| {
            stats.record_batch(rows, bytes, errors, late_rows, batch.lag);
            if let Some(progress) = snapshot {
                stats.record_snapshot(progress);
            }
        });
        Ok(Some(time))
    }
}

impl Coordinator {
    /// Adds the insertion of `rows` into `table` (a stream, or an arranged relation) to
    /// `commit`.
    pub(crate) fn add_insert(
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
            let Some(StreamBatch {
                id,
                rows: slot @ None,
            }) = &mut commit.stream
            else {
                return Err(CoordError::Internal(format!(
                    "rows for stream {table} twice, or in a commit not made in its log"
                )));
            };
            if *id != table {
                return Err(CoordError::Internal(format!(
                    "rows for stream {table} in a commit made in stream {id}'s log"
                )));
            }
            *slot = Some(StreamedRows { rows, updates });
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
