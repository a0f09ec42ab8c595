//! What can go wrong executing a statement, in terms a client can act on.
//!
//! Errors in SQL's own terms (syntax, unknown names, types, values) are the front end's
//! [`SqlError`]; the coordinator adds what only it can tell (constraints, transactions,
//! catalog conflicts, storage, connectors). Each variant is one kind of failure; the server
//! maps variants to SQLSTATE codes once, at the protocol edge.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use sql::SqlError;

/// An error of the coordinator.
#[derive(Debug, thiserror::Error)]
pub enum CoordError {
    /// The statement is wrong in SQL's own terms (see [`SqlError`]).
    #[error(transparent)]
    Sql(#[from] SqlError),
    /// An object of that name exists already.
    #[error("{kind} \"{name}\" already exists")]
    DuplicateObject {
        /// Its kind.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// The object exists but is of another kind than the statement needs.
    #[error("\"{name}\" is not {expected}")]
    WrongObjectType {
        /// The object.
        name: String,
        /// What the statement needed ("a table", "a view", …).
        expected: &'static str,
        /// What to do instead.
        hint: Option<String>,
    },
    /// Dropping would leave dependent objects dangling.
    #[error("cannot drop {name} because other objects depend on it")]
    DependentObjects {
        /// The object to drop.
        name: String,
        /// The objects depending on it.
        dependents: Vec<String>,
    },
    /// The object cannot be dropped: the system needs it (the bootstrap role).
    #[error("cannot drop {0} because it is required by the database system")]
    RequiredBySystem(String),
    /// The session's role may not do this.
    #[error("{0}")]
    InsufficientPrivilege(String),
    /// A GRANT or REVOKE that cannot be: a privilege the object does not have, a grant
    /// option for PUBLIC.
    #[error("{0}")]
    InvalidGrant(String),
    /// As many queries compute as may (see `running_queries`).
    #[error(
        "too many queries are computing at once ({limit}, --max-running-queries): close open \
         portals and cursors, or try again"
    )]
    TooManyQueries {
        /// The limit.
        limit: usize,
    },
    /// A role owns objects or holds privileges, so it cannot be dropped.
    #[error("role \"{role}\" cannot be dropped because some objects depend on it")]
    RoleInUse {
        /// The role.
        role: String,
        /// What depends on it (`owner of table t`, `privileges for view v`).
        dependents: Vec<String>,
    },
    /// A REVOKE without CASCADE of privileges the grantee granted on.
    #[error("dependent privileges exist")]
    DependentPrivileges,
    /// The object is in use by the session itself (its own role).
    #[error("{0}")]
    ObjectInUse(String),
    /// A name PostgreSQL keeps for itself (`pg_…` roles, `public`).
    #[error("{message}")]
    ReservedName {
        /// What is wrong.
        message: String,
        /// Why the name is reserved.
        detail: Option<String>,
    },
    /// A primary key or unique index key value exists already.
    #[error("duplicate key value violates unique constraint \"{constraint}\"")]
    UniqueViolation {
        /// The constraint's name (`<table>_pkey`, or the unique index's).
        constraint: String,
        /// `Key (id)=(1) already exists.`
        detail: String,
    },
    /// `ON CONFLICT (columns)` names no unique key of the table.
    #[error("there is no unique or exclusion constraint matching the ON CONFLICT specification")]
    NoConflictArbiter,
    /// A unique index cannot be created: the rows have a key twice.
    #[error("could not create unique index \"{index}\"")]
    UniqueIndexBroken {
        /// The index's name.
        index: String,
        /// `Key (b)=(1) is duplicated.`
        detail: String,
    },
    /// NULL in a NOT NULL column.
    #[error(
        "null value in column \"{column}\" of relation \"{relation}\" violates not-null constraint"
    )]
    NotNullViolation {
        /// The column.
        column: String,
        /// The relation.
        relation: String,
    },
    /// The transaction failed earlier; only ROLLBACK is accepted.
    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,
    /// The statement cannot run inside a transaction block.
    #[error("{0} cannot run inside a transaction block")]
    InTransactionBlock(&'static str),
    /// A new item's name names no schema, and none of the search path exists.
    #[error("no schema has been selected to create in")]
    NoSchemaSelected,
    /// The statement can only run inside a transaction block.
    #[error("{0} can only be used in transaction blocks")]
    NoTransaction(&'static str),
    /// A concurrent write made this transaction's reads stale.
    #[error("could not serialize access due to concurrent update of \"{0}\"")]
    SerializationFailure(String),
    /// A write that read without the sequencer found, at its commit, that what it read has
    /// changed (`checkable`: whether running it the same way again may succeed). Such a
    /// write is run again; a client sees this only if that breaks.
    #[error("could not serialize access due to a concurrent write")]
    WriteConflict {
        /// Whether its reads could be checked at all.
        checkable: bool,
    },
    /// A source's connector refused its options or columns.
    #[error("{0}")]
    InvalidSourceOption(String),
    /// A statement waited for a lock longer than the session's `lock_timeout`.
    #[error("canceling statement due to lock timeout")]
    LockTimeout,
    /// The client cancelled the statement (CancelRequest, `pg_cancel_backend`).
    #[error("canceling statement due to user request")]
    Canceled,
    /// A statement ran longer than the session's `statement_timeout`.
    #[error("canceling statement due to statement timeout")]
    StatementTimeout,
    /// `SET` of a value the setting does not take.
    #[error("invalid value for parameter \"{name}\": \"{value}\"")]
    InvalidParameterValue {
        /// The setting.
        name: String,
        /// The value refused.
        value: String,
    },
    /// `SET` of a setting no session may change.
    #[error("{0}")]
    CannotChangeSetting(String),
    /// A read or subscription asked for a time whose history is no longer kept.
    #[error("{0}")]
    HistoryUnavailable(String),
    /// A subscriber did not take its rows and fell too far behind.
    #[error("the subscriber fell behind by {queued_rows} rows and was disconnected from the subscription; subscribe again AS OF the last _timestamp it received + 1")]
    SubscriberTooSlow {
        /// The rows that were waiting.
        queued_rows: usize,
    },
    /// An outside system (a sink's target) could not be reached.
    #[error("{0}")]
    ConnectionFailure(String),
    /// The disk is full: the statement's changes were not logged, and nothing of them
    /// counts; later statements succeed once there is space.
    #[error("{0}")]
    DiskFull(String),
    /// The durable log or catalog failed.
    #[error("storage error: {0}")]
    Storage(String),
    /// An invariant broke inside Fluxion.
    #[error("internal error: {0}")]
    Internal(String),
}

impl CoordError {
    /// The session's role may not do what the statement asks (42501).
    pub(crate) fn insufficient_privilege(message: impl Into<String>) -> Self {
        CoordError::InsufficientPrivilege(message.into())
    }

    /// A valid request Fluxion does not support (yet).
    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        CoordError::Sql(SqlError::Unsupported(message.into()))
    }

    /// A statement wrong in some other way (a bad argument, a misuse).
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        CoordError::Sql(SqlError::InvalidStatement(message.into()))
    }

    /// A value that does not fit its type.
    pub(crate) fn invalid_value(message: impl Into<String>) -> Self {
        CoordError::Sql(SqlError::InvalidValue(message.into()))
    }

    /// A `kind` called `name` that does not exist.
    pub(crate) fn unknown(kind: &'static str, name: impl Into<String>) -> Self {
        CoordError::Sql(SqlError::UnknownObject {
            kind,
            name: name.into(),
        })
    }

    /// A column that does not exist.
    pub(crate) fn unknown_column(message: impl Into<String>) -> Self {
        CoordError::Sql(SqlError::UnknownColumn(message.into()))
    }
}

