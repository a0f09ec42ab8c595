//! Planning: a statement's queries and expressions into DataFusion logical plans.
//!
//! Every query is planned the same way: the result columns get PostgreSQL's names
//! ([`crate::result_columns`]), bag set operations DataFusion gets wrong are refused, relations
//! are qualified by the session's search path, PostgreSQL syntax DataFusion does not plan is
//! rewritten ([`crate::rewrite`]), and DataFusion binds and types what is left. The session
//! state a statement is planned in carries the catalog and the querying session's functions;
//! for a read it also carries the snapshot the scans read (see [`crate::catalog`]).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{LogicalPlan, Statement as PlanStatement};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;

use crate::rewrite::cast_aggregates::distinguish_cast_aggregates;
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
    /// The types of the `$n` parameters (`$1` first), if given rather than inferred.
    parameter_types: &'a [DataType],
}

impl<'a> PlanContext<'a> {
    /// A context planning in `state` with `search_path`.
    pub fn new(state: &'a SessionState, search_path: &'a [String]) -> Self {
        PlanContext {
            state,
            search_path,
            parameter_types: &[],
        }
    }

    /// The context planning each `$n` parameter as of type `parameter_types[n - 1]`, as a
    /// value of that type bound in its place would be planned (a prepared statement's
    /// generic plan), instead of inferring its type from where it is used.
    pub fn with_parameter_types(self, parameter_types: &'a [DataType]) -> Self {
        PlanContext {
            parameter_types,
            ..self
        }
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

    /// Plans a statement as it is (already prepared, as stored SQL is), its recursive queries
    /// checked against PostgreSQL's rules ([`crate::recursive_queries`]).
    pub(crate) async fn plan_prepared(
        &self,
        statement: ast::Statement,
    ) -> Result<LogicalPlan, SqlError> {
        let plan = self.plan_statement(statement).await?;
        crate::recursive_queries::check(&plan)?;
        Ok(plan)
    }

    /// Plans a statement, its parameters typed as given if they are.
    async fn plan_statement(&self, statement: ast::Statement) -> Result<LogicalPlan, SqlError> {
        if self.parameter_types.is_empty() {
            return Ok(self
                .state
                .statement_to_plan(DfStatement::Statement(Box::new(statement)))
                .await?);
        }
        // DataFusion types the parameters of a PREPARE as it declares them.
        let data_types = self
            .parameter_types
            .iter()
            .map(sql_data_type)
            .collect::<Result<Vec<_>, _>>()?;
        let prepare = ast::Statement::Prepare {
            name: ast::Ident::new("generic"),
            data_types,
            statement: Box::new(statement),
        };
        match self
            .state
            .statement_to_plan(DfStatement::Statement(Box::new(prepare)))
            .await?
        {
            LogicalPlan::Statement(PlanStatement::Prepare(prepared)) => {
                Ok(Arc::unwrap_or_clone(prepared.input))
            }
            _ => Err(SqlError::Internal("PREPARE did not plan as one".into())),
        }
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
        distinguish_cast_aggregates(statement, &is_aggregate);
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

/// The SQL type a parameter of type `data_type` is declared as.
fn sql_data_type(data_type: &DataType) -> Result<ast::DataType, SqlError> {
    Ok(match data_type {
        DataType::Int16 => ast::DataType::SmallInt(None),
        DataType::Int32 => ast::DataType::Integer(None),
        DataType::Int64 => ast::DataType::BigInt(None),
        DataType::Utf8 => ast::DataType::Text,
        other => {
            return Err(SqlError::Unsupported(format!(
                "a parameter of type {other} in a generic plan"
            )))
        }
    })
}

/// PostgreSQL's catalog schema, searched before the search path.
const PG_CATALOG: &str = "pg_catalog";
