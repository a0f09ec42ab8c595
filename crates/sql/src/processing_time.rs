//! `proctime()`: the time a row is processed, for processing-time windows (Nexmark q12).
//!
//! In a one-off query it is the clock when the query runs. In a materialized view it is the
//! clock when the dataflow processes the row: each batch of rows is stamped once, as it goes
//! through the projection that computes it. A retraction would be stamped with another time
//! than the row it retracts, so a view may use it only over relations that are only ever
//! appended to (sources without a key).

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, LogicalPlan, ScalarUDF, Volatility};

use crate::catalog::as_relation;
use crate::SqlError;

/// The function's name.
pub const PROCTIME: &str = "proctime";

/// `proctime()`, to register with a session state: the wall clock, volatile so that each
/// batch reads it anew.
pub fn proctime() -> ScalarUDF {
    crate::temporal_filters::wall_clock_function(PROCTIME, Volatility::Volatile)
}

/// Refuses a view that computes `proctime()` over a relation rows can leave.
pub(crate) fn check_append_only_inputs(plan: &LogicalPlan) -> Result<(), SqlError> {
    let mut uses_proctime = false;
    let mut changing = None;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let append_only = source_as_provider(&scan.source)
                .ok()
                .and_then(|provider| as_relation(provider.as_ref()).map(|r| r.append_only));
            if append_only != Some(true) {
                changing.get_or_insert_with(|| scan.table_name.to_string());
            }
        }
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                if matches!(e, Expr::ScalarFunction(ScalarFunction { func, .. }) if func.name() == PROCTIME)
                {
                    uses_proctime = true;
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    match (uses_proctime, changing) {
        (true, Some(relation)) => Err(SqlError::not_incremental(
            "proctime()",
            format!(
                "\"{relation}\" can change or lose rows, and a retraction would be stamped \
                 with another time than its row: use it over sources without a key"
            ),
        )),
        _ => Ok(()),
    }
}
