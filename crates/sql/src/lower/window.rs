//! Lowering window functions (`OVER`). `SESSION` windows become the session operator (see
//! [`super::session`]); every other window function becomes a [`Plan::Window`], with each
//! function's reach (the rows around a row its value depends on), so that a change recomputes
//! only the rows within reach of it. A filter above it that keeps the first rows
//! of each partition by `row_number()` (`WHERE rn <= k`, the top-k per group idiom) limits the
//! window to those rows.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::NullTreatment;
use datafusion::logical_expr::expr::WindowFunction as LogicalWindowFunction;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::ExprSchemable;
use datafusion::logical_expr::{
    BinaryExpr, Expr, LogicalPlan, Operator, SortExpr, Window, WindowFrame, WindowFrameBound,
    WindowFrameUnits, WindowFunctionDefinition,
};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_planner::create_window_expr;
use plan::{Extent, Plan, ScalarExpr, SortColumn, WindowFunction, WindowFunctionKind, WindowReach};

use super::projections::picked_column;
use super::session::is_session_bound;
use super::{arrow_schema, Lowerer};
use crate::SqlError;

impl Lowerer<'_> {
    /// A window node: `SESSION` bounds, or window functions over partitions.
    pub(super) fn lower_window(&self, window: &Window) -> Result<Plan, SqlError> {
        if window.window_expr.iter().any(is_session_bound) {
            return self.lower_session(window);
        }
        if window.window_expr.iter().any(super::asof::is_asof_closest) {
            return self.lower_asof(window);
        }
        let schema = window.input.schema();
        let mut over: Option<(&[Expr], &[SortExpr])> = None;
        let mut functions = Vec::with_capacity(window.window_expr.len());
        for expr in &window.window_expr {
            let Expr::WindowFunction(function) = unaliased(expr) else {
                return Err(SqlError::not_incremental(
                    format!("window expression {expr}"),
                    "it is not a window function call",
                ));
            };
            let spec = (
                function.params.partition_by.as_slice(),
                function.params.order_by.as_slice(),
            );
            match over {
                Some(common) if common != spec => {
                    return Err(SqlError::not_incremental(
                        "window functions over different windows in one SELECT",
                        "compute each window in its own subquery",
                    ))
                }
                Some(_) => {}
                None => over = Some(spec),
            }
            functions.push(WindowFunction {
                expr: physical_window(self.state, expr, schema)?,
                kind: kind(function),
                reach: reach(function),
            });
        }
        let (partition, order) = over.unwrap_or_default();
        let mut input = Columns::new(self, &window.input)?;
        let partition_by = partition
            .iter()
            .map(|e| input.column_of(e))
            .collect::<Result<Vec<_>, _>>()?;
        let order_by = order
            .iter()
            .map(|sort| {
                Ok(SortColumn {
                    column: input.column_of(&sort.expr)?,
                    descending: !sort.asc,
                    nulls_first: sort.nulls_first,
                })
            })
            .collect::<Result<Vec<_>, SqlError>>()?;
        let output = arrow_schema(&window.schema);
        let width = input.width;
        let (input, computed) = input.into_plan()?;
        if computed == 0 {
            return Ok(Plan::Window {
                input: Box::new(input),
                partition_by,
                order_by,
                functions,
                limit: None,
                schema: output,
            });
        }
        // The computed keys sit between the input's columns and the functions' values: the
        // functions still read the input's columns where they were, and a projection drops
        // the keys again.
        let mut fields: Vec<_> = input.schema().fields().iter().cloned().collect();
        fields.extend(output.fields().iter().skip(width).cloned());
        let windowed = Plan::Window {
            input: Box::new(input),
            partition_by,
            order_by,
            functions,
            limit: None,
            schema: Arc::new(Schema::new(fields)),
        };
        let kept = (0..width).chain(width + computed..width + computed + window.window_expr.len());
        Ok(Plan::Map {
            input: Box::new(windowed),
            predicate: None,
            projection: kept
                .map(|i| column(&output_name(&output, i, width, computed), i))
                .collect(),
            schema: output,
        })
    }
}

/// The input of a window, with the partition and order expressions that are not columns
/// computed into columns after the input's own.
struct Columns<'l, 'a> {
    lowerer: &'l Lowerer<'a>,
    schema: &'l DFSchema,
    plan: Plan,
    width: usize,
    computed: Vec<Expr>,
}

