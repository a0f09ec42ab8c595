//! Committing writes: the sequencer that orders them, and making them durable and visible at
//! one new timestamp. Commits share fsyncs: see [`crate::in_flight`].

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use repr::{consolidate, ChangeBatch, Diff, GlobalId, Row, Timestamp};
use storage::WalRecord;
use tokio::sync::{MutexGuard, OwnedMutexGuard};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::in_flight::TableChanges;
use crate::session::{PendingWrites, Session, Transaction};
use crate::timeouts;
use crate::timestamps::ReadHold;
use crate::write_conflicts::ReadSet;

impl Coordinator {
    /// Starts a write statement: in a block, it reads the last committed time with the
    /// block's writes laid over it; otherwise it reads every commit ordered so far (the
    /// visible time with the commits in flight laid over it), holding the sequencer from
    /// now on or not, as `attempt` says.
    pub(crate) async fn begin_write(
        &self,
        session: &Session,
        attempt: WriteAttempt,
    ) -> Result<(WriteAccess, ReadHold, WriteSnapshot), CoordError> {
        if let Transaction::Block(block) = &session.transaction {
            let hold = self.holds.hold_read_time(&self.oracle);
            let snapshot = WriteSnapshot {
                read_time: hold.time(),
                overlay: block.writes.clone(),
                reads: None,
            };
            return Ok((WriteAccess::Block, hold, snapshot));
        }
        let sequencer = match attempt {
            WriteAttempt::Sequenced => {
                let sequencer = self.lock_sequencer_owned().await?;
                // What it reads may include views and sources, which only see a commit once
                // it is visible: it waits for every commit ordered before it.
                self.in_flight.drain().await;
                Some(sequencer)
            }
            WriteAttempt::Optimistic => None,
        };
        let in_flight = self
            .in_flight
            .overlay_with(|| self.holds.hold_read_time(&self.oracle));
        let hold = in_flight.read;
        let (access, reads) = match sequencer {
            Some(sequencer) => (WriteAccess::Sequenced(sequencer), None),
            None => {
                let reads = Arc::new(ReadSet::default());
                let through = in_flight.latest.unwrap_or(0).max(hold.time());
                let access = WriteAccess::Optimistic {
                    through,
                    reads: reads.clone(),
                };
                (access, Some(reads))
            }
        };
        let snapshot = WriteSnapshot {
            read_time: hold.time(),
            overlay: PendingWrites {
                tables: in_flight.tables,
            },
            reads,
        };
        Ok((access, hold, snapshot))
    }

