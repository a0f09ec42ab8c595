//! Durable subscriptions (`CREATE SUBSCRIPTION sub FROM obj WITH (retention = '…')`): an
//! object's changes, kept on disk for a while, so that subscribers can come and go (and the
//! server can restart) without losing or repeating a change.
//!
//! A *logger* per subscription runs a subscription dataflow on the object and appends each
//! closed time's changes to the subscription's change log, fsynced, before announcing the
//! new `upper` (every change before it is in the log). `SUBSCRIBE TO sub [AS OF t]` is served
//! from the log: the snapshot is the log's changes before the start, consolidated, then every
//! logged change from the start on, then new ones as the logger announces them.
//!
//! After a restart the logger starts again from the object's current contents, and appends
//! the difference between them and what the log adds up to, at the restart time: changes the
//! old process had not logged yet are not lost (they arrive together at that time), and
//! changes it had logged are not repeated. History older than the retention is folded into
//! one consolidated batch; starting `AS OF` a time before that fails.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use compute::SubscriptionUpdates;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use repr::{consolidate, wall_clock_ms, ChangeBatch, Diff, GlobalId, Row, RowCodec, Timestamp};
use storage::ChangeLog;
use system_catalog::SubscriptionStatus;
use tokio::sync::{mpsc, watch};

use crate::error::PipelineError;
use crate::subscription::{output_schema, DataflowGuard, OutputShape, Subscription};

/// The running durable subscriptions (or sinks' change logs).
#[derive(Debug)]
pub struct DurableSubscriptions {
    dir: PathBuf,
    /// What the logs' files are called (`<kind>-<id>.log`).
    kind: &'static str,
    running: Mutex<HashMap<GlobalId, Arc<SubscriptionLog>>>,
}

/// One durable subscription's log and what is known of it.
#[derive(Debug)]
pub struct SubscriptionLog {
    /// The subscription (or sink).
    pub id: GlobalId,
    log: ChangeLog,
    /// Every change before this time is in the log.
    upper: watch::Sender<Timestamp>,
    /// The earliest start (`AS OF`) the log still serves exactly.
    earliest: AtomicU64,
    /// History from this time on is never folded, whatever the retention (a sink's position).
    fold_hold: AtomicU64,
    /// How long history is kept before it is folded.
    pub retention: Duration,
    /// The object's columns.
    pub query_schema: SchemaRef,
    /// Why the logger stopped, if it did.
    failure: Mutex<Option<String>>,
}

