//! The running system as `fluxion_catalog` shows it: the sources, durable subscriptions,
//! sinks and compute's view errors and frontiers, for the `system-catalog` crate.

use std::sync::Arc;

use compute::ComputeController;
use pipelines::{DurableSubscriptions, Sinks, SourceRegistry};
use system_catalog::{
    ArrangementFrontier, ArrangementRecords, SinkStatus, SourceStatus, SubscriptionStatus,
    SystemStatus, ViewErrors,
};

/// The parts of the running system `fluxion_catalog` describes.
#[derive(Debug)]
pub(crate) struct RunningSystem {
    pub compute: Arc<ComputeController>,
    pub sources: Arc<SourceRegistry>,
    pub subscriptions: Arc<DurableSubscriptions>,
    pub sinks: Arc<Sinks>,
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
        self.compute
            .frontiers()
            .all()
            .into_iter()
            .map(|(id, frontier)| ArrangementFrontier {
                id,
                upper: frontier.upper,
                since: frontier.since,
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
            })
            .collect()
    }
}
