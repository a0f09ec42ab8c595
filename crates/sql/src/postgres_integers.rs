//! Integers as PostgreSQL has them: literals typed `integer`, arithmetic that fails on overflow.
//!
//! DataFusion reads every integer literal as `bigint`; PostgreSQL reads one that fits an
//! `integer` as `integer`, so `int_column + 1` is an `integer` (and overflows past 2147483647)
//! and `SELECT 1 UNION SELECT 2` returns int4. [`IntegerLiterals`] narrows such literals before
//! type coercion.
//!
//! DataFusion adds, subtracts, multiplies and negates integers wrapping around, so
//! `9223372036854775807 + 1` is a large negative number and a view's sum of products can be
//! silently wrong. PostgreSQL raises 22003 (`integer out of range`, `bigint out of range`,
//! `smallint out of range`). [`CheckedIntegerArithmetic`] rewrites those operations on integer
//! operands into [`CheckedArithmetic`], which computes them with Arrow's checked kernels and
//! fails with PostgreSQL's message. Division and remainder are checked by DataFusion already.
//!
//! [`CheckedIntegerArithmetic`] runs after type coercion, when both operands of an operator
//! have the type it computes in.

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::error::ArrowError;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    cast, col, BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, Projection,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Values, Volatility,
};
use datafusion::optimizer::analyzer::type_coercion::coerce_union_schema;
use datafusion::optimizer::AnalyzerRule;

use crate::expression_rewrites::{has_expression, has_node, rewrite_expressions_top_down};

/// Types the integer literals that fit an `integer` as `integer`.
///
/// A statement with a recursive query keeps `bigint` literals: its working table is typed by
/// the planner before this rule runs. The rows an INSERT or UPDATE writes keep the types the
/// planner gave them (the table's), so only the arithmetic that computes them changes type.
#[derive(Debug, Default)]
pub struct IntegerLiterals;

impl AnalyzerRule for IntegerLiterals {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if has_node(&plan, |node| matches!(node, LogicalPlan::RecursiveQuery(_)))
            || !has_node(&plan, has_integer_literal)
        {
            return Ok(plan);
        }
        match plan {
            LogicalPlan::Dml(mut dml) => {
                let input = Arc::unwrap_or_clone(dml.input);
                let types: Vec<DataType> = input
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.data_type().clone())
                    .collect();
                let narrowed = narrow_integer_literals(input)?;
                dml.input = Arc::new(with_types(narrowed, &types)?);
                Ok(LogicalPlan::Dml(dml))
            }
            plan => narrow_integer_literals(plan),
        }
    }

    fn name(&self) -> &str {
        "integer_literals"
    }
}

/// `plan` with its `bigint` literals that fit an `integer` narrowed, schemas recomputed.
fn narrow_integer_literals(plan: LogicalPlan) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| match node {
        // LIMIT and OFFSET counts are `bigint` in any case.
        LogicalPlan::Limit(_) => Ok(Transformed::yes(node.recompute_schema()?)),
        LogicalPlan::Values(values) => Ok(Transformed::yes(narrow_values(values)?)),
        // Type coercion widens a union's inputs to its schema: it must follow the inputs.
        LogicalPlan::Union(mut union) => {
            union.schema = Arc::new(coerce_union_schema(&union.inputs)?);
            Ok(Transformed::yes(LogicalPlan::Union(union)))
        }
        node => {
            let names = NamePreserver::new(&node);
            node.map_expressions(|expr| {
                let name = names.save(&expr);
                let narrowed = expr.transform_up(|e| Ok(narrow_literal(e)))?;
                Ok(narrowed.update_data(|e| name.restore(e)))
            })?
            .map_data(|node| node.recompute_schema())
        }
    })
    .map(|t| t.data)
}

/// Whether `node` holds a literal this rule may narrow: a `bigint` one that fits (VALUES rows
/// are expressions of their node too). Most statements have none, and are left as they are.
fn has_integer_literal(node: &LogicalPlan) -> bool {
    let narrowable =
        |e: &Expr| matches!(e, Expr::Literal(ScalarValue::Int64(Some(v)), _) if fits_integer(*v));
    has_expression(node, &narrowable).unwrap_or(true)
}

