//! Sinks (`CREATE SINK s FROM obj WITH (connector = …)`): an object's changes delivered to
//! files, a Kafka topic or a table of another PostgreSQL, exactly once.
//!
//! A sink is a durable subscription of its own (its changes logged, fsynced, by the same
//! logger as `CREATE SUBSCRIPTION`) and a *delivery* task that reads the log and hands each
//! closed time's changes to the sink's connection. The connection writes its position with
//! the data (see [`connectors::SinkConnection`]); after a restart, or after the target failed
//! and came back, delivery asks the target where it stopped and goes on from there. History
//! the target has not confirmed is never folded out of the log.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use connectors::{ConnectorError, Format, SinkConnection, SinkSpec, SourceOptions};
use repr::{ChangeBatch, GlobalId, Timestamp};
use tokio::sync::watch;

use crate::catalog::{Item, ItemDetails};
use crate::coordinator::Coordinator;
use crate::ddl::stored_name;
use crate::durable_subscriptions::{DurableSubscriptions, SubscriptionLog};
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use sql::{CreateSink, Subscribe, SubscribeTarget};
use system_catalog::SinkStatus;

/// What the sinks' change logs are called (`sink-<id>.log`).
const LOG_KIND: &str = "sink";

/// History a sink's log keeps beyond what the target confirmed (folded every quarter of it).
const LOG_RETENTION: Duration = Duration::from_secs(60);

/// Rows handed to a connection at a time.
const DELIVERY_ROWS: usize = 64 * 1024;

/// How long `CREATE SINK` waits for the target to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest pause between attempts to reach a failed target.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The running sinks.
#[derive(Debug)]
pub(crate) struct Sinks {
    /// Their change logs.
    logs: Arc<DurableSubscriptions>,
    running: Mutex<HashMap<GlobalId, Arc<SinkState>>>,
}

/// One running sink, as `fluxion_catalog.sink_stats` shows it.
#[derive(Debug)]
pub(crate) struct SinkState {
    pub id: GlobalId,
    pub connector: String,
    /// The sink's change log (its logger's failure is the sink's too).
    log: Arc<SubscriptionLog>,
    stats: Mutex<SinkStats>,
    /// Tells the delivery task to stop (the sink was dropped).
    stop: watch::Sender<bool>,
}

/// What a sink has delivered.
#[derive(Debug, Clone, Default)]
pub(crate) struct SinkStats {
    /// Changes handed to the target since the server started.
    pub rows_delivered: u64,
    /// The last time the target holds for good.
    pub last_timestamp: Option<Timestamp>,
    /// The oldest time handed to the target that it does not hold for good yet.
    pub oldest_pending: Option<Timestamp>,
    /// Why the last attempt to deliver failed, until one succeeds.
    pub failure: Option<String>,
}

