//! The DataFusion session one query is planned and run in.
//!
//! Each query reads every relation at one held time (through an [`ArrangementReader`]), sees
//! its session (search path, settings, user: [`SessionInfo`]) in catalog relations and
//! functions, resolves unqualified names in the first schema of the search path, and may use
//! the PostgreSQL functions of the `system-catalog` crate and correlated subqueries DataFusion
//! cannot decorrelate (evaluated per outer row).

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use sql::catalog::SnapshotContext;
use sql::correlated_subqueries::with_correlated_subqueries;
use system_catalog::{CatalogReader, SessionInfo};

use crate::catalog::read;
use crate::catalog_input::SharedCatalog;
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::read::ArrangementReader;
use crate::session::{PendingWrites, Session};
use crate::timestamps::ReadHold;

/// A time held for the duration of one query, and the session to plan it in.
pub(crate) struct QueryContext {
    pub state: SessionState,
    pub hold: ReadHold,
    session: Arc<SessionInfo>,
    /// The catalog as the query's catalog functions read it.
    catalog: Arc<dyn CatalogReader>,
}

impl QueryContext {
    /// Where the query is planned: this context's state and its session's search path.
    pub fn plan_context(&self) -> sql::PlanContext<'_> {
        sql::PlanContext::new(&self.state, &self.session.search_path)
    }
}

impl Coordinator {
    /// A planning session for `session` that reads at the current read time, with `overlay`
    /// laid over the committed contents.
    pub(crate) fn query_context(&self, session: &Session, overlay: &PendingWrites) -> QueryContext {
        let hold = self.holds.hold_read_time(&self.oracle);
        self.query_context_at(session, hold, overlay)
    }

    /// [`Self::query_context`] reading at `hold`'s time.
    pub(crate) fn query_context_at(
        &self,
        session: &Session,
        hold: ReadHold,
        overlay: &PendingWrites,
    ) -> QueryContext {
        let reader = ArrangementReader {
            compute: self.compute.clone(),
            streams: self.streams.clone(),
            time: hold.time(),
            overlay: overlay.tables.clone().into_iter().collect(),
        };
        let info = Arc::new(session_info(session));
        let default_schema = {
            let catalog = read(&self.catalog);
            info.search_path
                .iter()
                .find(|s| catalog.has_schema(s))
                .cloned()
                .unwrap_or_else(|| sql::session::DEFAULT_SCHEMA.to_string())
        };
        let mut config = self
            .base_state
            .config()
            .clone()
            .with_extension(Arc::new(SnapshotContext(Arc::new(reader))))
            .with_extension(info.clone());
        let options = config.options_mut();
        options.catalog.default_schema = default_schema;
        // A query run once keeps scalar subqueries as expressions: a subquery returning more
        // than one row is then an error, as in Postgres. (Views turn them into joins.)
        options
            .optimizer
            .enable_physical_uncorrelated_scalar_subquery = true;
        let mut state = SessionStateBuilder::new_from_existing(self.base_state.clone())
            .with_config(config)
            .build();
        let catalog: Arc<dyn CatalogReader> = Arc::new(SharedCatalog(self.catalog.clone()));
        system_catalog::register_functions(&mut state, catalog.clone(), info.clone());
        let mut state = with_correlated_subqueries(state);
        state.mark_start_execution();
        QueryContext {
            state,
            hold,
            session: info,
            catalog,
        }
    }
}

/// What the catalogs and functions see of `session`.
fn session_info(session: &Session) -> SessionInfo {
    SessionInfo {
        user: session.user().to_string(),
        search_path: session.search_path(),
        settings: session.variables.clone(),
        backend_pid: session.backend_pid(),
        changed_settings: Arc::new(Mutex::new(Vec::new())),
    }
}

impl QueryContext {
    /// Settings `set_config` changed during the query, applied to the session.
    pub fn apply_changed_settings(&self, session: &mut Session) {
        let changed = std::mem::take(
            &mut *self
                .session
                .changed_settings
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for (name, value) in changed {
            session.set_variable(&name, value);
        }
    }

    /// `batches` with every column of a reg type (`regclass`, `regtype`, …) as the names of
    /// its objects, as Postgres prints such values.
    pub fn display_reg_types(
        &self,
        schema: &SchemaRef,
        batches: Vec<RecordBatch>,
    ) -> Result<Vec<RecordBatch>, CoordError> {
        system_catalog::display_reg_types(self.catalog.as_ref(), &self.session, schema, batches)
            .map_err(|e| CoordError::Internal(e.to_string()))
    }
}
