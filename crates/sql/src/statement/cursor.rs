//! Cursors: `DECLARE name CURSOR [WITH HOLD] FOR query | SUBSCRIBE …` and `FETCH`.

use std::time::Duration;

use datafusion::sql::sqlparser::ast::{self, DeclareType, FetchDirection, Ident, Value};

use super::{Query, Subscribe};
use crate::names::fold_ident;
use crate::SqlError;

/// `DECLARE name CURSOR [WITH HOLD] FOR …`.
#[derive(Debug, Clone, PartialEq)]
pub struct Declare {
    /// The cursor's name.
    pub name: String,
    /// `WITH HOLD`: the cursor outlives its transaction.
    pub with_hold: bool,
    /// What the cursor reads.
    pub target: DeclareTarget,
}

/// What a cursor reads.
#[derive(Debug, Clone, PartialEq)]
pub enum DeclareTarget {
    /// The rows of a query, computed when the cursor is declared.
    Query(Query),
    /// The changes of a subscription, as they come.
    Subscribe(Box<Subscribe>),
}

impl Declare {
    pub(crate) fn from_sql(declarations: Vec<ast::Declare>) -> Result<Declare, SqlError> {
        let [declare] = declarations.as_slice() else {
            return Err(SqlError::Unsupported(
                "DECLARE of several cursors at once".into(),
            ));
        };
        let (Some(DeclareType::Cursor), Some(query), [name]) = (
            &declare.declare_type,
            &declare.for_query,
            declare.names.as_slice(),
        ) else {
            return Err(SqlError::Unsupported(
                "DECLARE of anything but a cursor".into(),
            ));
        };
        Ok(Declare {
            name: fold_ident(name),
            with_hold: declare.hold == Some(true),
            target: DeclareTarget::Query(Query::new(query.as_ref().clone())),
        })
    }

    /// `DECLARE name CURSOR FOR SUBSCRIBE …`.
    pub(crate) fn subscription(name: &Ident, subscribe: Subscribe) -> Declare {
        Declare {
            name: fold_ident(name),
            with_hold: false,
            target: DeclareTarget::Subscribe(Box::new(subscribe)),
        }
    }
}

/// `FETCH [count] [FROM] cursor [WITH (timeout = '…')]`: only forward fetches exist, as
/// Fluxion's cursors do not scroll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// The cursor.
    pub cursor: String,
    /// How many rows (`None`: all).
    pub count: Option<usize>,
    /// How long a FETCH from a subscription's cursor waits for a row (`None`: until one
    /// comes or the client cancels).
    pub timeout: Option<Duration>,
}

impl Fetch {
    pub(crate) fn from_sql(
        cursor: &Ident,
        direction: &FetchDirection,
        timeout: Option<Duration>,
    ) -> Result<Fetch, SqlError> {
        Ok(Fetch {
            cursor: fold_ident(cursor),
            count: fetch_count(direction)?,
            timeout,
        })
    }
}

/// How many rows a FETCH direction asks for (`None`: all).
fn fetch_count(direction: &FetchDirection) -> Result<Option<usize>, SqlError> {
    let count = |value: &Value| -> Result<Option<usize>, SqlError> {
        match value {
            Value::Number(n, _) => n
                .parse::<i64>()
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    SqlError::Unsupported(format!("FETCH {n}: cursors only fetch forward"))
                }),
            other => Err(SqlError::InvalidStatement(format!(
                "FETCH count {other} is not a number"
            ))),
        }
    };
    match direction {
        FetchDirection::Next => Ok(Some(1)),
        FetchDirection::All | FetchDirection::ForwardAll => Ok(None),
        FetchDirection::Count { limit } => count(&limit.value),
        FetchDirection::Forward { limit: None } => Ok(Some(1)),
        FetchDirection::Forward { limit: Some(limit) } => count(&limit.value),
        other => Err(SqlError::Unsupported(format!(
            "FETCH {other}: cursors only fetch forward"
        ))),
    }
}
