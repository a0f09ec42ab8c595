//! Running pipelines: the runtime of subscriptions, streams, sinks and sources.
//!
//! The coordinator decides what runs (DDL, the catalog, recovery, planning) and commits
//! (the sequencer, the timestamp oracle, the WAL); this crate owns what runs once started:
//! the tasks that move a subscription's output to its subscriber, the stream logs, the
//! loggers of durable subscriptions, the sinks' delivery and the sources' ingest loops.
//! The coordinator asks it to start and stop them, and hands it what it needs through
//! small traits; nothing here knows SQL or the catalog.

mod durable_subscriptions;
mod error;
mod sinks;
mod sources;
mod streams;
mod subscription;

pub use durable_subscriptions::{DurableSubscriptions, OpenedLog, SubscriptionLog};
pub use error::PipelineError;
pub use sinks::Sinks;
pub use sources::{
    bad_record_rows, fits_error_table, fits_late_table, late_event_rows, spawn_ingest, Observed,
    SourceCommitter, SourceRegistry, SourceStats, SourceWiring, WatermarkTracker,
    DEFAULT_IDLE_TIMEOUT, ERROR_TABLE_OPTION, IDLE_TIMEOUT_OPTION, LATE_TABLE_OPTION,
};
pub use streams::{StreamScan, StreamWrite, Streams};
pub use subscription::{output_schema, DataflowGuard, OutputShape, Subscription};
