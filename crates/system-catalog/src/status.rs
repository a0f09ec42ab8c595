//! The running system as `fluxion_catalog` shows it: plain rows, asked for through
//! [`SystemStatus`] whenever a query reads one of its relations.

use std::fmt::Debug;
use std::time::{Duration, SystemTime};

use repr::{GlobalId, Timestamp};

/// The live state of the running system; implemented by whoever runs it.
pub trait SystemStatus: Send + Sync + Debug {
    /// Every source's counters, in id order.
    fn sources(&self) -> Vec<SourceStatus>;
    /// Every durable subscription's log, in id order.
    fn subscriptions(&self) -> Vec<SubscriptionStatus>;
    /// Every running sink's delivery, in id order.
    fn sinks(&self) -> Vec<SinkStatus>;
    /// The rows each maintained view has left out, in id order.
    fn view_errors(&self) -> Vec<ViewErrors>;
    /// How far each arrangement has got, in id order.
    fn frontiers(&self) -> Vec<ArrangementFrontier>;
    /// How much each object's arrangements hold, in id order.
    fn arrangement_sizes(&self) -> Vec<ArrangementRecords>;
    /// Every materialized view's state and memory, in id order.
    fn views(&self) -> Vec<ViewStatus>;
    /// The dataflows being built, in id order.
    fn hydrations(&self) -> Vec<HydrationStatus>;
}

/// What `fluxion_catalog.sources` and `source_stats` show of one source.
#[derive(Clone, Debug)]
pub struct SourceStatus {
    /// The source.
    pub id: GlobalId,
    /// The connector (`counter`, `nexmark`, …).
    pub connector: String,
    /// `running`, `ended` or `failed`.
    pub status: &'static str,
    /// Rows made durable since the source was created (counted from this server's start).
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
    /// Rows that arrived behind the watermark (counted from this server's start).
    pub late_rows: u64,
    /// The event-time watermark (microseconds), for a source that declares one.
    pub watermark: Option<i64>,
    /// Its initial snapshot of the upstream, for a source that reads one (Postgres CDC).
    pub snapshot: Option<SourceSnapshot>,
}

/// How far a source's initial snapshot of its upstream has got.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceSnapshot {
    /// Rows read so far.
    pub rows_read: u64,
    /// About how many rows it has, where the upstream's statistics tell.
    pub rows_estimated: Option<u64>,
    /// When its first rows were made durable (after a restart, the first since).
    pub started: SystemTime,
    /// Whether it has been read whole.
    pub done: bool,
}

/// What `fluxion_catalog.subscriptions` shows of one durable subscription.
#[derive(Clone, Debug)]
pub struct SubscriptionStatus {
    /// The subscription.
    pub id: GlobalId,
    /// Every change before this time is logged.
    pub upper: Timestamp,
    /// The oldest `AS OF` the log serves (0 until the first changes are logged).
    pub earliest: Timestamp,
    /// How long the log keeps history.
    pub retention: Duration,
    /// The log's size.
    pub log_bytes: u64,
    /// The subscribers reading it.
    pub subscribers: usize,
    /// Why it stopped, if it did.
    pub failure: Option<String>,
}

/// What `fluxion_catalog.sink_stats` shows of one sink.
#[derive(Clone, Debug)]
pub struct SinkStatus {
    /// The sink.
    pub id: GlobalId,
    /// The connector (`file`, `kafka`, `postgres`).
    pub connector: String,
    /// Changes handed to the target since the server started.
    pub rows_delivered: u64,
    /// The last time the target holds for good.
    pub last_timestamp: Option<Timestamp>,
    /// The oldest time handed to the target that it does not hold for good yet.
    pub oldest_pending: Option<Timestamp>,
    /// Why delivery last failed, until it succeeds again.
    pub failure: Option<String>,
}

/// What `fluxion_catalog.view_errors` shows of one maintained view.
#[derive(Clone, Debug)]
pub struct ViewErrors {
    /// The view's dataflow.
    pub id: GlobalId,
    /// Rows currently left out because an expression failed on them.
    pub rows_left_out: i64,
    /// Failures so far.
    pub failures: u64,
    /// The most recent error message.
    pub last_error: String,
}

/// What `fluxion_catalog.frontiers` shows of one arrangement.
#[derive(Clone, Copy, Debug)]
pub struct ArrangementFrontier {
    /// The arrangement.
    pub id: GlobalId,
    /// Every update before this time is in it ([`Timestamp::MAX`] once closed for good).
    pub upper: Timestamp,
    /// Reads before this time are no longer possible.
    pub since: Timestamp,
    /// The event-time watermark (microseconds) of the object: a source's own, or the least
    /// of those of the sources a view reads; `None` where no source declares one.
    pub watermark: Option<i64>,
}

/// What `fluxion_catalog.arrangement_sizes` shows of one object: every arrangement its
/// dataflow keeps (its own and the internal ones of joins and aggregations), summed over the
/// workers.
#[derive(Clone, Copy, Debug)]
pub struct ArrangementRecords {
    /// The table, source, materialized view or index.
    pub id: GlobalId,
    /// Updates held, merges in progress included.
    pub records: i64,
    /// Batches held.
    pub batches: i64,
    /// Bytes the dataflow's state holds (spines, batchers, operators' own state).
    pub bytes: i64,
}

/// What `fluxion_catalog.hydration` shows of one dataflow being built.
#[derive(Clone, Debug, PartialEq)]
pub struct HydrationStatus {
    /// The materialized view or index.
    pub id: GlobalId,
    /// `feeding` while its input's history is sent to it, then `computing` until it has
    /// caught up; `snapshot` for a source reading its initial snapshot of its upstream.
    pub phase: &'static str,
    /// Rows of input fed so far.
    pub rows_done: i64,
    /// Rows of input in all, once known (when every stream it reads has been read).
    pub rows_total: Option<i64>,
    /// How much of its input has been fed, from 0 to 1 (`None` while computing).
    pub progress: Option<f64>,
    /// Rows fed per second since the build started.
    pub rows_per_second: f64,
    /// Milliseconds since the build started.
    pub elapsed_ms: i64,
    /// Estimated milliseconds until it is fed (`None` while computing).
    pub remaining_ms: Option<i64>,
}

/// What `fluxion_catalog.views` shows of one materialized view.
#[derive(Clone, Debug)]
pub struct ViewStatus {
    /// The view.
    pub id: GlobalId,
    /// Bytes its dataflow holds, as last reported (`None`: stopped, or nothing reported yet).
    pub bytes: Option<i64>,
    /// The most bytes its dataflow may hold (`None`: stopped).
    pub memory_budget: Option<usize>,
    /// Why it is stopped, if it is.
    pub stopped: Option<String>,
}
