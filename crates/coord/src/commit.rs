//! Committing writes: the sequencer that orders them, and making them durable and visible at
//! one new timestamp.

use std::collections::BTreeMap;

use datafusion::arrow::array::RecordBatch;
use repr::{ChangeBatch, Diff, GlobalId, Row, Timestamp};
use storage::WalRecord;
use tokio::sync::OwnedMutexGuard;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::read::consolidate;
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
        let mut changes = Vec::new();
        let mut appends = Vec::new();
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
            changes.push((
                table,
                batch,
                rows.iter().map(|(_, d)| *d).collect::<Vec<_>>(),
            ));
            appends.push((table, codecs.arrangement_pairs(&rows)?));
        }
        if changes.is_empty() {
            return Ok(None);
        }
        self.commit_changes(changes, appends, Vec::new())
            .await
            .map(Some)
    }

    /// Logs `changes` (each a collection's rows and diffs) and the sources' `progress` at a
    /// new timestamp, then applies `appends` (the same changes as arrangement updates) to
    /// compute at that time. The caller holds the sequencer.
    pub(crate) async fn commit_changes(
        &self,
        changes: Vec<(GlobalId, RecordBatch, Vec<Diff>)>,
        appends: Vec<(GlobalId, Vec<compute::KeyedUpdate>)>,
        progress: Vec<(GlobalId, String)>,
    ) -> Result<Timestamp, CoordError> {
        let allocation = self.oracle.allocate();
        if let Some(high_water) = allocation.persist_high_water {
            self.durable.advance_timestamp_high_water(high_water)?;
        }
        let time = allocation.time;
        let record = WalRecord {
            progress,
            time,
            changes: changes
                .into_iter()
                .map(|(table, rows, diffs)| (table, ChangeBatch { time, rows, diffs }))
                .collect(),
        };
        let logged_rows: usize = record.changes.iter().map(|(_, c)| c.diffs.len()).sum();
        self.wal.append(record).await?;
        for (table, pairs) in appends {
            self.compute.append(table, time, pairs);
            self.last_write
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(table, time);
        }
        self.compute.advance_inputs(time + 1);
        self.oracle.mark_committed(time);
        let since = self.holds.earliest().unwrap_or(time).min(time);
        self.compute.allow_compaction(since);
        self.note_logged_rows(logged_rows as u64);
        Ok(time)
    }
}
