//! `proctime()`: the time a row is processed, for processing-time windows (Nexmark q12).
//!
//! In a one-off query it is the clock when the query runs. In a materialized view it is the
//! clock when the dataflow processes the row: each batch of rows is stamped once, as it goes
//! through the projection that computes it. A retraction would be stamped with another time
//! than the row it retracts, so a view may use it only over relations that are only ever
//! appended to (sources without a key).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use crate::catalog::as_relation;
use crate::SqlError;

/// The function's name.
pub const PROCTIME: &str = "proctime";

/// `proctime()`, to register with a session state.
pub fn proctime() -> ScalarUDF {
    ScalarUDF::new_from_impl(ProcessingTime {
        signature: Signature::nullary(Volatility::Volatile),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ProcessingTime {
    signature: Signature,
}

impl ScalarUDFImpl for ProcessingTime {
    fn name(&self) -> &str {
        PROCTIME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(
            TimeUnit::Microsecond,
            Some(Arc::from("UTC")),
        ))
    }

    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::TimestampMicrosecond(
            Some(repr::wall_clock_ms() as i64 * 1_000),
            Some(Arc::from("UTC")),
        )))
    }
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
