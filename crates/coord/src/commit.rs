//! Committing writes: the sequencer that orders them, and making them durable and visible at
//! one new timestamp.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use repr::{consolidate, ChangeBatch, Diff, GlobalId, Row, Timestamp};
use storage::WalRecord;
use tokio::sync::OwnedMutexGuard;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::session::{PendingWrites, Session, Transaction};

impl Coordinator {
    /// Takes the sequencer for a statement that commits by itself (outside a block).
    pub(crate) async fn lock_for_autocommit(
        &self,
        session: &Session,
    ) -> Option<OwnedMutexGuard<()>> {
        match session.transaction {
            Transaction::Block(_) => None,
            _ => Some(self.sequencer.clone().lock_owned().await),
        }
    }

    /// Commits on a task of its own, holding `sequencer` until it is done: a client that
    /// cancels its statement cannot stop a commit halfway (logged but not applied).
    pub(crate) async fn commit_detached(
        &self,
        writes: PendingWrites,
        reads: BTreeMap<GlobalId, Timestamp>,
        sequencer: OwnedMutexGuard<()>,
    ) -> Result<Option<Timestamp>, CoordError> {
        let this = self.arc()?;
        tokio::spawn(async move {
            let _sequencer = sequencer;
            this.commit_writes(writes, &reads).await
        })
        .await
        .map_err(|e| CoordError::Internal(format!("commit task failed: {e}")))?
    }

    /// Commits `writes` now (autocommit, with the sequencer taken by
    /// [`Self::lock_for_autocommit`]) or adds them to the open block.
    pub(crate) async fn apply_writes(
        &self,
        session: &mut Session,
        table: GlobalId,
        writes: Vec<(Row, Diff)>,
        read_time: Timestamp,
        sequencer: Option<OwnedMutexGuard<()>>,
    ) -> Result<(), CoordError> {
        match &mut session.transaction {
            Transaction::Block(block) => {
                block.reads.entry(table).or_insert(read_time);
                block.writes.tables.entry(table).or_default().extend(writes);
                Ok(())
            }
            _ => {
                let sequencer = match sequencer {
                    Some(sequencer) => sequencer,
                    None => self.sequencer.clone().lock_owned().await,
                };
                let mut pending = PendingWrites::default();
                pending.tables.insert(table, writes);
                let reads = BTreeMap::from([(table, read_time)]);
                self.commit_detached(pending, reads, sequencer)
                    .await
                    .map(|_| ())
            }
        }
    }

    /// Makes `writes` durable at a new timestamp and visible. The caller holds the sequencer.
    pub(crate) async fn commit_writes(
        &self,
        writes: PendingWrites,
        reads: &BTreeMap<GlobalId, Timestamp>,
    ) -> Result<Option<Timestamp>, CoordError> {
        {
            let last_write = self.last_write.lock().unwrap_or_else(|p| p.into_inner());
            for (table, read_time) in reads {
                if last_write
                    .get(table)
                    .is_some_and(|written| written > read_time)
                {
                    let name = self
                        .catalog
                        .read()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(*table)
                        .map(|i| i.name.clone())
                        .unwrap_or_default();
                    return Err(CoordError::SerializationFailure(name));
                }
            }
        }
        let mut commit = CommitBatch::default();
        for (table, rows) in writes.tables {
            let rows = consolidate(rows);
            if rows.is_empty() {
                continue;
            }
            let codecs = self
                .table_codecs
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(&table)
                .cloned()
                .ok_or_else(|| CoordError::Internal(format!("table {table} was dropped")))?;
            let batch = codecs.decode(&rows)?;
            commit.arranged.push(ArrangedChange {
                id: table,
                diffs: rows.iter().map(|(_, d)| *d).collect(),
                pairs: codecs.arrangement_pairs(&rows)?,
                rows: batch,
            });
        }
        if commit.is_empty() {
            return Ok(None);
        }
        self.commit_changes(commit).await.map(Some)
    }