    /// Takes the sequencer once no commit is in flight: for DDL, checkpoints and whatever
    /// else needs every ordered commit visible. A statement waits for it at most its
    /// `lock_timeout` (55P03, see [`timeouts::waiting_for_lock`]).
    pub(crate) async fn lock_sequencer(&self) -> Result<MutexGuard<'_, ()>, CoordError> {
        let sequencer = timeouts::waiting_for_lock(self.sequencer.lock()).await?;
        self.in_flight.drain().await;
        Ok(sequencer)
    }

    /// [`Self::lock_sequencer`] for work that must finish once begun (undoing or making
    /// final a block's definitions, checkpoints): it waits as long as it takes.
    pub(crate) async fn lock_sequencer_to_finish(&self) -> MutexGuard<'_, ()> {
        let sequencer = self.sequencer.lock().await;
        self.in_flight.drain().await;
        sequencer
    }

    /// The sequencer, owned, for a commit: waited for at most the statement's
    /// `lock_timeout`.
    pub(crate) async fn lock_sequencer_owned(&self) -> Result<OwnedMutexGuard<()>, CoordError> {
        timeouts::waiting_for_lock(self.sequencer.clone().lock_owned()).await
    }

    /// Commits on a task of its own, so that a client that cancels its statement cannot stop
    /// a commit halfway (logged but not applied). The task holds `sequencer` until the commit
    /// is ordered, then lets later commits share its fsync.
    pub(crate) async fn commit_detached(
        &self,
        writes: PendingWrites,
        check: ReadCheck,
        sequencer: OwnedMutexGuard<()>,
    ) -> Result<Option<Timestamp>, CoordError> {
        let this = self.arc()?;
        tokio::spawn(async move {
            let staged = this.stage_writes(writes, &check).await;
            drop(sequencer);
            match staged? {
                Some(staged) => this.finish_commit(staged).await.map(Some),
                None => Ok(None),
            }
        })
        .await
        .map_err(|e| CoordError::Internal(format!("commit task failed: {e}")))?
    }

    /// Commits `writes` to `table`, read as `snapshot` says, now (outside a block) or adds
    /// them to the open block.
    pub(crate) async fn apply_writes(
        &self,
        session: &mut Session,
        table: GlobalId,
        writes: Vec<(Row, Diff)>,
        snapshot: &WriteSnapshot,
        access: WriteAccess,
    ) -> Result<(), CoordError> {
        let mut pending = PendingWrites::default();
        pending.tables.insert(table, writes);
        let (sequencer, check) = match access {
            WriteAccess::Block => {
                let Transaction::Block(block) = &mut session.transaction else {
                    return Err(CoordError::Internal("a block's write outside it".into()));
                };
                block.reads.entry(table).or_insert(snapshot.read_time);
                for (table, rows) in pending.tables {
                    block.writes.tables.entry(table).or_default().extend(rows);
                }
                return Ok(());
            }
            // Holding the sequencer since its read, it read every commit ordered before it:
            // nothing can have changed under it.
            WriteAccess::Sequenced(sequencer) => (sequencer, ReadCheck::Nothing),
            WriteAccess::Optimistic { through, reads } => (
                self.lock_sequencer_owned().await?,
                ReadCheck::Since { through, reads },
            ),
        };
        self.commit_detached(pending, check, sequencer)
            .await
            .map(|_| ())
    }

    /// Orders `writes` at a new timestamp and queues them for the log (`None` if they
    /// change nothing), after checking that nothing they were computed from changed since
    /// it was read. The caller holds the sequencer.
    async fn stage_writes(
        &self,
        writes: PendingWrites,
        check: &ReadCheck,
    ) -> Result<Option<StagedCommit>, CoordError> {
        self.check_reads(&writes, check)?;
        let mut commit = CommitBatch::default();
        let mut overlay: TableChanges = Vec::new();
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
            let diffs: Vec<Diff> = rows.iter().map(|(_, d)| *d).collect();
            self.observe_event_time(&mut commit, table, &codecs.name, (&batch, &diffs), None)?;
            commit.arranged.push(ArrangedChange {
                id: table,
                diffs,
                pairs: codecs.arrangement_pairs(&rows)?,
                rows: batch,
            });
            overlay.push((table, Arc::from(rows)));
        }
        if commit.is_empty() {
            return Ok(None);
        }
        self.stage_commit(commit, overlay).await.map(Some)
    }

    /// Checks that nothing `writes` were computed from changed since it was read. The caller
    /// holds the sequencer.
    fn check_reads(&self, writes: &PendingWrites, check: &ReadCheck) -> Result<(), CoordError> {
        match check {
            ReadCheck::Nothing => Ok(()),
            ReadCheck::TablesSince(reads) => {
                let last_write = self.last_write.lock().unwrap_or_else(|p| p.into_inner());
                let stale = reads.iter().find(|(table, read_time)| {
                    last_write
                        .get(table)
                        .is_some_and(|written| written > read_time)
                });
                match stale {
                    Some((table, _)) => {
                        let name = crate::catalog::read(&self.catalog)
                            .get(*table)
                            .map(|i| i.name.clone())
                            .unwrap_or_default();
                        Err(CoordError::SerializationFailure(name))
                    }
                    None => Ok(()),
                }
            }
            ReadCheck::Since { through, reads } => {
                // Only tables record their writes; a table dropped meanwhile is reported
                // by the statement run again.
                let codecs = self.table_codecs.read().unwrap_or_else(|p| p.into_inner());
                let checkable = !reads.is_untracked()
                    && reads
                        .tables()
                        .iter()
                        .chain(writes.tables.keys())
                        .all(|table| codecs.contains_key(table));
                drop(codecs);
                if !checkable || self.recent_writes.changed_since(*through, reads) {
                    return Err(CoordError::WriteConflict { checkable });
                }
                Ok(())
            }
        }
    }

    /// Makes `commit` durable and visible at a new timestamp. `sequencer` is held until
    /// the commit is ordered; then later commits may be ordered while it waits for the disk.
    /// The commit finishes on a task of its own: a caller that goes away (a webhook request
    /// whose client hung up) cannot leave it in flight for ever, holding up every commit
    /// ordered after it.
    pub(crate) async fn commit_changes(
        &self,
        commit: CommitBatch,
        sequencer: OwnedMutexGuard<()>,
    ) -> Result<Timestamp, CoordError> {
        let this = self.arc()?;
        tokio::spawn(async move {
            let staged = this.stage_commit(commit, Vec::new()).await;
            drop(sequencer);
            this.finish_commit(staged?).await
        })
        .await
        .map_err(|e| CoordError::Internal(format!("commit task failed: {e}")))?
    }

    /// Orders `commit` at a new timestamp and queues it for the disk: a source batch of a
    /// stream as one frame of the stream's log (its rows, its position, its bad records),
    /// anything else as one WAL record (the arranged changes and the sources' positions).
    /// Either is the commit point of all of it. `overlay` is the commit's table changes as
    /// later writers read them until it is visible. The caller holds the sequencer. Nothing
    /// is awaited between queueing the record and registering the commit, so a caller that
    /// goes away cannot leave one without the other.
    async fn stage_commit(
        &self,
        commit: CommitBatch,
        overlay: TableChanges,
    ) -> Result<StagedCommit, CoordError> {
        if let Some(stream) = commit
            .stream
            .as_ref()
            .filter(|_| commit.progress.is_empty())
        {
            // A stream's frame commits itself only with the position it was read up to.
            return Err(CoordError::Internal(format!(
                "a commit in stream {}'s log without a source position",
                stream.id
            )));
        }
        let allocation = self.oracle.allocate();
        if let Some(high_water) = allocation.persist_high_water {
            self.durable.advance_timestamp_high_water(high_water)?;
        }
        let time = allocation.time;
        let (changes, arranged): (Vec<_>, Vec<_>) = commit
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
        let logged_rows: usize = changes.iter().map(|(_, c)| c.diffs.len()).sum();
        let mut record = WalRecord {
            progress: commit.progress.clone(),
            stream_ends: Vec::new(),
            watermarks: commit.watermarks.clone(),
            time,
            changes,
        };
        let (durable, streamed): (DurableCommit, _) = match commit.stream {
            None => {
                let logged = self.wal.append(record);
                (Box::pin(async move { Ok(logged.await?) }), None)
            }
            Some(StreamBatch { id, rows }) => {
                let updates = match rows {
                    Some(rows) => {
                        let batch = ChangeBatch {
                            time,
                            diffs: vec![1; rows.rows.num_rows()],
                            rows: rows.rows,
                        };
                        record.changes.insert(0, (id, batch));
                        rows.updates
                    }
                    None => Vec::new(),
                };
                let written = self.streams.write(id, record).await?;
                let streamed = StreamedCommit {
                    id,
                    updates,
                    end: written.append.end,
                };
                (
                    Box::pin(async move { Ok(written.durable().await?) }),
                    Some(streamed),
                )
            }
        };
        // Recorded once the commit is queued: a write that failed changed nothing.
        {
            let mut last_write = self.last_write.lock().unwrap_or_else(|p| p.into_inner());
            for (id, pairs) in &arranged {
                last_write.insert(*id, time);
                let keys = pairs.iter().map(|((key, _), _)| key);
                self.recent_writes.record(time, *id, keys);
            }
        }
        let streamed_rows = streamed.as_ref().map_or(0, |s| s.updates.len());
        self.in_flight.register(time, overlay);
        Ok(StagedCommit {
            time,
            durable,
            visible: CommitEffects {
                arranged,
                streamed,
                progress: commit.progress,
                watermarks: commit.watermarks,
                // A stream's rows count too: a checkpoint records how far each stream log
                // is committed, which bounds what recovery scans.
                logged_rows: (logged_rows + streamed_rows).max(1) as u64,
            },
        })
    }

    /// Waits until `staged` is durable (sharing the fsync with whatever was queued with
    /// it), then until it and every commit ordered before it are visible.
    async fn finish_commit(&self, staged: StagedCommit) -> Result<Timestamp, CoordError> {
        let StagedCommit {
            time,
            durable,
            visible,
        } = staged;
        let logged = durable.await;
        let effects = logged.is_ok().then_some(visible);
        self.in_flight.settle(time, effects, |time, effects| {
            self.make_visible(time, effects)
        });
        self.in_flight.wait_settled(time).await;
        logged?;
        Ok(time)
    }

    /// Hands the durable commit at `time` to compute and makes it the read time. Called in
    /// time order.
    fn make_visible(&self, time: Timestamp, effects: CommitEffects) {
        for (id, pairs) in effects.arranged {
            self.compute.append(id, time, pairs);
        }
        if let Some(streamed) = effects.streamed {
            if !streamed.updates.is_empty() {
                self.compute
                    .append_stream(streamed.id, time, streamed.updates);
            }
            self.streams.mark_visible(streamed.id, streamed.end);
        }
        for (source, position) in effects.progress {
            self.sources.set_position(source, position);
        }
        for (relation, watermark) in effects.watermarks {
            if !self.table_watermarks.set_visible(relation, watermark) {
                self.sources.set_watermark(relation, watermark);
            }
            self.compute.advance_watermark(relation, time, watermark);
        }
        self.compute.advance_inputs(time + 1);
        self.oracle.mark_committed(time);
        self.allow_compaction_after(time);
        self.note_logged_rows(effects.logged_rows);
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
        let _sequencer = self.lock_sequencer_to_finish().await;
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

/// How to run a write statement that commits by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteAttempt {
    /// Read without the sequencer; checked when it commits.
    Optimistic,
    /// Hold the sequencer from the read on.
    Sequenced,
}

