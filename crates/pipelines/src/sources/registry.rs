//! The running sources: their positions, counters and the handles that stop them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use connectors::{SnapshotProgress, Webhook};
use repr::GlobalId;
use system_catalog::{SourceSnapshot, SourceStatus};

use super::ingest::SourceWiring;

/// How often the rows/s figure is refreshed.
const RATE_WINDOW_SECS: f64 = 5.0;

/// A source's counters: what `fluxion_catalog.source_stats` shows, and the window its
/// rows/s figure is counted over.
#[derive(Debug, Clone)]
pub struct SourceStats {
    shown: SourceStatus,
    window_started: Instant,
    window_rows: u64,
}

impl SourceStats {
    fn new(id: GlobalId, connector: &str, position: Option<String>) -> Self {
        Self {
            shown: SourceStatus {
                id,
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
                late_rows: 0,
                watermark: None,
                snapshot: None,
            },
            window_started: Instant::now(),
            window_rows: 0,
        }
    }

    /// Records how far the source's initial snapshot has got.
    pub fn record_snapshot(&mut self, progress: SnapshotProgress) {
        let shown = &mut self.shown;
        // A snapshot under way goes on; otherwise one starts (a table joined the source).
        let started = match &shown.snapshot {
            Some(under_way) if !under_way.done => under_way.started,
            _ => SystemTime::now(),
        };
        shown.snapshot = Some(SourceSnapshot {
            rows_read: progress.rows_read,
            rows_estimated: progress.rows_estimated,
            started,
            done: progress.done,
        });
    }

    /// Counts one committed batch of `rows` rows, `late` of them late, after which the
    /// source was `lag` behind its upstream.
    pub fn record_batch(
        &mut self,
        rows: u64,
        bytes: u64,
        errors: u64,
        late: u64,
        lag: Option<u64>,
    ) {
        let shown = &mut self.shown;
        shown.lag = lag.or(shown.lag);
        shown.late_rows += late;
        shown.rows += rows;
        shown.bytes += bytes;
        shown.errors += errors;
        shown.batches += 1;
        shown.last_batch_at = Some(SystemTime::now());
        self.window_rows += rows;
        let elapsed = self.window_started.elapsed().as_secs_f64();
        if elapsed >= RATE_WINDOW_SECS {
            shown.rows_per_second = self.window_rows as f64 / elapsed;
            self.window_rows = 0;
            self.window_started = Instant::now();
        }
    }

    /// The source stopped because of `error`.
    pub fn fail(&mut self, error: String) {
        self.shown.status = "failed";
        self.shown.last_error = Some(error);
    }

    /// The source has nothing more to read.
    pub fn end(&mut self) {
        self.shown.status = "ended";
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
                let mut stats = old.stats;
                stats.shown.status = "running";
                stats.shown.position = position;
                stats
            }
            None => SourceStats::new(id, connector, position),
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

    /// Records that source `id`'s batches through `position` are durable and visible.
    pub fn set_position(&self, id: GlobalId, position: String) {
        if let Some(entry) = self.lock().get_mut(&id) {
            entry.stats.shown.position = Some(position);
        }
    }

    /// Records that source `id`'s watermark, durable and visible, is now `watermark`.
    pub fn set_watermark(&self, id: GlobalId, watermark: i64) {
        if let Some(entry) = self.lock().get_mut(&id) {
            let shown = &mut entry.stats.shown.watermark;
            *shown = Some(shown.map_or(watermark, |w| w.max(watermark)));
        }
    }

    /// Source `id`'s watermark, durable and visible.
    pub fn watermark(&self, id: GlobalId) -> Option<i64> {
        self.lock().get(&id)?.stats.shown.watermark
    }

    /// The watermark of every source that has one (stored with each checkpoint).
    pub fn watermarks(&self) -> Vec<(GlobalId, i64)> {
        self.lock()
            .iter()
            .filter_map(|(id, e)| Some((*id, e.stats.shown.watermark?)))
            .collect()
    }

    /// The position after source `id`'s last durable batch.
    pub fn position(&self, id: GlobalId) -> Option<String> {
        self.lock().get(&id)?.stats.shown.position.clone()
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
            .values()
            .map(|e| e.stats.shown.clone())
            .collect()
    }

    /// The position of every source that has one (stored with each checkpoint).
    pub fn positions(&self) -> Vec<(GlobalId, String)> {
        self.lock()
            .iter()
            .filter_map(|(id, e)| Some((*id, e.stats.shown.position.clone()?)))
            .collect()
    }
}