impl<'l, 'a> Columns<'l, 'a> {
    fn new(lowerer: &'l Lowerer<'a>, input: &'l LogicalPlan) -> Result<Self, SqlError> {
        Ok(Self {
            lowerer,
            schema: input.schema(),
            plan: lowerer.lower(input)?,
            width: input.schema().fields().len(),
            computed: Vec::new(),
        })
    }

    /// The column holding `expr`: its own, or one computed for it.
    fn column_of(&mut self, expr: &Expr) -> Result<usize, SqlError> {
        if let Expr::Column(column) = expr {
            return Ok(self.schema.index_of_column(column)?);
        }
        let position = match self.computed.iter().position(|e| e == expr) {
            Some(p) => p,
            None => {
                self.computed.push(expr.clone());
                self.computed.len() - 1
            }
        };
        Ok(self.width + position)
    }

    /// The input's plan, computing the computed columns after its own, and their number.
    fn into_plan(self) -> Result<(Plan, usize), SqlError> {
        if self.computed.is_empty() {
            return Ok((self.plan, 0));
        }
        let mut fields: Vec<_> = self.plan.schema().fields().iter().cloned().collect();
        let mut projection: Vec<ScalarExpr> = fields
            .iter()
            .enumerate()
            .map(|(i, field)| column(field.name(), i))
            .collect();
        for (i, expr) in self.computed.iter().enumerate() {
            let (_, field) = expr.to_field(self.schema)?;
            fields.push(Arc::new(Field::new(
                format!("__window_key_{i}"),
                field.data_type().clone(),
                field.is_nullable(),
            )));
            projection.push(self.lowerer.physical(expr, self.schema)?);
        }
        let computed = self.computed.len();
        let plan = Plan::Map {
            input: Box::new(self.plan),
            predicate: None,
            projection,
            schema: Arc::new(Schema::new(fields)),
        };
        Ok((plan, computed))
    }
}

fn column(name: &str, index: usize) -> ScalarExpr {
    Arc::new(Column::new(name, index))
}

/// The name of output column `i` of the projection after a window with `computed` keys.
fn output_name(output: &SchemaRef, i: usize, width: usize, computed: usize) -> String {
    let position = if i < width { i } else { i - computed };
    output.field(position).name().clone()
}

/// Limits the windows below `plan` to the rows `predicate` (over `schema`, `plan`'s columns)
/// keeps by their row number: for each conjunct `rn <= k` (or `rn < k`, `rn = 1`) where `rn`
/// is a `row_number()` column passed up unchanged, only the first `k` rows of each partition
/// are computed. The filter itself still applies above.
pub(super) fn limit_by_row_number(plan: &mut Plan, predicate: &Expr, schema: &DFSchema) {
    for conjunct in split_conjunction(predicate) {
        if let Some((column, rows)) = row_number_bound(conjunct, schema) {
            limit_window(plan, column, rows);
        }
    }
}

/// `(column, k)` if `conjunct` keeps only the rows whose `column` is at most `k`.
fn row_number_bound(conjunct: &Expr, schema: &DFSchema) -> Option<(usize, usize)> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = conjunct else {
        return None;
    };
    let (column, op, bound) = match (unwrap_casts(left), unwrap_casts(right)) {
        (Expr::Column(c), Expr::Literal(value, _)) => (c, *op, value),
        (Expr::Literal(value, _), Expr::Column(c)) => (c, op.swap()?, value),
        _ => return None,
    };
    let bound = match bound.cast_to(&DataType::Int64) {
        Ok(ScalarValue::Int64(Some(n))) => n,
        _ => return None,
    };
    let rows = match op {
        Operator::LtEq => bound,
        Operator::Lt => bound - 1,
        Operator::Eq if bound == 1 => 1,
        _ => return None,
    };
    Some((schema.index_of_column(column).ok()?, rows.max(0) as usize))
}

/// Limits the window computing `column` of `plan` to its first `rows` rows per partition, if
/// `column` is a row number passed up unchanged from a [`Plan::Window`].
fn limit_window(plan: &mut Plan, column: usize, rows: usize) {
    match plan {
        Plan::Map {
            input, projection, ..
        } => {
            let passed = projection.get(column).and_then(picked_column);
            if let Some(input_column) = passed {
                limit_window(input, input_column, rows);
            }
        }
        Plan::Window {
            input,
            functions,
            limit,
            ..
        } => {
            let width = input.schema().fields().len();
            let is_row_number = column
                .checked_sub(width)
                .and_then(|f| functions.get(f))
                .is_some_and(|f| f.kind == WindowFunctionKind::RowNumber);
            if is_row_number {
                *limit = Some(limit.map_or(rows, |l| l.min(rows)));
            }
        }
        _ => {}
    }
}

