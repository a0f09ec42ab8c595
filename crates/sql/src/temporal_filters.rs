//! Temporal filters: the clock in a view's `WHERE`, as in
//! `WHERE ts + INTERVAL '5' MINUTE > now()` ("the last five minutes").
//!
//! DataFusion folds `now()` into a constant when it optimizes a plan, which is right for a
//! one-off query and wrong for a view that lives on. So before a view's plan is optimized,
//! `now()`, `current_timestamp` and `mz_now()` in its filters become [`CLOCK`], a volatile
//! function the optimizer leaves alone; lowering then takes each conjunct that compares an
//! expression of the row with the clock out of the filter, as a bound on when the row is in
//! the view (see [`plan::Plan::TemporalFilter`]). The clock anywhere else in a view is
//! refused.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};

/// The clock as a view's filters see it: the current time, never folded into a constant.
pub const CLOCK: &str = "__fluxion_clock";

/// The names of the clock a filter may compare with.
const CLOCK_NAMES: [&str; 3] = ["now", "current_timestamp", "mz_now"];

/// `mz_now()` for one-off queries (Materialize's name for the clock): `now()`.
pub fn mz_now() -> ScalarUDF {
    wall_clock_function("mz_now", Volatility::Stable)
}

/// The clock function views' filters compare with.
pub fn clock() -> ScalarUDF {
    wall_clock_function(CLOCK, Volatility::Volatile)
}

/// A function named `name` reading the wall clock (a `timestamptz` in microseconds).
pub(crate) fn wall_clock_function(name: &'static str, volatility: Volatility) -> ScalarUDF {
    ScalarUDF::new_from_impl(Clock {
        name,
        signature: Signature::nullary(volatility),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Clock {
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for Clock {
    fn name(&self) -> &str {
        self.name
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

/// `plan` with the clock in its filters' predicates turned into [`CLOCK`].
pub(crate) fn mark_clock_in_filters(plan: LogicalPlan) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| match node {
        LogicalPlan::Filter(mut filter) => {
            let marked = filter.predicate.clone().transform_up(|e| match e {
                Expr::ScalarFunction(ScalarFunction { func, .. })
                    if CLOCK_NAMES.contains(&func.name()) =>
                {
                    Ok(Transformed::yes(Expr::ScalarFunction(
                        ScalarFunction::new_udf(Arc::new(clock()), Vec::new()),
                    )))
                }
                other => Ok(Transformed::no(other)),
            })?;
            if !marked.transformed {
                return Ok(Transformed::no(LogicalPlan::Filter(filter)));
            }
            filter.predicate = marked.data;
            Ok(Transformed::yes(LogicalPlan::Filter(filter)))
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}

/// Whether `expr` reads the clock.
pub(crate) fn reads_clock(expr: &Expr) -> bool {
    expr.exists(|e| {
        Ok(matches!(e, Expr::ScalarFunction(ScalarFunction { func, .. }) if func.name() == CLOCK))
    })
    .unwrap_or(true)
}

/// A conjunct `row_expr <op> clock` (or the clock on the left, turned around): the row's
/// expression and how the clock must compare with it.
pub(crate) fn clock_comparison(conjunct: &Expr) -> Option<(Expr, Operator)> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = conjunct else {
        return None;
    };
    let is_clock = |e: &Expr| {
        matches!(e, Expr::ScalarFunction(ScalarFunction { func, .. }) if func.name() == CLOCK)
            || matches!(e, Expr::Cast(c) if matches!(c.expr.as_ref(),
                Expr::ScalarFunction(ScalarFunction { func, .. }) if func.name() == CLOCK))
    };
    let comparison = matches!(
        op,
        Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
    );
    if !comparison {
        return None;
    }
    if is_clock(right) && !reads_clock(left) {
        // `row <op> clock`: the clock is `op.swap()` the row.
        Some(((**left).clone(), op.swap()?))
    } else if is_clock(left) && !reads_clock(right) {
        Some(((**right).clone(), *op))
    } else {
        None
    }
}
