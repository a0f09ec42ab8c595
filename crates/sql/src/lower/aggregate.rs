//! Lowering GROUP BY: a projection computing group columns and aggregate arguments, then a
//! [`Plan::Reduce`] over it.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Expr, ExprSchemable};

use super::{arrow_schema, Lowerer};
use crate::SqlError;
use plan::{AggregateExpr, AggregateFunc, Plan};

impl Lowerer<'_> {
    pub(super) fn lower_aggregate(&self, aggregate: &Aggregate) -> Result<Plan, SqlError> {
        if aggregate
            .group_expr
            .iter()
            .any(|e| matches!(e, Expr::GroupingSet(_)))
        {
            return Err(SqlError::not_incremental(
                "GROUPING SETS, ROLLUP and CUBE",
                "use a UNION ALL of GROUP BYs",
            ));
        }
        let input_schema = aggregate.input.schema();
        let group_len = aggregate.group_expr.len();
        let mut columns: Vec<Expr> = aggregate.group_expr.clone();
        let mut aggregates = Vec::with_capacity(aggregate.aggr_expr.len());
        for (position, expr) in aggregate.aggr_expr.iter().enumerate() {
            let Expr::AggregateFunction(AggregateFunction { func, params }) = unalias(expr) else {
                return Err(SqlError::not_incremental(
                    format!("{expr}"),
                    "it is not an aggregate call",
                ));
            };
            let name = func.name().to_lowercase();
            let function = match name.as_str() {
                "count" => AggregateFunc::Count,
                "sum" => AggregateFunc::Sum,
                "avg" | "mean" => AggregateFunc::Avg,
                "min" => AggregateFunc::Min,
                "max" => AggregateFunc::Max,
                "bool_and" => AggregateFunc::BoolAnd,
                "bool_or" => AggregateFunc::BoolOr,
                "string_agg" => AggregateFunc::StringAgg {
                    separator: separator(params.args.get(1))?,
                },
                other => {
                    return Err(SqlError::not_incremental(
                        format!("aggregate {other}()"),
                        "supported aggregates are count, sum, avg, min, max, string_agg, bool_and and bool_or",
                    ))
                }
            };
            check_order_by(&function, &params.order_by, params.args.first())?;
            let argument = match params.args.first() {
                Some(Expr::Literal(value, _))
                    if function == AggregateFunc::Count && !value.is_null() && !params.distinct =>
                {
                    None
                }
                Some(arg) if function == AggregateFunc::Avg => {
                    Some(uncast_integer(arg, input_schema))
                }
                other => other.cloned(),
            };
            let arg = argument.as_ref().map(|a| {
                columns.push(a.clone());
                columns.len() - 1
            });
            let input_type = argument
                .as_ref()
                .map(|a| a.get_type(input_schema.as_ref()))
                .transpose()?;
            let filter = params.filter.as_ref().map(|f| {
                columns.push(f.as_ref().clone());
                columns.len() - 1
            });
            aggregates.push(AggregateExpr {
                func: function,
                arg,
                filter,
                distinct: params.distinct,
                input_type,
                output_type: aggregate
                    .schema
                    .field(group_len + position)
                    .data_type()
                    .clone(),
            });
        }
        let fields = columns
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let (_, field) = e.to_field(input_schema.as_ref())?;
                Ok(Field::new(
                    format!("c{i}"),
                    field.data_type().clone(),
                    field.is_nullable(),
                ))
            })
            .collect::<Result<Vec<_>, datafusion::error::DataFusionError>>()?;
        let arguments = super::projections::map(
            self.lower(&aggregate.input)?,
            None,
            self.physical_all(&columns, input_schema)?,
            Arc::new(Schema::new(fields)),
        );
        Ok(Plan::Reduce {
            input: Box::new(arguments),
            group_len,
            aggregates,
            is_global: group_len == 0,
            schema: arrow_schema(&aggregate.schema),
        })
    }
}

/// `avg(CAST(i AS Float64))` of an integer `i` averages `i` itself: summing integers is
/// exact and keeps the aggregate accumulable.
fn uncast_integer(arg: &Expr, schema: &datafusion::common::DFSchema) -> Expr {
    if let Expr::Cast(cast) = arg {
        let is_integer = cast.expr.get_type(schema).is_ok_and(|t| t.is_integer());
        if is_integer && cast.field.data_type() == &datafusion::arrow::datatypes::DataType::Float64
        {
            return cast.expr.as_ref().clone();
        }
    }
    arg.clone()
}

fn unalias(expr: &Expr) -> &Expr {
    match expr {
        Expr::Alias(alias) => unalias(&alias.expr),
        other => other,
    }
}

fn separator(arg: Option<&Expr>) -> Result<String, SqlError> {
    match arg {
        Some(Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)), _)) => {
            Ok(s.clone())
        }
        Some(Expr::Literal(ScalarValue::Utf8(None), _)) | None => Ok(String::new()),
        Some(other) => Err(SqlError::not_incremental(
            format!("string_agg separator {other}"),
            "the separator must be a constant string",
        )),
    }
}

/// Only order-insensitive aggregates, and string_agg ordered by its own argument, can be kept
/// up to date without remembering an order of arrival.
fn check_order_by(
    function: &AggregateFunc,
    order_by: &[datafusion::logical_expr::SortExpr],
    argument: Option<&Expr>,
) -> Result<(), SqlError> {
    if order_by.is_empty() {
        return Ok(());
    }
    let ordered_by_argument = order_by.len() == 1
        && order_by[0].asc
        && argument.is_some_and(|a| unalias(a) == unalias(&order_by[0].expr));
    match function {
        AggregateFunc::StringAgg { .. } if ordered_by_argument => Ok(()),
        AggregateFunc::StringAgg { .. } => Err(SqlError::not_incremental(
            "string_agg with ORDER BY other than its argument ascending",
            "order by the aggregated value",
        )),
        _ => Ok(()),
    }
}