    /// Makes `commit` durable and visible at a new timestamp: streamed rows are appended to
    /// their stream logs, then one WAL record holds the arranged changes, the sources'
    /// positions and the streams' new lengths (the commit point of all of it), then compute
    /// gets every change at that time. The caller holds the sequencer.
    pub(crate) async fn commit_changes(
        &self,
        commit: CommitBatch,
    ) -> Result<Timestamp, CoordError> {
        let allocation = self.oracle.allocate();
        if let Some(high_water) = allocation.persist_high_water {
            self.durable.advance_timestamp_high_water(high_water)?;
        }
        let time = allocation.time;
        let stream_ends = self
            .streams
            .append(
                time,
                commit
                    .streamed
                    .iter()
                    .map(|s| (s.id, s.rows.clone()))
                    .collect(),
            )
            .await?;
        let (changes, applied): (Vec<_>, Vec<_>) = commit
            .arranged
            .into_iter()
            .map(|change| {
                let batch = ChangeBatch {
                    time,
                    rows: change.rows,
                    diffs: change.diffs,
                };
                ((change.id, batch), (change.id, change.pairs))
            })
            .unzip();
        let record = WalRecord {
            progress: commit.progress,
            stream_ends: stream_ends.iter().map(|(id, a)| (*id, a.end)).collect(),
            time,
            changes,
        };
        let logged_rows: usize = record.changes.iter().map(|(_, c)| c.diffs.len()).sum();
        if let Err(e) = self.wal.append(record).await {
            self.streams.undo_appends(&stream_ends);
            return Err(e.into());
        }
        for (id, pairs) in applied {
            self.compute.append(id, time, pairs);
            self.last_write
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, time);
        }
        for streamed in commit.streamed {
            self.compute
                .append_stream(streamed.id, time, streamed.updates);
        }
        self.compute.advance_inputs(time + 1);
        self.oracle.mark_committed(time);
        self.allow_compaction_after(time);
        // A commit that only appended to streams still grows the log by a record.
        self.note_logged_rows(logged_rows.max(1) as u64);
        Ok(time)
    }
}

/// How long the timeline may stand still: after this long without a write, an empty
/// timestamp closes, so subscribers see progress while nothing changes.
const IDLE_TICK: std::time::Duration = std::time::Duration::from_secs(1);

impl Coordinator {
    /// Closes an empty timestamp whenever no write has for [`IDLE_TICK`], until the
    /// coordinator goes away. Nothing is logged: an empty time changes nothing, and times
    /// after a restart are above every time handed out before (the oracle's high-water mark).
    pub(crate) fn spawn_idle_ticks(self: &Arc<Self>) {
        let coordinator = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(IDLE_TICK).await;
                let Some(this) = coordinator.upgrade() else {
                    return;
                };
                if let Err(e) = this.tick_if_idle().await {
                    tracing::warn!(error = %e, "the timeline could not advance");
                }
            }
        });
    }

    async fn tick_if_idle(&self) -> Result<(), CoordError> {
        let idle = |this: &Self| this.oracle.idle_ms() >= IDLE_TICK.as_millis() as Timestamp;
        if !idle(self) {
            return Ok(());
        }
        let _sequencer = self.sequencer.lock().await;
        if !idle(self) {
            return Ok(());
        }
        let allocation = self.oracle.allocate();
        if let Some(high_water) = allocation.persist_high_water {
            self.durable.advance_timestamp_high_water(high_water)?;
        }
        let time = allocation.time;
        self.compute.advance_inputs(time + 1);
        self.oracle.mark_committed(time);
        self.allow_compaction_after(time);
        Ok(())
    }

    /// Lets arrangements compact up to what the read holds and the retained history allow,
    /// after the commit of `time`.
    fn allow_compaction_after(&self, time: Timestamp) {
        let retained = time.saturating_sub(self.retain_history_ms);
        let since = self.holds.earliest().unwrap_or(retained).min(retained);
        self.compute.allow_compaction(since);
    }
}

/// What one commit makes durable and visible at one new timestamp.
#[derive(Default)]
pub(crate) struct CommitBatch {
    /// Changes to arranged collections (tables, keyed sources, system relations).
    pub arranged: Vec<ArrangedChange>,
    /// Rows inserted into streams (append-only sources).
    pub streamed: Vec<StreamedRows>,
    /// Where each source that contributed resumes after this commit.
    pub progress: Vec<(GlobalId, String)>,
}

impl CommitBatch {
    /// Whether there is nothing to commit.
    pub fn is_empty(&self) -> bool {
        self.arranged.is_empty() && self.streamed.is_empty() && self.progress.is_empty()
    }
}

/// A change to an arranged collection: logged in the WAL, applied to its arrangement.
pub(crate) struct ArrangedChange {
    pub id: GlobalId,
    /// The changed rows, for the log.
    pub rows: RecordBatch,
    /// Each row's change in multiplicity.
    pub diffs: Vec<Diff>,
    /// The same changes as the arrangement stores them.
    pub pairs: Vec<compute::KeyedUpdate>,
}

/// Rows inserted into a stream: appended to its stream log, fed to the dataflows reading it.
pub(crate) struct StreamedRows {
    pub id: GlobalId,
    /// The rows, for the stream log.
    pub rows: RecordBatch,
    /// The same rows encoded, each with its multiplicity.
    pub updates: Vec<(Row, Diff)>,
}