impl From<ArrowError> for CoordError {
    fn from(e: ArrowError) -> Self {
        CoordError::Sql(e.into())
    }
}

impl From<DataFusionError> for CoordError {
    fn from(e: DataFusionError) -> Self {
        CoordError::Sql(e.into())
    }
}

impl From<storage::StorageError> for CoordError {
    fn from(e: storage::StorageError) -> Self {
        if e.is_disk_full() {
            CoordError::DiskFull(e.to_string())
        } else {
            CoordError::Storage(e.to_string())
        }
    }
}

impl From<pipelines::PipelineError> for CoordError {
    fn from(e: pipelines::PipelineError) -> Self {
        use pipelines::PipelineError;
        match e {
            PipelineError::SubscriberTooSlow { queued_rows } => {
                CoordError::SubscriberTooSlow { queued_rows }
            }
            PipelineError::HistoryUnavailable(message) => CoordError::HistoryUnavailable(message),
            PipelineError::Unsupported(message) => CoordError::unsupported(message),
            PipelineError::Arrow(e) => e.into(),
            PipelineError::Storage(e) => e.into(),
            PipelineError::Compute(e) => e.into(),
            PipelineError::Connector(connectors::ConnectorError::Upstream(message)) => {
                CoordError::ConnectionFailure(message)
            }
            PipelineError::Connector(e) => CoordError::InvalidSourceOption(e.to_string()),
            PipelineError::Internal(message) => CoordError::Internal(message),
        }
    }
}

impl From<compute::ComputeError> for CoordError {
    fn from(e: compute::ComputeError) -> Self {
        match e {
            compute::ComputeError::InvalidPlan(msg) => CoordError::unsupported(msg),
            compute::ComputeError::Stopped(msg) => CoordError::Sql(SqlError::ViewStopped(msg)),
            compute::ComputeError::Compacted { time, since, .. } => CoordError::HistoryUnavailable(
                format!("time {time} is no longer available: history is kept from {since} on"),
            ),
            compute::ComputeError::SubscriberTooSlow { buffered } => {
                CoordError::SubscriberTooSlow {
                    queued_rows: buffered,
                }
            }
            other => CoordError::Internal(other.to_string()),
        }
    }
}