/// An integer literal as PostgreSQL types it.
fn narrow_literal(expr: Expr) -> Transformed<Expr> {
    match expr {
        Expr::Literal(ScalarValue::Int64(Some(value)), metadata) if fits_integer(value) => {
            Transformed::yes(Expr::Literal(
                ScalarValue::Int32(Some(value as i32)),
                metadata,
            ))
        }
        expr => Transformed::no(expr),
    }
}

/// Whether PostgreSQL reads the literal `value` as an `integer`.
fn fits_integer(value: i64) -> bool {
    i32::try_from(value).is_ok()
}

/// `VALUES` with each column whose rows are all `bigint` literals (or NULL) that fit an
/// `integer` typed `integer`.
fn narrow_values(values: Values) -> Result<LogicalPlan> {
    let narrowable = |column: usize| {
        values.schema.field(column).data_type() == &DataType::Int64
            && values.values.iter().all(|row| match &row[column] {
                Expr::Literal(ScalarValue::Int64(Some(v)), _) => fits_integer(*v),
                Expr::Literal(v, _) => v.is_null(),
                _ => false,
            })
    };
    let narrowed: Vec<bool> = (0..values.schema.fields().len()).map(narrowable).collect();
    if !narrowed.contains(&true) {
        return Ok(LogicalPlan::Values(values));
    }
    let rows = values
        .values
        .into_iter()
        .map(|row| {
            row.into_iter()
                .zip(&narrowed)
                .map(|(value, narrow)| match (narrow, value) {
                    (true, Expr::Literal(v, metadata)) => {
                        Ok(Expr::Literal(v.cast_to(&DataType::Int32)?, metadata))
                    }
                    (_, value) => Ok(value),
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let fields = values
        .schema
        .iter()
        .zip(&narrowed)
        .map(|((qualifier, field), narrow)| {
            let field = match narrow {
                true => Arc::new(field.as_ref().clone().with_data_type(DataType::Int32)),
                false => Arc::clone(field),
            };
            (qualifier.cloned(), field)
        })
        .collect();
    let schema = DFSchema::new_with_metadata(fields, values.schema.metadata().clone())?;
    Ok(LogicalPlan::Values(Values {
        schema: Arc::new(schema),
        values: rows,
    }))
}

/// `plan` with its columns cast to `types` where they differ.
fn with_types(plan: LogicalPlan, types: &[DataType]) -> Result<LogicalPlan> {
    let differs = plan
        .schema()
        .fields()
        .iter()
        .zip(types)
        .any(|(field, wanted)| field.data_type() != wanted);
    if !differs {
        return Ok(plan);
    }
    let columns = plan
        .schema()
        .iter()
        .zip(types)
        .map(|((qualifier, field), wanted)| {
            let column = col(datafusion::common::Column::new(
                qualifier.cloned(),
                field.name(),
            ));
            match field.data_type() == wanted {
                true => column,
                false => cast(column, wanted.clone()).alias(field.name()),
            }
        })
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(
        columns,
        Arc::new(plan),
    )?))
}

/// Rewrites each maximal tree of `+`, `-`, `*` and negation over integers of one type into
/// one [`CheckedArithmetic`] call.
///
/// One call per tree, not per operator: DataFusion derives a function call's name and type
/// from its arguments' names, so `1+1+…` as nested calls would cost time cubic in its length
/// to plan (minutes for a thousand terms).
#[derive(Debug, Default)]
pub struct CheckedIntegerArithmetic;

impl AnalyzerRule for CheckedIntegerArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let candidate = |e: &Expr| match e {
            Expr::BinaryExpr(binary) => checked_operation(binary.op).is_some(),
            Expr::Negative(_) => true,
            _ => false,
        };
        rewrite_expressions_top_down(plan, candidate, |e, schema| {
            let mut program = Program::default();
            program.compile(e, schema);
            Ok(Transformed::yes(program.take_from((0, 0))))
        })
    }

    fn name(&self) -> &str {
        "checked_integer_arithmetic"
    }
}

