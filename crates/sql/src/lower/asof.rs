//! Lowering ASOF joins: the window marking each left row's closest matches over the join of
//! the two sides (what [`crate::asof_joins`] plans an ASOF join to) becomes the incremental
//! ASOF join operator, which never builds the pairs.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
use datafusion::logical_expr::{
    lit, Expr, ExprSchemable, Join, JoinType, LogicalPlan, Projection, Window,
    WindowFunctionDefinition,
};
use plan::Plan;

use super::{arrow_schema, projections, Lowerer};
use crate::asof_joins::{match_named, ASOF_CLOSEST};
use crate::SqlError;

/// Whether `expr` is the window function an ASOF join plans to.
pub(super) fn is_asof_closest(expr: &Expr) -> bool {
    matches!(expr.clone().unalias(), Expr::WindowFunction(function)
        if matches!(&function.fun, WindowFunctionDefinition::WindowUDF(udf) if udf.name() == ASOF_CLOSEST))
}

fn not_understood(what: &str) -> SqlError {
    SqlError::not_incremental(
        "this ASOF JOIN",
        format!("its plan was not understood ({what})"),
    )
}

impl Lowerer<'_> {
    /// The ASOF join under `window`, with the window's column of marks (all true: the join
    /// produces only the closest matches) appended.
    pub(super) fn lower_asof(&self, window: &Window) -> Result<Plan, SqlError> {
        let [expr] = window.window_expr.as_slice() else {
            return Err(not_understood("other window functions beside it"));
        };
        let Expr::WindowFunction(function) = expr.clone().unalias() else {
            return Err(not_understood("not a window function"));
        };
        let [left_time, right_time, Expr::Literal(ScalarValue::Utf8(Some(name)), _)] =
            function.params.args.as_slice()
        else {
            return Err(not_understood("its arguments"));
        };
        let matches = match_named(name).ok_or_else(|| not_understood("its match"))?;
        let (join, projections) = join_under(&window.input)?;
        let outer = match join.join_type {
            JoinType::Inner => false,
            JoinType::Left => true,
            _ => return Err(not_understood("the join's kind")),
        };
        let (left_exprs, right_exprs) = join.on.iter().cloned().unzip();
        let keys = self.join_keys(&join.left, &join.right, left_exprs, right_exprs)?;
        let left_schema = join.left.schema();
        let right_schema = join.right.schema();
        let left_type = left_time.get_type(left_schema.as_ref())?;
        let right_type = right_time.get_type(right_schema.as_ref())?;
        let common = comparison_coercion(&left_type, &right_type).ok_or_else(|| {
            SqlError::Unsupported(format!(
                "ASOF JOIN cannot compare {left_type} with {right_type}"
            ))
        })?;
        let left_time = left_time.clone().cast_to(&common, left_schema.as_ref())?;
        let right_time = right_time.clone().cast_to(&common, right_schema.as_ref())?;
        let mut plan = Plan::AsOfJoin {
            left: Box::new(self.lower(&join.left)?),
            right: Box::new(self.lower(&join.right)?),
            outer,
            left_key: keys.left,
            right_key: keys.right,
            key_schema: keys.schema,
            left_time: self.physical(&left_time, left_schema)?,
            right_time: self.physical(&right_time, right_schema)?,
            matches,
            schema: arrow_schema(&join.schema),
        };
        for projection in projections.into_iter().rev() {
            plan = projections::map(
                plan,
                None,
                self.physical_all(&projection.expr, projection.input.schema())?,
                arrow_schema(&projection.schema),
            );
        }
        let input_schema = window.input.schema();
        let mut marked: Vec<Expr> = input_schema
            .columns()
            .into_iter()
            .map(Expr::Column)
            .collect();
        marked.push(lit(true));
        Ok(projections::map(
            plan,
            None,
            self.physical_all(&marked, input_schema)?,
            arrow_schema(&window.schema),
        ))
    }
}

/// The join under `plan`, through projections of columns (listed outermost first).
fn join_under(plan: &LogicalPlan) -> Result<(&Join, Vec<&Projection>), SqlError> {
    let mut projections = Vec::new();
    let mut node = plan;
    loop {
        match node {
            LogicalPlan::Join(join) => return Ok((join, projections)),
            LogicalPlan::Projection(projection)
                if projection.expr.iter().all(|e| matches!(e, Expr::Column(_))) =>
            {
                projections.push(projection);
                node = &projection.input;
            }
            _ => return Err(not_understood("no join under it")),
        }
    }
}
