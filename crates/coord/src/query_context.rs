//! The DataFusion session one query is planned and run in.
//!
//! Each query reads every relation at one held time (through an [`ArrangementReader`]), sees
//! its session (search path, settings, user: [`SessionInfo`]) in catalog relations and
//! functions, resolves unqualified names in the first schema of the search path, and may use
//! the PostgreSQL functions of the `system-catalog` crate. (Correlated subqueries DataFusion
//! cannot decorrelate are evaluated per outer row: the rules that do so are added to the state
//! only for a plan that has a subquery, see [`crate::read::execute_plan`].)

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use repr::Timestamp;
use sql::catalog::SnapshotContext;
use system_catalog::{CatalogReader, SessionInfo};

use crate::catalog::read;
use crate::catalog_input::SharedCatalog;
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::read::ArrangementReader;
use crate::session::{PendingWrites, Session};
use crate::timestamps::ReadHold;
use crate::write_conflicts::ReadSet;

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
    /// The catalog as the system catalogs and catalog functions read it.
    fn shared_catalog(&self) -> SharedCatalog {
        SharedCatalog {
            catalog: self.catalog.clone(),
            roles: self.roles.clone(),
            sizes: self.compute.arrangement_sizes().clone(),
        }
    }

    /// A planning session for `session` that reads at the current read time, with `overlay`
    /// laid over the committed contents.
    pub(crate) fn query_context(&self, session: &Session, overlay: &PendingWrites) -> QueryContext {
        let hold = self.holds.hold_read_time(&self.oracle);
        self.query_context_at(session, hold, overlay, None)
    }

    /// [`Self::query_context`] reading at `hold`'s time, recording what it reads in `reads`
    /// if given.
    pub(crate) fn query_context_at(
        &self,
        session: &Session,
        hold: ReadHold,
        overlay: &PendingWrites,
        reads: Option<Arc<ReadSet>>,
    ) -> QueryContext {
        let mut reader = self.snapshot_reader(hold.time(), overlay, reads);
        reader.visible_sources = self.source_visibility(session);
        reader.notices = Some(session.live_notices());
        let (mut state, info) = self.session_state(session);
        let default_schema = {
            let catalog = read(&self.catalog);
            info.search_path
                .iter()
                .find(|s| catalog.has_schema(s))
                .cloned()
                .unwrap_or_else(|| sql::session::DEFAULT_SCHEMA.to_string())
        };
        let config = state.config_mut();
        config.set_extension(Arc::new(SnapshotContext(Arc::new(reader))));
        config.options_mut().catalog.default_schema = default_schema;
        state.mark_start_execution();
        QueryContext {
            state,
            hold,
            session: info,
            catalog: Arc::new(self.shared_catalog()),
        }
    }

    /// A reader of the arrangements at `time`, with `overlay` laid over them, recording what
    /// it reads in `reads` if given: what a query's scans read through, and all a point query
    /// planned already needs.
    pub(crate) fn snapshot_reader(
        &self,
        time: Timestamp,
        overlay: &PendingWrites,
        reads: Option<Arc<ReadSet>>,
    ) -> ArrangementReader {
        ArrangementReader {
            compute: self.compute.clone(),
            streams: self.streams.clone(),
            time,
            overlay: overlay.tables.clone().into_iter().collect(),
            reads,
            visible_sources: None,
            hydrations: self.hydrations.clone(),
            notices: None,
        }
    }

    /// What the functions of `session`'s next query see of it: the same object as long as
    /// its planning state stays the same.
    pub(crate) fn planning_session(&self, session: &Session) -> Arc<SessionInfo> {
        let cached = session
            .planning_state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|cached| cached.is_for(session))
            .map(|cached| cached.info.clone());
        cached.unwrap_or_else(|| self.session_state(session).1)
    }

    /// The planning state of `session` (its functions registered, reading no snapshot yet),
    /// and what its functions see of it. Built once per session and again whenever its
    /// settings change: registering the functions costs more than planning a point query.
    fn session_state(&self, session: &Session) -> (SessionState, Arc<SessionInfo>) {
        let mut cached = session
            .planning_state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = cached.as_ref().filter(|cached| cached.is_for(session)) {
            // What `set_config` changed in an earlier statement is applied or forgotten.
            cached
                .info
                .changed_settings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clear();
            return (cached.state.clone(), cached.info.clone());
        }
        let info = Arc::new(session_info(session));
        let mut config = self
            .base_state
            .config()
            .clone()
            .with_extension(info.clone());
        // A query run once keeps scalar subqueries as expressions: a subquery returning more
        // than one row is then an error, as in Postgres. (Views turn them into joins.)
        config
            .options_mut()
            .optimizer
            .enable_physical_uncorrelated_scalar_subquery = true;
        // Local times read and written in the session's zone (see `sql::SessionTimeZone`).
        if let Some(zone) = sql::SessionTimeZone::of(session.variable("timezone")) {
            config.options_mut().extensions.insert(zone);
        }
        let mut state = SessionStateBuilder::new_from_existing(self.base_state.clone())
            .with_config(config)
            .build();
        let catalog: Arc<dyn CatalogReader> = Arc::new(self.shared_catalog());
        system_catalog::register_functions(&mut state, catalog, info.clone());
        *cached = Some(PlanningState {
            info: info.clone(),
            state: state.clone(),
        });
        (state, info)
    }
}

/// A session's planning state as [`Coordinator::session_state`] built it, with the session
/// information it was built for.
#[derive(Debug)]
pub(crate) struct PlanningState {
    info: Arc<SessionInfo>,
    state: SessionState,
}

impl PlanningState {
    /// Whether it plans as `session` does now (built for the settings it has).
    fn is_for(&self, session: &Session) -> bool {
        self.info.settings == session.variables && self.info.user == session.current_user()
    }
}

/// What the catalogs and functions see of `session`.
fn session_info(session: &Session) -> SessionInfo {
    SessionInfo {
        user: session.current_user().to_string(),
        session_user: session.user().to_string(),
        search_path: session.search_path(),
        settings: session.variables.clone(),
        backend_pid: session.backend_pid(),
        changed_settings: Arc::new(Mutex::new(Vec::new())),
        backends: session.backends.clone(),
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

    /// What shows every column of a reg type (`regclass`, `regtype`, …) of a batch of
    /// `schema` as the names of its objects, as Postgres prints such values.
    pub fn reg_type_display(
        &self,
        schema: SchemaRef,
    ) -> impl FnMut(RecordBatch) -> Result<RecordBatch, CoordError> + Send + 'static {
        let catalog = self.catalog.clone();
        let session = self.session.clone();
        move |batch| {
            system_catalog::display_reg_types(catalog.as_ref(), &session, &schema, vec![batch])
                .map_err(|e| CoordError::Internal(e.to_string()))?
                .pop()
                .ok_or_else(|| CoordError::Internal("a batch shown lost its rows".into()))
        }
    }
}
