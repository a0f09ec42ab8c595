//! CREATEs abandoned halfway.
//!
//! A CREATE that builds what it creates (a materialized view or an index fed its inputs'
//! history, a durable subscription's first snapshot) records the item first and may then
//! build for a long time. If its statement is dropped meanwhile (the client cancelled it, a
//! `statement_timeout` fired, the connection closed), nothing of it may stay: a view fed part
//! of its history would answer wrongly, and its inputs would wait for the rest forever.
//! [`UndoIfAbandoned`] takes the item out again, as PostgreSQL rolls a cancelled CREATE back.

use std::sync::{Arc, Weak};

use repr::GlobalId;
use storage::CatalogOp;

use crate::catalog::read;
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::session::Session;

/// Undoes the CREATE of an item unless [`UndoIfAbandoned::finished`] is called first.
#[must_use = "dropping it undoes the CREATE"]
pub(crate) struct UndoIfAbandoned {
    coordinator: Weak<Coordinator>,
    /// The item to take out; `None` once the CREATE has finished, or inside a block, whose
    /// rollback undoes it as it undoes the block's other statements.
    item: Option<GlobalId>,
}

impl UndoIfAbandoned {
    /// The CREATE ran to its end (it succeeded, or failed and undid itself).
    pub fn finished(mut self) {
        self.item = None;
    }
}

impl Drop for UndoIfAbandoned {
    fn drop(&mut self) {
        let Some(id) = self.item.take() else {
            return;
        };
        let (Some(coordinator), Ok(runtime)) = (
            self.coordinator.upgrade(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        tracing::info!(%id, "a CREATE stopped before it finished; taking its item out");
        runtime.spawn(async move {
            let _sequencer = coordinator.lock_sequencer_to_finish().await;
            if let Err(e) = coordinator.undo_create(id) {
                tracing::error!(%id, error = %e, "could not take out an abandoned CREATE's item");
            }
        });
    }
}

impl Coordinator {
    /// A guard that undoes the CREATE of item `id`, just recorded by `session`, if the
    /// statement is dropped before it calls [`UndoIfAbandoned::finished`].
    pub(crate) fn undo_if_abandoned(&self, session: &Session, id: GlobalId) -> UndoIfAbandoned {
        UndoIfAbandoned {
            coordinator: self
                .arc()
                .map(|this| Arc::downgrade(&this))
                .unwrap_or_default(),
            item: (!session.in_block()).then_some(id),
        }
    }

    /// Takes item `id`, whose CREATE did not finish, out of the durable catalog, the catalog
    /// and compute, with anything created on it meanwhile (the sequencer is let go while a
    /// view is fed its history). The caller holds the sequencer.
    pub(crate) fn undo_create(&self, id: GlobalId) -> Result<(), CoordError> {
        let mut ids = read(&self.catalog).dependents(id);
        ids.push(id);
        ids.sort();
        ids.dedup();
        let ops: Vec<CatalogOp> = ids.iter().map(|id| CatalogOp::Delete(*id)).collect();
        self.durable.apply(&ops)?;
        for id in ids.into_iter().rev() {
            self.uninstall(id);
            self.drop_comments(id)?;
        }
        Ok(())
    }
}
