//! A query (`SELECT`, `VALUES`, `WITH …`) as the statements that hold one carry it: opaque,
//! planned in a [`PlanContext`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::{FieldRef, SchemaRef};
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast;

use crate::names::sql_ident;
use crate::planner::PlanContext;
use crate::result_columns::{displayed_schema, name_result_columns};
use crate::rewrite::postgres_syntax::Target;
use crate::SqlError;

/// A query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query(pub(crate) Box<ast::Query>);

/// The types planning inferred for a statement's `$n` parameters, by name (`$1`).
pub type ParameterTypes = HashMap<String, Option<FieldRef>>;

impl Query {
    pub(crate) fn new(query: ast::Query) -> Self {
        Query(Box::new(query))
    }

    /// `SELECT columns FROM schema.name` (every column when `columns` is empty).
    pub fn scan(schema: &str, name: &str, columns: &[String]) -> Result<Query, SqlError> {
        let columns = if columns.is_empty() {
            "*".to_string()
        } else {
            columns
                .iter()
                .map(|c| sql_ident(c).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let sql = format!(
            "SELECT {columns} FROM {}.{}",
            sql_ident(schema),
            sql_ident(name)
        );
        match crate::parse::parse_sql(&sql)?.pop() {
            Some(ast::Statement::Query(query)) => Ok(Query(query)),
            _ => Err(SqlError::Internal(format!("{sql} is not a query"))),
        }
    }

    /// The query as a statement, its result columns named as PostgreSQL names them.
    fn named_statement(&self) -> ast::Statement {
        let mut query = self.0.clone();
        name_result_columns(&mut query);
        ast::Statement::Query(query)
    }

    /// Plans the query, to be run once (or maintained by a subscription).
    pub async fn plan(&self, ctx: &PlanContext<'_>) -> Result<LogicalPlan, SqlError> {
        ctx.plan(self.named_statement(), Target::Read).await
    }

    /// The types of the query's parameters and of its result columns (as the rows will
    /// have them, and named as clients see them).
    pub async fn describe(
        &self,
        ctx: &PlanContext<'_>,
    ) -> Result<(ParameterTypes, SchemaRef), SqlError> {
        let plan = self.plan(ctx).await?;
        // The analyzed plan has the types the rows will have (sum(bigint) is numeric).
        let analyzed = ctx.state.optimize(&plan)?;
        let columns = displayed_schema(&Arc::new(analyzed.schema().as_arrow().clone()));
        Ok((plan.get_parameter_fields()?, columns))
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
