//! Definitions inside a transaction block: what ROLLBACK undoes and COMMIT makes final.
//!
//! As in PostgreSQL, `CREATE`, `ALTER … RENAME` and `DROP` of tables, views, materialized
//! views, indexes and schemas inside `BEGIN … COMMIT` take effect at once for the block
//! (later statements of the block see them) and are undone by `ROLLBACK`, by `ROLLBACK TO
//! SAVEPOINT` for those after the savepoint, by a COMMIT that fails, and by the connection
//! ending with the block open. Each statement is applied to the durable catalog at once,
//! together with the ops that undo it ([`storage::Catalog::apply_in_block`]), so a block
//! still open when the process stops is undone at the next start.
//!
//! A dropped object leaves the catalog at once but keeps its dataflow and, for a table, its
//! rows (checkpoints still write them) until the block commits: a ROLLBACK puts it back as it
//! was. Sources, sinks and subscriptions reach outside the database (a connector, a topic,
//! a delivery log), so they are created and dropped outside blocks only (25001), as
//! PostgreSQL does with `CREATE DATABASE`.

use repr::{GlobalId, ItemKind, Ownership};
use sql::catalog::{KeyedArrangement, UniqueKey};
use storage::CatalogOp;

use crate::catalog::{Item, ItemDetails};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::session::{Session, Transaction, TransactionBlock};

/// One definition made inside a transaction block, as ROLLBACK undoes it.
#[derive(Debug)]
pub(crate) enum DdlChange {
    /// An item was created: ROLLBACK removes it.
    Created(GlobalId),
    /// Items were renamed (a relation and its indexes): these are them as they were.
    Renamed(Vec<Item>),
    /// Items were dropped: they keep their dataflows until COMMIT releases them.
    Dropped(Vec<DroppedItem>),
    /// Owners or ACLs of items changed: these are them as they were.
    Ownership(Vec<(GlobalId, Ownership)>),
    /// The `public` schema's owner or ACL changed: this is it as it was (kept outside the
    /// catalog's items, so a block open when the process stopped does not undo it).
    PublicSchema(Ownership),
}

/// An item dropped inside a block, as it was.
#[derive(Debug)]
pub(crate) struct DroppedItem {
    pub item: Item,
    /// For an index on a relation that stays: the lookup (and unique key) it gave the
    /// relation, which the drop took away.
    pub served: Option<(GlobalId, KeyedArrangement, Option<UniqueKey>)>,
}

impl Session {
    /// Whether a transaction block is open (failed or not).
    pub(crate) fn in_block(&self) -> bool {
        !matches!(self.transaction, Transaction::Idle)
    }

    /// Records a definition of the block that the durable catalog's undo steps do not
    /// cover, for ROLLBACK.
    pub(crate) fn record_ddl(&mut self, change: DdlChange) {
        if let Transaction::Block(block) | Transaction::Failed(block) = &mut self.transaction {
            block.ddl.push(change);
        }
    }

    /// Refuses `statement` inside a transaction block (25001).
    pub(crate) fn refuse_in_block(&self, statement: &'static str) -> Result<(), CoordError> {
        if self.in_block() {
            return Err(CoordError::InTransactionBlock(statement));
        }
        Ok(())
    }
}

impl Coordinator {
    /// Applies `ops` to the durable catalog. Inside a transaction block it is a step of the
    /// block: `undo` is recorded with it and `change` is remembered for ROLLBACK.
    pub(crate) fn apply_ddl(
        &self,
        session: &mut Session,
        ops: &[CatalogOp],
        undo: Vec<CatalogOp>,
        change: DdlChange,
    ) -> Result<(), CoordError> {
        let (Transaction::Block(block) | Transaction::Failed(block)) = &mut session.transaction
        else {
            return Ok(self.durable.apply(ops)?);
        };
        let id = *block.ddl_block.get_or_insert_with(|| {
            self.next_ddl_block
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        });
        self.durable.apply_in_block(id, ops, undo)?;
        block.ddl.push(change);
        Ok(())
    }

