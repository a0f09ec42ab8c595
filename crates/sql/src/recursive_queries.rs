//! `WITH RECURSIVE`: PostgreSQL's rules for a recursive term, checked on every planned query.
//!
//! PostgreSQL refuses (42P19) a recursive term that reads its query more than once, inside an
//! expression's subquery or on the nullable side of an outer join, or that aggregates what it
//! reads, and (0A000) one that sorts or limits it. DataFusion plans all of these, and running
//! one (`SELECT count(*) FROM r` as the recursive term) never ends, so they are refused here,
//! with PostgreSQL's words, for one-off queries and views alike.

use std::any::Any;
use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::cte_worktable::CteWorkTable;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{Expr, JoinType, LogicalPlan, TableScan};

use crate::SqlError;

/// Checks every recursive query in `plan` (subqueries included).
pub(crate) fn check(plan: &LogicalPlan) -> Result<(), SqlError> {
    let mut failure = None;
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::RecursiveQuery(query) = node {
            match references(&query.recursive_term, &query.name) {
                Ok(count) if count > 1 => failure = Some(more_than_once(&query.name)),
                Ok(_) => {}
                Err(error) => failure = Some(error),
            }
            if failure.is_some() {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if let Some(error) = failure {
        return Err(error);
    }
    // DataFusion plans a query whose only reference is inside a subquery as a plain UNION,
    // the reference left reading a working table nothing fills.
    match stray_reference(plan) {
        Some(name) => Err(SqlError::InvalidRecursion(format!(
            "recursive reference to query \"{name}\" must not appear within a subquery"
        ))),
        None => Ok(()),
    }
}

/// The name of a recursive query whose working table `plan` reads outside the query's
/// recursive term.
fn stray_reference(plan: &LogicalPlan) -> Option<String> {
    match plan {
        LogicalPlan::TableScan(scan) => working_table_of(scan),
        LogicalPlan::RecursiveQuery(query) => stray_reference(&query.static_term),
        _ => plan
            .inputs()
            .into_iter()
            .find_map(stray_reference)
            .or_else(|| {
                expression_subqueries(plan)
                    .iter()
                    .find_map(|subquery| stray_reference(subquery))
            }),
    }
}

/// The recursive query whose working table `scan` reads, if it reads one: a recursive
/// term's reference to its own query.
pub(crate) fn working_table_of(scan: &TableScan) -> Option<String> {
    let provider = source_as_provider(&scan.source).ok()?;
    let any: &dyn Any = provider.as_ref();
    Some(any.downcast_ref::<CteWorkTable>()?.name().to_string())
}

/// Whether `plan` reads the working table of the recursive query `name`.
fn is_reference(plan: &LogicalPlan, name: &str) -> bool {
    matches!(plan, LogicalPlan::TableScan(scan) if working_table_of(scan).as_deref() == Some(name))
}

/// How many times `plan` reads the recursive query `name`, or why it may not.
fn references(plan: &LogicalPlan, name: &str) -> Result<usize, SqlError> {
    if is_reference(plan, name) {
        return Ok(1);
    }
    if let LogicalPlan::RecursiveQuery(inner) = plan {
        if inner.name == name {
            // The inner query of the same name hides this one from its recursive term.
            return references(&inner.static_term, name);
        }
    }
    for subquery in expression_subqueries(plan) {
        if references(&subquery, name)? > 0 {
            return Err(SqlError::InvalidRecursion(format!(
                "recursive reference to query \"{name}\" must not appear within a subquery"
            )));
        }
    }
    let counts = plan
        .inputs()
        .into_iter()
        .map(|input| references(input, name))
        .collect::<Result<Vec<_>, _>>()?;
    let total: usize = counts.iter().sum();
    if total > 1 {
        return Err(more_than_once(name));
    }
    if total == 0 {
        return Ok(0);
    }
    match plan {
        LogicalPlan::Join(join) => {
            let nullable_side_reads = match join.join_type {
                JoinType::Left => counts[1] > 0,
                JoinType::Right => counts[0] > 0,
                JoinType::Full => true,
                _ => false,
            };
            if nullable_side_reads {
                return Err(SqlError::InvalidRecursion(format!(
                    "recursive reference to query \"{name}\" must not appear within an outer join"
                )));
            }
        }
        LogicalPlan::Aggregate(_) => {
            return Err(SqlError::InvalidRecursion(
                "aggregate functions are not allowed in a recursive query's recursive term".into(),
            ))
        }
        LogicalPlan::Sort(_) => {
            return Err(SqlError::Unsupported(
                "ORDER BY in a recursive query is not implemented".into(),
            ))
        }
        LogicalPlan::Limit(limit) => {
            let clause = if limit.fetch.is_some() {
                "LIMIT"
            } else {
                "OFFSET"
            };
            return Err(SqlError::Unsupported(format!(
                "{clause} in a recursive query is not implemented"
            )));
        }
        _ => {}
    }
    Ok(total)
}

/// The plans of the subqueries in `plan`'s own expressions (`EXISTS`, `IN`, scalar).
fn expression_subqueries(plan: &LogicalPlan) -> Vec<Arc<LogicalPlan>> {
    let mut subqueries = Vec::new();
    for expr in plan.expressions() {
        // The closure never fails.
        let _ = expr.apply(|e| {
            subqueries.extend(match e {
                Expr::Exists(exists) => Some(exists.subquery.subquery.clone()),
                Expr::InSubquery(in_subquery) => Some(in_subquery.subquery.subquery.clone()),
                Expr::ScalarSubquery(subquery) => Some(subquery.subquery.clone()),
                _ => None,
            });
            Ok(TreeNodeRecursion::Continue)
        });
    }
    subqueries
}

fn more_than_once(name: &str) -> SqlError {
    SqlError::InvalidRecursion(format!(
        "recursive reference to query \"{name}\" must not appear more than once"
    ))
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;

    /// What [`check`] says of `sql`'s plan: `None` if it passes.
    async fn refusal(sql: &str) -> Option<String> {
        let context = SessionContext::new_with_state(crate::session::empty_state());
        let plan = context.state().create_logical_plan(sql).await.unwrap();
        check(&plan).err().map(|e| e.to_string())
    }

    const VALUES: &str = "(VALUES (1, 2), (2, 3)) AS e(src, dst)";

    #[tokio::test]
    async fn recursive_terms_postgres_refuses_are_refused() {
        let cases = [
            (
                "SELECT r.a FROM r, r AS s WHERE r.a = s.a AND r.a < 3".to_string(),
                "must not appear more than once",
            ),
            ("SELECT count(*) FROM r".into(), "aggregate functions"),
            (
                format!("SELECT e.src FROM {VALUES} LEFT JOIN r ON r.a = e.src"),
                "within an outer join",
            ),
            (
                format!("SELECT e.src FROM r RIGHT JOIN {VALUES} ON r.a = e.src"),
                "within an outer join",
            ),
            (
                format!("SELECT e.src FROM {VALUES} WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.a = e.src)"),
                "within a subquery",
            ),
            (
                format!("SELECT e.src FROM {VALUES} WHERE e.src IN (SELECT a FROM r)"),
                "within a subquery",
            ),
            (
                "(SELECT a + 1 FROM r WHERE a < 3 LIMIT 1)".into(),
                "LIMIT in a recursive query",
            ),
        ];
        for (step, expected) in cases {
            let sql = format!("WITH RECURSIVE r(a) AS (SELECT 1 UNION ALL {step}) SELECT * FROM r");
            let refusal = refusal(&sql).await;
            assert!(
                refusal.as_deref().is_some_and(|r| r.contains(expected)),
                "{sql}: {refusal:?}"
            );
        }
    }

    #[tokio::test]
    async fn linear_recursive_terms_pass() {
        for step in [
            format!("SELECT e.dst FROM r JOIN {VALUES} ON r.a = e.src"),
            format!("SELECT e.dst FROM r LEFT JOIN {VALUES} ON r.a = e.src WHERE r.a < 3"),
            format!("SELECT a + 1 FROM r WHERE a IN (SELECT src FROM {VALUES})"),
        ] {
            let sql = format!("WITH RECURSIVE r(a) AS (SELECT 1 UNION ALL {step}) SELECT * FROM r");
            assert_eq!(refusal(&sql).await, None, "{sql}");
        }
    }
}
