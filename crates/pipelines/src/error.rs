//! What can go wrong in a running pipeline.

use datafusion::arrow::error::ArrowError;

/// An error of a running source, sink or subscription. The coordinator turns it into the
/// error its clients see.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// A subscriber did not take its rows and fell too far behind.
    #[error("the subscriber fell behind by {queued_rows} rows and was disconnected from the subscription; subscribe again AS OF the last _timestamp it received + 1")]
    SubscriberTooSlow {
        /// The rows that were waiting.
        queued_rows: usize,
    },
    /// A subscription asked for a time whose history is no longer kept.
    #[error("{0}")]
    HistoryUnavailable(String),
    /// Rows of a shape Fluxion cannot handle.
    #[error("{0}")]
    Unsupported(String),
    /// Output rows could not be put together.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    /// A log failed.
    #[error("storage error: {0}")]
    Storage(#[from] storage::StorageError),
    /// The dataflow engine failed.
    #[error(transparent)]
    Compute(#[from] compute::ComputeError),
    /// A connector failed (a sink's target could not be reached, or refused its options).
    #[error(transparent)]
    Connector(#[from] connectors::ConnectorError),
    /// An invariant broke inside Fluxion.
    #[error("internal error: {0}")]
    Internal(String),
}
