//! Cursors: `DECLARE c CURSOR [WITH HOLD] FOR query`, `FETCH [n | ALL | NEXT] c`, `CLOSE c`.
//!
//! A cursor runs its query when declared, at one consistent time, and hands its rows out in
//! order as FETCH asks for them. As in Postgres, a cursor without HOLD lives until its
//! transaction ends and may only be declared inside one; a WITH HOLD cursor lives until it is
//! closed or the session ends.
//!
//! A cursor `FOR SUBSCRIBE …` never runs out: FETCH returns what has arrived (up to its
//! count), waiting for at least one row if none has, for at most `WITH (timeout = '…')`
//! (without one, until a row comes or the client cancels).

use std::collections::VecDeque;
use std::time::Duration;

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
use crate::subscribe::Subscription;
use crate::subscribe_statements::Subscribe;

/// An open cursor: the rows of its query not fetched yet.
#[derive(Debug)]
pub(crate) struct Cursor {
    pub schema: SchemaRef,
    rows: VecDeque<RecordBatch>,
    /// Whether the cursor outlives its transaction.
    pub with_hold: bool,
    /// Where more rows come from, for a cursor over a subscription.
    subscription: Option<Subscription>,
}

impl Cursor {
    /// Moves the subscription's rows that have arrived into the cursor, waiting up to
    /// `timeout` (forever: `None`) for some if there are none yet.
    async fn receive(&mut self, timeout: Option<Duration>) -> Result<(), CoordError> {
        let Some(subscription) = &mut self.subscription else {
            return Ok(());
        };
        if self.rows.iter().all(|b| b.num_rows() == 0) {
            let next = match timeout {
                Some(timeout) => match tokio::time::timeout(timeout, subscription.next()).await {
                    Ok(next) => next,
                    Err(_elapsed) => return Ok(()),
                },
                None => subscription.next().await,
            };
            match next {
                Some(batch) => self.rows.push_back(batch?),
                None => return Ok(()),
            }
        }
        while let Some(batch) = subscription.try_next() {
            self.rows.push_back(batch?);
        }
        Ok(())
    }

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
                subscription: None,
            },
        );
        Ok(ExecuteResponse::command("DECLARE CURSOR"))
    }

    /// `DECLARE name CURSOR FOR SUBSCRIBE …` (inside a transaction block, as any cursor
    /// without HOLD).
    pub(crate) async fn declare_subscription(
        &self,
        session: &mut Session,
        name: &Ident,
        subscribe: &Subscribe,
    ) -> Result<ExecuteResponse, CoordError> {
        let name = fold_ident(name);
        if !matches!(session.transaction, Transaction::Block(_)) {
            return Err(CoordError::NoTransaction("DECLARE CURSOR"));
        }
        if session.cursors.contains_key(&name) {
            return Err(CoordError::DuplicateObject {
                kind: "cursor",
                name,
            });
        }
        let subscription = self.subscribe(session, subscribe).await?;
        session.cursors.insert(
            name,
            Cursor {
                schema: subscription.schema.clone(),
                rows: VecDeque::new(),
                with_hold: false,
                subscription: Some(subscription),
            },
        );
        Ok(ExecuteResponse::command("DECLARE CURSOR"))
    }

    /// `FETCH`; from a subscription's cursor it waits for rows, up to `timeout` if given.
    pub(crate) async fn fetch(
        &self,
        session: &mut Session,
        name: &Ident,
        direction: &FetchDirection,
        timeout: Option<Duration>,
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
        if count != Some(0) {
            cursor.receive(timeout).await?;
        }
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