/// How a write statement stands to the commits ordered while it runs.
pub(crate) enum WriteAccess {
    /// In a transaction block: the block's reads are checked when it commits.
    Block,
    /// Holding the sequencer from its read on: no commit comes in between.
    Sequenced(OwnedMutexGuard<()>),
    /// Reading, without the sequencer, a snapshot of every commit through `through`:
    /// what it `reads` is checked when it commits.
    Optimistic {
        through: Timestamp,
        reads: Arc<ReadSet>,
    },
}

/// What a write statement reads: a time, the changes to lay over it, and (for an
/// optimistic write) where its reads are recorded.
pub(crate) struct WriteSnapshot {
    pub read_time: Timestamp,
    pub overlay: PendingWrites,
    pub reads: Option<Arc<ReadSet>>,
}

/// What a commit must check, under the sequencer, before it is ordered.
pub(crate) enum ReadCheck {
    /// Nothing: it read holding the sequencer.
    Nothing,
    /// A block's tables, each read at a time: none written since.
    TablesSince(BTreeMap<GlobalId, Timestamp>),
    /// Nothing in `reads` written by a commit after `through`.
    Since {
        through: Timestamp,
        reads: Arc<ReadSet>,
    },
}

/// What resolves once a commit is durable (its WAL record or its stream log frame synced).
type DurableCommit = Pin<Box<dyn Future<Output = Result<(), CoordError>> + Send>>;