    /// The items `ids` as they are, to be dropped inside a block; sources, sinks and
    /// subscriptions among them are refused (25001).
    pub(crate) fn dropped_items(&self, ids: &[GlobalId]) -> Result<Vec<DroppedItem>, CoordError> {
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let mut dropped = Vec::with_capacity(ids.len());
        for item in ids.iter().filter_map(|id| catalog.get(*id)) {
            match item.kind {
                ItemKind::Source => return Err(CoordError::InTransactionBlock("DROP SOURCE")),
                ItemKind::Sink => return Err(CoordError::InTransactionBlock("DROP SINK")),
                ItemKind::Subscription => {
                    return Err(CoordError::InTransactionBlock("DROP SUBSCRIPTION"))
                }
                _ => {}
            }
            let served = match item.details {
                ItemDetails::Index { on } if !ids.contains(&on) => catalog
                    .get(on)
                    .and_then(Item::relation)
                    .and_then(|relation| {
                        let lookup = relation.lookups.iter().find(|l| l.arrangement == item.id)?;
                        let unique = relation.unique_keys.iter().find(|k| k.index == item.id);
                        Some((on, lookup.clone(), unique.cloned()))
                    }),
                _ => None,
            };
            dropped.push(DroppedItem {
                item: item.clone(),
                served,
            });
        }
        Ok(dropped)
    }

    /// Hides the items `ids` (dependents after what they depend on), dropped inside
    /// `session`'s block, from the catalog. Their dataflows stay until the block commits;
    /// the block's own writes to them are forgotten.
    pub(crate) fn hide_dropped(&self, session: &mut Session, ids: &[GlobalId]) {
        for id in ids.iter().rev() {
            self.hide(*id);
        }
        if let Transaction::Block(block) | Transaction::Failed(block) = &mut session.transaction {
            for id in ids {
                block.writes.tables.remove(id);
            }
        }
    }

    /// Undoes the definitions of `block` after its first `keep`, the last first, durably and
    /// in the running catalog, under the sequencer (taken only when there is one to undo).
    pub(crate) async fn undo_ddl(
        &self,
        block: &mut TransactionBlock,
        keep: usize,
    ) -> Result<(), CoordError> {
        if block.ddl.len() <= keep {
            return Ok(());
        }
        let _sequencer = self.lock_sequencer_to_finish().await;
        if let Some(id) = block.ddl_block {
            self.durable.undo_block(id, keep)?;
        }
        while block.ddl.len() > keep {
            let Some(change) = block.ddl.pop() else { break };
            match change {
                DdlChange::Created(id) => {
                    self.uninstall(id);
                    self.drop_comments(id)?;
                }
                DdlChange::Renamed(before) => {
                    let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
                    for item in before {
                        catalog.rename(item.id, &item.name, item.create_sql);
                    }
                }
                DdlChange::Dropped(dropped) => self.restore_dropped(dropped),
                DdlChange::Ownership(before) => self.restore_ownership(before),
                DdlChange::PublicSchema(before) => {
                    self.replace_public_schema(before)?;
                }
            }
        }
        Ok(())
    }

    /// Makes the definitions of a committed block final, under the sequencer (taken only
    /// when it made one): the items it dropped release their dataflows, rows and comments.
    pub(crate) async fn commit_ddl(&self, block: &mut TransactionBlock) -> Result<(), CoordError> {
        let Some(id) = block.ddl_block.take() else {
            return Ok(());
        };
        let _sequencer = self.lock_sequencer_to_finish().await;
        self.durable.commit_block(id)?;
        for change in std::mem::take(&mut block.ddl) {
            if let DdlChange::Dropped(dropped) = change {
                for dropped in dropped.iter().rev() {
                    self.release(&dropped.item);
                    self.drop_comments(dropped.item.id)?;
                }
            }
        }
        Ok(())
    }

    /// Ends `session`'s transaction block, if one is open, as ROLLBACK does: for a
    /// connection that ends inside one.
    pub async fn end_session(&self, mut session: Session) {
        let (Transaction::Block(mut block) | Transaction::Failed(mut block)) =
            std::mem::take(&mut session.transaction)
        else {
            return;
        };
        if let Err(e) = self.undo_ddl(&mut block, 0).await {
            tracing::error!(error = %e, "the definitions of an abandoned transaction block could not be undone; they are undone at the next start");
        }
    }

    /// Puts items dropped inside a block back into the catalog as they were.
    fn restore_dropped(&self, dropped: Vec<DroppedItem>) {
        let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        for DroppedItem { item, served } in dropped {
            if let Some((on, lookup, unique)) = served {
                catalog.add_lookup(on, lookup);
                if let Some(unique) = unique {
                    catalog.add_unique_key(on, unique);
                }
            }
            catalog.insert(item);
        }
    }
}
