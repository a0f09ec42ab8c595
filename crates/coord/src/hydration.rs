//! Progress of dataflows being built (hydrated): a materialized view's or an index's, when it
//! is created and when a restart rebuilds it. A build has two phases: *feeding*, while the
//! streams it reads send it their history (see [`crate::streams`]; the arranged relations it
//! reads it takes at once), then *computing*, until its frontier passes the time it was fed
//! through. `fluxion_catalog.hydration` shows the builds under way, a client that waits for
//! one hears of it in a NOTICE every few seconds, and the log says how far each has got.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use compute::Frontiers;
use repr::{GlobalId, Timestamp};
use system_catalog::{HydrationStatus, SourceSnapshot};

use crate::coordinator::Coordinator;
use crate::session::{LiveNotices, Notice, Session};

/// How often a waiting client hears how far a build has got, and the log too.
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_secs(2);

/// The builds under way.
#[derive(Debug, Default)]
pub(crate) struct Hydrations {
    building: Mutex<BTreeMap<GlobalId, Build>>,
}

/// One build's progress.
#[derive(Clone, Debug)]
struct Build {
    started: Instant,
    /// Rows fed so far: the arranged inputs' at once, the streams' as their logs are read.
    rows_fed: u64,
    /// Bytes of stream history to read, and read so far (how far feeding has got).
    stream_bytes: u64,
    stream_bytes_read: u64,
    /// Whether every stream's rows are counted in `rows_fed` (the total is then known).
    streams_read: bool,
    /// Once fed: the time the dataflow's frontier must pass to be built.
    fed_through: Option<Timestamp>,
}

impl Hydrations {
    /// Starts tracking `id`'s build: `arranged_rows` rows of arranged inputs, fed at once,
    /// and `stream_bytes` bytes of stream history to feed. Builds that have finished since
    /// the last look (a subscription's, which nobody reads here) are forgotten first.
    pub fn begin(
        &self,
        id: GlobalId,
        arranged_rows: u64,
        stream_bytes: u64,
        frontiers: &Frontiers,
    ) {
        let mut building = self.lock();
        forget_finished(&mut building, frontiers);
        building.insert(
            id,
            Build {
                started: Instant::now(),
                rows_fed: arranged_rows,
                stream_bytes,
                stream_bytes_read: 0,
                streams_read: stream_bytes == 0,
                fed_through: None,
            },
        );
    }

    /// Counts `rows` more fed to `id`, its streams read through `bytes_read` bytes in all.
    pub fn fed(&self, id: GlobalId, rows: u64, bytes_read: u64) {
        if let Some(build) = self.lock().get_mut(&id) {
            build.rows_fed += rows;
            build.stream_bytes_read = bytes_read.min(build.stream_bytes);
        }
    }

    /// Records that `id` has been fed all its input, through time `through`.
    pub fn fed_all(&self, id: GlobalId, through: Timestamp) {
        if let Some(build) = self.lock().get_mut(&id) {
            build.streams_read = true;
            build.stream_bytes_read = build.stream_bytes;
            build.fed_through = Some(through);
        }
    }

    /// Stops tracking `id` (dropped, or its build failed).
    pub fn forget(&self, id: GlobalId) {
        self.lock().remove(&id);
    }

    /// Whether `id` is being built (asked for every relation a query reads: most are not
    /// tracked, which is told without reading the frontiers).
    pub fn is_building(&self, id: GlobalId, frontiers: &Frontiers) -> bool {
        if !self.lock().contains_key(&id) {
            return false;
        }
        self.status(frontiers).iter().any(|status| status.id == id)
    }

    /// The builds under way; those whose frontier has passed the time they were fed through
    /// are finished, and forgotten here.
    pub fn status(&self, frontiers: &Frontiers) -> Vec<HydrationStatus> {
        let mut building = self.lock();
        forget_finished(&mut building, frontiers);
        building
            .iter()
            .map(|(id, build)| build.status(*id))
            .collect()
    }

