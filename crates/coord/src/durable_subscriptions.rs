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
use repr::{wall_clock_ms, ChangeBatch, Diff, GlobalId, Row, RowCodec, Timestamp};
use storage::{CatalogOp, ChangeLog, ItemKind};
use tokio::sync::{mpsc, watch};

use crate::catalog::{Item, ItemDetails};
use crate::coordinator::Coordinator;
use crate::ddl::stored_name;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::subscribe::{output_schema, DataflowGuard, OutputShape, Subscription, HANDOFF_BATCHES};
use sql::{CreateSubscription, ObjectRef, Subscribe, SubscribeTarget};
use system_catalog::SubscriptionStatus;

/// The running durable subscriptions (or sinks' change logs: see [`crate::sinks`]).
#[derive(Debug)]
pub(crate) struct DurableSubscriptions {
    dir: PathBuf,
    /// What the logs' files are called (`<kind>-<id>.log`).
    kind: &'static str,
    running: Mutex<HashMap<GlobalId, Arc<SubscriptionLog>>>,
}

/// One durable subscription's log and what is known of it.
#[derive(Debug)]
pub(crate) struct SubscriptionLog {
    pub id: GlobalId,
    log: ChangeLog,
    /// Every change before this time is in the log.
    upper: watch::Sender<Timestamp>,
    /// The earliest start (`AS OF`) the log still serves exactly.
    earliest: AtomicU64,
    /// History from this time on is never folded, whatever the retention (a sink's position).
    fold_hold: AtomicU64,
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

