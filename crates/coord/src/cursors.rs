//! Cursors: `DECLARE c CURSOR [WITH HOLD] FOR query`, `FETCH [n | ALL | NEXT] c`, `CLOSE c`.
//!
//! A cursor runs its query when declared, at one consistent time, and hands its rows out in
//! order as FETCH asks for them. As in Postgres, a cursor without HOLD lives until its
//! transaction ends and may only be declared inside one; a WITH HOLD cursor lives until it is
//! closed or the session ends.

use std::collections::VecDeque;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::{
    CloseCursor, Declare, DeclareType, FetchDirection, Ident, Statement, Value,
};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::naming::{fold_ident, name_result_columns};
use crate::response::ExecuteResponse;
use crate::session::{Session, Transaction};

/// An open cursor: the rows of its query not fetched yet.
#[derive(Debug)]
pub(crate) struct Cursor {
    pub schema: SchemaRef,
    rows: VecDeque<RecordBatch>,
    /// Whether the cursor outlives its transaction.
    pub with_hold: bool,
}

impl Cursor {
    /// Takes up to `count` rows (all with `None`).
    fn fetch(&mut self, count: Option<usize>) -> Vec<RecordBatch> {
        let mut wanted = count.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        while wanted > 0 {
            let Some(batch) = self.rows.pop_front() else {
                break;
            };
            if batch.num_rows() <= wanted {
                wanted -= batch.num_rows();
                out.push(batch);
            } else {
                out.push(batch.slice(0, wanted));
                self.rows
                    .push_front(batch.slice(wanted, batch.num_rows() - wanted));
                wanted = 0;
            }
        }
        out
    }
}

impl Coordinator {
    pub(crate) async fn declare(
        &self,
        session: &mut Session,
        declarations: Vec<Declare>,
    ) -> Result<ExecuteResponse, CoordError> {
        let [declare] = declarations.as_slice() else {
            return Err(CoordError::Unsupported(
                "DECLARE of several cursors at once".into(),
            ));
        };
        let (Some(DeclareType::Cursor), Some(query), [name]) = (
            &declare.declare_type,
            &declare.for_query,
            declare.names.as_slice(),
        ) else {
            return Err(CoordError::Unsupported(
                "DECLARE of anything but a cursor".into(),
            ));
        };
        let name = fold_ident(name);
        let with_hold = declare.hold == Some(true);
        if !with_hold && !matches!(session.transaction, Transaction::Block(_)) {
            return Err(CoordError::NoTransaction("DECLARE CURSOR"));
        }
        if session.cursors.contains_key(&name) {
            return Err(CoordError::DuplicateObject {
                kind: "cursor",
                name,
            });
        }
        let mut query = query.clone();
        name_result_columns(&mut query);
        let (schema, batches) = self.run_query(session, Statement::Query(query)).await?;
        session.cursors.insert(
            name,
            Cursor {
                schema,
                rows: batches.into(),
                with_hold,
            },
        );
        Ok(ExecuteResponse::command("DECLARE CURSOR"))
    }

    pub(crate) fn fetch(
        &self,
        session: &mut Session,
        name: &Ident,
        direction: &FetchDirection,
    ) -> Result<ExecuteResponse, CoordError> {
        let count = fetch_count(direction)?;
        let name = fold_ident(name);
        let cursor = session
            .cursors
            .get_mut(&name)
            .ok_or(CoordError::UnknownObject {
                kind: "cursor",
                name,
            })?;
        let batches = cursor.fetch(count);
        Ok(ExecuteResponse::Fetched {
            schema: cursor.schema.clone(),
            batches,
        })
    }

    pub(crate) fn close_cursor(
        &self,
        session: &mut Session,
        cursor: CloseCursor,
    ) -> Result<ExecuteResponse, CoordError> {
        match cursor {
            CloseCursor::All => session.cursors.clear(),
            CloseCursor::Specific { name } => {
                let name = fold_ident(&name);
                if session.cursors.remove(&name).is_none() {
                    return Err(CoordError::UnknownObject {
                        kind: "cursor",
                        name,
                    });
                }
            }
        }
        Ok(ExecuteResponse::command("CLOSE CURSOR"))
    }
}

/// How many rows a FETCH direction asks for (`None`: all). Only forward fetches exist:
/// Fluxion's cursors do not scroll.
fn fetch_count(direction: &FetchDirection) -> Result<Option<usize>, CoordError> {
    let count = |value: &Value| -> Result<Option<usize>, CoordError> {
        match value {
            Value::Number(n, _) => n
                .parse::<i64>()
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    CoordError::Unsupported(format!("FETCH {n}: cursors only fetch forward"))
                }),
            other => Err(CoordError::InvalidStatement(format!(
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
        other => Err(CoordError::Unsupported(format!(
            "FETCH {other}: cursors only fetch forward"
        ))),
    }
}
