//! Generic plans of prepared statements.
//!
//! A prepared SELECT, UPDATE or DELETE that reads one key of one relation (`… WHERE id = $1`),
//! or INSERT of VALUES (`… VALUES ($1, $2)`, without `ON CONFLICT DO UPDATE`), is planned once,
//! with its `$n` parameters in it, at its first execution; every execution then puts its
//! values in and runs it, without parsing, rewriting or planning the statement again (as
//! PostgreSQL's generic plans spare a prepared statement its planning). Any other statement,
//! or values the plan cannot take, are bound into the statement's text and planned as a
//! simple query is.
//!
//! A simple query whose key is a literal (`… WHERE id = 42`) shares the generic plan of its
//! shape (`… WHERE id = $1`, see [`sql::KeyParameters`]) with the session's other queries of
//! that shape, from the second time the session runs that shape.
//!
//! A generic plan holds while the catalog does not change and the session plans as it did
//! (the same settings, hence the same planning state); otherwise it is made again.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::LogicalPlan;
use repr::GlobalId;
use sql::{ConstantRows, OnConflict, PointQueryTemplate, Statement};
use system_catalog::SessionInfo;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::{PendingWrites, Session};
use crate::write::{InsertRows, RowSearch, WriteStatement};

/// The generic plan of one prepared statement, made at its first execution and kept with
/// the statement.
#[derive(Debug, Default)]
pub struct GenericPlan(Mutex<Option<Arc<MadePlan>>>);

/// A generic plan and what it was made under.
#[derive(Debug)]
struct MadePlan {
    catalog_generation: u64,
    session: Arc<SessionInfo>,
    /// `None`: the statement has no generic plan.
    generic: Option<Arc<Generic>>,
}

/// What a generic plan runs.
#[derive(Debug)]
enum Generic {
    /// The point query of a SELECT, or the read of an UPDATE or DELETE.
    Point(PointQueryTemplate),
    /// The rows of an INSERT into `table`, with what happens to rows whose key exists.
    Rows {
        table: GlobalId,
        rows: ConstantRows,
        on_conflict: Option<OnConflict>,
    },
}

impl GenericPlan {
    /// The plan, if it was made under `catalog_generation` and `session`.
    fn current(
        &self,
        catalog_generation: u64,
        session: &Arc<SessionInfo>,
    ) -> Option<Arc<MadePlan>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|made| {
                made.catalog_generation == catalog_generation && Arc::ptr_eq(&made.session, session)
            })
            .cloned()
    }

    fn replace(&self, made: Arc<MadePlan>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(made);
    }
}

/// The generic plans of a session's simple queries, by shape. A shape gets a plan the second
/// time it is seen: a statement whose shape never repeats (its other literals differ each
/// time) is not planned twice.
#[derive(Debug, Default)]
pub(crate) struct ShapePlans(HashMap<String, Option<Arc<GenericPlan>>>);

/// How many shapes a session remembers; past it, it forgets them all.
const MAX_SHAPE_PLANS: usize = 256;

impl ShapePlans {
    /// The plan of `shape`; `None` the first time the shape is seen.
    fn plan_for(&mut self, shape: String) -> Option<Arc<GenericPlan>> {
        if self.0.len() >= MAX_SHAPE_PLANS && !self.0.contains_key(&shape) {
            self.0.clear();
        }
        match self.0.entry(shape) {
            Entry::Vacant(first) => {
                first.insert(None);
                None
            }
            Entry::Occupied(mut seen) => Some(seen.get_mut().get_or_insert_default().clone()),
        }
    }
}

impl Coordinator {
    /// Runs a simple query whose key literals are parameters through the generic plan of
    /// its shape; `None` if it has none (yet), or the statement no key literals.
    pub(crate) async fn execute_shape(
        &self,
        session: &mut Session,
        statement: &Statement,
    ) -> Result<Option<ExecuteResponse>, CoordError> {
        let Some(parameterized) = statement.with_key_parameters() else {
            return Ok(None);
        };
        let Some(plan) = session.shape_plans.plan_for(parameterized.shape) else {
            return Ok(None);
        };
        self.execute_generic(
            session,
            &parameterized.statement,
            &plan,
            &parameterized.values,
        )
        .await
    }

