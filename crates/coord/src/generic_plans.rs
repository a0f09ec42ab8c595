//! Generic plans of prepared statements.
//!
//! A prepared SELECT, UPDATE or DELETE that reads one key of one relation (`… WHERE id = $1`)
//! is planned once, with its `$n` parameters in it, at its first execution; every execution
//! then puts its values in and runs it, without parsing, rewriting or planning the statement
//! again (as PostgreSQL's generic plans spare a prepared statement its planning). Any other
//! statement, or values the plan cannot take, are bound into the statement's text and planned
//! as a simple query is.
//!
//! A simple query whose key is a literal (`… WHERE id = 42`) shares the generic plan of its
//! shape (`… WHERE id = $1`, see [`sql::KeyParameters`]) with the session's other queries of
//! that shape.
//!
//! A generic plan holds while the catalog does not change and the session plans as it did
//! (the same settings, hence the same planning state); otherwise it is made again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::DataType;
use sql::{PointQueryTemplate, Statement};
use system_catalog::SessionInfo;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::{PendingWrites, Session};
use crate::write::{RowSearch, WriteStatement};

/// The generic plan of one prepared statement, made at its first execution and kept with
/// the statement.
#[derive(Debug, Default)]
pub struct GenericPlan(Mutex<Option<Arc<MadePlan>>>);

/// A generic plan and what it was made under.
#[derive(Debug)]
struct MadePlan {
    catalog_generation: u64,
    session: Arc<SessionInfo>,
    /// `None`: the statement reads no single key, so it has no generic plan.
    point: Option<Arc<PointQueryTemplate>>,
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

/// The generic plans of a session's simple queries, by shape.
#[derive(Debug, Default)]
pub(crate) struct ShapePlans(HashMap<String, Arc<GenericPlan>>);

/// How many shapes a session keeps plans for; past it, they are all forgotten.
const MAX_SHAPE_PLANS: usize = 256;

impl ShapePlans {
    /// The plan of `shape`, new if the session has none.
    fn plan_for(&mut self, shape: String) -> Arc<GenericPlan> {
        if self.0.len() >= MAX_SHAPE_PLANS && !self.0.contains_key(&shape) {
            self.0.clear();
        }
        self.0.entry(shape).or_default().clone()
    }
}

impl Coordinator {
    /// Runs a simple query whose key literals are parameters through the generic plan of
    /// its shape; `None` if it has none, or the statement no key literals.
    pub(crate) async fn execute_shape(
        &self,
        session: &mut Session,
        statement: &Statement,
    ) -> Result<Option<ExecuteResponse>, CoordError> {
        let Some(parameterized) = statement.with_key_parameters() else {
            return Ok(None);
        };
        let plan = session.shape_plans.plan_for(parameterized.shape);
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
            Statement::Select(_) | Statement::Update(_) | Statement::Delete(_)
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
        let types: Vec<DataType> = values.iter().map(|(_, t)| t.clone()).collect();
        let Some(template) = self.point_template(session, statement, plan, &types).await else {
            return Ok(None);
        };
        let Some(point) = template.bind(&parameters) else {
            return Ok(None);
        };
        let search = RowSearch::Point(&point);
        let response = match statement {
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
        };
        Ok(Some(response))
    }

    /// The point query of `statement`'s generic plan, its parameters of `types`; made again
    /// if the catalog or the session's settings changed since it was made.
    async fn point_template(
        &self,
        session: &mut Session,
        statement: &Statement,
        plan: &GenericPlan,
        types: &[DataType],
    ) -> Option<Arc<PointQueryTemplate>> {
        // Read before planning: a change while planning leaves the plan stale, not wrong.
        let catalog_generation = crate::catalog::read(&self.catalog).generation();
        let planning_session = self.planning_session(session);
        if let Some(made) = plan.current(catalog_generation, &planning_session) {
            return made.point.clone();
        }
        let context = self.query_context(session, &PendingWrites::default());
        let ctx = context.plan_context().with_parameter_types(types);
        let planned = match statement {
            Statement::Select(query) => query.plan(&ctx).await.ok(),
            Statement::Update(update) => match self.writable_table(session, &update.table) {
                Ok((table, _)) => update.plan(&ctx, &table.name).await.ok(),
                Err(_) => None,
            },
            Statement::Delete(delete) => match self.writable_table(session, &delete.table) {
                Ok((table, _)) => delete.plan(&ctx, &table.name).await.ok(),
                Err(_) => None,
            },
            _ => None,
        };
        let point = planned
            .and_then(|planned| PointQueryTemplate::from_plan(&context.state, &planned))
            .map(Arc::new);
        plan.replace(Arc::new(MadePlan {
            catalog_generation,
            session: planning_session,
            point: point.clone(),
        }));
        point
    }
}
