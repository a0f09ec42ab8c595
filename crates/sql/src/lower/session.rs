//! Lowering session windows: the window functions `SESSION(…)` plans to (see
//! [`crate::session_windows`]) become the incremental session operator.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionParams};
use datafusion::logical_expr::{Expr, Window, WindowFunctionDefinition};
use plan::{Plan, SessionBound};

use super::{arrow_schema, Lowerer};
use crate::session_windows::{gap_micros, SESSION_END, SESSION_START};
use crate::SqlError;

/// Whether `expr` is one of the window functions a `SESSION` window plans to.
pub(super) fn is_session_bound(expr: &Expr) -> bool {
    match expr.clone().unalias() {
        Expr::WindowFunction(function) => match &function.fun {
            WindowFunctionDefinition::WindowUDF(udf) => {
                [SESSION_START, SESSION_END].contains(&udf.name())
            }
            _ => false,
        },
        _ => false,
    }
}

/// What every window function of a `SESSION` has in common.
struct Sessions {
    partition: Vec<usize>,
    time: usize,
    gap: i64,
}

impl Lowerer<'_> {
    /// A window node computing the bounds of `SESSION` windows, or an error if it also
    /// computes anything else.
    pub(super) fn lower_session(&self, window: &Window) -> Result<Plan, SqlError> {
        let refused = || {
            SqlError::not_incremental(
                "SESSION windows beside other window functions",
                "compute the other window functions in a query over the SESSION windows",
            )
        };
        let schema = window.input.schema();
        let column = |expr: &Expr| match expr {
            Expr::Column(column) => schema.index_of_column(column).ok(),
            _ => None,
        };
        let mut common: Option<Sessions> = None;
        let mut bounds = Vec::new();
        for expr in &window.window_expr {
            let Expr::WindowFunction(function) = expr.clone().unalias() else {
                return Err(refused());
            };
            let WindowFunction {
                fun: WindowFunctionDefinition::WindowUDF(udf),
                params:
                    WindowFunctionParams {
                        args,
                        partition_by,
                        order_by,
                        filter: None,
                        distinct: false,
                        ..
                    },
            } = *function
            else {
                return Err(refused());
            };
            let bound = match udf.name() {
                SESSION_START => SessionBound::Start,
                SESSION_END => SessionBound::End,
                _ => return Err(refused()),
            };
            let (time, gap) = match args.as_slice() {
                [time, Expr::Literal(gap, _)] => (column(time).ok_or_else(refused)?, gap),
                _ => return Err(refused()),
            };
            let ordered_by_time = matches!(
                order_by.as_slice(),
                [sort] if sort.asc && column(&sort.expr) == Some(time)
            );
            let partition = partition_by
                .iter()
                .map(|e| column(e).ok_or_else(refused))
                .collect::<Result<Vec<_>, _>>()?;
            if !ordered_by_time {
                return Err(refused());
            }
            let sessions = Sessions {
                partition,
                time,
                gap: gap_micros(&ScalarValue::clone(gap))?,
            };
            match &common {
                Some(c)
                    if c.partition != sessions.partition
                        || c.time != time
                        || c.gap != sessions.gap =>
                {
                    return Err(refused())
                }
                Some(_) => {}
                None => common = Some(sessions),
            }
            bounds.push(bound);
        }
        let Some(Sessions {
            partition,
            time,
            gap,
        }) = common
        else {
            return Err(refused());
        };
        Ok(Plan::Session {
            input: Box::new(self.lower(&window.input)?),
            partition,
            time,
            gap,
            bounds,
            schema: arrow_schema(&window.schema),
        })
    }
}
