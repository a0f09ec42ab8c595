use datafusion::error::DataFusionError;

/// What can go wrong while planning or lowering SQL.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// DataFusion rejected the statement (parse, bind, type or execution error).
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    /// The query is valid SQL but cannot be maintained incrementally (yet).
    #[error("{construct} is not supported in a materialized view: {reason}")]
    NotIncremental {
        /// The construct, as a user would name it.
        construct: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A type name that has no column representation.
    #[error("type \"{0}\" does not exist")]
    UnknownType(String),
    /// A feature the SQL surface does not offer.
    #[error("{0} is not supported")]
    Unsupported(String),
}

impl SqlError {
    pub(crate) fn not_incremental(construct: impl Into<String>, reason: impl Into<String>) -> Self {
        SqlError::NotIncremental {
            construct: construct.into(),
            reason: reason.into(),
        }
    }
}
