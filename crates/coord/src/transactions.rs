//! Transaction control: BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE and ROLLBACK TO.
//!
//! A transaction block collects its writes and commits them at one timestamp; its
//! definitions apply at once and are undone unless it commits (see
//! [`crate::transactional_ddl`]). Savepoints remember the writes and definitions made so far;
//! rolling back to one forgets the later writes, undoes the later definitions and, as in
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

    /// `COMMIT`: the block's writes commit at one time and its definitions become final; if
    /// the writes cannot commit, the definitions are undone too.
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
            Transaction::Failed(mut block) => {
                self.undo_ddl(&mut block, 0).await?;
                Ok(ExecuteResponse::command("ROLLBACK"))
            }
            Transaction::Block(mut block) => {
                let writes = std::mem::take(&mut block.writes);
                if !writes.is_empty() {
                    let sequencer = self.lock_sequencer_owned().await?;
                    let committed = self
                        .commit_detached(
                            writes,
                            ReadCheck::TablesSince(block.reads.clone()),
                            sequencer,
                        )
                        .await;
                    if let Err(e) = committed {
                        self.undo_ddl(&mut block, 0).await?;
                        return Err(e);
                    }
                }
                self.commit_ddl(&mut block).await?;
                Ok(ExecuteResponse::command("COMMIT"))
            }
        }
    }

    /// `ROLLBACK`: forgets the block's writes and undoes its definitions.
    pub(crate) async fn rollback(
        &self,
        session: &mut Session,
    ) -> Result<ExecuteResponse, CoordError> {
        let ended = std::mem::take(&mut session.transaction);
        end_block(session);
        match ended {
            Transaction::Idle => {
                session.notice("WARNING", "25P01", "there is no transaction in progress");
            }
            Transaction::Block(mut block) | Transaction::Failed(mut block) => {
                self.undo_ddl(&mut block, 0).await?;
            }
        }
        Ok(ExecuteResponse::command("ROLLBACK"))
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
            ddl: block.ddl.len(),
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

    /// ROLLBACK TO SAVEPOINT: forgets the writes and undoes the definitions made after the
    /// savepoint (which stays), and recovers a block that failed after it.
    pub(crate) async fn rollback_to_savepoint(
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
        let keep = savepoint.ddl;
        if let Err(e) = self.undo_ddl(&mut block, keep).await {
            session.transaction = Transaction::Failed(block);
            return Err(e);
        }
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
