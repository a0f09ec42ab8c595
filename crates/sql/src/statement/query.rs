//! A query (`SELECT`, `VALUES`, `WITH …`) as the statements that hold one carry it: opaque,
//! planned in a [`PlanContext`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, FieldRef, SchemaRef};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::sql::sqlparser::ast;
use repr::pg_type::{format_type, ATTNUM_KEY, TABLE_OID_KEY};

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

/// The types of the `$n` parameters of `plan`, as the columns and expressions they meet
/// imply. A parameter compared with columns of several relations has their common type: the
/// columns' origins (which relation, which attribute) are not part of it.
pub fn parameter_types(plan: &LogicalPlan) -> Result<ParameterTypes, SqlError> {
    let mut types = ParameterTypes::new();
    let mut conflict = None;
    plan.apply_with_subqueries(|plan| {
        plan.apply_expressions(|expr| {
            expr.apply(|expr| {
                let Expr::Placeholder(Placeholder { id, field }) = expr else {
                    return Ok(TreeNodeRecursion::Continue);
                };
                let field = field.as_ref().map(without_origin);
                match (types.get(id), field) {
                    (Some(Some(known)), Some(field)) if known != &field => {
                        conflict = Some(SqlError::InconsistentParameterType {
                            parameter: id.clone(),
                            detail: format!(
                                "{} versus {}",
                                format_type(known),
                                format_type(&field)
                            ),
                        });
                        return Ok(TreeNodeRecursion::Stop);
                    }
                    (Some(Some(_)), _) => {}
                    (_, field) => {
                        types.insert(id.clone(), field);
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    match conflict {
        Some(conflict) => Err(conflict),
        None => Ok(types),
    }
}

/// `field` without the metadata naming the column it came from.
fn without_origin(field: &FieldRef) -> FieldRef {
    let is_origin = |key: &String| key == TABLE_OID_KEY || key == ATTNUM_KEY;
    if !field.metadata().keys().any(is_origin) {
        return field.clone();
    }
    let metadata = field
        .metadata()
        .iter()
        .filter(|(key, _)| !is_origin(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    Arc::new(Field::clone(field).with_metadata(metadata))
}

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
        let analyzed = crate::correlated_subqueries::state_for(ctx.state, &plan).optimize(&plan)?;
        let columns = displayed_schema(&Arc::new(analyzed.schema().as_arrow().clone()));
        Ok((parameter_types(&plan)?, columns))
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
