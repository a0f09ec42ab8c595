//! The running sources: their positions, counters and the handles that stop them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use connectors::Webhook;
use repr::GlobalId;
use system_catalog::SourceStatus;

use super::ingest::SourceWiring;

/// How often the rows/s figure is refreshed.
const RATE_WINDOW_SECS: f64 = 5.0;

/// A source's counters (`fluxion_catalog.source_stats` shows them).
#[derive(Debug, Clone)]
pub struct SourceStats {
    /// The connector (`counter`, `nexmark`, …).
    pub connector: String,
    /// `running`, `ended` or `failed`.
    pub status: &'static str,
    /// Rows made durable since the source was created (this process counts from recovery).
    pub rows: u64,
    /// Bytes of those rows (Arrow memory size).
    pub bytes: u64,
    /// Records that could not become rows.
    pub errors: u64,
    /// Batches committed.
    pub batches: u64,
    /// The position after the last durable batch.
    pub position: Option<String>,
    /// Rows per second over the last few seconds.
    pub rows_per_second: f64,
    /// How far behind the upstream's head the source was after its last batch, where the
    /// upstream can tell.
    pub lag: Option<u64>,
    /// Why the source stopped, if it failed.
    pub last_error: Option<String>,
    /// When the last batch was committed.
    pub last_batch_at: Option<SystemTime>,
    window_started: Instant,
    window_rows: u64,
}

impl SourceStats {
    fn new(connector: &str, position: Option<String>) -> Self {
        Self {
            connector: connector.to_string(),
            status: "running",
            rows: 0,
            bytes: 0,
            errors: 0,
            batches: 0,
            position,
            rows_per_second: 0.0,
            lag: None,
            last_error: None,
            last_batch_at: None,
            window_started: Instant::now(),
            window_rows: 0,
        }
    }

    /// Counts one committed batch, after which the source was `lag` behind its upstream.
    pub fn record_batch(
        &mut self,
        rows: u64,
        bytes: u64,
        errors: u64,
        position: String,
        lag: Option<u64>,
    ) {
        self.lag = lag.or(self.lag);
        self.rows += rows;
        self.bytes += bytes;
        self.errors += errors;
        self.batches += 1;
        self.position = Some(position);
        self.last_batch_at = Some(SystemTime::now());
        self.window_rows += rows;
        let elapsed = self.window_started.elapsed().as_secs_f64();
        if elapsed >= RATE_WINDOW_SECS {
            self.rows_per_second = self.window_rows as f64 / elapsed;
            self.window_rows = 0;
            self.window_started = Instant::now();
        }
    }

    /// What `fluxion_catalog` shows of source `id`.
    fn status(&self, id: GlobalId) -> SourceStatus {
        SourceStatus {
            id,
            connector: self.connector.clone(),
            status: self.status,
            rows: self.rows,
            bytes: self.bytes,
            errors: self.errors,
            batches: self.batches,
            position: self.position.clone(),
            rows_per_second: self.rows_per_second,
            lag: self.lag,
            last_error: self.last_error.clone(),
            last_batch_at: self.last_batch_at,
        }
    }
}

/// One source's entry.
struct Entry {
    stats: SourceStats,
    /// Set to stop the source's reader and ingest task.
    stop: Arc<AtomicBool>,
    /// Set by the reader thread when it has ended (and let go of the upstream).
    exited: Arc<AtomicBool>,
    /// A webhook source's decoder and where its requests' rows go.
    webhook: Option<(Arc<Webhook>, SourceWiring)>,
}

/// Every source of the catalog, by id.
#[derive(Default)]
pub struct SourceRegistry {
    entries: Mutex<BTreeMap<GlobalId, Entry>>,
}

impl std::fmt::Debug for SourceRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceRegistry").finish_non_exhaustive()
    }
}

impl SourceRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<GlobalId, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a source resuming after `position`; returns the flag that stops it and the
    /// flag its reader sets when it has ended. A source registered again (restarted with new
    /// outputs) stops its old reader and keeps its statistics.
    pub fn register(
        &self,
        id: GlobalId,
        connector: &str,
        position: Option<String>,
    ) -> (Arc<AtomicBool>, Arc<AtomicBool>) {
        let stop = Arc::new(AtomicBool::new(false));
        let exited = Arc::new(AtomicBool::new(false));
        let mut entries = self.lock();
        let stats = match entries.remove(&id) {
            Some(old) => {
                old.stop.store(true, Ordering::Release);
                SourceStats {
                    status: "running",
                    position,
                    ..old.stats
                }
            }
            None => SourceStats::new(connector, position),
        };
        entries.insert(
            id,
            Entry {
                stats,
                stop: stop.clone(),
                exited: exited.clone(),
                webhook: None,
            },
        );
        (stop, exited)
    }

    /// Asks source `id`'s reader to stop (it stays registered); returns the flag the reader
    /// sets once it has ended.
    pub fn stop_reader(&self, id: GlobalId) -> Option<Arc<AtomicBool>> {
        let entries = self.lock();
        let entry = entries.get(&id)?;
        entry.stop.store(true, Ordering::Release);
        Some(entry.exited.clone())
    }

    /// Makes registered source `id` receive webhook requests with `webhook`.
    pub fn set_webhook(&self, id: GlobalId, webhook: Webhook, wiring: SourceWiring) {
        if let Some(entry) = self.lock().get_mut(&id) {
            entry.webhook = Some((Arc::new(webhook), wiring));
        }
    }

    /// Webhook source `id`'s decoder and wiring, if it is a running webhook source.
    pub fn webhook(&self, id: GlobalId) -> Option<(Arc<Webhook>, SourceWiring)> {
        self.lock().get(&id)?.webhook.clone()
    }

    /// The position after source `id`'s last durable batch.
    pub fn position(&self, id: GlobalId) -> Option<String> {
        self.lock().get(&id)?.stats.position.clone()
    }

    /// Stops a source and forgets it.
    pub fn remove(&self, id: GlobalId) {
        if let Some(entry) = self.lock().remove(&id) {
            entry.stop.store(true, Ordering::Release);
        }
    }

    /// Stops every source (at shutdown).
    pub fn stop_all(&self) {
        for entry in self.lock().values() {
            entry.stop.store(true, Ordering::Release);
        }
    }

    /// Changes a source's statistics.
    pub fn update(&self, id: GlobalId, change: impl FnOnce(&mut SourceStats)) {
        if let Some(entry) = self.lock().get_mut(&id) {
            change(&mut entry.stats);
        }
    }

    /// Every source's statistics, for `fluxion_catalog.sources` and `source_stats`.
    pub fn snapshot(&self) -> Vec<SourceStatus> {
        self.lock()
            .iter()
            .map(|(id, e)| e.stats.status(*id))
            .collect()
    }

    /// The position of every source that has one (stored with each checkpoint).
    pub fn positions(&self) -> Vec<(GlobalId, String)> {
        self.lock()
            .iter()
            .filter_map(|(id, e)| Some((*id, e.stats.position.clone()?)))
            .collect()
    }
}
