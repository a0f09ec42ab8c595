//! The walk shared by the analyzer rules that give expressions PostgreSQL's meaning: every
//! expression of every plan node (subqueries included), bottom-up, each rewritten against the
//! schema of its node's inputs and keeping its name (parents refer to aggregates by it).
//!
//! Every statement is analyzed, most of them have nothing these rules rewrite, and merging a
//! node's input schemas costs more than the rest of the walk: a node is rewritten only if one
//! of its expressions holds a candidate the rule names.

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan};

/// `plan` with `rewrite(expression, input schema)` applied to every sub-expression of every
/// node that has a sub-expression for which `candidate` holds, bottom-up, each top-level
/// expression keeping its name. `rewrite` must leave every expression that is not a candidate
/// as it is.
pub(crate) fn rewrite_expressions(
    plan: LogicalPlan,
    candidate: impl Fn(&Expr) -> bool,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    rewrite_in_order(plan, candidate, rewrite, Order::BottomUp)
}

/// [`rewrite_expressions`], each expression rewritten before its sub-expressions (which are
/// then those of the rewritten expression): for rewrites that take a whole tree at once.
pub(crate) fn rewrite_expressions_top_down(
    plan: LogicalPlan,
    candidate: impl Fn(&Expr) -> bool,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    rewrite_in_order(plan, candidate, rewrite, Order::TopDown)
}

enum Order {
    BottomUp,
    TopDown,
}

fn rewrite_in_order(
    plan: LogicalPlan,
    candidate: impl Fn(&Expr) -> bool,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
    order: Order,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        if !has_expression(&node, &candidate)? {
            return Ok(Transformed::no(node));
        }
        let schema = merged_input_schema(&node);
        let names = NamePreserver::new(&node);
        node.map_expressions(|expr| {
            let name = names.save(&expr);
            let rewritten = match order {
                Order::BottomUp => expr.transform_up(|e| rewrite(e, &schema))?,
                Order::TopDown => expr.transform_down(|e| rewrite(e, &schema))?,
            };
            Ok(rewritten.update_data(|e| name.restore(e)))
        })
    })
    .map(|t| t.data)
}

/// Whether a sub-expression of one of `node`'s expressions satisfies `candidate`.
pub(crate) fn has_expression(
    node: &LogicalPlan,
    candidate: &impl Fn(&Expr) -> bool,
) -> Result<bool> {
    let mut found = false;
    node.apply_expressions(|expr| {
        found = expr.exists(|e| Ok(candidate(e)))?;
        Ok(match found {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    })?;
    Ok(found)
}

/// Whether `plan` (subqueries included) calls the scalar function `name`.
pub fn calls_function(plan: &LogicalPlan, name: &str) -> bool {
    has_node(plan, |node| {
        has_expression(
            node,
            &|e| matches!(e, Expr::ScalarFunction(call) if call.name() == name),
        )
        .unwrap_or(false)
    })
}

/// Whether `plan` or a plan below it, subqueries included, satisfies `candidate`.
pub(crate) fn has_node(plan: &LogicalPlan, candidate: impl Fn(&LogicalPlan) -> bool) -> bool {
    let mut found = false;
    // The visit cannot fail: it only looks.
    let _ = plan.apply_with_subqueries(|node| {
        found = candidate(node);
        Ok(match found {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    });
    found
}

/// The schema the expressions of `node` are evaluated against: its inputs' schemas merged.
fn merged_input_schema(node: &LogicalPlan) -> DFSchema {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    schema
}