/// A commit ordered and queued for the disk, not yet known to be durable.
struct StagedCommit {
    time: Timestamp,
    durable: DurableCommit,
    /// What making it visible takes.
    visible: CommitEffects,
}

/// What a durable commit changes: in compute, and the positions and lengths reads and
/// checkpoints see.
pub(crate) struct CommitEffects {
    arranged: Vec<(GlobalId, Vec<compute::KeyedUpdate>)>,
    streamed: Option<StreamedCommit>,
    /// Where each source that contributed resumes after the commit.
    progress: Vec<(GlobalId, String)>,
    /// The watermarks the commit advanced.
    watermarks: Vec<(GlobalId, i64)>,
    logged_rows: u64,
}

/// A commit made in a stream's log.
struct StreamedCommit {
    id: GlobalId,
    /// The rows it inserted into the stream (none for a batch of bad records only).
    updates: Vec<(Row, Diff)>,
    /// The stream log's length through the commit's frame.
    end: u64,
}

/// What one commit makes durable and visible at one new timestamp.
#[derive(Default)]
pub(crate) struct CommitBatch {
    /// Changes to arranged collections (tables, keyed sources, system relations).
    pub arranged: Vec<ArrangedChange>,
    /// The stream (an append-only source) whose log this commit is made in, instead of the
    /// WAL: a batch of that source.
    pub stream: Option<StreamBatch>,
    /// Where each source that contributed resumes after this commit.
    pub progress: Vec<(GlobalId, String)>,
    /// The sources and tables whose event-time watermark this commit advances, and to
    /// where.
    pub watermarks: Vec<(GlobalId, i64)>,
}

impl CommitBatch {
    /// Whether there is nothing to commit.
    pub fn is_empty(&self) -> bool {
        self.arranged.is_empty() && self.stream.is_none() && self.progress.is_empty()
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

/// A source batch of a stream, committed in the stream's log.
pub(crate) struct StreamBatch {
    pub id: GlobalId,
    /// The rows it inserts (none when the batch had only bad records or a new position).
    pub rows: Option<StreamedRows>,
}

/// Rows inserted into a stream: written to its stream log, fed to the dataflows reading it.
pub(crate) struct StreamedRows {
    /// The rows, for the stream log.
    pub rows: RecordBatch,
    /// The same rows encoded, each with its multiplicity.
    pub updates: Vec<(Row, Diff)>,
}
