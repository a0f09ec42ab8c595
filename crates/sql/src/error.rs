//! What can go wrong with a statement in SQL's own terms: it does not parse, names what does
//! not exist, mixes types, holds a value that does not fit, or asks for what Fluxion cannot
//! do (yet). DataFusion's and Arrow's errors are sorted into these kinds here, once, so that
//! every layer above reports them alike; the server maps each kind to its SQLSTATE.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;

/// An error of the SQL front end, or of evaluating SQL expressions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SqlError {
    /// The SQL text does not parse.
    #[error("{0}")]
    Syntax(String),
    /// A relation, type, function, schema or other named thing that does not exist.
    #[error("{kind} \"{name}\" does not exist")]
    UnknownObject {
        /// What was looked for ("relation", "type", "cursor", …).
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
    /// A `WITH RECURSIVE` whose recursive term breaks PostgreSQL's rules for one.
    #[error("{0}")]
    InvalidRecursion(String),
    /// A subquery used as a value returned more than one row.
    #[error("{0}")]
    CardinalityViolation(String),
    /// A function or operator that does not exist for these argument types.
    #[error("{0}")]
    UnknownFunction(String),
    /// `ALTER TABLE … ADD` or `RENAME COLUMN` to a column name the table has already.
    #[error("column \"{column}\" of relation \"{relation}\" already exists")]
    ColumnExists {
        /// The column.
        column: String,
        /// The table.
        relation: String,
    },
    /// A column name appears twice in one relation.
    #[error("column \"{0}\" specified more than once")]
    DuplicateColumn(String),
    /// Division by zero while evaluating an expression.
    #[error("division by zero")]
    DivisionByZero,
    /// A value does not fit its type, or text does not parse as a value.
    #[error("{0}")]
    InvalidValue(String),
    /// A date or time whose fields are out of range (February 30th).
    #[error("date/time field value out of range: {0}")]
    DateTimeOutOfRange(String),
    /// Text that is not a date, time, timestamp or interval at all.
    #[error("{0}")]
    InvalidDateTime(String),
    /// A string longer than its column's declared length.
    #[error("{0}")]
    StringTooLong(String),
    /// A value too large for its type.
    #[error("{0}")]
    OutOfRange(String),
    /// Types that do not fit together.
    #[error("{0}")]
    TypeMismatch(String),
    /// A `$n` parameter used where two different types are expected.
    #[error("inconsistent types deduced for parameter {parameter}")]
    InconsistentParameterType {
        /// The parameter (`$1`).
        parameter: String,
        /// The two types, as PostgreSQL names them ("bigint versus text").
        detail: String,
    },
    /// A valid request that Fluxion does not support (yet).
    #[error("{0}")]
    Unsupported(String),
    /// A query that cannot be maintained incrementally.
    #[error("{construct} is not supported in a materialized view: {reason}")]
    NotIncremental {
        /// The construct, as a user would name it.
        construct: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// An option's value is outside what the option takes (`CONNECTION LIMIT -5`).
    #[error("{0}")]
    InvalidParameterValue(String),
    /// The statement is wrong in some other way (bad argument, misuse).
    #[error("{0}")]
    InvalidStatement(String),
    /// The statement nests too deeply to be walked (see [`crate::parse::bounds`]).
    #[error("stack depth limit exceeded: {0}")]
    StackDepthExceeded(String),
    /// A value or a statement is larger than PostgreSQL allows.
    #[error("{0}")]
    ProgramLimitExceeded(String),
    /// A query needed more memory than it may use.
    #[error("{0}")]
    OutOfMemory(String),
    /// A materialized view that is stopped (it needed more memory than its budget, or reads
    /// one that did) cannot be read or built on.
    #[error("{0}")]
    ViewStopped(String),
    /// A select list has more entries than PostgreSQL allows (see [`crate::parse::bounds`]).
    #[error("{0}")]
    TooManyColumns(String),
    /// The session's role may not do what a function asks (signal another role's backend).
    #[error("{0}")]
    InsufficientPrivilege(String),
    /// An invariant broke inside the SQL front end.
    #[error("internal error: {0}")]
    Internal(String),
}

impl SqlError {
    pub(crate) fn not_incremental(construct: impl Into<String>, reason: impl Into<String>) -> Self {
        SqlError::NotIncremental {
            construct: construct.into(),
            reason: reason.into(),
        }
    }
}

impl From<ArrowError> for SqlError {
    fn from(e: ArrowError) -> Self {
        classify_arrow(&e)
    }
}

impl From<DataFusionError> for SqlError {
    fn from(e: DataFusionError) -> Self {
        classify_datafusion(e)
    }
}

impl From<datafusion::sql::sqlparser::parser::ParserError> for SqlError {
    fn from(e: datafusion::sql::sqlparser::parser::ParserError) -> Self {
        match e {
            datafusion::sql::sqlparser::parser::ParserError::RecursionLimitExceeded => {
                SqlError::StackDepthExceeded(
                    "the statement nests parentheses, subqueries or function calls too deeply"
                        .into(),
                )
            }
            other => SqlError::Syntax(other.to_string()),
        }
    }
}

/// Sorts DataFusion's errors into the kinds a client distinguishes.
fn classify_datafusion(e: DataFusionError) -> SqlError {
    let root = e.find_root();
    match root {
        DataFusionError::SQL(parse, _) => SqlError::Syntax(parse.to_string()),
        DataFusionError::ArrowError(arrow, _) => classify_arrow(arrow),
        DataFusionError::SchemaError(schema, _) => {
            let message = schema.to_string();
            if message.contains("No field named") {
                SqlError::UnknownColumn(rephrase_column_error(&message))
            } else if message.contains("Ambiguous reference") {
                SqlError::AmbiguousColumn(message)
            } else if message.contains("Schema contains duplicate") {
                SqlError::DuplicateColumn(message)
            } else {
                SqlError::InvalidStatement(message)
            }
        }
        DataFusionError::NotImplemented(message) => {
            SqlError::Unsupported(outer_reference_error(message).unwrap_or_else(|| message.clone()))
        }
        DataFusionError::Plan(message) => classify_message(message),
        DataFusionError::Execution(message) => classify_message(message),
        // A function of Fluxion's own says what went wrong in SQL's terms.
        DataFusionError::External(inner) => match inner.downcast_ref::<SqlError>() {
            Some(error) => error.clone(),
            None => classify_message(&inner.to_string()),
        },
        other => classify_message(&other.to_string()),
    }
}

fn classify_arrow(e: &ArrowError) -> SqlError {
    if let ArrowError::CastError(m) | ArrowError::ParseError(m) = e {
        if let Some(error) = input_error(m) {
            return error;
        }
    }
    match e {
        ArrowError::DivideByZero => SqlError::DivisionByZero,
        ArrowError::CastError(m) if m.contains("Can't cast value") => {
            SqlError::OutOfRange(m.clone())
        }
        ArrowError::CastError(m) | ArrowError::ParseError(m) => SqlError::InvalidValue(m.clone()),
        ArrowError::ComputeError(m) if m.contains("Overflow") || m.contains("overflow") => {
            SqlError::OutOfRange(m.clone())
        }
        ArrowError::InvalidArgumentError(m) if m.contains("too large") => {
            SqlError::OutOfRange(m.clone())
        }
        ArrowError::ArithmeticOverflow(m) => SqlError::OutOfRange(m.clone()),
        other => classify_message(&other.to_string()),
    }
}

/// Arrow's failure to read text as a value of a PostgreSQL type, as PostgreSQL reports it.
/// `None` for other errors.
fn input_error(message: &str) -> Option<SqlError> {
    datetime_input_error(message).or_else(|| number_input_error(message))
}

/// The text and the Arrow type of Arrow's `Cannot cast string 'x' to value of Int32 type`
/// (`Cannot cast value 'x' …` for booleans).
fn failed_cast(message: &str) -> Option<(&str, &str)> {
    message
        .strip_prefix("Cannot cast string '")
        .or_else(|| message.strip_prefix("Cannot cast value '"))?
        .rsplit_once("' to value of ")
}

/// Arrow's failure to read text as a date, time or timestamp, as PostgreSQL reports it: text
/// shaped like one whose fields are out of range (`2026-02-30`, `25:00`) is 22008, anything
/// else (and text that is no interval) 22007 (`invalid input syntax for type date: "soon"`).
/// `None` for other errors.
fn datetime_input_error(message: &str) -> Option<SqlError> {
    if let Some(rest) = message.strip_prefix("Invalid input syntax for type interval") {
        return Some(SqlError::InvalidDateTime(format!(
            "invalid input syntax for type interval{rest}"
        )));
    }
    let (type_name, value) =
        if let Some(rest) = message.strip_prefix("Error parsing timestamp from '") {
            ("timestamp", rest.split_once('\'')?.0)
        } else {
            let (value, target) = failed_cast(message)?;
            let type_name = match target {
                t if t.starts_with("Date") => "date",
                t if t.starts_with("Time32") || t.starts_with("Time64") => "time",
                t if t.starts_with("Timestamp") => "timestamp",
                _ => return None,
            };
            (type_name, value)
        };
    Some(if shaped_like_a_datetime(value) {
        SqlError::DateTimeOutOfRange(format!("\"{value}\""))
    } else {
        SqlError::InvalidDateTime(format!(
            "invalid input syntax for type {type_name}: \"{value}\""
        ))
    })
}

/// Arrow's failure to read text as a number or a boolean, as PostgreSQL reports it: digits
/// that do not fit are 22003 (`value "99999999999" is out of range for type integer`),
/// anything else 22P02 (`invalid input syntax for type integer: "ab"`). `None` for other
/// errors.
fn number_input_error(message: &str) -> Option<SqlError> {
    let (value, target) = failed_cast(message)?;
    let type_name = match target.split_whitespace().next()? {
        "Int16" => "smallint",
        "Int32" => "integer",
        "Int64" => "bigint",
        "Float32" => "real",
        "Float64" => "double precision",
        "Boolean" => "boolean",
        _ => return None,
    };
    let digits = value.trim().trim_start_matches(['-', '+']);
    let is_integer_text = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit());
    Some(if is_integer_text && target.starts_with("Int") {
        SqlError::OutOfRange(format!(
            "value \"{value}\" is out of range for type {type_name}"
        ))
    } else {
        SqlError::InvalidValue(format!(
            "invalid input syntax for type {type_name}: \"{value}\""
        ))
    })
}

