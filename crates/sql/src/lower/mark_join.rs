//! `EXISTS` and `IN` inside `OR`: DataFusion decorrelates such a subquery into a mark join,
//! which keeps every left row and adds a boolean `mark` (whether the subquery has a match);
//! the filter above reads it (`p OR mark`). Incrementally, a mark join is the union of the
//! semi join (the rows that match, marked true) and the anti join (the rest, marked false):
//! both are maintained with work proportional to the change, and a row moves from one to
//! the other as its matches come and go.
//!
//! A mark is two-valued. That is PostgreSQL's answer for `EXISTS` everywhere, and for `IN`
//! where only truth matters (a condition reached through `AND` and `OR` alone, where NULL
//! and false both drop the row). Under `NOT`, or compared, PostgreSQL's `IN` is NULL where
//! the mark says false (a NULL on either side), so views refuse `IN` there.

use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinType, ScalarValue};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{BinaryExpr, Expr, Join, LogicalPlan, Operator};
use datafusion::physical_expr::expressions::{Column, Literal};

use super::{arrow_schema, Lowerer};
use crate::SqlError;
use plan::{Plan, ScalarExpr};

impl Lowerer<'_> {
    /// A `LeftMark` (or `RightMark`) join as the union of its matched rows, marked true, and
    /// its unmatched rows, marked false.
    pub(super) fn lower_mark_join(&self, join: &Join) -> Result<Plan, SqlError> {
        let (semi, anti, kept) = match join.join_type {
            JoinType::RightMark => (JoinType::RightSemi, JoinType::RightAnti, &join.right),
            _ => (JoinType::LeftSemi, JoinType::LeftAnti, &join.left),
        };
        let schema = arrow_schema(&join.schema);
        let marked = |join_type: JoinType, mark: bool| -> Result<Plan, SqlError> {
            let half = Join {
                join_type,
                schema: kept.schema().clone(),
                ..join.clone()
            };
            let mut projection: Vec<ScalarExpr> = kept
                .schema()
                .fields()
                .iter()
                .enumerate()
                .map(|(i, field)| Arc::new(Column::new(field.name(), i)) as ScalarExpr)
                .collect();
            projection.push(Arc::new(Literal::new(ScalarValue::Boolean(Some(mark)))));
            Ok(Plan::Map {
                input: Box::new(self.lower_join(&half)?),
                predicate: None,
                projection,
                schema: schema.clone(),
            })
        };
        Ok(Plan::Union {
            inputs: vec![marked(semi, true)?, marked(anti, false)?],
            schema,
        })
    }
}

/// Refuses an `IN` subquery of a view's condition whose NULL answer would differ from false:
/// one below anything but `AND` and `OR` (a `NOT`, a comparison, `IS`, `CASE`), or a `NOT
/// IN` that is not a whole conjunct of the condition (those become anti joins that know
/// NULLs; see the module comment).
pub(crate) fn reject_three_valued_in(plan: &LogicalPlan) -> Result<(), SqlError> {
    let mut refused = false;
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Filter(filter) = node {
            for conjunct in split_conjunction(&filter.predicate) {
                if !matches!(conjunct, Expr::InSubquery(_)) && has_three_valued_in(conjunct) {
                    refused = true;
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if refused {
        return Err(SqlError::not_incremental(
            "IN (subquery) under NOT or inside OR as NOT IN",
            "use EXISTS / NOT EXISTS, which have no NULL surprises",
        ));
    }
    Ok(())
}

/// Whether `expr` has an `IN` subquery that is negated or below anything but `AND`/`OR`.
fn has_three_valued_in(expr: &Expr) -> bool {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And | Operator::Or,
            right,
        }) => has_three_valued_in(left) || has_three_valued_in(right),
        Expr::InSubquery(in_subquery) => in_subquery.negated,
        other => {
            let mut found = false;
            // Stop at subqueries: their own filters are checked as plans of their own.
            let _ = other.apply(|e| {
                if matches!(e, Expr::InSubquery(_)) {
                    found = true;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            });
            found
        }
    }
}
