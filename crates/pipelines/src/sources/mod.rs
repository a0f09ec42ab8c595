//! Running sources: their registry and statistics, the ingest loop that reads a source and
//! has its batches committed, the flow control that keeps a source from running ahead of the
//! dataflows reading it, the rows of bad records, and event time (watermarks and late rows).

mod errors;
mod flow_control;
mod ingest;
mod registry;
mod watermark;

pub use errors::{bad_record_rows, fits_error_table, ERROR_TABLE_OPTION};
pub use ingest::{spawn_ingest, SourceCommitter, SourceWiring};
pub use registry::{SourceRegistry, SourceStats};
pub use watermark::{
    fits_late_table, late_event_rows, Observed, WatermarkTracker, DEFAULT_IDLE_TIMEOUT,
    IDLE_TIMEOUT_OPTION, LATE_TABLE_OPTION,
};