/// Whether `value` is digits in the shape of a date (`YYYY-MM-DD`), a time (`HH:MM[:SS[.f]]`)
/// or both, so that a failure to read it is a field out of range, not malformed text.
fn shaped_like_a_datetime(value: &str) -> bool {
    let digits = |part: &str, lengths: &[usize]| {
        lengths.contains(&part.len()) && part.chars().all(|c| c.is_ascii_digit())
    };
    let date = |text: &str| {
        let parts: Vec<&str> = text.split('-').collect();
        parts.len() == 3
            && digits(parts[0], &[4])
            && digits(parts[1], &[1, 2])
            && digits(parts[2], &[1, 2])
    };
    let time = |text: &str| {
        let (clock, fraction) = text.split_once('.').unwrap_or((text, "0"));
        let parts: Vec<&str> = clock.split(':').collect();
        (2..=3).contains(&parts.len())
            && parts.iter().all(|p| digits(p, &[1, 2]))
            && fraction.chars().all(|c| c.is_ascii_digit())
    };
    match value.trim().split_once([' ', 'T']) {
        Some((day, clock)) => date(day) && time(clock),
        None => date(value.trim()) || time(value.trim()),
    }
}

fn classify_message(message: &str) -> SqlError {
    let lower = message.to_lowercase();
    if lower.contains("divide by zero") || lower.contains("division by zero") {
        SqlError::DivisionByZero
    } else if let Some(error) = input_error(message) {
        error
    } else if lower.contains("non-boolean predicate") {
        SqlError::TypeMismatch(message.to_string())
    } else if lower.contains("aggregate functions are not allowed") {
        SqlError::GroupingError(message.to_string())
    } else if lower.contains("different number of columns")
        || lower.contains("must have the same number of columns")
    {
        SqlError::Syntax(message.to_string())
    } else if lower.contains("must be aggregated") {
        SqlError::Unsupported(format!(
            "{message} (a correlated scalar subquery must aggregate)"
        ))
    } else if lower.contains("more than one row") {
        SqlError::CardinalityViolation(
            "more than one row returned by a subquery used as an expression".into(),
        )
    } else if lower.contains("must be in group by") || lower.contains("must appear in the group by")
    {
        SqlError::GroupingError(rephrase_grouping_error(message))
    } else if let Some((kind, name)) = missing_object(message) {
        SqlError::UnknownObject { kind, name }
    } else if lower.starts_with("unrecognized configuration parameter") {
        SqlError::UnknownObject {
            kind: "configuration parameter",
            name: message.split('"').nth(1).unwrap_or_default().to_string(),
        }
    } else if let Some(name) = missing_table(message) {
        SqlError::UnknownObject {
            kind: "relation",
            name,
        }
    } else if lower.contains("invalid function")
        || lower.contains("no function matches")
        || lower.contains("cannot coerce")
        || lower.contains("failed to match any signature")
    {
        SqlError::UnknownFunction(message.to_string())
    } else if lower.contains("overflow") || lower.contains("out of range") {
        SqlError::OutOfRange(message.to_string())
    } else if lower.contains("cannot cast")
        || lower.contains("cast error")
        || lower.contains("parse")
    {
        SqlError::InvalidValue(message.to_string())
    } else if lower.contains("coercion")
        || lower.contains("cannot infer common")
        || lower.contains("type")
    {
        SqlError::TypeMismatch(message.to_string())
    } else {
        SqlError::InvalidStatement(message.to_string())
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

/// DataFusion's refusal of an outer column it could not decorrelate
/// (`… logical expression OuterReferenceColumn(…, Column { relation: Some(Bare { table: "a"
/// }), name: "id" })`), said as a user would: which column, and what can be decorrelated.
fn outer_reference_error(message: &str) -> Option<String> {
    let reference = message.split("OuterReferenceColumn(").nth(1)?;
    let quoted_after = |key: &str| -> Option<&str> {
        let rest = reference.rsplit_once(key)?.1;
        rest.split('"').nth(1)
    };
    let name = quoted_after("name: ")?;
    let column = match quoted_after("table: ") {
        Some(table) => format!("{table}.{name}"),
        None => name.to_string(),
    };
    Some(format!(
        "a subquery that reads the outer query's column {column} there is not supported: a \
         correlated subquery can compare outer columns in its WHERE clause (under a LIMIT, by \
         equality only)"
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outer_reference_datafusion_cannot_plan_names_the_column() {
        let message = "Physical plan does not support logical expression \
            OuterReferenceColumn(Field { name: \"id\", data_type: Int32, nullable: true, \
            metadata: {\"fluxion.table_oid\": \"16392\"} }, Column { relation: Some(Bare { \
            table: \"a\" }), name: \"id\" })";
        let error = classify_datafusion(DataFusionError::NotImplemented(message.into()));
        assert!(
            matches!(&error, SqlError::Unsupported(m) if m.contains("column a.id there")),
            "{error}"
        );
        let other = classify_datafusion(DataFusionError::NotImplemented("something".into()));
        assert!(matches!(other, SqlError::Unsupported(m) if m == "something"));
    }
}
