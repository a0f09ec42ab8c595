//! Analyzer rules that give query results Postgres's types where DataFusion's differ.
//!
//! - `sum(bigint)` is `numeric` in Postgres, so a sum never overflows; DataFusion's is
//!   `bigint` and silently wraps around. [`SumBigintAsNumeric`] sums `bigint` arguments as
//!   `numeric(38,0)` instead, keeping the aggregate's output name. It runs after integer
//!   literals are typed ([`crate::postgres_integers::IntegerLiterals`]), so `sum(int_column *
//!   2)` stays `bigint`, as in Postgres.
//! - Casting `numeric` or a float to an integer rounds in Postgres; DataFusion truncates.
//!   [`RoundingIntegerCasts`] rounds first.
//! - An operator between `real` and an integer or `numeric` is computed in `double
//!   precision` in Postgres (it has no `real` operator for them, and both cast to `double
//!   precision` implicitly); DataFusion computes it in `real`, losing digits
//!   (`-4588 + (-213220800)::real`). [`RealWithExactAsDouble`] casts both sides.
//!
//! All three run before type coercion.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::optimizer::AnalyzerRule;

use crate::expression_rewrites::{has_node, rewrite_expressions};

/// Sums `bigint` as `numeric(38,0)`.
#[derive(Debug, Default)]
pub struct SumBigintAsNumeric;

impl AnalyzerRule for SumBigintAsNumeric {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if !has_node(&plan, |node| matches!(node, LogicalPlan::Aggregate(_))) {
            return Ok(plan);
        }
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

/// `sum(x)` with a `bigint` `x`, as `sum(CAST(x AS numeric(38,0)))` (under the alias it has).
fn widen_bigint_sum(expr: &Expr, schema: &datafusion::common::DFSchema) -> Result<Option<Expr>> {
    if let Expr::Alias(alias) = expr {
        return Ok(widen_bigint_sum(&alias.expr, schema)?
            .map(|widened| widened.alias_qualified(alias.relation.clone(), alias.name.clone())));
    }
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

/// Rounds (half away from zero) before casting `numeric` or a float to an integer type.
#[derive(Debug, Default)]
pub struct RoundingIntegerCasts;

impl AnalyzerRule for RoundingIntegerCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let integer_cast =
            |e: &Expr| matches!(e, Expr::Cast(cast) if cast.field.data_type().is_integer());
        rewrite_expressions(plan, integer_cast, |e, schema| {
            let Expr::Cast(cast) = &e else {
                return Ok(Transformed::no(e));
            };
            let target_is_integer = cast.field.data_type().is_integer();
            let source_is_fractional = cast.expr.get_type(schema).is_ok_and(|t| {
                matches!(
                    t,
                    DataType::Float16
                        | DataType::Float32
                        | DataType::Float64
                        | DataType::Decimal128(..)
                )
            });
            if !(target_is_integer && source_is_fractional) {
                return Ok(Transformed::no(e));
            }
            let rounded =
                datafusion::functions::math::expr_fn::round(vec![cast.expr.as_ref().clone()]);
            let mut rounded_cast = cast.clone();
            rounded_cast.expr = Box::new(rounded);
            Ok(Transformed::yes(Expr::Cast(rounded_cast)))
        })
    }

    fn name(&self) -> &str {
        "rounding_integer_casts"
    }
}

/// Computes an arithmetic operator or a comparison between `real` and an integer or
/// `numeric` in `double precision`.
#[derive(Debug, Default)]
pub struct RealWithExactAsDouble;

impl AnalyzerRule for RealWithExactAsDouble {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let candidate = |e: &Expr| matches!(e, Expr::BinaryExpr(b) if widens_real(b.op));
        rewrite_expressions(plan, candidate, |e, schema| {
            let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e else {
                return Ok(Transformed::no(e));
            };
            let (left_type, right_type) = (left.get_type(schema)?, right.get_type(schema)?);
            let mixes = |a: &DataType, b: &DataType| {
                a == &DataType::Float32 && (b.is_integer() || matches!(b, DataType::Decimal128(..)))
            };
            if !widens_real(op)
                || !(mixes(&left_type, &right_type) || mixes(&right_type, &left_type))
            {
                return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                    left,
                    op,
                    right,
                })));
            }
            Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                left: Box::new(left.cast_to(&DataType::Float64, schema)?),
                op,
                right: Box::new(right.cast_to(&DataType::Float64, schema)?),
            })))
        })
    }

    fn name(&self) -> &str {
        "real_with_exact_as_double"
    }
}

/// The operators Postgres resolves to `double precision` ones when `real` meets an integer or
/// `numeric`.
fn widens_real(op: Operator) -> bool {
    use Operator::*;
    matches!(
        op,
        Plus | Minus | Multiply | Divide | Modulo | Eq | NotEq | Lt | LtEq | Gt | GtEq
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    async fn sum_type(expression: &str) -> DataType {
        result_type(&format!("sum({expression})")).await
    }

    async fn result_type(expression: &str) -> DataType {
        let context = SessionContext::new_with_state(crate::session::empty_state());
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("b", DataType::Int64, true),
            Field::new("r", DataType::Float32, true),
            Field::new("n", DataType::Decimal128(12, 2), true),
        ]));
        context
            .register_table(
                "fluxion.public.t",
                Arc::new(MemTable::try_new(schema, vec![vec![]]).unwrap()),
            )
            .unwrap();
        let frame = context
            .sql(&format!("SELECT {expression} FROM t"))
            .await
            .unwrap();
        let plan = frame.into_optimized_plan().unwrap();
        plan.schema().field(0).data_type().clone()
    }

    #[tokio::test]
    async fn only_sums_of_bigint_values_become_numeric() {
        assert_eq!(sum_type("b").await, DataType::Decimal128(38, 0));
        assert_eq!(sum_type("b * 2").await, DataType::Decimal128(38, 0));
        assert_eq!(
            sum_type("i * 3000000000").await,
            DataType::Decimal128(38, 0)
        );
        assert_eq!(sum_type("i").await, DataType::Int64);
        assert_eq!(sum_type("i * 2").await, DataType::Int64);
    }

    #[tokio::test]
    async fn real_meets_integers_and_numeric_in_double_precision() {
        for expression in ["i + r", "r * b", "n - r", "r / 2", "i = r", "r < n"] {
            let expected = match expression.contains(['=', '<']) {
                true => DataType::Boolean,
                false => DataType::Float64,
            };
            assert_eq!(result_type(expression).await, expected, "{expression}");
        }
        assert_eq!(result_type("r + r").await, DataType::Float32);
        assert_eq!(result_type("r + 1.5::real").await, DataType::Float32);
    }
}
