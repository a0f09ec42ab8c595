//! What can go wrong executing a statement, in terms a client can act on.
//!
//! Each variant is one kind of failure; the server maps variants to SQLSTATE codes once, at
//! the protocol edge.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use sql::SqlError;

/// An error of the coordinator.
#[derive(Debug, thiserror::Error)]
pub enum CoordError {
    /// The SQL text does not parse.
    #[error("{0}")]
    Syntax(String),
    /// A relation, view or index that does not exist.
    #[error("{kind} \"{name}\" does not exist")]
    UnknownObject {
        /// What was looked for ("relation", "index", …).
        kind: &'static str,
        /// The name as given.
        name: String,
    },
    /// A column that does not exist.
    #[error("{0}")]
    UnknownColumn(String),
    /// An unqualified column name that matches several columns.
    #[error("{0}")]
    AmbiguousColumn(String),
    /// A column used outside GROUP BY or an aggregate.
    #[error("{0}")]
    GroupingError(String),
    /// A subquery used as a value returned more than one row.
    #[error("{0}")]
    CardinalityViolation(String),
    /// A function or operator that does not exist for these argument types.
    #[error("{0}")]
    UnknownFunction(String),
    /// An object of that name exists already.
    #[error("{kind} \"{name}\" already exists")]
    DuplicateObject {
        /// Its kind.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// A column name appears twice in one relation.
    #[error("column \"{0}\" specified more than once")]
    DuplicateColumn(String),
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
    /// A primary key value exists already.
    #[error("duplicate key value violates unique constraint \"{constraint}\"")]
    UniqueViolation {
        /// The constraint's name (`<table>_pkey`).
        constraint: String,
        /// `Key (id)=(1) already exists.`
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
    /// Division by zero while evaluating an expression.
    #[error("division by zero")]
    DivisionByZero,
    /// A value does not fit its type, or text does not parse as a value.
    #[error("{0}")]
    InvalidValue(String),
    /// A date or time whose fields are out of range (February 30th).
    #[error("date/time field value out of range: {0}")]
    DateTimeOutOfRange(String),
    /// A string longer than its column's declared length.
    #[error("{0}")]
    StringTooLong(String),
    /// A value too large for its type.
    #[error("{0}")]
    OutOfRange(String),
    /// Types that do not fit together.
    #[error("{0}")]
    TypeMismatch(String),
    /// A valid request that Fluxion does not support (yet).
    #[error("{0}")]
    Unsupported(String),
    /// A query that cannot be maintained incrementally.
    #[error("{0}")]
    NotIncremental(String),
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
    /// The statement is wrong in some other way (bad argument, misuse).
    #[error("{0}")]
    InvalidStatement(String),
    /// A source's connector refused its options or columns.
    #[error("{0}")]
    InvalidSourceOption(String),
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
    /// The durable log or catalog failed.
    #[error("storage error: {0}")]
    Storage(String),
    /// An invariant broke inside Fluxion.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<SqlError> for CoordError {
    fn from(e: SqlError) -> Self {
        match e {
            SqlError::DataFusion(e) => e.into(),
            e @ SqlError::NotIncremental { .. } => CoordError::NotIncremental(e.to_string()),
            SqlError::UnknownType(name) => CoordError::UnknownObject { kind: "type", name },
            e @ SqlError::Unsupported(_) => CoordError::Unsupported(e.to_string()),
        }
    }
}

impl From<ArrowError> for CoordError {
    fn from(e: ArrowError) -> Self {
        classify_arrow(&e)
    }
}

impl From<DataFusionError> for CoordError {
    fn from(e: DataFusionError) -> Self {
        classify_datafusion(e)
    }
}

impl From<storage::StorageError> for CoordError {
    fn from(e: storage::StorageError) -> Self {
        CoordError::Storage(e.to_string())
    }
}

impl From<compute::ComputeError> for CoordError {
    fn from(e: compute::ComputeError) -> Self {
        match e {
            compute::ComputeError::InvalidPlan(msg) => CoordError::Unsupported(msg),
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

/// Sorts DataFusion's errors into the kinds a client distinguishes.
fn classify_datafusion(e: DataFusionError) -> CoordError {
    let root = e.find_root();
    match root {
        DataFusionError::SQL(parse, _) => CoordError::Syntax(parse.to_string()),
        DataFusionError::ArrowError(arrow, _) => classify_arrow(arrow),
        DataFusionError::SchemaError(schema, _) => {
            let message = schema.to_string();
            if message.contains("No field named") {
                CoordError::UnknownColumn(rephrase_column_error(&message))
            } else if message.contains("Ambiguous reference") {
                CoordError::AmbiguousColumn(message)
            } else if message.contains("Schema contains duplicate") {
                CoordError::DuplicateColumn(message)
            } else {
                CoordError::InvalidStatement(message)
            }
        }
        DataFusionError::NotImplemented(message) => CoordError::Unsupported(message.clone()),
        DataFusionError::Plan(message) => classify_message(message),
        DataFusionError::Execution(message) => classify_message(message),
        DataFusionError::External(inner) => classify_message(&inner.to_string()),
        other => classify_message(&other.to_string()),
    }
}

fn classify_arrow(e: &ArrowError) -> CoordError {
    match e {
        ArrowError::DivideByZero => CoordError::DivisionByZero,
        ArrowError::CastError(m) if m.contains("Can't cast value") => {
            CoordError::OutOfRange(m.clone())
        }
        ArrowError::CastError(m) if m.contains("to value of Date32") && looks_like_a_date(m) => {
            CoordError::DateTimeOutOfRange(m.clone())
        }
        ArrowError::CastError(m) | ArrowError::ParseError(m) => CoordError::InvalidValue(m.clone()),
        ArrowError::ComputeError(m) if m.contains("Overflow") || m.contains("overflow") => {
            CoordError::OutOfRange(m.clone())
        }
        ArrowError::InvalidArgumentError(m) if m.contains("too large") => {
            CoordError::OutOfRange(m.clone())
        }
        ArrowError::ArithmeticOverflow(m) => CoordError::OutOfRange(m.clone()),
        other => classify_message(&other.to_string()),
    }
}

/// Whether the quoted value in a cast error has the shape `YYYY-MM-DD` (so the failure is a
/// field out of range, not malformed text).
fn looks_like_a_date(message: &str) -> bool {
    let Some(value) = message.split('\'').nth(1) else {
        return false;
    };
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() == 3
        && parts[0].len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

fn classify_message(message: &str) -> CoordError {
    let lower = message.to_lowercase();
    if lower.contains("divide by zero") || lower.contains("division by zero") {
        CoordError::DivisionByZero
    } else if lower.contains("non-boolean predicate") {
        CoordError::TypeMismatch(message.to_string())
    } else if lower.contains("aggregate functions are not allowed") {
        CoordError::GroupingError(message.to_string())
    } else if lower.contains("different number of columns")
        || lower.contains("must have the same number of columns")
    {
        CoordError::Syntax(message.to_string())
    } else if lower.contains("must be aggregated") {
        CoordError::Unsupported(format!(
            "{message} (a correlated scalar subquery must aggregate)"
        ))
    } else if lower.contains("more than one row") {
        CoordError::CardinalityViolation(
            "more than one row returned by a subquery used as an expression".into(),
        )
    } else if lower.contains("must be in group by") || lower.contains("must appear in the group by")
    {
        CoordError::GroupingError(rephrase_grouping_error(message))
    } else if let Some((kind, name)) = missing_object(message) {
        CoordError::UnknownObject { kind, name }
    } else if lower.starts_with("unrecognized configuration parameter") {
        CoordError::UnknownObject {
            kind: "configuration parameter",
            name: message.split('"').nth(1).unwrap_or_default().to_string(),
        }
    } else if let Some(name) = missing_table(message) {
        CoordError::UnknownObject {
            kind: "relation",
            name,
        }
    } else if lower.contains("invalid function")
        || lower.contains("no function matches")
        || lower.contains("cannot coerce")
        || lower.contains("failed to match any signature")
    {
        CoordError::UnknownFunction(message.to_string())
    } else if lower.contains("overflow") || lower.contains("out of range") {
        CoordError::OutOfRange(message.to_string())
    } else if lower.contains("cannot cast")
        || lower.contains("cast error")
        || lower.contains("parse")
    {
        CoordError::InvalidValue(message.to_string())
    } else if lower.contains("coercion")
        || lower.contains("cannot infer common")
        || lower.contains("type")
    {
        CoordError::TypeMismatch(message.to_string())
    } else {
        CoordError::InvalidStatement(message.to_string())
    }
}

/// `relation "x" does not exist` (and the same of types, functions, schemas, roles), as
/// Fluxion's own functions phrase it, → the kind and the name.
fn missing_object(message: &str) -> Option<(&'static str, String)> {
    let (kind, rest) = message.split_once(" \"")?;
    let (name, tail) = rest.rsplit_once('"')?;
    if tail != " does not exist" {
        return None;
    }
    let kind = match kind {
        "relation" => "relation",
        "type" => "type",
        "function" => "function",
        "schema" => "schema",
        "role" => "role",
        _ => return None,
    };
    Some((kind, name.to_string()))
}

/// `table 'fluxion.public.x' not found` → `x`.
fn missing_table(message: &str) -> Option<String> {
    let rest = message.strip_prefix("table '")?;
    let name = rest.split('\'').next()?;
    Some(name.rsplit('.').next().unwrap_or(name).to_string())
}

/// Postgres's message for a column used outside GROUP BY: `column "t.c" must appear in the
/// GROUP BY clause or be used in an aggregate function` (DataFusion's names the schema too).
fn rephrase_grouping_error(message: &str) -> String {
    let column = message
        .split("column \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next());
    match column {
        Some(column) => {
            let parts: Vec<&str> = column.split('.').collect();
            let relation_and_column = parts[parts.len().saturating_sub(2)..].join(".");
            format!(
                "column \"{relation_and_column}\" must appear in the GROUP BY clause or be used in an aggregate function"
            )
        }
        None => message.to_string(),
    }
}

fn rephrase_column_error(message: &str) -> String {
    match message.split("No field named ").nth(1) {
        Some(rest) => {
            let name = rest
                .split(['\n', ' '])
                .next()
                .unwrap_or(rest)
                .trim_end_matches('.')
                .replace('"', "");
            // Postgres quotes a bare name but not a qualified one.
            if name.contains('.') {
                format!("column {name} does not exist")
            } else {
                format!("column \"{name}\" does not exist")
            }
        }
        None => message.to_string(),
    }
}