/// A [`CheckedArithmetic`] program being compiled: its steps and the operands they read.
#[derive(Default)]
struct Program {
    steps: Vec<Step>,
    operands: Vec<Expr>,
}

impl Program {
    fn mark(&self) -> (usize, usize) {
        (self.steps.len(), self.operands.len())
    }

    /// Appends `expr`: its operations if it is `+`, `-`, `*` or negation over integers of one
    /// type (operands first, so the program runs on a stack), otherwise the whole of it as one
    /// operand. Returns the integer type it computes in, if it has one. Each type is computed
    /// once, bottom-up: asking each node for its type would walk its subtree again.
    fn compile(&mut self, expr: Expr, schema: &DFSchema) -> Option<DataType> {
        let start = self.mark();
        match expr {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) if checked_operation(op).is_some() => {
                let left_type = self.compile(*left, schema);
                let middle = self.mark();
                let right_type = self.compile(*right, schema);
                match (left_type, right_type, checked_operation(op)) {
                    (Some(left), Some(right), Some(step)) if left == right => {
                        self.steps.push(step);
                        Some(left)
                    }
                    _ => self.not_checked(start, Some(middle), op, schema),
                }
            }
            Expr::Negative(operand) => match self.compile(*operand, schema) {
                Some(integer) => {
                    self.steps.push(Step::Negate);
                    Some(integer)
                }
                None => self.not_checked(start, None, Operator::Minus, schema),
            },
            other => self.operand(other, schema),
        }
    }

    /// Replaces what was compiled from `start` on by one operand: the binary operation `op` of
    /// the parts before and after `middle`, or without one, the negation of what was compiled.
    /// (Apart from `compile`, whose frame every level of a deep expression stacks.)
    #[inline(never)]
    fn not_checked(
        &mut self,
        start: (usize, usize),
        middle: Option<(usize, usize)>,
        op: Operator,
        schema: &DFSchema,
    ) -> Option<DataType> {
        let expr = match middle {
            Some(middle) => {
                let right = self.take_from(middle);
                let left = self.take_from(start);
                Expr::BinaryExpr(BinaryExpr::new(Box::new(left), op, Box::new(right)))
            }
            None => Expr::Negative(Box::new(self.take_from(start))),
        };
        self.operand(expr, schema)
    }

    fn operand(&mut self, expr: Expr, schema: &DFSchema) -> Option<DataType> {
        let integer = integer_type(&expr, schema);
        self.steps.push(Step::Operand);
        self.operands.push(expr);
        integer
    }

    /// Takes out what the program computes from `mark` on: the operand itself if it is only
    /// one, otherwise a [`CheckedArithmetic`] call.
    fn take_from(&mut self, (steps, operands): (usize, usize)) -> Expr {
        let program: Vec<Step> = self.steps.drain(steps..).collect();
        let mut operands: Vec<Expr> = self.operands.drain(operands..).collect();
        if program == [Step::Operand] {
            if let Some(operand) = operands.pop() {
                return operand;
            }
        }
        let function = CheckedArithmetic {
            program,
            signature: Signature::any(operands.len(), Volatility::Immutable),
        };
        ScalarUDF::from(function).call(operands)
    }
}

/// The type of `expr` if it is a signed integer type (`None` otherwise, or if it has none).
fn integer_type(expr: &Expr, schema: &DFSchema) -> Option<DataType> {
    expr.get_type(schema)
        .ok()
        .filter(|t| matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64))
}

fn checked_operation(op: Operator) -> Option<Step> {
    match op {
        Operator::Plus => Some(Step::Add),
        Operator::Minus => Some(Step::Subtract),
        Operator::Multiply => Some(Step::Multiply),
        _ => None,
    }
}

