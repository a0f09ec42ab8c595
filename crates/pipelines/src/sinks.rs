//! Sinks' delivery: each sink's logged changes handed to its target, exactly once.
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

use connectors::{SinkConnection, SinkSpec, SourceOptions};
use repr::{ChangeBatch, GlobalId, Timestamp};
use system_catalog::SinkStatus;
use tokio::sync::watch;

use crate::durable_subscriptions::{DurableSubscriptions, SubscriptionLog};
use crate::error::PipelineError;

/// What the sinks' change logs are called (`sink-<id>.log`).
const LOG_KIND: &str = "sink";

/// Rows handed to a connection at a time.
const DELIVERY_ROWS: usize = 64 * 1024;

/// The longest pause between attempts to reach a failed target.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The running sinks.
#[derive(Debug)]
pub struct Sinks {
    /// Their change logs.
    logs: Arc<DurableSubscriptions>,
    running: Mutex<HashMap<GlobalId, Arc<SinkState>>>,
}

/// One running sink, as `fluxion_catalog.sink_stats` shows it.
#[derive(Debug)]
struct SinkState {
    /// The sink.
    id: GlobalId,
    /// Its connector (`file`, `kafka`, `postgres`).
    connector: String,
    /// The sink's change log (its logger's failure is the sink's too).
    log: Arc<SubscriptionLog>,
    stats: Mutex<SinkStats>,
    /// Tells the delivery task to stop (the sink was dropped).
    stop: watch::Sender<bool>,
}

/// What a sink has delivered.
#[derive(Debug, Clone, Default)]
struct SinkStats {
    /// Changes handed to the target since the server started.
    rows_delivered: u64,
    /// The last time the target holds for good.
    last_timestamp: Option<Timestamp>,
    /// The oldest time handed to the target that it does not hold for good yet.
    oldest_pending: Option<Timestamp>,
    /// Why the last attempt to deliver failed, until one succeeds.
    failure: Option<String>,
}

impl Sinks {
    /// No sinks yet; their logs go to `dir`.
    pub fn new(dir: std::path::PathBuf) -> Self {
        Self {
            logs: Arc::new(DurableSubscriptions::new(dir, LOG_KIND)),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// The sinks' change logs.
    pub fn logs(&self) -> &Arc<DurableSubscriptions> {
        &self.logs
    }

    /// Starts delivering sink `id`'s change `log` through a `connector` connection made
    /// from `spec` and `options`, until the sink is removed.
    pub fn start(
        &self,
        id: GlobalId,
        connector: String,
        log: Arc<SubscriptionLog>,
        spec: SinkSpec,
        options: Vec<(String, String)>,
    ) {
        // Nothing is folded until the target says how far it got.
        log.hold_history_from(0);
        let (stop, stopped) = watch::channel(false);
        let state = Arc::new(SinkState {
            id,
            connector,
            log: log.clone(),
            stats: Mutex::new(SinkStats::default()),
            stop,
        });
        self.lock().insert(id, state.clone());
        let delivery = Delivery {
            state,
            log,
            spec,
            options,
        };
        tokio::spawn(delivery.run(stopped));
    }

    /// Stops sink `id` and deletes its log (it was dropped).
    pub fn remove(&self, id: GlobalId) {
        if let Some(state) = self.lock().remove(&id) {
            state.stop.send_replace(true);
        }
        self.logs.remove(id);
    }

    /// Each sink's delivery, for `fluxion_catalog.sink_stats`.
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
    async fn deliver(&self) -> Result<(), PipelineError> {
        let options = SourceOptions::new(self.options.clone());
        let mut connection = connectors::open_sink(&self.spec, &options).await?;
        let resumed = connection.resume().await?;
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
            connection.progress(upper).await?;
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
                return Err(PipelineError::Internal(
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
    ) -> Result<(), PipelineError> {
        if batches.is_empty() {
            return Ok(());
        }
        connection.deliver(batches).await?;
        let delivered = *rows as u64;
        self.state.update(|stats| stats.rows_delivered += delivered);
        batches.clear();
        *rows = 0;
        Ok(())
    }
}
