//! Analyzer rules that give query results Postgres's types where DataFusion's differ.
//!
//! `sum(bigint)` is `numeric` in Postgres, so a sum never overflows; DataFusion's is `bigint`
//! and silently wraps around. The rule sums `bigint` arguments as `numeric(38,0)` instead,
//! keeping the aggregate's output name, before type coercion runs.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// Sums `bigint` as `numeric(38,0)`.
#[derive(Debug, Default)]
pub struct SumBigintAsNumeric;

impl AnalyzerRule for SumBigintAsNumeric {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let LogicalPlan::Aggregate(aggregate) = node else {
                return Ok(Transformed::yes(node.recompute_schema()?));
            };
            let schema = aggregate.input.schema().clone();
            let mut changed = false;
            let aggr_expr = aggregate
                .aggr_expr
                .iter()
                .map(|expr| match widen_bigint_sum(expr, &schema)? {
                    Some(widened) => {
                        changed = true;
                        Ok(widened.alias(expr.schema_name().to_string()))
                    }
                    None => Ok(expr.clone()),
                })
                .collect::<Result<Vec<_>>>()?;
            if !changed {
                return Ok(Transformed::no(LogicalPlan::Aggregate(aggregate)));
            }
            let rebuilt = Aggregate::try_new(
                aggregate.input.clone(),
                aggregate.group_expr.clone(),
                aggr_expr,
            )?;
            Ok(Transformed::yes(LogicalPlan::Aggregate(rebuilt)))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "sum_bigint_as_numeric"
    }
}

/// `sum(x)` with a `bigint` `x`, as `sum(CAST(x AS numeric(38,0)))`.
fn widen_bigint_sum(expr: &Expr, schema: &datafusion::common::DFSchema) -> Result<Option<Expr>> {
    let Expr::AggregateFunction(AggregateFunction { func, params }) = expr else {
        return Ok(None);
    };
    if func.name() != "sum" || params.args.len() != 1 {
        return Ok(None);
    }
    if !matches!(
        params.args[0].get_type(schema)?,
        DataType::Int64 | DataType::UInt64
    ) {
        return Ok(None);
    }
    let mut params = params.clone();
    params.args[0] = params.args[0]
        .clone()
        .cast_to(&DataType::Decimal128(38, 0), schema)?;
    Ok(Some(Expr::AggregateFunction(AggregateFunction {
        func: Arc::clone(func),
        params,
    })))
}
