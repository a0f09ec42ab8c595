//! Statements about the session and the system rather than data: `SET`, `SHOW` and
//! `EXPLAIN`.

use datafusion::sql::sqlparser::ast::{self, Expr, Value, ValueWithSpan};

use super::{CreateView, ObjectKind, Query};
use crate::names::{fold_ident, ObjectRef};
use crate::SqlError;

/// `SET`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Set {
    /// `SET name = value` (`SET TIME ZONE`, `SET NAMES` included); `value` may be
    /// `DEFAULT`.
    Variable {
        /// The setting, in lower case.
        name: String,
        /// The value as text.
        value: String,
    },
    /// `RESET name`: `SET name TO DEFAULT`, answered `RESET`.
    Reset {
        /// The setting, in lower case.
        name: String,
    },
    /// `SET TRANSACTION ISOLATION LEVEL …` (for the transaction block) or `SET SESSION
    /// CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL …` (for the session's transactions).
    TransactionIsolation {
        /// The level in PostgreSQL's words (`read committed`).
        level: String,
        /// Whether it is the session's default rather than the block's.
        session: bool,
    },
    /// `SET TRANSACTION` or `SET SESSION CHARACTERISTICS` without an isolation level:
    /// accepted, changes nothing.
    Ignored,
}

impl Set {
    pub(crate) fn from_sql(set: ast::Set) -> Result<Set, SqlError> {
        Ok(match set {
            ast::Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = setting_name(&variable);
                let value = values
                    .iter()
                    .map(setting_text)
                    .collect::<Vec<_>>()
                    .join(", ");
                Set::Variable {
                    name: match name.as_str() {
                        "time zone" => "timezone".to_string(),
                        _ => name,
                    },
                    value,
                }
            }
            ast::Set::SetTimeZone { value, .. } => Set::Variable {
                name: "timezone".into(),
                value: setting_text(&value),
            },
            ast::Set::SetTransaction { modes, session, .. } => match isolation_level(&modes) {
                Some(level) => Set::TransactionIsolation { level, session },
                None => Set::Ignored,
            },
            ast::Set::SetSessionParam(_) => Set::Ignored,
            ast::Set::SetRole {
                context_modifier: Some(ast::ContextModifier::Local),
                ..
            } => return Err(SqlError::Unsupported("SET LOCAL ROLE".into())),
            ast::Set::SetRole { role_name, .. } => Set::Variable {
                name: ROLE.into(),
                value: role_name.map_or_else(|| NO_ROLE.into(), |role| fold_ident(&role)),
            },
            ast::Set::SetNames { charset_name, .. } => Set::Variable {
                name: "client_encoding".into(),
                value: charset_name.to_string(),
            },
            other => return Err(SqlError::Unsupported(format!("{other}"))),
        })
    }
}

/// The setting `SET ROLE` changes.
pub const ROLE: &str = "role";
/// `role` when no `SET ROLE` is in force (`SET ROLE NONE`, `RESET ROLE`).
pub const NO_ROLE: &str = "none";

/// `RESET name`: `SET name TO DEFAULT` (`RESET ALL` is refused: 0A000).
pub(crate) fn reset(reset: ast::ResetStatement) -> Result<Set, SqlError> {
    match reset.reset {
        ast::Reset::ConfigurationParameter(name) => Ok(Set::Reset {
            name: setting_name(&name),
        }),
        ast::Reset::ALL => Err(SqlError::Unsupported("RESET ALL".into())),
    }
}

/// The isolation level among transaction modes, in PostgreSQL's words (`repeatable read`).
/// Every level runs serializable here, which each of them allows.
pub(crate) fn isolation_level(modes: &[ast::TransactionMode]) -> Option<String> {
    modes.iter().rev().find_map(|mode| match mode {
        ast::TransactionMode::IsolationLevel(level) => Some(
            match level {
                ast::TransactionIsolationLevel::ReadUncommitted => "read uncommitted",
                ast::TransactionIsolationLevel::ReadCommitted => "read committed",
                ast::TransactionIsolationLevel::RepeatableRead => "repeatable read",
                ast::TransactionIsolationLevel::Serializable
                | ast::TransactionIsolationLevel::Snapshot => "serializable",
            }
            .to_string(),
        ),
        ast::TransactionMode::AccessMode(_) => None,
    })
}

/// A setting's name as PostgreSQL reads it: case-insensitive even when quoted
/// (`SET "TimeZone"`), its parts joined by dots (`SET app.mode`).
fn setting_name(variable: &ast::ObjectName) -> String {
    variable
        .0
        .iter()
        .map(|part| match part {
            ast::ObjectNamePart::Identifier(ident) => ident.value.to_lowercase(),
            other => other.to_string().to_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// A SET value as text: strings without quotes, identifiers and numbers as written.
fn setting_text(expr: &Expr) -> String {
    match expr {
        Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(s) | Value::DoubleQuotedString(s),
            ..
        }) => s.clone(),
        Expr::Identifier(ident) => ident.value.clone(),
        other => other.to_string(),
    }
}

/// `SHOW`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Show {
    /// `SHOW name` (a setting, `ALL`, or a kind of object: `SHOW SOURCES`), in lower case
    /// with single spaces.
    Variable(String),
    /// `SHOW TABLES`, `SHOW [MATERIALIZED] VIEWS`.
    Objects(ObjectKind),
    /// `SHOW CREATE [kind] name`.
    Create {
        /// The object.
        name: ObjectRef,
        /// The kind it must be, if the statement says.
        kind: Option<ObjectKind>,
    },
}

/// The `SHOW` forms of more than one word; any other name of several words is a custom
/// setting's dotted name (`SHOW app.mode`: the parser drops the dot).
const MULTIWORD_SHOWS: &[&str] = &["materialized views", "transaction isolation level"];

impl Show {
    /// `SHOW words…` as the setting or object kind it names.
    pub(crate) fn variable(words: &[ast::Ident]) -> Show {
        let words: Vec<String> = words.iter().map(|w| w.value.to_lowercase()).collect();
        let spaced = words.join(" ");
        Show::Variable(match spaced.as_str() {
            "time zone" => "timezone".to_string(),
            multiword if MULTIWORD_SHOWS.contains(&multiword) => spaced,
            _ => words.join("."),
        })
    }
}

/// `EXPLAIN`: the dataflow plan of a query or of a view's query.
#[derive(Debug, Clone, PartialEq)]
pub enum Explain {
    /// `EXPLAIN query`.
    Query(Query),
    /// `EXPLAIN CREATE [MATERIALIZED] VIEW …`.
    View(Box<CreateView>),
}

impl Explain {
    pub(crate) fn from_sql(statement: ast::Statement) -> Result<Explain, SqlError> {
        match statement {
            ast::Statement::Query(query) => Ok(Explain::Query(Query::new(*query))),
            ast::Statement::CreateView(create) => {
                Ok(Explain::View(Box::new(CreateView::from_sql(create)?)))
            }
            other => Err(SqlError::Unsupported(format!(
                "EXPLAIN of {}",
                other
                    .to_string()
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
            ))),
        }
    }
}