fn unaliased(expr: &Expr) -> &Expr {
    match expr {
        Expr::Alias(alias) => unaliased(&alias.expr),
        other => other,
    }
}

fn unwrap_casts(expr: &Expr) -> &Expr {
    match expr {
        Expr::Cast(cast) => unwrap_casts(&cast.expr),
        Expr::TryCast(cast) => unwrap_casts(&cast.expr),
        other => other,
    }
}

fn kind(function: &LogicalWindowFunction) -> WindowFunctionKind {
    match &function.fun {
        WindowFunctionDefinition::WindowUDF(udf) if udf.name() == "row_number" => {
            WindowFunctionKind::RowNumber
        }
        _ => WindowFunctionKind::Other,
    }
}

/// The rows around a row that `function`'s value for it depends on.
fn reach(function: &LogicalWindowFunction) -> WindowReach {
    let params = &function.params;
    let name = match &function.fun {
        WindowFunctionDefinition::WindowUDF(udf) => udf.name(),
        WindowFunctionDefinition::AggregateUDF(_) => return frame_reach(&params.window_frame),
    };
    match name {
        "row_number" | "rank" | "dense_rank" => WindowReach {
            preceding: Extent::Unbounded,
            following: Extent::NONE,
        },
        "lag" | "lead" if params.null_treatment != Some(NullTreatment::IgnoreNulls) => {
            let Some(offset) = lag_offset(params.args.get(1)) else {
                return WindowReach::WHOLE_PARTITION;
            };
            let offset = if name == "lag" { offset } else { -offset };
            let rows = |n: i64| Extent::Bounded {
                rows: usize::try_from(n.max(0)).unwrap_or(usize::MAX),
                peers: false,
            };
            WindowReach {
                preceding: rows(offset),
                following: rows(offset.saturating_neg()),
            }
        }
        "first_value" | "last_value" | "nth_value" => frame_reach(&params.window_frame),
        _ => WindowReach::WHOLE_PARTITION,
    }
}

/// The offset of a `lag` or `lead` (1 without one), if it is a constant.
fn lag_offset(offset: Option<&Expr>) -> Option<i64> {
    let Some(offset) = offset else {
        return Some(1);
    };
    let Expr::Literal(value, _) = unwrap_casts(offset) else {
        return None;
    };
    match value.cast_to(&DataType::Int64) {
        Ok(ScalarValue::Int64(Some(n))) => Some(n),
        _ => None,
    }
}

/// The rows a frame holds around its row: a `ROWS` offset counts rows; `CURRENT ROW` of a
/// `RANGE` or `GROUPS` frame takes the row's peers; any other bound of those (an offset by
/// value or by peer group) is taken as reaching the partition's end.
fn frame_reach(frame: &WindowFrame) -> WindowReach {
    let by_rows = frame.units == WindowFrameUnits::Rows;
    let extent = |bound: &WindowFrameBound, towards_start: bool| match bound {
        WindowFrameBound::CurrentRow => Extent::Bounded {
            rows: 0,
            peers: !by_rows,
        },
        WindowFrameBound::Preceding(offset) | WindowFrameBound::Following(offset) => {
            let outward = matches!(bound, WindowFrameBound::Preceding(_)) == towards_start;
            match (outward, by_rows, offset.is_null()) {
                (false, true, _) => Extent::NONE,
                (false, false, _) => Extent::Bounded {
                    rows: 0,
                    peers: true,
                },
                (true, true, false) => match offset.cast_to(&DataType::UInt64) {
                    Ok(ScalarValue::UInt64(Some(n))) => Extent::Bounded {
                        rows: usize::try_from(n).unwrap_or(usize::MAX),
                        peers: false,
                    },
                    _ => Extent::Unbounded,
                },
                (true, _, _) => Extent::Unbounded,
            }
        }
    };
    WindowReach {
        preceding: extent(&frame.start_bound, true),
        following: extent(&frame.end_bound, false),
    }
}

fn physical_window(
    state: &SessionState,
    expr: &Expr,
    schema: &DFSchema,
) -> Result<Arc<dyn datafusion::physical_expr::window::WindowExpr>, SqlError> {
    Ok(create_window_expr(
        expr,
        schema,
        state.execution_props(),
        &PhysicalPlanningContext::default(),
    )?)
}
