//! The running `postgres-cdc` source: first the snapshot of each output that has none, then
//! the slot's stream, whole transactions per batch.
//!
//! Opening follows the usual way to make a snapshot consistent with a logical stream (as
//! Debezium and PostgreSQL's own table sync do): a slot created with `SNAPSHOT 'export'`
//! gives a consistent point and a snapshot that shows exactly the transactions committed
//! before it; the stream from that slot then carries exactly those committed after. An
//! output added once the slot exists gets its snapshot from a temporary slot's export, and
//! the stream's transactions that committed before that one's consistent point are skipped
//! for it (the rule PostgreSQL's logical decoding itself applies, `SnapBuildXactNeedsSkip`).

use std::collections::VecDeque;
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use pgwire_replication::{Lsn, ReplicationClient, ReplicationEvent};
use tokio::time::Instant;

use super::catalog::{self, SlotState};
use super::changes::ChangeList;
use super::config::CdcConfig;
use super::output::TableOutput;
use super::pgoutput::{self, Message};
use super::position::Position;
use super::session::{self, stream_failed};
use super::snapshot::SnapshotRead;
use crate::runtime::ReaderRuntime;
use crate::{
    BadRecord, ConnectorError, DurablePosition, SnapshotProgress, SourceBatch, SourceContext,
    SourceOptions, SourceReader,
};

/// How long `next_batch` waits for a transaction before returning an empty batch, so that
/// the reader's thread can notice a stop request.
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// A batch takes no more transactions once it has this many rows.
const MAX_BATCH_ROWS: usize = 8192;
/// How long closing waits for the replication session to end cleanly.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// A running `postgres-cdc` source.
pub(crate) struct CdcReader {
    config: CdcConfig,
    /// The schema of every output, the source's own first.
    schemas: Vec<SchemaRef>,
    /// The outputs that read upstream tables.
    outputs: Vec<TableOutput>,
    /// Where the batches so far end.
    position: Position,
    /// The snapshot still being read, if any.
    snapshot: Option<SnapshotRead>,
    stream: ReplicationClient,
    /// The transaction being received.
    transaction: Option<Transaction>,
    durable: DurablePosition,
    runtime: ReaderRuntime,
}

/// An upstream transaction, received up to its commit.
struct Transaction {
    /// The LSN of its commit record.
    commit_lsn: Lsn,
    changes: ChangeList,
    errors: Vec<BadRecord>,
}

/// What opening found and set up upstream.
struct Opened {
    outputs: Vec<TableOutput>,
    position: Position,
    snapshot: Option<SnapshotRead>,
    stream: ReplicationClient,
}

impl CdcReader {
    /// Connects, checks the upstream, sets up the publication and the slot, imports the
    /// snapshot the outputs without one need, and starts the stream.
    pub fn open(options: &SourceOptions, context: SourceContext) -> Result<Self, ConnectorError> {
        if context.format.is_some() || !context.include.is_empty() {
            return Err(ConnectorError::InvalidFormat(
                "a postgres-cdc source takes no FORMAT or INCLUDE".into(),
            ));
        }
        let config = CdcConfig::from_options(options)?;
        options.reject_unknown(super::CONNECTOR)?;
        let resume = context.resume.as_deref().map(Position::parse).transpose()?;
        let runtime = ReaderRuntime::one_worker("postgres-cdc")?;
        let opened = runtime.block_on(set_up(&config, &context, resume))?;
        Ok(Self {
            config,
            schemas: context.outputs.iter().map(|o| o.schema.clone()).collect(),
            outputs: opened.outputs,
            position: opened.position,
            snapshot: opened.snapshot,
            stream: opened.stream,
            transaction: None,
            durable: context.durable,
            runtime,
        })
    }

    /// Tells upstream how far the coordinator has made batches durable, and no further.
    fn acknowledge_durable(&self) {
        if let Some(lsn) = self.durable.get().and_then(|p| Position::durable_lsn(&p)) {
            self.stream.update_applied_lsn(lsn);
        }
    }