impl DurableSubscriptions {
    /// No subscriptions yet; their logs live in `dir`, named after `kind`.
    pub fn new(dir: PathBuf, kind: &'static str) -> Self {
        Self {
            dir,
            kind,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Subscription `id`'s log, if it is running.
    pub fn get(&self, id: GlobalId) -> Option<Arc<SubscriptionLog>> {
        self.lock().get(&id).cloned()
    }

    /// Stops subscription `id`'s logger and deletes its log (it was dropped).
    pub fn remove(&self, id: GlobalId) {
        if self.lock().remove(&id).is_some() {
            if let Err(e) = ChangeLog::delete(&self.dir, self.kind, id) {
                tracing::warn!(subscription = %id, error = %e, "could not delete a dropped subscription's log");
            }
        }
    }

    /// Deletes the logs that belong to no subscription (a crash between a drop and the
    /// deletion).
    pub fn remove_orphans(&self) -> Result<(), PipelineError> {
        for id in ChangeLog::list(&self.dir, self.kind)? {
            if !self.lock().contains_key(&id) {
                ChangeLog::delete(&self.dir, self.kind, id)?;
            }
        }
        Ok(())
    }

    /// Each subscription with its log's state, for `fluxion_catalog.subscriptions`.
    pub fn snapshot(&self) -> Vec<SubscriptionStatus> {
        let mut statuses: Vec<_> = self
            .lock()
            .values()
            .map(|log| SubscriptionStatus {
                id: log.id,
                upper: *log.upper.borrow(),
                earliest: log.earliest.load(Ordering::Acquire),
                retention: log.retention,
                log_bytes: log.log.len_bytes(),
                subscribers: log.upper.receiver_count(),
                failure: log.failure(),
            })
            .collect();
        statuses.sort_by_key(|s| s.id);
        statuses
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<GlobalId, Arc<SubscriptionLog>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A subscription's log, opened and added up, whose logger has not started yet.
pub struct OpenedLog {
    id: GlobalId,
    log: ChangeLog,
    codec: RowCodec,
    query_schema: SchemaRef,
    logged: LoggedState,
}

impl DurableSubscriptions {
    /// Opens log `id` of an object with columns `query_schema` (recovering what a crash left)
    /// and adds up what it holds.
    pub async fn open_log(
        &self,
        id: GlobalId,
        query_schema: SchemaRef,
    ) -> Result<OpenedLog, PipelineError> {
        let codec = RowCodec::new(query_schema.clone())
            .map_err(|e| PipelineError::Unsupported(e.to_string()))?;
        let dir = self.dir.clone();
        let kind = self.kind;
        let log = tokio::task::spawn_blocking(move || ChangeLog::open_recovering(&dir, kind, id))
            .await
            .map_err(|e| PipelineError::Internal(format!("opening a subscription log: {e}")))??;
        let logged = logged_state(&log, &codec)?;
        Ok(OpenedLog {
            id,
            log,
            codec,
            query_schema,
            logged,
        })
    }

    /// Starts logging the output of the subscription dataflow `updates` (dropped with
    /// `dataflow`), which starts at `as_of` from the object's contents then, to `opened`:
    /// first the difference between those contents and what the log adds up to, then every
    /// change, keeping `retention` of history.
    pub fn start_logger(
        self: &Arc<Self>,
        opened: OpenedLog,
        retention: Duration,
        as_of: Timestamp,
        updates: SubscriptionUpdates,
        dataflow: DataflowGuard,
    ) -> Arc<SubscriptionLog> {
        let OpenedLog {
            id,
            log,
            codec,
            query_schema,
            logged,
        } = opened;
        let (upper, _) = watch::channel(logged.upper.min(as_of));
        let subscription = Arc::new(SubscriptionLog {
            id,
            log,
            upper,
            earliest: AtomicU64::new(logged.earliest),
            fold_hold: AtomicU64::new(Timestamp::MAX),
            retention,
            query_schema,
            failure: Mutex::new(None),
        });
        self.lock().insert(id, subscription.clone());
        let logger = Logger {
            subscription: subscription.clone(),
            codec,
            as_of,
            previous: Some(logged.state),
            last_compaction: wall_clock_ms(),
        };
        tokio::spawn(logger.run(updates, dataflow, Arc::downgrade(self)));
        subscription
    }
}

impl SubscriptionLog {
    /// Serves a subscriber from the log: the changes up to `as_of` added up (with
    /// `snapshot`), then every change after it, with progress rows if `progress`.
    pub fn serve(
        self: &Arc<Self>,
        as_of: Timestamp,
        snapshot: bool,
        progress: bool,
    ) -> Result<Subscription, PipelineError> {
        let earliest = self.earliest.load(Ordering::Acquire);
        if as_of + 1 < earliest {
            return Err(PipelineError::HistoryUnavailable(format!(
                "subscription history starts at {earliest}; AS OF {} is older (retention {:?})",
                as_of + 1,
                self.retention
            )));
        }
        let codec = RowCodec::new(self.query_schema.clone())
            .map_err(|e| PipelineError::Unsupported(e.to_string()))?;
        let shape = OutputShape {
            schema: output_schema(&self.query_schema, progress),
            codec,
            as_of,
            snapshot,
            progress,
        };
        let subscription = self.clone();
        Ok(Subscription::spawn(shape, move |shape, sender| {
            serve_from_log(subscription, shape, sender)
        }))
    }

    /// The change log.
    pub fn log(&self) -> &ChangeLog {
        &self.log
    }

    /// Follows the log's `upper`: every change before it is in the log.
    pub fn uppers(&self) -> watch::Receiver<Timestamp> {
        self.upper.subscribe()
    }

    /// Keeps history from `time` on unfolded, whatever the retention.
    pub fn hold_history_from(&self, time: Timestamp) {
        self.fold_hold.store(time, Ordering::Release);
    }

    /// Why the logger stopped, if it did.
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// What a log adds up to.
struct LoggedState {
    /// The consolidated changes: the object's contents as far as the log knows.
    state: Vec<(Row, Diff)>,
    /// The time after the last logged change.
    upper: Timestamp,
    /// The earliest start the log serves exactly (after its first batch, which may be folded
    /// history).
    earliest: Timestamp,
}

/// Reads a whole log and adds it up.
fn logged_state(log: &ChangeLog, codec: &RowCodec) -> Result<LoggedState, PipelineError> {
    let mut state = Vec::new();
    let mut first = None;
    let mut last = 0;
    for batch in log.read_through(Timestamp::MAX)? {
        let batch = batch?;
        first.get_or_insert(batch.time);
        last = last.max(batch.time);
        state.extend(encode(codec, &batch)?);
    }
    Ok(LoggedState {
        state: consolidate(state),
        upper: last + 1,
        earliest: first.map_or(0, |time| time + 1),
    })
}

/// A logged batch's rows, encoded, with their diffs.
fn encode(codec: &RowCodec, batch: &ChangeBatch) -> Result<Vec<(Row, Diff)>, PipelineError> {
    let rows = codec
        .encode(&batch.rows)
        .map_err(|e| PipelineError::Internal(e.to_string()))?;
    Ok(rows.into_iter().zip(batch.diffs.iter().copied()).collect())
}

/// The task that appends a subscription's changes to its log.
struct Logger {
    subscription: Arc<SubscriptionLog>,
    codec: RowCodec,
    /// The dataflow's start: its snapshot is at this time.
    as_of: Timestamp,
    /// What the log added up to when the logger started; subtracted from the snapshot, so
    /// that the first logged batch is exactly what changed since.
    previous: Option<Vec<(Row, Diff)>>,
    /// When history was last folded (ms).
    last_compaction: Timestamp,
}

impl Logger {
    async fn run(
        mut self,
        mut updates: SubscriptionUpdates,
        _dataflow: DataflowGuard,
        registry: std::sync::Weak<DurableSubscriptions>,
    ) {
        let id = self.subscription.id;
        loop {
            if registry.upgrade().is_none_or(|r| {
                r.get(id)
                    .is_none_or(|s| !Arc::ptr_eq(&s, &self.subscription))
            }) {
                return;
            }
            let progress = match updates.next().await {
                Ok(progress) => progress,
                Err(e) => return self.fail(e.to_string()),
            };
            let batches = match self.batches(progress.closed, progress.upper) {
                Ok(batches) => batches,
                Err(e) => return self.fail(e.to_string()),
            };
            let first_logged = batches.first().map(|batch| batch.time);
            let subscription = self.subscription.clone();
            let compact = self.compaction_due();
            let appended = tokio::task::spawn_blocking(move || {
                if !batches.is_empty() {
                    subscription.log.append(&batches)?;
                }
                if compact {
                    fold_history(&subscription)?;
                }
                Ok::<_, PipelineError>(())
            })
            .await;
            match appended {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return self.fail(e.to_string()),
                Err(e) => return self.fail(e.to_string()),
            }
            if let Some(time) = first_logged {
                // An empty log starts its history with the first batch logged.
                let _ = self.subscription.earliest.compare_exchange(
                    0,
                    time + 1,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
            if compact {
                self.last_compaction = wall_clock_ms();
            }
            match progress.upper {
                Some(upper) => {
                    self.subscription.upper.send_replace(upper);
                }
                None => return,
            }
        }
    }

    /// The batches to log for the times that closed: their changes, and at the start the
    /// difference between the snapshot and what the log already held.
    fn batches(
        &mut self,
        closed: Vec<compute::ClosedTime>,
        upper: Option<Timestamp>,
    ) -> Result<Vec<ChangeBatch>, PipelineError> {
        let mut out = Vec::new();
        let mut closed = closed.into_iter().peekable();
        if let Some(previous) = self.previous.take() {
            if upper.is_some_and(|upper| upper <= self.as_of) {
                self.previous = Some(previous);
                return Ok(out);
            }
            let mut first: Vec<(Row, Diff)> = previous.into_iter().map(|(r, d)| (r, -d)).collect();
            if closed.peek().is_some_and(|c| c.time == self.as_of) {
                first.extend(closed.next().map(|c| c.updates).unwrap_or_default());
            }
            // Logged even when empty: the log's first batch marks where its history starts.
            let first = consolidate(first);
            out.push(self.change_batch(self.as_of, &first)?);
        }
        for time in closed {
            out.push(self.change_batch(time.time, &time.updates)?);
        }
        Ok(out)
    }

    fn change_batch(
        &self,
        time: Timestamp,
        updates: &[(Row, Diff)],
    ) -> Result<ChangeBatch, PipelineError> {
        let rows = self
            .codec
            .decode(updates.iter().map(|(row, _)| row))
            .map_err(|e| PipelineError::Internal(e.to_string()))?;
        Ok(ChangeBatch {
            time,
            rows,
            diffs: updates.iter().map(|(_, d)| *d).collect(),
        })
    }

    /// Whether history older than the retention is due to be folded.
    fn compaction_due(&self) -> bool {
        let every = fold_step(self.subscription.retention).min(60_000);
        wall_clock_ms().saturating_sub(self.last_compaction) >= every
    }

    fn fail(&self, reason: String) {
        tracing::error!(subscription = %self.subscription.id, error = %reason, "durable subscription stopped logging");
        *self
            .subscription
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(reason);
    }
}

/// How much history a fold takes at least (a quarter of the retention, at least a second):
/// folding rewrites the log, so it happens in steps, not every time a little history ages.
fn fold_step(retention: Duration) -> Timestamp {
    (retention.as_millis() as Timestamp / 4).max(1_000)
}

/// Folds the log's changes older than the retention into one batch, once there is a
/// [`fold_step`] of them.
fn fold_history(subscription: &SubscriptionLog) -> Result<(), PipelineError> {
    let retention_ms = subscription.retention.as_millis() as Timestamp;
    let boundary = wall_clock_ms()
        .saturating_sub(retention_ms)
        .min(subscription.fold_hold.load(Ordering::Acquire));
    let earliest = subscription.earliest.load(Ordering::Acquire);
    if earliest.saturating_add(fold_step(subscription.retention)) > boundary {
        return Ok(());
    }
    let mut old: Vec<ChangeBatch> = Vec::new();
    let mut recent: Vec<ChangeBatch> = Vec::new();
    for batch in subscription.log.read_through(Timestamp::MAX)? {
        let batch = batch?;
        if batch.time < boundary {
            old.push(batch);
        } else {
            recent.push(batch);
        }
    }
    if old.len() <= 1 {
        // Nothing to fold: the one old batch is the start of the history already.
        return Ok(());
    }
    let codec = RowCodec::new(subscription.query_schema.clone())
        .map_err(|e| PipelineError::Unsupported(e.to_string()))?;
    let mut folded = Vec::new();
    for batch in &old {
        folded.extend(encode(&codec, batch)?);
    }
    let folded = consolidate(folded);
    let rows = codec
        .decode(folded.iter().map(|(row, _)| row))
        .map_err(|e| PipelineError::Internal(e.to_string()))?;
    let mut replacement = vec![ChangeBatch {
        time: boundary - 1,
        rows,
        diffs: folded.iter().map(|(_, d)| *d).collect(),
    }];
    replacement.extend(recent);
    subscription.log.replace(&replacement)?;
    subscription.earliest.store(boundary, Ordering::Release);
    tracing::info!(subscription = %subscription.id, through = boundary, "subscription history older than its retention folded");
    Ok(())
}

/// Sends a subscriber the log's changes from its start on, then follows the logger.
async fn serve_from_log(
    subscription: Arc<SubscriptionLog>,
    shape: OutputShape,
    sender: mpsc::Sender<Result<RecordBatch, PipelineError>>,
) {
    if let Err(e) = follow_log(&subscription, &shape, &sender).await {
        let _ = sender.send(Err(e)).await;
    }
}

async fn follow_log(
    subscription: &SubscriptionLog,
    shape: &OutputShape,
    sender: &mpsc::Sender<Result<RecordBatch, PipelineError>>,
) -> Result<(), PipelineError> {
    let mut uppers = subscription.upper.subscribe();
    // The snapshot needs every change up to the start in the log.
    tokio::select! {
        waited = uppers.wait_for(|upper| *upper > shape.as_of) => {
            waited.map_err(|_| PipelineError::Internal("the subscription's logger stopped".into()))?;
        }
        () = sender.closed() => return Ok(()),
    }
    // Where reading stopped: the log's generation and byte offset, and the last time sent.
    let mut position: Option<(u64, u64)> = None;
    let mut sent_through = shape.as_of;
    let mut announced = 0;
    loop {
        let upper = *uppers.borrow_and_update();
        let generation = subscription.log.generation();
        let start = match position {
            Some((read_generation, offset)) if read_generation == generation => offset,
            _ => 0,
        };
        let mut reader = subscription.log.read_from(start, upper.saturating_sub(1))?;
        let mut snapshot: Vec<(Row, Diff)> = Vec::new();
        let mut changes: std::collections::BTreeMap<Timestamp, Vec<(Row, Diff)>> =
            Default::default();
        for batch in reader.by_ref() {
            let batch = batch?;
            if position.is_none() && batch.time <= shape.as_of {
                snapshot.extend(encode(&shape.codec, &batch)?);
            } else if batch.time > sent_through {
                changes
                    .entry(batch.time)
                    .or_default()
                    .extend(encode(&shape.codec, &batch)?);
            }
        }
        if position.is_none() && shape.snapshot {
            let rows = consolidate(snapshot);
            if !rows.is_empty() {
                send(sender, shape.changes(shape.as_of, &rows)?).await?;
            }
        }
        position = Some((generation, reader.offset()));
        for (time, updates) in changes {
            let updates = consolidate(updates);
            if !updates.is_empty() {
                send(sender, shape.changes(time, &updates)?).await?;
            }
        }
        sent_through = sent_through.max(upper.saturating_sub(1));
        if shape.progress && upper > announced && upper > shape.as_of {
            send(sender, shape.progress_row(upper)?).await?;
            announced = upper;
        }
        tokio::select! {
            changed = uppers.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
            () = sender.closed() => return Ok(()),
        }
    }
}

async fn send(
    sender: &mpsc::Sender<Result<RecordBatch, PipelineError>>,
    batch: RecordBatch,
) -> Result<(), PipelineError> {
    sender
        .send(Ok(batch))
        .await
        .map_err(|_| PipelineError::Internal("the subscriber went away".into()))
}
