//! The running system as `fluxion_catalog` shows it: the sources, durable subscriptions,
//! sinks and compute's view errors and frontiers, for the `system-catalog` crate.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use compute::ComputeController;
use pipelines::{DurableSubscriptions, Sinks, SourceRegistry};
use repr::{GlobalId, ItemKind};
use system_catalog::{
    ArrangementFrontier, ArrangementRecords, HydrationStatus, SinkStatus, SourceStatus,
    SubscriptionStatus, SystemStatus, ViewErrors, ViewStatus,
};

use crate::catalog::Catalog;
use crate::hydration::Hydrations;
use crate::table_watermarks::TableWatermarks;
use crate::view_memory::ViewBudgets;

/// The parts of the running system `fluxion_catalog` describes.
#[derive(Debug)]
pub(crate) struct RunningSystem {
    pub catalog: Arc<RwLock<Catalog>>,
    pub compute: Arc<ComputeController>,
    pub sources: Arc<SourceRegistry>,
    pub table_watermarks: Arc<TableWatermarks>,
    pub subscriptions: Arc<DurableSubscriptions>,
    pub sinks: Arc<Sinks>,
    pub view_budgets: Arc<ViewBudgets>,
    pub hydrations: Arc<Hydrations>,
}

impl SystemStatus for RunningSystem {
    fn sources(&self) -> Vec<SourceStatus> {
        self.sources.snapshot()
    }

    fn subscriptions(&self) -> Vec<SubscriptionStatus> {
        self.subscriptions.snapshot()
    }

    fn sinks(&self) -> Vec<SinkStatus> {
        self.sinks.snapshot()
    }

    fn view_errors(&self) -> Vec<ViewErrors> {
        self.compute
            .errors()
            .snapshot()
            .into_iter()
            .map(|(id, counts)| ViewErrors {
                id,
                rows_left_out: counts.rows_left_out,
                failures: counts.failures,
                last_error: counts.last_error,
            })
            .collect()
    }

    fn frontiers(&self) -> Vec<ArrangementFrontier> {
        let watermarks = self.watermarks();
        self.compute
            .frontiers()
            .all()
            .into_iter()
            .map(|(id, frontier)| ArrangementFrontier {
                id,
                upper: frontier.upper,
                since: frontier.since,
                watermark: watermarks.get(&id).copied(),
            })
            .collect()
    }

    fn arrangement_sizes(&self) -> Vec<ArrangementRecords> {
        self.compute
            .arrangement_sizes()
            .all()
            .into_iter()
            .map(|(id, size)| ArrangementRecords {
                id,
                records: size.records,
                batches: size.batches,
                bytes: size.bytes,
            })
            .collect()
    }

    fn hydrations(&self) -> Vec<HydrationStatus> {
        let mut builds = self.hydrations.status(self.compute.frontiers());
        builds.extend(
            self.sources
                .snapshot()
                .into_iter()
                .filter_map(|source| Some((source.id, source.snapshot?)))
                .filter(|(_, snapshot)| !snapshot.done)
                .map(|(id, snapshot)| crate::hydration::snapshot_status(id, &snapshot)),
        );
        builds.sort_by_key(|build| build.id);
        builds
    }

    fn views(&self) -> Vec<ViewStatus> {
        let sizes = self.compute.arrangement_sizes().all();
        let catalog = crate::catalog::read(&self.catalog);
        catalog
            .items()
            .filter(|item| item.kind == ItemKind::MaterializedView)
            .map(|item| ViewStatus {
                id: item.id,
                bytes: sizes.get(&item.id).map(|size| size.bytes),
                memory_budget: self.view_budgets.get(item.id),
                stopped: catalog.stopped(item.id).map(str::to_string),
            })
            .collect()
    }
}

impl RunningSystem {
    /// The event-time watermark of every object that has one: a source's or a table's
    /// own, and for whatever reads them, directly or through others, the least of theirs
    /// (an operator's watermark is the minimum of its inputs').
    fn watermarks(&self) -> BTreeMap<GlobalId, i64> {
        let mut own = self.sources.watermarks();
        own.extend(self.table_watermarks.visible());
        let mut watermarks = BTreeMap::new();
        if own.is_empty() {
            return watermarks;
        }
        let catalog = crate::catalog::read(&self.catalog);
        for (source, watermark) in own {
            for id in std::iter::once(source).chain(catalog.readers(source)) {
                watermarks
                    .entry(id)
                    .and_modify(|w: &mut i64| *w = (*w).min(watermark))
                    .or_insert(watermark);
            }
        }
        watermarks
    }
}