/// One step of a [`CheckedArithmetic`] program, run on a stack of values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// Pushes the next operand.
    Operand,
    Add,
    Subtract,
    Multiply,
    Negate,
}

impl Step {
    fn symbol(self) -> &'static str {
        match self {
            Step::Operand => "",
            Step::Add => "+",
            Step::Subtract | Step::Negate => "-",
            Step::Multiply => "*",
        }
    }
}

/// `__checked_arithmetic(operands…)`: integer arithmetic in the operands' type, run as a
/// program of [`Step`]s, that fails with 22003 where a result does not fit.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedArithmetic {
    program: Vec<Step>,
    signature: Signature,
}

impl ScalarUDFImpl for CheckedArithmetic {
    fn name(&self) -> &str {
        "__checked_arithmetic"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        args.first()
            .cloned()
            .ok_or_else(|| DataFusionError::Internal("checked arithmetic without operands".into()))
    }

    /// The expression as written (`a + 1 * b`), which tells two programs apart.
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut operands = args.iter();
        for step in &self.program {
            let text = match step {
                Step::Operand => match operands.next() {
                    Some(operand) => operand.schema_name().to_string(),
                    None => return Err(malformed()),
                },
                Step::Negate => format!("(- {})", stack.pop().ok_or_else(malformed)?),
                binary => {
                    let right = stack.pop().ok_or_else(malformed)?;
                    let left = stack.pop().ok_or_else(malformed)?;
                    format!("({left} {} {right})", binary.symbol())
                }
            };
            stack.push(text);
        }
        stack.pop().ok_or_else(malformed)
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
        let mut operands = args.args.iter();
        let mut stack: Vec<ArrayRef> = Vec::new();
        for step in &self.program {
            let result = match step {
                Step::Operand => {
                    let operand = operands.next().ok_or_else(malformed)?;
                    stack.push(operand.to_array(rows)?);
                    continue;
                }
                Step::Negate => numeric::neg(&stack.pop().ok_or_else(malformed)?),
                binary => {
                    let right = stack.pop().ok_or_else(malformed)?;
                    let left = stack.pop().ok_or_else(malformed)?;
                    match binary {
                        Step::Add => numeric::add(&left, &right),
                        Step::Subtract => numeric::sub(&left, &right),
                        _ => numeric::mul(&left, &right),
                    }
                }
            };
            match result {
                Ok(values) => stack.push(values),
                Err(ArrowError::ArithmeticOverflow(_)) => {
                    let integer = args.args.first().map(ColumnarValue::data_type);
                    return Err(DataFusionError::ArrowError(
                        Box::new(ArrowError::ArithmeticOverflow(
                            out_of_range(&integer.unwrap_or(DataType::Int64)).into(),
                        )),
                        None,
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(ColumnarValue::Array(stack.pop().ok_or_else(malformed)?))
    }
}

fn malformed() -> DataFusionError {
    DataFusionError::Internal("a checked arithmetic program does not match its operands".into())
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
                "SELECT DATE '2024-01-01' + (2147483647 + 1)",
                "integer out of range",
            ),
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
        assert_eq!(run("SELECT 10 - 2 * -(3 - 5) * 4").await.unwrap(), "-6");
        assert_eq!(
            run("SELECT DATE '2024-01-01' + (1 + 1) - -(-1)")
                .await
                .unwrap(),
            "2024-01-02"
        );
        assert_eq!(run("SELECT -(1.5) * 2 + 1").await.unwrap(), "-2.0");
        assert_eq!(run("SELECT 1.5 + 1").await.unwrap(), "2.5");
    }

    #[tokio::test]
    async fn a_long_chain_is_one_program() {
        let chain = vec!["1"; 300].join(" + ");
        assert_eq!(run(&format!("SELECT {chain}")).await.unwrap(), "300");
        let chain = vec!["2147483"; 1001].join(" + ");
        let error = run(&format!("SELECT {chain}")).await.unwrap_err();
        assert!(error.contains("integer out of range"), "{error}");
    }
}
