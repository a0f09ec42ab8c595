//! Rows computed from constants alone, such as the VALUES of an `INSERT INTO t VALUES (1,
//! 'a'), ($1, $2 * 2)`: a plan of projections over VALUES, evaluated without DataFusion's
//! optimizer and physical planner.
//!
//! As for point queries (see [`crate::PointQuery`]), planning such rows the general way costs
//! far more than computing them. The plan is analyzed (as for any query) and matched once,
//! with its `$n` parameters in it; each computation puts the values in, simplifies each
//! expression (as the optimizer would) and evaluates it as DataFusion's VALUES and projection
//! operators would: the same expressions, with the same semantics.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::{ColumnarValue, Expr, LogicalPlan};

use crate::point_query::{is_row_expression, with_parameters, PhysicalRowExpressions};

/// Rows computed from constants and `$n` parameters: an analyzed plan of projections over
/// VALUES.
#[derive(Debug)]
pub struct ConstantRows {
    plan: LogicalPlan,
    /// The options the plan was analyzed with, for simplifying and evaluating expressions.
    config: Arc<ConfigOptions>,
}

impl ConstantRows {
    /// `plan` as constant rows, if it is only projections (and aliases) over VALUES, with no
    /// subquery, aggregate or window anywhere.
    pub fn from_plan(state: &SessionState, plan: &LogicalPlan) -> Option<ConstantRows> {
        if !is_constant(plan) {
            return None;
        }
        let analyzed = state
            .analyzer()
            .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
            .ok()?;
        is_constant(&analyzed).then(|| ConstantRows {
            plan: analyzed,
            config: state.config_options().clone(),
        })
    }

    /// Computes the rows with `parameters` in place of the placeholders (`$1` is the first),
    /// starting now; `None` if a parameter is missing or of another type than the plan gave
    /// its placeholder.
    pub fn compute(&self, parameters: &[ScalarValue]) -> Option<Result<RecordBatch>> {
        let mut props = ExecutionProps::new();
        props.mark_start_execution(self.config.clone());
        let evaluation = Evaluation {
            parameters,
            props: &props,
            config: &self.config,
        };
        evaluation.rows(&self.plan).transpose()
    }
}

/// Whether `plan` is projections and aliases over VALUES computed from constants.
fn is_constant(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Values(values) => values.values.iter().flatten().all(is_row_expression),
        LogicalPlan::Projection(projection) => {
            projection.expr.iter().all(is_row_expression) && is_constant(&projection.input)
        }
        LogicalPlan::SubqueryAlias(alias) => is_constant(&alias.input),
        _ => false,
    }
}

/// One computation of constant rows.
struct Evaluation<'a> {
    parameters: &'a [ScalarValue],
    props: &'a ExecutionProps,
    config: &'a Arc<ConfigOptions>,
}

impl Evaluation<'_> {
    /// The rows of `plan`; `Ok(None)` if the parameters do not fit it.
    fn rows(&self, plan: &LogicalPlan) -> Result<Option<RecordBatch>> {
        match plan {
            LogicalPlan::Values(values) => {
                let none = RecordBatch::try_new_with_options(
                    Arc::new(Schema::empty()),
                    vec![],
                    &RecordBatchOptions::new().with_row_count(Some(1)),
                )?;
                let empty = Arc::new(DFSchema::empty());
                let expressions = PhysicalRowExpressions::new(&empty, self.config, self.props);
                let mut columns: Vec<Vec<ScalarValue>> =
                    vec![Vec::new(); values.schema.fields().len()];
                for row in &values.values {
                    for (column, expr) in columns.iter_mut().zip(row) {
                        let Some(value) = self.evaluate(&expressions, expr, &none)? else {
                            return Ok(None);
                        };
                        column.push(ScalarValue::try_from_array(&value, 0)?);
                    }
                }
                let arrays = columns
                    .into_iter()
                    .zip(values.schema.fields())
                    .map(|(column, field)| {
                        cast(&ScalarValue::iter_to_array(column)?, field.data_type())
                            .map_err(DataFusionError::from)
                    })
                    .collect::<Result<Vec<ArrayRef>>>()?;
                batch(values.schema.as_arrow(), arrays, values.values.len()).map(Some)
            }
            LogicalPlan::Projection(projection) => {
                let Some(input) = self.rows(&projection.input)? else {
                    return Ok(None);
                };
                let expressions =
                    PhysicalRowExpressions::new(projection.input.schema(), self.config, self.props);
                let mut arrays = Vec::with_capacity(projection.expr.len());
                for expr in &projection.expr {
                    let Some(array) = self.evaluate(&expressions, expr, &input)? else {
                        return Ok(None);
                    };
                    arrays.push(array);
                }
                batch(projection.schema.as_arrow(), arrays, input.num_rows()).map(Some)
            }
            LogicalPlan::SubqueryAlias(alias) => self.rows(&alias.input),
            _ => Err(DataFusionError::Internal(
                "constant rows of a plan that is not constant".into(),
            )),
        }
    }

    /// `expr` evaluated over `input` (its rows, in the schema `expressions` are over), one
    /// value per row; `Ok(None)` if the parameters do not fit it.
    fn evaluate(
        &self,
        expressions: &PhysicalRowExpressions<'_>,
        expr: &Expr,
        input: &RecordBatch,
    ) -> Result<Option<ArrayRef>> {
        let Some(expr) = with_parameters(expr, self.parameters) else {
            return Ok(None);
        };
        let value = match expressions.physical(expr)?.evaluate(input)? {
            ColumnarValue::Array(array) => array,
            ColumnarValue::Scalar(scalar) => scalar.to_array_of_size(input.num_rows())?,
        };
        Ok(Some(value))
    }
}

/// A batch of `arrays` named as `schema`'s columns, with `rows` rows (there may be no
/// columns). Every column may hold NULLs: the table's NOT NULL constraints are checked later.
fn batch(schema: &Schema, arrays: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let fields = schema
        .fields()
        .iter()
        .zip(&arrays)
        .map(|(field, array)| Field::new(field.name(), array.data_type().clone(), true))
        .collect::<Vec<_>>();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}