    /// The next chunk of the snapshot as a batch; the stream's first batch once it is read.
    fn next_snapshot_batch(&mut self) -> Result<SourceBatch, ConnectorError> {
        let Some(snapshot) = self.snapshot.as_mut() else {
            return self.next_stream_batch();
        };
        let outputs = &self.outputs;
        let chunk = self
            .runtime
            .block_on(snapshot.next_chunk(|i| outputs[i].select()))?;
        let Some(chunk) = chunk else {
            let mut progress = None;
            if let Some(snapshot) = self.snapshot.take() {
                progress = Some(snapshot.progress());
                self.runtime.block_on(snapshot.finish())?;
            }
            let mut batch = self.next_stream_batch()?;
            batch.snapshot = progress;
            return Ok(batch);
        };
        let output = &self.outputs[chunk.output];
        let mut changes = ChangeList::default();
        let mut errors = Vec::new();
        if chunk.is_first {
            changes.truncate(output.index);
        }
        for row in &chunk.rows {
            let texts: Vec<Option<&str>> = row.iter().map(Option::as_deref).collect();
            if let Err(error) = output.snapshot_row(&texts, &mut changes) {
                errors.push(BadRecord {
                    position: snapshot.lsn.to_string(),
                    raw: output.raw_snapshot_text(&texts),
                    error: format!("{}: {error}", output.reference),
                });
            }
        }
        let same_table_pending = self
            .outputs
            .iter()
            .enumerate()
            .any(|(i, o)| o.reference == output.reference && snapshot.is_pending(i));
        if chunk.is_last && !same_table_pending {
            self.position
                .snapshots
                .insert(output.reference.clone(), snapshot.lsn);
        }
        let progress = snapshot.progress();
        let mut batch = self.batch(changes, errors)?;
        batch.snapshot = Some(SnapshotProgress {
            done: false,
            ..progress
        });
        Ok(batch)
    }

    /// The transactions that arrive within [`IDLE_WAIT`] (those already received once one
    /// has), as one batch; an empty batch at the same position if none does.
    fn next_stream_batch(&mut self) -> Result<SourceBatch, ConnectorError> {
        let deadline = Instant::now() + IDLE_WAIT;
        let mut changes = ChangeList::default();
        let mut errors = Vec::new();
        let mut has_committed = false;
        while changes.row_count() < MAX_BATCH_ROWS {
            let wait_until = if has_committed {
                Instant::now()
            } else {
                deadline
            };
            let stream = &mut self.stream;
            let received = self
                .runtime
                .block_on(async { tokio::time::timeout_at(wait_until, stream.recv()).await });
            let event = match received {
                Err(_) => break,
                Ok(Ok(Some(event))) => event,
                Ok(Ok(None)) => {
                    return Err(ConnectorError::Upstream(format!(
                        "the replication stream of slot \"{}\" ended",
                        self.config.slot
                    )))
                }
                Ok(Err(e)) => return Err(stream_failed(&self.config, e)),
            };
            match event {
                ReplicationEvent::Begin { final_lsn, .. } => {
                    self.transaction = Some(Transaction {
                        commit_lsn: final_lsn,
                        changes: ChangeList::default(),
                        errors: Vec::new(),
                    });
                }
                ReplicationEvent::XLogData { data, .. } => self.apply(&data)?,
                ReplicationEvent::Commit { end_lsn, .. } => {
                    let transaction = self.transaction.take();
                    // A transaction the position covers was emitted before a restart.
                    if let Some(transaction) = transaction.filter(|_| end_lsn > self.position.lsn) {
                        changes.append(transaction.changes);
                        errors.extend(transaction.errors);
                        self.position.lsn = end_lsn;
                        has_committed = true;
                    }
                }
                _ => {}
            }
        }
        self.batch(changes, errors)
    }

    /// Applies one `pgoutput` message to the transaction being received.
    fn apply(&mut self, data: &[u8]) -> Result<(), ConnectorError> {
        let message = pgoutput::decode(data).map_err(|e| {
            ConnectorError::Upstream(format!("cannot decode a pgoutput message: {e}"))
        })?;
        if let Message::Relation(relation) = &message {
            for output in self
                .outputs
                .iter_mut()
                .filter(|o| o.table.oid == relation.id)
            {
                output.relation_changed(&relation.columns);
            }
            return Ok(());
        }
        let Some(transaction) = self.transaction.as_mut() else {
            return Ok(());
        };
        let commit_lsn = transaction.commit_lsn;
        // The outputs whose snapshot does not already show this transaction.
        let outputs = self.outputs.iter().filter(|o| {
            self.position
                .snapshots
                .get(&o.reference)
                .is_none_or(|&snapshot| commit_lsn >= snapshot)
        });
        for output in outputs {
            let changes = &mut transaction.changes;
            let (applied, tuple) = match &message {
                Message::Insert { relation, new } if *relation == output.table.oid => {
                    (output.insert(new, changes), new)
                }
                Message::Update { relation, old, new } if *relation == output.table.oid => {
                    (output.update(old.as_ref(), new, changes), new)
                }
                Message::Delete { relation, old } if *relation == output.table.oid => {
                    (output.delete(old, changes), old)
                }
                Message::Truncate { relations } if relations.contains(&output.table.oid) => {
                    changes.truncate(output.index);
                    continue;
                }
                _ => continue,
            };
            if let Err(error) = applied {
                transaction.errors.push(BadRecord {
                    position: commit_lsn.to_string(),
                    raw: output.raw_tuple_text(tuple),
                    error: format!("{}: {error}", output.reference),
                });
            }
        }
        Ok(())
    }

