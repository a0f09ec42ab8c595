//! Transaction control: BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE and ROLLBACK TO.
//!
//! A transaction block collects its writes and commits them at one timestamp. Savepoints
//! remember the writes made so far; rolling back to one forgets the later writes and, as in
//! Postgres, makes a failed block usable again. The end of a block closes its cursors
//! (those declared WITH HOLD stay).

use crate::commit::ReadCheck;
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::{
    Savepoint, Session, Transaction, TransactionBlock, DEFAULT_TRANSACTION_ISOLATION,
    TRANSACTION_ISOLATION,
};

impl Coordinator {
    /// `BEGIN [ISOLATION LEVEL …]`. Every level runs serializable, which each of them allows;
    /// the one named is what `SHOW transaction_isolation` says until the block ends.
    pub(crate) fn begin(
        &self,
        session: &mut Session,
        isolation: Option<String>,
    ) -> ExecuteResponse {
        match session.transaction {
            Transaction::Idle => {
                session.transaction = Transaction::Block(TransactionBlock::default());
                if let Some(level) = isolation {
                    session.set_variable(TRANSACTION_ISOLATION, level);
                }
            }
            _ => session.notice(
                "WARNING",
                "25001",
                "there is already a transaction in progress",
            ),
        }
        ExecuteResponse::command("BEGIN")
    }

    pub(crate) async fn commit(
        &self,
        session: &mut Session,
    ) -> Result<ExecuteResponse, CoordError> {
        let ended = std::mem::take(&mut session.transaction);
        end_block(session);
        match ended {
            Transaction::Idle => {
                session.notice("WARNING", "25P01", "there is no transaction in progress");
                Ok(ExecuteResponse::command("COMMIT"))
            }
            Transaction::Failed(_) => Ok(ExecuteResponse::command("ROLLBACK")),
            Transaction::Block(block) => {
                if !block.writes.is_empty() {
                    let sequencer = self.sequencer.clone().lock_owned().await;
                    self.commit_detached(
                        block.writes,
                        ReadCheck::TablesSince(block.reads),
                        sequencer,
                    )
                    .await?;
                }
                Ok(ExecuteResponse::command("COMMIT"))
            }
        }
    }

    pub(crate) fn rollback(&self, session: &mut Session) -> ExecuteResponse {
        if matches!(session.transaction, Transaction::Idle) {
            session.notice("WARNING", "25P01", "there is no transaction in progress");
        }
        session.transaction = Transaction::Idle;
        end_block(session);
        ExecuteResponse::command("ROLLBACK")
    }

    pub(crate) fn savepoint(
        &self,
        session: &mut Session,
        name: String,
    ) -> Result<ExecuteResponse, CoordError> {
        let Transaction::Block(block) = &mut session.transaction else {
            return Err(CoordError::NoTransaction("SAVEPOINT"));
        };
        let savepoint = Savepoint {
            name,
            writes: block.writes.clone(),
            reads: block.reads.clone(),
        };
        block.savepoints.push(savepoint);
        Ok(ExecuteResponse::command("SAVEPOINT"))
    }

    pub(crate) fn release_savepoint(
        &self,
        session: &mut Session,
        name: &str,
    ) -> Result<ExecuteResponse, CoordError> {
        let Transaction::Block(block) = &mut session.transaction else {
            return Err(CoordError::NoTransaction("RELEASE SAVEPOINT"));
        };
        let position = savepoint_position(block, name)?;
        block.savepoints.truncate(position);
        Ok(ExecuteResponse::command("RELEASE"))
    }

    /// ROLLBACK TO SAVEPOINT: forgets the writes made after the savepoint (which stays), and
    /// recovers a block that failed after it.
    pub(crate) fn rollback_to_savepoint(
        &self,
        session: &mut Session,
        name: &str,
    ) -> Result<ExecuteResponse, CoordError> {
        let mut block = match std::mem::take(&mut session.transaction) {
            Transaction::Block(block) | Transaction::Failed(block) => block,
            Transaction::Idle => return Err(CoordError::NoTransaction("ROLLBACK TO SAVEPOINT")),
        };
        let position = match savepoint_position(&block, name) {
            Ok(position) => position,
            Err(e) => {
                session.transaction = Transaction::Failed(block);
                return Err(e);
            }
        };
        block.savepoints.truncate(position + 1);
        let savepoint = &block.savepoints[position];
        block.writes = savepoint.writes.clone();
        block.reads = savepoint.reads.clone();
        session.transaction = Transaction::Block(block);
        Ok(ExecuteResponse::command("ROLLBACK"))
    }
}

/// The position of the newest savepoint called `name`.
fn savepoint_position(block: &TransactionBlock, name: &str) -> Result<usize, CoordError> {
    block
        .savepoints
        .iter()
        .rposition(|s| s.name == name)
        .ok_or_else(|| CoordError::unknown("savepoint", name))
}

/// Closes the cursors that end with their transaction.
fn end_block(session: &mut Session) {
    session.cursors.retain(|_, cursor| cursor.with_hold);
    let default = session
        .variable(DEFAULT_TRANSACTION_ISOLATION)
        .unwrap_or_default()
        .to_string();
    session.set_variable(TRANSACTION_ISOLATION, default);
}