    /// Runs `work` (which builds `id`, or waits for it), sending `notices` how far the build
    /// has got every [`PROGRESS_INTERVAL`] while it runs; `what` names the object.
    pub async fn reporting<T>(
        &self,
        id: GlobalId,
        what: &str,
        frontiers: &Frontiers,
        notices: &LiveNotices,
        work: impl Future<Output = T>,
    ) -> T {
        tokio::pin!(work);
        let mut ticks = tokio::time::interval_at(
            tokio::time::Instant::now() + PROGRESS_INTERVAL,
            PROGRESS_INTERVAL,
        );
        loop {
            tokio::select! {
                output = &mut work => return output,
                _ = ticks.tick() => {
                    let status = self.status(frontiers).into_iter().find(|s| s.id == id);
                    if let Some(status) = status {
                        notices.send(Notice {
                            severity: "NOTICE",
                            code: "00000",
                            message: format!("{what} is being built: {}", describe(&status)),
                        });
                    }
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<GlobalId, Build>> {
        self.building.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Coordinator {
    /// Runs `build` (of `id`, named `what`), telling `session`'s client how far it has got
    /// while it runs (see [`Hydrations::reporting`]).
    pub(crate) async fn reporting_build<T>(
        &self,
        session: &Session,
        id: GlobalId,
        what: &str,
        build: impl Future<Output = T>,
    ) -> T {
        let notices = session.live_notices();
        let frontiers = self.compute.frontiers();
        self.hydrations
            .reporting(id, what, frontiers, &notices, build)
            .await
    }
}

impl Build {
    fn status(&self, id: GlobalId) -> HydrationStatus {
        let (phase, progress) = match self.fed_through {
            Some(_) => ("computing", None),
            None if self.stream_bytes == 0 => ("feeding", Some(1.0)),
            None => (
                "feeding",
                Some(self.stream_bytes_read as f64 / self.stream_bytes as f64),
            ),
        };
        let rows_total = self.streams_read.then_some(self.rows_fed);
        let elapsed = self.started.elapsed();
        progress_status(id, phase, self.rows_fed, rows_total, progress, elapsed)
    }
}

/// Forgets the builds whose frontier has passed the time they were fed through, and those
/// of dataflows that are gone.
fn forget_finished(building: &mut BTreeMap<GlobalId, Build>, frontiers: &Frontiers) {
    let frontiers = frontiers.all();
    building.retain(|id, build| match (build.fed_through, frontiers.get(id)) {
        (Some(through), Some(frontier)) => frontier.upper <= through,
        (_, frontier) => frontier.is_some(),
    });
}

/// What `hydration` shows of a source reading its initial snapshot of its upstream.
pub(crate) fn snapshot_status(id: GlobalId, snapshot: &SourceSnapshot) -> HydrationStatus {
    let progress = snapshot
        .rows_estimated
        .filter(|estimated| *estimated > 0)
        .map(|estimated| (snapshot.rows_read as f64 / estimated as f64).min(1.0));
    let elapsed = snapshot.started.elapsed().unwrap_or_default();
    let rows_total = snapshot.rows_estimated;
    progress_status(
        id,
        "snapshot",
        snapshot.rows_read,
        rows_total,
        progress,
        elapsed,
    )
}

/// A row of `hydration`: `rows_done` of `rows_total` in `elapsed`, `progress` of the way
/// there; the rate and the time left follow from them.
fn progress_status(
    id: GlobalId,
    phase: &'static str,
    rows_done: u64,
    rows_total: Option<u64>,
    progress: Option<f64>,
    elapsed: Duration,
) -> HydrationStatus {
    let remaining_ms = progress
        .filter(|p| *p > 0.0)
        .map(|p| (elapsed.as_millis() as f64 * (1.0 - p) / p) as i64);
    HydrationStatus {
        id,
        phase,
        rows_done: rows_done as i64,
        rows_total: rows_total.map(|rows| rows as i64),
        progress,
        rows_per_second: rows_done as f64 / elapsed.as_secs_f64().max(1e-3),
        elapsed_ms: elapsed.as_millis() as i64,
        remaining_ms,
    }
}

/// A build's progress in words, for notices and the log.
pub(crate) fn describe(status: &HydrationStatus) -> String {
    let elapsed = status.elapsed_ms as f64 / 1000.0;
    match (status.phase, status.progress, status.remaining_ms) {
        ("feeding", Some(progress), Some(remaining)) => format!(
            "{} rows fed ({:.0}% of its input), {elapsed:.0} s so far, about {:.0} s left",
            status.rows_done,
            progress * 100.0,
            remaining as f64 / 1000.0
        ),
        ("feeding", ..) => format!("{} rows fed, {elapsed:.0} s so far", status.rows_done),
        _ => format!(
            "all {} rows of its input fed, computing, {elapsed:.0} s so far",
            status.rows_done
        ),
    }
}