impl Sinks {
    /// No sinks yet; their logs go to `dir`.
    pub fn new(dir: std::path::PathBuf) -> Self {
        Self {
            logs: Arc::new(DurableSubscriptions::new(dir, LOG_KIND)),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Stops sink `id` and deletes its log (it was dropped).
    pub fn remove(&self, id: GlobalId) {
        if let Some(state) = self.lock().remove(&id) {
            state.stop.send_replace(true);
        }
        self.logs.remove(id);
    }

    /// Each sink's state, for `fluxion_catalog.sink_stats`.
    pub fn snapshot(&self) -> Vec<SinkStatus> {
        let mut sinks: Vec<_> = self.lock().values().map(|state| state.status()).collect();
        sinks.sort_by_key(|status| status.id);
        sinks
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<GlobalId, Arc<SinkState>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SinkState {
    /// What the sink has delivered, and why it is stuck, if it is.
    fn status(&self) -> SinkStatus {
        let stats = self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let failure = stats.failure.or_else(|| {
            self.log
                .failure()
                .map(|reason| format!("the sink's change log stopped: {reason}"))
        });
        SinkStatus {
            id: self.id,
            connector: self.connector.clone(),
            rows_delivered: stats.rows_delivered,
            last_timestamp: stats.last_timestamp,
            oldest_pending: stats.oldest_pending,
            failure,
        }
    }

    fn update(&self, change: impl FnOnce(&mut SinkStats)) {
        change(&mut self.stats.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

impl Coordinator {
    /// `CREATE SINK`.
    pub(crate) async fn create_sink(
        &self,
        session: &mut Session,
        mut create: CreateSink,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = self.name_for_new_item(session, &create.name)?;
        let from = self.resolve_watched(session, &mut create.from)?;
        let (schema, name) = stored_name(&create.name);
        let _sequencer = self.sequencer.lock().await;
        if self.exists(session, &schema, &name, create.if_not_exists)? {
            return Ok(ExecuteResponse::command("CREATE SINK"));
        }
        // Options and the target are checked before anything is recorded.
        let watched = Subscribe {
            target: SubscribeTarget::Object(create.from.clone()),
            snapshot: true,
            progress: false,
            as_of: None,
        };
        let columns = self
            .plan_subscription(&mut Session::new("fluxion", 0, &[]), &watched)
            .await?
            .schema()
            .clone();
        let spec = sink_spec(&create, columns, String::new())?;
        let options = SourceOptions::new(create.options.clone());
        let mut connection =
            tokio::time::timeout(CONNECT_TIMEOUT, connectors::open_sink(&spec, &options))
                .await
                .map_err(|_| {
                    CoordError::ConnectionFailure(format!(
                        "the sink's target did not answer within {} s",
                        CONNECT_TIMEOUT.as_secs()
                    ))
                })?
                .map_err(sink_error)?;
        connection.resume().await.map_err(sink_error)?;
        drop(connection);
        let create_sql = create.to_string();
        let id = self.record_item(
            &schema,
            &name,
            storage::ItemKind::Sink,
            &create_sql,
            vec![from.id],
        )?;
        if let Err(e) = self.install_sink(id, &create_sql, &create, from.id).await {
            self.uninstall(id);
            self.durable.apply(&[storage::CatalogOp::Delete(id)])?;
            return Err(e);
        }
        Ok(ExecuteResponse::command("CREATE SINK"))
    }

    /// Puts sink `id` into the catalog, starts logging the changes of `from` and delivering
    /// them. The caller holds the sequencer.
    pub(crate) async fn install_sink(
        &self,
        id: GlobalId,
        create_sql: &str,
        create: &CreateSink,
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
                kind: storage::ItemKind::Sink,
                create_sql: create_sql.to_string(),
                depends_on: vec![from],
                details: ItemDetails::Sink { from },
            });
        let log = self
            .start_logger(&self.sinks.logs, id, &create.from, LOG_RETENTION)
            .await?;
        let identity = format!("{}/{id}", create.name);
        let spec = sink_spec(create, log.query_schema.clone(), identity)?;
        // Nothing is folded until the target says how far it got.
        log.hold_history_from(0);
        let (stop, stopped) = watch::channel(false);
        let state = Arc::new(SinkState {
            id,
            connector: create.option("connector").unwrap_or_default().to_string(),
            log: log.clone(),
            stats: Mutex::new(SinkStats::default()),
            stop,
        });
        self.sinks.lock().insert(id, state.clone());
        let delivery = Delivery {
            state,
            log,
            spec,
            options: create.options.clone(),
        };
        tokio::spawn(delivery.run(stopped));
        Ok(())
    }

    /// Starts every sink again after a restart.
    pub(crate) async fn recover_sinks(
        &self,
        items: &[storage::CatalogItem],
    ) -> Result<(), CoordError> {
        for item in items.iter().filter(|i| i.kind == storage::ItemKind::Sink) {
            let Some(sql::Statement::CreateSink(create)) = sql::parse(&item.create_sql)?.pop()
            else {
                return Err(CoordError::Internal(format!(
                    "stored SQL of {} is not CREATE SINK",
                    item.name
                )));
            };
            let from =
                item.depends_on.first().copied().ok_or_else(|| {
                    CoordError::Internal(format!("sink {} reads nothing", item.name))
                })?;
            self.install_sink(item.id, &item.create_sql, &create, from)
                .await?;
        }
        self.sinks.logs.remove_orphans()
    }
}

/// What the connection of sink `create` over rows of `schema` needs to know of it;
/// `identity` (its name and catalog id) tells it apart from a sink of the same name created
/// before.
fn sink_spec(
    create: &CreateSink,
    schema: datafusion::arrow::datatypes::SchemaRef,
    identity: String,
) -> Result<SinkSpec, CoordError> {
    let (_, name) = stored_name(&create.name);
    let default_envelope = if create.option("connector") == Some("postgres") {
        "UPSERT"
    } else {
        "PLAIN"
    };
    let format = Format::parse(
        create.format.as_deref().unwrap_or(default_envelope),
        create.encode.as_deref().unwrap_or("JSON"),
    )
    .map_err(sink_error)?;
    SinkSpec::new(identity, name, schema, create.option("key"), format).map_err(sink_error)
}

/// A connector's error as `CREATE SINK` reports it.
fn sink_error(e: ConnectorError) -> CoordError {
    match e {
        ConnectorError::Upstream(message) => CoordError::ConnectionFailure(message),
        other => CoordError::InvalidSourceOption(other.to_string()),
    }
}

/// The task that delivers a sink's logged changes to its target.
struct Delivery {
    state: Arc<SinkState>,
    log: Arc<SubscriptionLog>,
    spec: SinkSpec,
    options: Vec<(String, String)>,
}

impl Delivery {
    /// Delivers until the sink is dropped, reconnecting after failures with a growing pause.
    async fn run(self, mut stopped: watch::Receiver<bool>) {
        let mut backoff = Duration::from_secs(1);
        loop {
            let failure = tokio::select! {
                result = self.deliver() => match result {
                    Ok(()) => return,
                    Err(e) => e,
                },
                _ = stopped.wait_for(|stop| *stop) => return,
            };
            tracing::warn!(sink = %self.state.id, error = %failure, retry_in_s = backoff.as_secs(), "sink delivery failed; retrying");
            self.state
                .update(|stats| stats.failure = Some(failure.to_string()));
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = stopped.wait_for(|stop| *stop) => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Connects, asks the target where it stopped, then delivers the log from there on as it
    /// grows. Returns only on failure, or when the log's logger stopped.
    async fn deliver(&self) -> Result<(), CoordError> {
        let options = SourceOptions::new(self.options.clone());
        let mut connection = connectors::open_sink(&self.spec, &options)
            .await
            .map_err(sink_error)?;
        let resumed = connection.resume().await.map_err(sink_error)?;
        self.log.hold_history_from(resumed.unwrap_or(0));
        self.state.update(|stats| {
            stats.last_timestamp = resumed;
            stats.oldest_pending = None;
        });
        tracing::info!(sink = %self.state.id, resumed_after = ?resumed, "sink delivering");
        // Batches before this time are in the target already.
        let mut next_time = resumed.unwrap_or(0);
        let mut pending: VecDeque<Timestamp> = VecDeque::new();
        let mut position: Option<(u64, u64)> = None;
        let mut uppers = self.log.uppers();
        loop {
            let upper = *uppers.borrow_and_update();
            let generation = self.log.log().generation();
            let start = match position {
                Some((read_generation, offset)) if read_generation == generation => offset,
                _ => 0,
            };
            let mut reader = self.log.log().read_from(start, upper.saturating_sub(1))?;
            let mut batches: Vec<ChangeBatch> = Vec::new();
            let mut rows = 0;
            for batch in reader.by_ref() {
                let batch = batch?;
                if batch.time < next_time || batch.rows.num_rows() == 0 {
                    continue;
                }
                rows += batch.rows.num_rows();
                next_time = batch.time + 1;
                pending.push_back(batch.time);
                batches.push(batch);
                if rows >= DELIVERY_ROWS {
                    self.hand_over(&mut connection, &mut batches, &mut rows)
                        .await?;
                }
            }
            position = Some((generation, reader.offset()));
            self.hand_over(&mut connection, &mut batches, &mut rows)
                .await?;
            connection.progress(upper).await.map_err(sink_error)?;
            let delivered = connection.delivered_through();
            while pending.front().is_some_and(|t| Some(*t) <= delivered) {
                pending.pop_front();
            }
            self.log.hold_history_from(connection.history_needed_from());
            self.state.update(|stats| {
                stats.last_timestamp = delivered;
                stats.oldest_pending = pending.front().copied();
                stats.failure = None;
            });
            if uppers.changed().await.is_err() {
                return Err(CoordError::Internal(
                    self.log
                        .failure()
                        .unwrap_or_else(|| "the sink's change log stopped".into()),
                ));
            }
        }
    }

    /// Hands `batches` to the connection and empties them.
    async fn hand_over(
        &self,
        connection: &mut SinkConnection,
        batches: &mut Vec<ChangeBatch>,
        rows: &mut usize,
    ) -> Result<(), CoordError> {
        if batches.is_empty() {
            return Ok(());
        }
        connection.deliver(batches).await.map_err(sink_error)?;
        let delivered = *rows as u64;
        self.state.update(|stats| stats.rows_delivered += delivered);
        batches.clear();
        *rows = 0;
        Ok(())
    }
}
