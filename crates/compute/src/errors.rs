//! Rows whose expressions failed while a dataflow maintained a view.
//!
//! A failing row (division by zero, a bad cast) must not stop a dataflow or poison its view:
//! the row is left out of the result, counted here under the dataflow's id, and its error is
//! kept for `fluxion_catalog.view_errors`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use repr::GlobalId;

/// Errors of one dataflow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataflowErrorCounts {
    /// Rows currently left out of the view because an expression failed on them: a failed
    /// insertion counts +1 and the failed retraction of the same row -1, so the count returns
    /// to zero when the row is deleted.
    pub rows_left_out: i64,
    /// Failures so far (of rows, and of group results that could not be computed).
    pub failures: u64,
    /// The most recent error message.
    pub last_error: String,
}

/// The error counters of all dataflows, shared by the workers and the controller.
#[derive(Clone, Debug, Default)]
pub struct DataflowErrors {
    inner: Arc<Mutex<BTreeMap<GlobalId, DataflowErrorCounts>>>,
}

impl DataflowErrors {
    /// Records that updates with a net multiplicity of `rows` were left out of dataflow `id`
    /// (`failures` failures in all).
    pub(crate) fn record(&self, id: GlobalId, rows: i64, failures: u64, error: &str) {
        tracing::warn!(dataflow = %id, rows, error, "rows left out of a view: expression failed");
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let entry = inner.entry(id).or_default();
        entry.rows_left_out += rows;
        entry.failures += failures;
        entry.last_error = error.to_string();
    }

    /// A copy of every dataflow's counters.
    pub fn snapshot(&self) -> BTreeMap<GlobalId, DataflowErrorCounts> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Forgets a dropped dataflow.
    pub(crate) fn forget(&self, id: GlobalId) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}