    /// Runs prepared `statement` with `values` (text, `None` for NULL, with the parameters'
    /// types) through its generic `plan`; `None` if it has none or the values do not fit it.
    pub(crate) async fn execute_generic(
        &self,
        session: &mut Session,
        statement: &Statement,
        plan: &GenericPlan,
        values: &[(Option<String>, DataType)],
    ) -> Result<Option<ExecuteResponse>, CoordError> {
        if !matches!(
            statement,
            Statement::Select(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
        ) {
            return Ok(None);
        }
        let Some(parameters) = values
            .iter()
            .map(|(value, data_type)| sql::parameter_value(value.as_deref(), data_type))
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None);
        };
        let Some(generic) = self.generic_plan(session, statement, plan, values).await else {
            return Ok(None);
        };
        let response = match (statement, generic.as_ref()) {
            (
                Statement::Insert(insert),
                Generic::Rows {
                    table,
                    rows,
                    on_conflict,
                },
            ) => {
                let Some(rows) = rows.compute(&parameters) else {
                    return Ok(None);
                };
                let rows = InsertRows::Computed {
                    table: *table,
                    rows: &rows.map_err(sql::SqlError::from)?,
                    on_conflict,
                };
                self.write(session, WriteStatement::Insert(insert, rows))
                    .await?
            }
            (statement, Generic::Point(template)) => {
                let Some(point) = template.bind(&parameters) else {
                    return Ok(None);
                };
                let search = RowSearch::Point(&point);
                match statement {
                    Statement::Select(_) => self.select_point(session, &point).await?,
                    Statement::Update(update) => {
                        self.write(session, WriteStatement::Update(update, search))
                            .await?
                    }
                    Statement::Delete(delete) => {
                        self.write(session, WriteStatement::Delete(delete, search))
                            .await?
                    }
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(response))
    }

    /// The generic plan of `statement`, its parameters of the types of `values`; made again
    /// if the catalog or the session's settings changed since it was made.
    async fn generic_plan(
        &self,
        session: &mut Session,
        statement: &Statement,
        plan: &GenericPlan,
        values: &[(Option<String>, DataType)],
    ) -> Option<Arc<Generic>> {
        // Read before planning: a change while planning leaves the plan stale, not wrong.
        let catalog_generation = crate::catalog::read(&self.catalog).generation();
        let planning_session = self.planning_session(session);
        if let Some(made) = plan.current(catalog_generation, &planning_session) {
            return made.generic.clone();
        }
        let types: Vec<DataType> = values.iter().map(|(_, t)| t.clone()).collect();
        let generic = self
            .make_generic(session, statement, &types)
            .await
            .map(Arc::new);
        plan.replace(Arc::new(MadePlan {
            catalog_generation,
            session: planning_session,
            generic: generic.clone(),
        }));
        generic
    }

    /// Plans `statement` with its parameters of `types`; `None` if it has no generic plan.
    async fn make_generic(
        &self,
        session: &mut Session,
        statement: &Statement,
        types: &[DataType],
    ) -> Option<Generic> {
        let context = self.query_context(session, &PendingWrites::default());
        let ctx = context.plan_context().with_parameter_types(types);
        let state = &context.state;
        let point = |planned: LogicalPlan| PointQueryTemplate::from_plan(state, &planned);
        match statement {
            Statement::Select(query) => point(query.plan(&ctx).await.ok()?).map(Generic::Point),
            Statement::Update(update) => {
                let (table, _) = self.writable_table(session, &update.table).ok()?;
                point(update.plan(&ctx, &table.name).await.ok()?).map(Generic::Point)
            }
            Statement::Delete(delete) => {
                let (table, _) = self.writable_table(session, &delete.table).ok()?;
                point(delete.plan(&ctx, &table.name).await.ok()?).map(Generic::Point)
            }
            Statement::Insert(insert) => {
                let (table, codecs) = self.writable_table(session, &insert.table).ok()?;
                let planned = insert.plan(&ctx, &codecs.insert_target()).await.ok()?;
                if matches!(planned.on_conflict, Some(OnConflict::DoUpdate(_))) {
                    return None;
                }
                Some(Generic::Rows {
                    table: table.id,
                    rows: ConstantRows::from_plan(state, &planned.rows)?,
                    on_conflict: planned.on_conflict,
                })
            }
            _ => None,
        }
    }
}
