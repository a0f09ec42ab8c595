//! What can go wrong in a connector.

/// A connector error: a bad option, or a failure reading the outside world.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// The `connector` option names no connector Fluxion has.
    #[error(
        "unknown connector \"{0}\" (known: counter, datagen, file, kafka, nexmark, postgres-cdc, webhook)"
    )]
    UnknownConnector(String),
    /// A required option is missing.
    #[error("option \"{option}\" is required by connector \"{connector}\"")]
    MissingOption {
        /// The connector.
        connector: String,
        /// The option.
        option: String,
    },
    /// An option the connector does not know.
    #[error("unknown option \"{option}\" for connector \"{connector}\"")]
    UnknownOption {
        /// The connector.
        connector: String,
        /// The option.
        option: String,
    },
    /// An option whose value cannot be used.
    #[error("invalid value for option \"{option}\": {reason}")]
    InvalidOption {
        /// The option.
        option: String,
        /// Why the value is not usable.
        reason: String,
    },
    /// The declared columns do not fit what the connector produces.
    #[error("{0}")]
    Schema(String),
    /// A stored resume position that cannot be read.
    #[error("invalid resume position \"{0}\"")]
    InvalidPosition(String),
    /// A `FORMAT`, `ENCODE` or `INCLUDE` that cannot be used.
    #[error("{0}")]
    InvalidFormat(String),
    /// The outside world could not be read (a file, a connection).
    #[error("{0}")]
    Upstream(String),
    /// The upstream PostgreSQL does not decode its WAL logically.
    #[error(
        "PostgreSQL has wal_level = {0}; logical replication needs wal_level = logical \
         (set it in postgresql.conf and restart the server)"
    )]
    WalLevelNotLogical(String),
    /// A table a source reads does not exist upstream.
    #[error("upstream table \"{0}\" does not exist")]
    UpstreamTableNotFound(String),
    /// A declared column that the upstream table does not have.
    #[error("upstream table \"{table}\" has no column \"{column}\"")]
    UpstreamColumnNotFound {
        /// The upstream table.
        table: String,
        /// The declared column.
        column: String,
    },
    /// Building a batch failed.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
}
