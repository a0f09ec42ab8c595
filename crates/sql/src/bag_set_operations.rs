//! `INTERSECT ALL` and `EXCEPT ALL` with PostgreSQL's duplicates.
//!
//! A row that appears `m` times on the left and `n` times on the right appears `min(m, n)`
//! times in `INTERSECT ALL` and `max(m - n, 0)` times in `EXCEPT ALL`. DataFusion plans both as
//! a semi (anti) join of the two sides, which keeps all `m` copies (or none). Numbering the
//! copies of each row on both sides (`row_number()` partitioned by every column) makes every
//! copy distinct, and then the semi (anti) join of the numbered sides keeps exactly the copies
//! numbered up to `n` (above `n`). A materialized view maintains both: the numbering is a
//! window over one row's copies, the join is keyed by the row.
//!
//! Before planning, the operands of those operators are marked (`SELECT * FROM (operand) AS
//! __bag_left`, `… AS __bag_right`); [`BagSetOperations`] finds the join DataFusion planned
//! between two marked operands and numbers its sides.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::NullEquality;
use datafusion::error::Result;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{
    col, Expr, ExprFunctionExt, Join, JoinType, LogicalPlan, LogicalPlanBuilder,
};
use datafusion::optimizer::AnalyzerRule;

use crate::expression_rewrites::has_node;

/// The alias that marks the left operand of an `INTERSECT ALL` or `EXCEPT ALL`.
pub(crate) const BAG_LEFT: &str = "__bag_left";

/// The alias that marks the right operand.
pub(crate) const BAG_RIGHT: &str = "__bag_right";

/// Numbers the copies of each row on both sides of the semi or anti join planned for an
/// `INTERSECT ALL` or `EXCEPT ALL`, and joins on the number too.
#[derive(Debug, Default)]
pub struct BagSetOperations;

impl AnalyzerRule for BagSetOperations {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if !has_node(&plan, is_bag_join) {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Join(join) if is_bag_join_node(&join) => {
                Ok(Transformed::yes(number_copies(join)?))
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "bag_set_operations"
    }
}

fn is_bag_join(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::Join(join) if is_bag_join_node(join))
}

fn is_bag_join_node(join: &Join) -> bool {
    matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
        && is_marked(&join.left, BAG_LEFT)
        && is_marked(&join.right, BAG_RIGHT)
}

/// Whether `plan` is an operand marked with `alias` (under the projection of its `SELECT *`).
fn is_marked(plan: &LogicalPlan, alias: &str) -> bool {
    match plan {
        LogicalPlan::SubqueryAlias(subquery) => subquery.alias.table() == alias,
        LogicalPlan::Projection(projection) => is_marked(&projection.input, alias),
        _ => false,
    }
}

/// The join of both sides numbered, projected to the left side's columns (its schema before).
fn number_copies(join: Join) -> Result<LogicalPlan> {
    let columns: Vec<Expr> = join
        .left
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let left_ordinal = format!("{BAG_LEFT}_copy");
    let right_ordinal = format!("{BAG_RIGHT}_copy");
    let left = numbered(Arc::unwrap_or_clone(join.left), &left_ordinal)?;
    let right = numbered(Arc::unwrap_or_clone(join.right), &right_ordinal)?;
    let mut on = join.on;
    on.push((col(left_ordinal), col(right_ordinal)));
    let numbered_join = Join::try_new(
        Arc::new(left),
        Arc::new(right),
        on,
        join.filter,
        join.join_type,
        join.join_constraint,
        NullEquality::NullEqualsNull,
        false,
    )?;
    LogicalPlanBuilder::from(LogicalPlan::Join(numbered_join))
        .project(columns)?
        .build()
}

/// `plan` with a column `name` numbering the copies of each of its rows from 1.
fn numbered(plan: LogicalPlan, name: &str) -> Result<LogicalPlan> {
    let every_column: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let ordinal = row_number().partition_by(every_column).build()?.alias(name);
    LogicalPlanBuilder::from(plan)
        .window(vec![ordinal])?
        .build()
}
