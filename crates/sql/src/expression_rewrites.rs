//! The walk shared by the analyzer rules that give expressions PostgreSQL's meaning: every
//! expression of every plan node (subqueries included), bottom-up, each rewritten against the
//! schema of its node's inputs and keeping its name (parents refer to aggregates by it).

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan};

/// `plan` with `rewrite(expression, input schema)` applied to every sub-expression of every
/// node, bottom-up, each top-level expression keeping its name.
pub(crate) fn rewrite_expressions(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        let schema = merged_input_schema(&node);
        let names = NamePreserver::new(&node);
        node.map_expressions(|expr| {
            let name = names.save(&expr);
            let rewritten = expr.transform_up(|e| rewrite(e, &schema))?;
            Ok(rewritten.update_data(|e| name.restore(e)))
        })
    })
    .map(|t| t.data)
}

/// The schema the expressions of `node` are evaluated against: its inputs' schemas merged.
fn merged_input_schema(node: &LogicalPlan) -> DFSchema {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    schema
}
