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
use sql::{Declare, DeclareTarget, Fetch};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::{Session, Transaction};
use pipelines::Subscription;

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
    /// `DECLARE name CURSOR [WITH HOLD] FOR query | SUBSCRIBE …`. A cursor without HOLD (a
    /// subscription's cursor is one) may only be declared inside a transaction block.
    pub(crate) async fn declare(
        &self,
        session: &mut Session,
        declare: Declare,
    ) -> Result<ExecuteResponse, CoordError> {
        if !declare.with_hold && !matches!(session.transaction, Transaction::Block(_)) {
            return Err(CoordError::NoTransaction("DECLARE CURSOR"));
        }
        if session.cursors.contains_key(&declare.name) {
            return Err(CoordError::DuplicateObject {
                kind: "cursor",
                name: declare.name,
            });
        }
        let cursor = match &declare.target {
            DeclareTarget::Query(query) => {
                let (schema, batches) = self.run_query(session, query).await?;
                Cursor {
                    schema,
                    rows: batches.into(),
                    with_hold: declare.with_hold,
                    subscription: None,
                }
            }
            DeclareTarget::Subscribe(subscribe) => {
                let subscription = self.subscribe(session, subscribe).await?;
                Cursor {
                    schema: subscription.schema.clone(),
                    rows: VecDeque::new(),
                    with_hold: false,
                    subscription: Some(subscription),
                }
            }
        };
        session.cursors.insert(declare.name, cursor);
        Ok(ExecuteResponse::command("DECLARE CURSOR"))
    }

    /// `FETCH`; from a subscription's cursor it waits for rows, up to its timeout if given.
    pub(crate) async fn fetch(
        &self,
        session: &mut Session,
        fetch: &Fetch,
    ) -> Result<ExecuteResponse, CoordError> {
        let cursor = session
            .cursors
            .get_mut(&fetch.cursor)
            .ok_or_else(|| CoordError::unknown("cursor", fetch.cursor.clone()))?;
        if fetch.count != Some(0) {
            cursor.receive(fetch.timeout).await?;
        }
        let batches = cursor.fetch(fetch.count);
        Ok(ExecuteResponse::Fetched {
            schema: cursor.schema.clone(),
            batches,
        })
    }

    /// `CLOSE name`, or `CLOSE ALL` (`None`).
    pub(crate) fn close_cursor(
        &self,
        session: &mut Session,
        cursor: Option<String>,
    ) -> Result<ExecuteResponse, CoordError> {
        match cursor {
            None => session.cursors.clear(),
            Some(name) => {
                if session.cursors.remove(&name).is_none() {
                    return Err(CoordError::unknown("cursor", name));
                }
            }
        }
        Ok(ExecuteResponse::command("CLOSE CURSOR"))
    }
}
