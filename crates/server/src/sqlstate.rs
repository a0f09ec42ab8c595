//! Coordinator errors as Postgres ErrorResponses: the one place SQLSTATE codes are chosen.

use coord::{CoordError, SqlError};
use pgwire::error::{ErrorInfo, PgWireError};

/// The SQLSTATE of an error.
pub(crate) fn sqlstate(error: &CoordError) -> &'static str {
    match error {
        CoordError::Sql(error) => sql_sqlstate(error),
        CoordError::DuplicateObject { kind: "cursor", .. } => "42P03",
        CoordError::DuplicateObject { kind: "schema", .. } => "42P06",
        CoordError::DuplicateObject { kind: "role", .. } => "42710",
        CoordError::DuplicateObject { .. } => "42P07",
        CoordError::WrongObjectType { .. } => "42809",
        CoordError::DependentObjects { .. } | CoordError::RequiredBySystem(_) => "2BP01",
        CoordError::InsufficientPrivilege(_) => "42501",
        CoordError::InvalidGrant(_) => "0LP01",
        CoordError::RoleInUse { .. } | CoordError::DependentPrivileges => "2BP01",
        CoordError::ObjectInUse(_) => "55006",
        CoordError::ReservedName { .. } => "42939",
        CoordError::UniqueViolation { .. } | CoordError::UniqueIndexBroken { .. } => "23505",
        CoordError::NoConflictArbiter => "42P10",
        CoordError::NotNullViolation { .. } => "23502",
        CoordError::InFailedTransaction => "25P02",
        CoordError::InTransactionBlock(_) => "25001",
        CoordError::NoTransaction(_) => "25P01",
        CoordError::NoSchemaSelected => "3F000",
        CoordError::SerializationFailure(_) | CoordError::WriteConflict { .. } => "40001",
        CoordError::InvalidSourceOption(_) | CoordError::InvalidParameterValue { .. } => "22023",
        CoordError::ConnectionFailure(_) => "08001",
        CoordError::Storage(_) => "58030",
        CoordError::DiskFull(_) => "53100",
        CoordError::TooManyQueries { .. } => "53000",
        CoordError::Internal(_) => "XX000",
        CoordError::HistoryUnavailable(_) => "55000",
        CoordError::CannotChangeSetting(_) => "55P02",
        CoordError::StatementTimeout | CoordError::Canceled => "57014",
        CoordError::LockTimeout => "55P03",
        CoordError::SubscriberTooSlow { .. } => "53400",
    }
}

/// The SQLSTATE of an error in SQL's own terms.
fn sql_sqlstate(error: &SqlError) -> &'static str {
    match error {
        SqlError::Syntax(_) => "42601",
        SqlError::UnknownObject {
            kind: "relation" | "table" | "view" | "materialized view",
            ..
        } => "42P01",
        SqlError::UnknownObject { kind: "type", .. } => "42704",
        SqlError::UnknownObject {
            kind: "function", ..
        } => "42883",
        SqlError::UnknownObject { kind: "schema", .. } => "3F000",
        SqlError::UnknownObject { kind: "cursor", .. } => "34000",
        SqlError::UnknownObject {
            kind: "savepoint", ..
        } => "3B001",
        SqlError::UnknownObject {
            kind: "configuration parameter",
            ..
        } => "42704",
        SqlError::UnknownObject { .. } => "42704",
        SqlError::UnknownColumn(_) => "42703",
        SqlError::AmbiguousColumn(_) => "42702",
        SqlError::UnknownFunction(_) => "42883",
        SqlError::DuplicateColumn(_) | SqlError::ColumnExists { .. } => "42701",
        SqlError::DivisionByZero => "22012",
        SqlError::InvalidValue(_) => "22P02",
        SqlError::OutOfRange(_) => "22003",
        SqlError::StringTooLong(_) => "22001",
        SqlError::DateTimeOutOfRange(_) => "22008",
        SqlError::InvalidDateTime(_) => "22007",
        SqlError::TypeMismatch(_) => "42804",
        SqlError::InconsistentParameterType { .. } => "42P08",
        SqlError::GroupingError(_) => "42803",
        SqlError::InvalidRecursion(_) => "42P19",
        SqlError::CardinalityViolation(_) => "21000",
        SqlError::Unsupported(_) | SqlError::NotIncremental { .. } => "0A000",
        SqlError::InvalidStatement(_) => "42000",
        SqlError::InvalidParameterValue(_) => "22023",
        SqlError::StackDepthExceeded(_) => "54001",
        SqlError::TooManyColumns(_) => "54011",
        SqlError::OutOfMemory(_) => "53200",
        SqlError::ViewStopped(_) => "55000",
        SqlError::ProgramLimitExceeded(_) => "54000",
        SqlError::InsufficientPrivilege(_) => "42501",
        SqlError::Internal(_) => "XX000",
    }
}

/// The ErrorResponse for an error.
pub(crate) fn error_info(error: &CoordError) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".into(), sqlstate(error).into(), error.to_string());
    match error {
        CoordError::UniqueViolation { detail, .. }
        | CoordError::UniqueIndexBroken { detail, .. } => info.detail = Some(detail.clone()),
        CoordError::DependentObjects { dependents, .. } => {
            info.detail = Some(dependents.join("\n"));
            info.hint = Some("Use DROP ... CASCADE to drop the dependent objects too.".into());
        }
        CoordError::WrongObjectType { hint, .. } => info.hint = hint.clone(),
        CoordError::RoleInUse { dependents, .. } => info.detail = Some(dependents.join("\n")),
        CoordError::DependentPrivileges => {
            info.hint = Some("Use CASCADE to revoke them too.".into())
        }
        CoordError::ReservedName { detail, .. } => info.detail = detail.clone(),
        CoordError::DiskFull(_) => info.hint = Some("Check free disk space.".into()),
        CoordError::Sql(SqlError::InconsistentParameterType { detail, .. }) => {
            info.detail = Some(detail.clone())
        }
        CoordError::Sql(SqlError::ViewStopped(_)) => {
            info.hint = Some(
                "Drop the stopped view, or create it again WITH (memory_budget = '…') \
                 larger than what it held."
                    .into(),
            )
        }
        _ => {}
    }
    info
}

/// The error as a pgwire error (an ERROR, never FATAL: the connection stays usable).
pub(crate) fn to_pgwire(error: &CoordError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(error)))
}