    /// A batch of `changes` ending at the current position.
    fn batch(
        &self,
        changes: ChangeList,
        errors: Vec<BadRecord>,
    ) -> Result<SourceBatch, ConnectorError> {
        Ok(SourceBatch {
            changes: changes.finish(|output| self.schemas[output].clone())?,
            position: self.position.to_json(),
            errors,
            lag: None,
            row_partitions: Vec::new(),
            snapshot: None,
        })
    }
}

impl SourceReader for CdcReader {
    fn next_batch(&mut self) -> Result<Option<SourceBatch>, ConnectorError> {
        self.acknowledge_durable();
        self.next_snapshot_batch().map(Some)
    }
}

impl Drop for CdcReader {
    fn drop(&mut self) {
        // Ends the replication session cleanly, so that the slot is free for the next one.
        if tokio::runtime::Handle::try_current().is_err() {
            let stream = &mut self.stream;
            let _ = self
                .runtime
                .block_on(async { tokio::time::timeout(SHUTDOWN_WAIT, stream.shutdown()).await });
        }
    }
}

/// The upstream side of opening: checks, publication, slot, snapshot, stream.
async fn set_up(
    config: &CdcConfig,
    context: &SourceContext,
    resume: Option<Position>,
) -> Result<Opened, ConnectorError> {
    let client = catalog::connect(config).await?;
    catalog::check_wal_level(&client).await?;
    let mut outputs = Vec::new();
    for (index, output) in context.outputs.iter().enumerate().skip(1) {
        outputs.push(TableOutput::resolve(&client, index, output).await?);
    }
    let mut tables: Vec<String> = outputs
        .iter()
        .map(|o| o.table.quoted_name.clone())
        .collect();
    tables.sort();
    tables.dedup();
    catalog::ensure_publication(&client, &config.publication, &tables).await?;
    let slot = catalog::slot_state(&client, &config.slot).await?;
    if let Some(slot) = &slot {
        check_slot(config, slot, resume.as_ref())?;
    }
    let mut position = resume.clone().unwrap_or_default();
    let pending: VecDeque<usize> = outputs
        .iter()
        .enumerate()
        .filter(|(_, o)| !position.snapshots.contains_key(&o.reference))
        .map(|(i, _)| i)
        .collect();
    let (exported, acknowledged) = match &slot {
        None if resume.is_some() => {
            return Err(ConnectorError::Upstream(format!(
                "replication slot \"{}\" no longer exists on {}, so the changes since the \
                 source's position are lost; drop and recreate the source",
                config.slot,
                config.address()
            )))
        }
        None => {
            let exported = session::create_slot(config, &config.slot, false).await?;
            position.lsn = exported.consistent_point;
            let acknowledged = exported.consistent_point;
            (Some(exported), acknowledged)
        }
        Some(slot) => {
            if resume.is_none() {
                position.lsn = slot.confirmed_flush;
            }
            let exported = if pending.is_empty() {
                None
            } else {
                Some(session::create_slot(config, &snapshot_slot_name(&config.slot), true).await?)
            };
            (exported, slot.confirmed_flush)
        }
    };
    let snapshot = match exported {
        Some(exported) if !pending.is_empty() => {
            let tables: Vec<String> = pending
                .iter()
                .map(|&i| outputs[i].table.quoted_name.clone())
                .collect();
            let snapshot = SnapshotRead::begin(
                client,
                &exported.name,
                exported.consistent_point,
                pending,
                &tables,
            )
            .await?;
            drop(exported.session);
            Some(snapshot)
        }
        _ => None,
    };
    let stream = session::start_stream(config, position.lsn, acknowledged).await?;
    Ok(Opened {
        outputs,
        position,
        snapshot,
        stream,
    })
}

/// Fails unless `slot` is a `pgoutput` slot of the configured database that still has every
/// change after `resume`.
fn check_slot(
    config: &CdcConfig,
    slot: &SlotState,
    resume: Option<&Position>,
) -> Result<(), ConnectorError> {
    let name = &config.slot;
    if slot.plugin.as_deref() != Some("pgoutput")
        || slot.database.as_deref() != Some(config.database.as_str())
    {
        return Err(ConnectorError::Upstream(format!(
            "replication slot \"{name}\" is not a pgoutput slot of database \"{}\"",
            config.database
        )));
    }
    match resume {
        Some(resume) if slot.confirmed_flush > resume.lsn => {
            Err(ConnectorError::Upstream(format!(
                "replication slot \"{name}\" has moved past the source's position ({} > {}), \
                 so changes are lost; drop and recreate the source",
                slot.confirmed_flush, resume.lsn
            )))
        }
        _ => Ok(()),
    }
}

/// A fresh name for the temporary slot of a snapshot taken while `slot` exists.
fn snapshot_slot_name(slot: &str) -> String {
    let prefix: String = slot.chars().take(40).collect();
    format!("{prefix}_snapshot_{:08x}", rand::random::<u32>())
}
