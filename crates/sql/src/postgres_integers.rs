//! Integer arithmetic that fails on overflow, as PostgreSQL's does.
//!
//! DataFusion adds, subtracts, multiplies and negates integers wrapping around, so
//! `9223372036854775807 + 1` is a large negative number and a view's sum of products can be
//! silently wrong. PostgreSQL raises 22003 (`integer out of range`, `bigint out of range`,
//! `smallint out of range`). [`CheckedIntegerArithmetic`] rewrites those operations on integer
//! operands into [`CheckedArithmetic`], which computes them with Arrow's checked kernels and
//! fails with PostgreSQL's message. Division and remainder are checked by DataFusion already.
//!
//! Runs after type coercion, when both operands of an operator have the type it computes in.

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::error::ArrowError;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::expression_rewrites::rewrite_expressions;

/// Rewrites `+`, `-` and `*` of two integers of one type, and the negation of an integer,
/// into [`CheckedArithmetic`].
#[derive(Debug, Default)]
pub struct CheckedIntegerArithmetic;

impl AnalyzerRule for CheckedIntegerArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let candidate = |e: &Expr| match e {
            Expr::BinaryExpr(binary) => checked_operation(binary.op).is_some(),
            Expr::Negative(_) => true,
            _ => false,
        };
        rewrite_expressions(plan, candidate, |e, schema| {
            let rewritten = match &e {
                Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                    match (checked_operation(*op), integer_type(left, schema)) {
                        (Some(operation), Some(integer))
                            if integer_type(right, schema).as_ref() == Some(&integer) =>
                        {
                            Some(checked(
                                operation,
                                vec![(**left).clone(), (**right).clone()],
                            ))
                        }
                        _ => None,
                    }
                }
                Expr::Negative(operand) => integer_type(operand, schema)
                    .map(|_| checked(Operation::Negate, vec![(**operand).clone()])),
                _ => None,
            };
            Ok(match rewritten {
                Some(call) => Transformed::yes(call),
                None => Transformed::no(e),
            })
        })
    }

    fn name(&self) -> &str {
        "checked_integer_arithmetic"
    }
}

/// The type of `expr` if it is a signed integer type (`None` otherwise, or if it has none).
fn integer_type(expr: &Expr, schema: &DFSchema) -> Option<DataType> {
    expr.get_type(schema)
        .ok()
        .filter(|t| matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64))
}

fn checked_operation(op: Operator) -> Option<Operation> {
    match op {
        Operator::Plus => Some(Operation::Add),
        Operator::Minus => Some(Operation::Subtract),
        Operator::Multiply => Some(Operation::Multiply),
        _ => None,
    }
}

fn checked(operation: Operation, args: Vec<Expr>) -> Expr {
    ScalarUDF::from(CheckedArithmetic {
        operation,
        signature: Signature::any(args.len(), Volatility::Immutable),
    })
    .call(args)
}

/// An integer operation that can overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Operation {
    Add,
    Subtract,
    Multiply,
    Negate,
}

/// `__int_add(a, b)`, `__int_sub`, `__int_mul`, `__int_neg(a)`: integer arithmetic in the
/// operands' type that fails with 22003 where the result does not fit.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedArithmetic {
    operation: Operation,
    signature: Signature,
}

impl ScalarUDFImpl for CheckedArithmetic {
    fn name(&self) -> &str {
        match self.operation {
            Operation::Add => "__int_add",
            Operation::Subtract => "__int_sub",
            Operation::Multiply => "__int_mul",
            Operation::Negate => "__int_neg",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // Constant operands make one value; DataFusion reads a one-row result of constant
        // arguments as a constant.
        let rows = match args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
        {
            true => 1,
            false => args.number_rows,
        };
        let operands = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let result = match (self.operation, operands.as_slice()) {
            (Operation::Add, [a, b]) => numeric::add(a, b),
            (Operation::Subtract, [a, b]) => numeric::sub(a, b),
            (Operation::Multiply, [a, b]) => numeric::mul(a, b),
            (Operation::Negate, [a]) => numeric::neg(a),
            _ => {
                return Err(DataFusionError::Internal(format!(
                    "{} takes {} operands",
                    self.name(),
                    if self.operation == Operation::Negate {
                        1
                    } else {
                        2
                    }
                )))
            }
        };
        match result {
            Ok(values) => Ok(ColumnarValue::Array(values)),
            Err(ArrowError::ArithmeticOverflow(_)) => Err(DataFusionError::ArrowError(
                Box::new(ArrowError::ArithmeticOverflow(
                    out_of_range(operands[0].data_type()).into(),
                )),
                None,
            )),
            Err(e) => Err(e.into()),
        }
    }
}

/// PostgreSQL's message for a result that does not fit `integer_type`.
fn out_of_range(integer_type: &DataType) -> &'static str {
    match integer_type {
        DataType::Int16 => "smallint out of range",
        DataType::Int32 => "integer out of range",
        _ => "bigint out of range",
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    async fn run(sql: &str) -> std::result::Result<String, String> {
        let context = SessionContext::new_with_state(crate::session::empty_state());
        let batches = async { context.sql(sql).await?.collect().await }
            .await
            .map_err(|e| e.to_string())?;
        let column = batches[0].column(0);
        Ok(datafusion::arrow::util::display::array_value_to_string(column, 0).unwrap())
    }

    #[tokio::test]
    async fn overflow_fails_with_the_type_postgres_names() {
        let cases = [
            ("SELECT 9223372036854775807 + 1", "bigint out of range"),
            (
                "SELECT (-9223372036854775807 - 1) - 1",
                "bigint out of range",
            ),
            ("SELECT 2147483647::int * 2::int", "integer out of range"),
            (
                "SELECT -x FROM (SELECT CAST(-32768 AS SMALLINT) AS x) AS t",
                "smallint out of range",
            ),
        ];
        for (sql, message) in cases {
            let error = run(sql).await.expect_err(sql);
            assert!(error.contains(message), "{sql}: {error}");
        }
    }

    #[tokio::test]
    async fn arithmetic_that_fits_is_unchanged() {
        assert_eq!(
            run("SELECT 2147483647::int - 1::int").await.unwrap(),
            "2147483646"
        );
        assert_eq!(run("SELECT -(3) * 4 + 1").await.unwrap(), "-11");
        assert_eq!(run("SELECT 1.5 + 1").await.unwrap(), "2.5");
    }
}