    pub(crate) fn get(&self, id: GlobalId) -> Option<Arc<SubscriptionLog>> {
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
    pub fn remove_orphans(&self) -> Result<(), CoordError> {
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

    pub(crate) fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<GlobalId, Arc<SubscriptionLog>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Coordinator {
    /// `CREATE SUBSCRIPTION`.
    pub(crate) async fn create_subscription(
        &self,
        session: &mut Session,
        mut create: CreateSubscription,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = self.name_for_new_item(session, &create.name)?;
        let from = self.resolve_watched(session, &mut create.from)?;
        let (schema, name) = stored_name(&create.name);
        let create_sql = create.to_string();
        let _sequencer = self.sequencer.lock().await;
        if self.exists(session, &schema, &name, create.if_not_exists)? {
            return Ok(ExecuteResponse::command("CREATE SUBSCRIPTION"));
        }
        let id = self.record_item(
            &schema,
            &name,
            ItemKind::Subscription,
            &create_sql,
            vec![from.id],
        )?;
        if let Err(e) = self
            .install_subscription(id, &create_sql, &create, from.id)
            .await
        {
            self.uninstall(id);
            self.durable.apply(&[CatalogOp::Delete(id)])?;
            return Err(e);
        }
        Ok(ExecuteResponse::command("CREATE SUBSCRIPTION"))
    }

    /// The table, source, view or materialized view whose changes a durable subscription or
    /// a sink watches; `name` is qualified with its schema (for the stored SQL).
    pub(crate) fn resolve_watched(
        &self,
        session: &Session,
        name: &mut ObjectRef,
    ) -> Result<Item, CoordError> {
        let item = self.resolve_item(session, name)?;
        if item.relation().is_none() && item.kind != ItemKind::View {
            return Err(CoordError::WrongObjectType {
                name: item.name.clone(),
                expected: "a table, source, view or materialized view",
                hint: None,
            });
        }
        *name = ObjectRef::qualified(&item.schema, &item.name);
        Ok(item)
    }

    /// Puts subscription `id` into the catalog and starts its logger, from the current
    /// contents of `from` (reconciled with what its log already holds). The caller holds the
    /// sequencer.
    pub(crate) async fn install_subscription(
        &self,
        id: GlobalId,
        create_sql: &str,
        create: &CreateSubscription,
        from: GlobalId,
    ) -> Result<(), CoordError> {
        let (schema, name) = stored_name(&create.name);
        self.catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Item {
                id,
                name,
                schema,
                kind: ItemKind::Subscription,
                create_sql: create_sql.to_string(),
                depends_on: vec![from],
                details: ItemDetails::Subscription { from },
            });
        self.start_logger(&self.subscriptions, id, &create.from, create.retention)
            .await
            .map(drop)
    }

    /// Starts logging the changes of `from` to log `id` of `registry`, from its current
    /// contents (reconciled with what the log already holds), keeping `retention` of history.
    pub(crate) async fn start_logger(
        &self,
        registry: &Arc<DurableSubscriptions>,
        id: GlobalId,
        from: &ObjectRef,
        retention: Duration,
    ) -> Result<Arc<SubscriptionLog>, CoordError> {
        let target = Subscribe {
            target: SubscribeTarget::Object(from.clone()),
            snapshot: true,
            progress: false,
            as_of: None,
        };
        let plan = self
            .plan_subscription(&mut Session::new("fluxion", 0, &[]), &target)
            .await?;
        let query_schema = plan.schema().clone();
        let codec = RowCodec::new(query_schema.clone())
            .map_err(|e| CoordError::unsupported(e.to_string()))?;
        let dir = registry.dir.clone();
        let kind = registry.kind;
        let log = tokio::task::spawn_blocking(move || ChangeLog::open_recovering(&dir, kind, id))
            .await
            .map_err(|e| CoordError::Internal(format!("opening a subscription log: {e}")))??;
        let logged = logged_state(&log, &codec)?;
        let as_of = self.oracle.read_time();
        let dataflow = GlobalId::transient(self.next_transient_id.fetch_add(1, Ordering::Relaxed));
        let imports = plan.imports();
        let updates = self.compute.subscribe(dataflow, plan, as_of)?;
        let guard = DataflowGuard {
            compute: self.compute.clone(),
            id: dataflow,
        };
        self.hydrate_streams(dataflow, imports, as_of).await?;
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
        registry.lock().insert(id, subscription.clone());
        let logger = Logger {
            subscription: subscription.clone(),
            codec,
            as_of,
            previous: Some(logged.state),
            last_compaction: wall_clock_ms(),
        };
        tokio::spawn(logger.run(updates, guard, Arc::downgrade(registry)));
        Ok(subscription)
    }

    /// The durable subscription a SUBSCRIBE names, if it names one.
    pub(crate) fn durable_subscription_named(
        &self,
        session: &Session,
        subscribe: &Subscribe,
    ) -> Result<Option<Arc<SubscriptionLog>>, CoordError> {
        let SubscribeTarget::Object(name) = &subscribe.target else {
            return Ok(None);
        };
        let item = self.resolve_item(session, name)?;
        if item.kind != ItemKind::Subscription {
            return Ok(None);
        }
        self.subscriptions.get(item.id).map(Some).ok_or_else(|| {
            CoordError::Internal(format!("subscription {} is not running", item.name))
        })
    }

    /// `SUBSCRIBE TO sub`: served from the subscription's log.
    pub(crate) async fn subscribe_durable(
        &self,
        subscription: Arc<SubscriptionLog>,
        subscribe: &Subscribe,
    ) -> Result<Subscription, CoordError> {
        let as_of = match &subscribe.as_of {
            Some(as_of) => as_of.evaluate(&self.base_state).await?.saturating_sub(1),
            None => self.oracle.read_time(),
        };
        let earliest = subscription.earliest.load(Ordering::Acquire);
        if as_of + 1 < earliest {
            return Err(CoordError::HistoryUnavailable(format!(
                "subscription history starts at {earliest}; AS OF {} is older (retention {:?})",
                as_of + 1,
                subscription.retention
            )));
        }
        let codec = RowCodec::new(subscription.query_schema.clone())
            .map_err(|e| CoordError::unsupported(e.to_string()))?;
        let shape = OutputShape {
            schema: output_schema(&subscription.query_schema, subscribe.progress),
            codec,
            as_of,
            snapshot: subscribe.snapshot,
            progress: subscribe.progress,
        };
        let schema = shape.schema.clone();
        let (sender, batches) = mpsc::channel(HANDOFF_BATCHES);
        tokio::spawn(serve_from_log(subscription, shape, sender));
        Ok(Subscription::new(schema, as_of, batches))
    }

    /// Starts every durable subscription's logger again after a restart.
    pub(crate) async fn recover_subscriptions(
        &self,
        items: &[storage::CatalogItem],
    ) -> Result<(), CoordError> {
        for item in items.iter().filter(|i| i.kind == ItemKind::Subscription) {
            let Some(sql::Statement::CreateSubscription(create)) =
                sql::parse(&item.create_sql)?.pop()
            else {
                return Err(CoordError::Internal(format!(
                    "stored SQL of {} is not CREATE SUBSCRIPTION",
                    item.name
                )));
            };
            let from = item.depends_on.first().copied().ok_or_else(|| {
                CoordError::Internal(format!("subscription {} watches nothing", item.name))
            })?;
            self.install_subscription(item.id, &item.create_sql, &create, from)
                .await?;
        }
        self.subscriptions.remove_orphans()
    }
}

impl SubscriptionLog {
    /// The change log.
    pub(crate) fn log(&self) -> &ChangeLog {
        &self.log
    }

    /// Follows the log's `upper`: every change before it is in the log.
    pub(crate) fn uppers(&self) -> watch::Receiver<Timestamp> {
        self.upper.subscribe()
    }

    /// Keeps history from `time` on unfolded, whatever the retention.
    pub(crate) fn hold_history_from(&self, time: Timestamp) {
        self.fold_hold.store(time, Ordering::Release);
    }

    /// Why the logger stopped, if it did.
    pub(crate) fn failure(&self) -> Option<String> {
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
fn logged_state(log: &ChangeLog, codec: &RowCodec) -> Result<LoggedState, CoordError> {
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
        state: crate::read::consolidate(state),
        upper: last + 1,
        earliest: first.map_or(0, |time| time + 1),
    })
}

/// A logged batch's rows, encoded, with their diffs.
fn encode(codec: &RowCodec, batch: &ChangeBatch) -> Result<Vec<(Row, Diff)>, CoordError> {
    let rows = codec
        .encode(&batch.rows)
        .map_err(|e| CoordError::Internal(e.to_string()))?;
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
                Ok::<_, CoordError>(())
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
    ) -> Result<Vec<ChangeBatch>, CoordError> {
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
            let first = crate::read::consolidate(first);
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
    ) -> Result<ChangeBatch, CoordError> {
        let rows = self
            .codec
            .decode(updates.iter().map(|(row, _)| row))
            .map_err(|e| CoordError::Internal(e.to_string()))?;
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
fn fold_history(subscription: &SubscriptionLog) -> Result<(), CoordError> {
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
        .map_err(|e| CoordError::unsupported(e.to_string()))?;
    let mut folded = Vec::new();
    for batch in &old {
        folded.extend(encode(&codec, batch)?);
    }
    let folded = crate::read::consolidate(folded);
    let rows = codec
        .decode(folded.iter().map(|(row, _)| row))
        .map_err(|e| CoordError::Internal(e.to_string()))?;
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
    sender: mpsc::Sender<Result<RecordBatch, CoordError>>,
) {
    if let Err(e) = follow_log(&subscription, &shape, &sender).await {
        let _ = sender.send(Err(e)).await;
    }
}

async fn follow_log(
    subscription: &SubscriptionLog,
    shape: &OutputShape,
    sender: &mpsc::Sender<Result<RecordBatch, CoordError>>,
) -> Result<(), CoordError> {
    let mut uppers = subscription.upper.subscribe();
    // The snapshot needs every change up to the start in the log.
    tokio::select! {
        waited = uppers.wait_for(|upper| *upper > shape.as_of) => {
            waited.map_err(|_| CoordError::Internal("the subscription's logger stopped".into()))?;
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
            let rows = crate::read::consolidate(snapshot);
            if !rows.is_empty() {
                send(sender, shape.changes(shape.as_of, &rows)?).await?;
            }
        }
        position = Some((generation, reader.offset()));
        for (time, updates) in changes {
            let updates = crate::read::consolidate(updates);
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
    sender: &mpsc::Sender<Result<RecordBatch, CoordError>>,
    batch: RecordBatch,
) -> Result<(), CoordError> {
    sender
        .send(Ok(batch))
        .await
        .map_err(|_| CoordError::Internal("the subscriber went away".into()))
}
