//! Memory budgets of materialized views: a view that needs more memory than its budget is
//! stopped, not the server.
//!
//! Every materialized view has a budget: its `memory_budget` option, or else the server's
//! `--max-view-memory`. A watch reads the bytes each view's dataflow holds (compute's
//! arrangement sizes: its spines, its batchers and its operators' state, summed over the
//! workers) ten times a second. A view over its budget is stopped: its dataflow is dropped,
//! which frees its memory, and the server and every other view go on. The views and indexes
//! that read it stop with it (they could not move again), and so do the subscriptions and
//! sinks reading any of them. A stopped view stays in the catalog with its reason, recorded
//! durably: reading it fails with 55000 and the reason, `fluxion_catalog.views` shows it,
//! `DROP` removes it, and a restart does not build it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use compute::ArrangementSize;
use repr::{GlobalId, ItemKind};
use storage::CatalogOp;

use crate::catalog::read;
use crate::coordinator::Coordinator;

/// How often the views' memory is compared with their budgets.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// The memory budget of every materialized view, in bytes.
#[derive(Debug)]
pub(crate) struct ViewBudgets {
    /// The budget of a view created without `memory_budget`.
    default: usize,
    budgets: Mutex<BTreeMap<GlobalId, usize>>,
}

impl ViewBudgets {
    /// Budgets that are `default` unless a view says otherwise.
    pub fn new(default: usize) -> Self {
        Self {
            default,
            budgets: Mutex::default(),
        }
    }

    /// Gives view `id` its budget: `option` (its `memory_budget`), or the default.
    pub fn set(&self, id: GlobalId, option: Option<usize>) {
        self.lock().insert(id, option.unwrap_or(self.default));
    }

    /// The budget of view `id`, if it is a running materialized view.
    pub fn get(&self, id: GlobalId) -> Option<usize> {
        self.lock().get(&id).copied()
    }

    /// Forgets view `id` (dropped or stopped).
    pub fn forget(&self, id: GlobalId) {
        self.lock().remove(&id);
    }

    /// The views `sizes` shows over their budgets, with what they hold and their budget.
    fn over_budget(
        &self,
        sizes: &BTreeMap<GlobalId, ArrangementSize>,
    ) -> Vec<(GlobalId, u64, usize)> {
        let budgets = self.lock();
        sizes
            .iter()
            .filter_map(|(id, size)| {
                let budget = *budgets.get(id)?;
                let held = u64::try_from(size.bytes).unwrap_or(0);
                (held > budget as u64).then_some((*id, held, budget))
            })
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<GlobalId, usize>> {
        self.budgets.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `bytes` in MB, rounded up, as the messages say it.
fn megabytes(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

impl Coordinator {
    /// Starts the watch that stops views over their memory budgets; it ends with the
    /// coordinator. It starts before recovery, which may build a view that does not fit.
    pub(crate) fn spawn_memory_watch(self: &Arc<Self>) {
        let coordinator = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_INTERVAL).await;
                let Some(this) = coordinator.upgrade() else {
                    return;
                };
                this.stop_views_over_budget().await;
            }
        });
    }

    /// Stops every view over its budget, and what reads it.
    async fn stop_views_over_budget(&self) {
        let sizes = self.compute.arrangement_sizes().all();
        let over = self.view_budgets.over_budget(&sizes);
        if over.is_empty() {
            return;
        }
        let mut stopped = Vec::new();
        for (id, held, budget) in over {
            let Some(name) = read(&self.catalog).get(id).map(|item| item.name.clone()) else {
                continue;
            };
            let message = format!(
                "materialized view \"{name}\" is stopped: its dataflow held {} MB, more than \
                 its memory budget of {} MB",
                megabytes(held),
                megabytes(budget as u64),
            );
            tracing::warn!(view = %name, held, budget, "a view exceeded its memory budget and is stopped");
            self.stop_dataflow(id, message);
            stopped.push(id);
            stopped.extend(self.stop_readers(id, &name));
        }
        self.record_stopped(&stopped).await;
    }

    /// Stops dataflow `id` for the reason `message` gives.
    fn stop_dataflow(&self, id: GlobalId, message: String) {
        self.view_budgets.forget(id);
        self.compute.stop(id, message.clone());
        crate::catalog::write(&self.catalog).set_stopped(id, message);
    }

    /// Stops the views and indexes that read stopped view `name` (`id`), directly or not;
    /// returns them.
    fn stop_readers(&self, id: GlobalId, name: &str) -> Vec<GlobalId> {
        let readers: Vec<(GlobalId, ItemKind, String)> = {
            let catalog = read(&self.catalog);
            catalog
                .dependents(id)
                .into_iter()
                .filter_map(|reader| catalog.get(reader))
                .filter(|reader| {
                    matches!(reader.kind, ItemKind::MaterializedView | ItemKind::Index)
                        && catalog.stopped(reader.id).is_none()
                })
                .map(|reader| (reader.id, reader.kind, reader.name.clone()))
                .collect()
        };
        for (reader, kind, reader_name) in &readers {
            let message = format!(
                "{} \"{reader_name}\" is stopped: it reads materialized view \"{name}\", which \
                 is stopped",
                kind.name()
            );
            self.stop_dataflow(*reader, message);
        }
        readers.into_iter().map(|(reader, _, _)| reader).collect()
    }

    /// Records the stops of `stopped` in the durable catalog, so that a restart does not
    /// build them. Items dropped meanwhile are skipped.
    async fn record_stopped(&self, stopped: &[GlobalId]) {
        let _sequencer = self.lock_sequencer_to_finish().await;
        let ops: Vec<CatalogOp> = {
            let catalog = read(&self.catalog);
            stopped
                .iter()
                .filter_map(|id| catalog.get(*id))
                .map(|item| CatalogOp::Put(catalog.stored(item)))
                .collect()
        };
        if let Err(e) = self.durable.apply(&ops) {
            tracing::error!(error = %e, "the stop of a view could not be recorded; a restart builds it again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_over_their_budget_are_found() {
        let budgets = ViewBudgets::new(100 << 20);
        budgets.set(GlobalId(1), None);
        budgets.set(GlobalId(2), Some(1 << 20));
        let size = |bytes| ArrangementSize {
            records: 1,
            batches: 1,
            bytes,
        };
        let sizes = BTreeMap::from([
            (GlobalId(1), size(50 << 20)),
            (GlobalId(2), size(2 << 20)),
            (GlobalId(3), size(500 << 20)),
        ]);
        assert_eq!(
            budgets.over_budget(&sizes),
            vec![(GlobalId(2), 2 << 20, 1 << 20)],
            "the default holds view 1, its own budget view 2; 3 has no budget (a table)"
        );
        budgets.forget(GlobalId(2));
        assert!(budgets.over_budget(&sizes).is_empty());
        assert_eq!(megabytes(1), 1);
        assert_eq!(megabytes(3 << 20), 3);
    }
}
