//! Planning: a statement's queries and expressions into DataFusion logical plans.
//!
//! Every query is planned the same way: the result columns get PostgreSQL's names
//! ([`crate::result_columns`]), bag set operations DataFusion gets wrong are refused, relations
//! are qualified by the session's search path, PostgreSQL syntax DataFusion does not plan is
//! rewritten ([`crate::rewrite`]), and DataFusion binds and types what is left. The session
//! state a statement is planned in carries the catalog and the querying session's functions;
//! for a read it also carries the snapshot the scans read (see [`crate::catalog`]).

use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;

use crate::rewrite::checks::mark_bag_set_operations;
use crate::rewrite::postgres_syntax::{rewrite_postgres_syntax, Target};
use crate::rewrite::qualify::qualify_relations;
use crate::rewrite::windows::rewrite_window_functions;
use crate::session::DATABASE;
use crate::single_value::SINGLE_VALUE;
use crate::SqlError;

/// Where a statement is planned: the DataFusion session (the catalog, the session's
/// functions and, for a read, the snapshot its scans read) and the session's search path.
#[derive(Clone, Copy)]
pub struct PlanContext<'a> {
    /// The session state to plan in.
    pub state: &'a SessionState,
    /// The schemas unqualified names are looked up in, in order.
    pub search_path: &'a [String],
}

impl<'a> PlanContext<'a> {
    /// A context planning in `state` with `search_path`.
    pub fn new(state: &'a SessionState, search_path: &'a [String]) -> Self {
        PlanContext { state, search_path }
    }

    /// Plans a statement (checked, qualified and rewritten for `target` first).
    pub(crate) async fn plan(
        &self,
        mut statement: ast::Statement,
        target: Target,
    ) -> Result<LogicalPlan, SqlError> {
        self.prepare(&mut statement, target)?;
        self.plan_prepared(statement).await
    }

    /// Plans a statement as it is (already prepared, as stored SQL is).
    pub(crate) async fn plan_prepared(
        &self,
        statement: ast::Statement,
    ) -> Result<LogicalPlan, SqlError> {
        Ok(self
            .state
            .statement_to_plan(DfStatement::Statement(Box::new(statement)))
            .await?)
    }

    /// Expands its window table functions, qualifies the relations `statement` reads and
    /// writes for the search path and rewrites its PostgreSQL syntax for `target`.
    pub(crate) fn prepare(
        &self,
        statement: &mut ast::Statement,
        target: Target,
    ) -> Result<(), SqlError> {
        rewrite_window_functions(statement)?;
        mark_bag_set_operations(statement);
        qualify_relations(statement, &|name| self.schema_of(name));
        let aggregates = self.state.aggregate_functions();
        let windows = self.state.window_functions();
        let is_aggregate = |name: &str| {
            aggregates.contains_key(name) || windows.contains_key(name) || name == SINGLE_VALUE
        };
        rewrite_postgres_syntax(statement, target, &is_aggregate);
        Ok(())
    }

    /// The schema an unqualified relation name means: `pg_catalog` if it has the relation,
    /// else the first schema of the search path that does.
    fn schema_of(&self, name: &str) -> Option<String> {
        let catalog = self.state.catalog_list().catalog(DATABASE)?;
        let has = |schema: &str| {
            catalog
                .schema(schema)
                .is_some_and(|provider| provider.table_exist(name))
        };
        if has(PG_CATALOG) {
            return Some(PG_CATALOG.to_string());
        }
        self.search_path.iter().find(|schema| has(schema)).cloned()
    }
}

/// PostgreSQL's catalog schema, searched before the search path.
const PG_CATALOG: &str = "pg_catalog";
