//! The DataFusion session one query is planned and run in.
//!
//! Each query reads every relation at one held time (through an [`ArrangementReader`]), sees
//! its session (search path, settings, user: [`SessionInfo`]) in catalog relations and
//! functions, resolves unqualified names in the first schema of the search path, and may use
//! the PostgreSQL functions of [`crate::pg_functions`] and correlated subqueries DataFusion
//! cannot decorrelate (evaluated per outer row).

use std::sync::{Arc, Mutex, RwLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Int64Type, SchemaRef};
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::FunctionRegistry;
use sql::catalog::SnapshotContext;
use sql::correlated_subqueries::with_correlated_subqueries;

use crate::catalog::{read, Catalog};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use sql::RegKind;

use crate::pg_functions::{self, FunctionEnv, KeywordsFunction};
use crate::read::ArrangementReader;
use crate::session::{PendingWrites, Session};
use crate::system_catalog::{CatalogSnapshot, SessionInfo};
use crate::timestamps::ReadHold;

/// A time held for the duration of one query, and the session to plan it in.
pub(crate) struct QueryContext {
    pub state: SessionState,
    pub hold: ReadHold,
    session: Arc<SessionInfo>,
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
        register_functions(
            &mut state,
            &FunctionEnv {
                catalog: self.catalog.clone(),
                session: info.clone(),
            },
        );
        let mut state = with_correlated_subqueries(state);
        state.mark_start_execution();
        QueryContext {
            state,
            hold,
            session: info,
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

fn register_functions(state: &mut SessionState, env: &FunctionEnv) {
    for function in pg_functions::scalar_functions(env) {
        // Registering replaces DataFusion's function of the same name (`version`).
        let _ = state.register_udf(Arc::new(function));
    }
    state.register_udtf("pg_get_keywords", Arc::new(KeywordsFunction));
    state.register_udtf(
        "pg_options_to_table",
        Arc::new(pg_functions::OptionsToTableFunction),
    );
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
        catalog: &RwLock<Catalog>,
        schema: &SchemaRef,
        batches: Vec<RecordBatch>,
    ) -> Result<Vec<RecordBatch>, CoordError> {
        let reg_columns: Vec<(usize, RegKind)> = schema
            .fields()
            .iter()
            .enumerate()
            .filter_map(|(i, f)| sql::reg_kind_of(f).map(|k| (i, k)))
            .collect();
        if reg_columns.is_empty() {
            return Ok(batches);
        }
        let catalog = read(catalog);
        let snapshot = CatalogSnapshot::of(&catalog);
        let displayed = sql::displayed_schema(schema);
        batches
            .into_iter()
            .map(|batch| {
                let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
                for (index, kind) in &reg_columns {
                    let oids = batch.column(*index);
                    let Some(oids) = oids.as_primitive_opt::<Int64Type>() else {
                        continue;
                    };
                    let names: StringArray = (0..oids.len())
                        .map(|row| {
                            oids.is_valid(row).then(|| {
                                pg_functions::reg_type_display_name(
                                    *kind,
                                    oids.value(row) as u32,
                                    &snapshot,
                                    &self.session,
                                    &catalog,
                                )
                            })
                        })
                        .collect();
                    columns[*index] = Arc::new(names);
                }
                RecordBatch::try_new(displayed.clone(), columns)
                    .map_err(|e| CoordError::Internal(e.to_string()))
            })
            .collect()
    }
}
