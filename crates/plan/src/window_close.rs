//! Closing columns: which columns of a plan's rows tell, from the sources' watermarks, that a
//! row will not change any more (what `EMIT ON WINDOW CLOSE` waits for).
//!
//! A source's watermark `W` promises that every row still to come that is not late has an
//! event time of at least `W`. That promise travels through the plan: `date_bin(s, ts, o)` of
//! such a row is at least `date_bin(s, W, o)`, `ts + i` at least `W + i`, the elements of
//! `generate_series(a, …)` at least `a`'s bound (and those of [`HOP_STARTS`]`(ts, slide,
//! size, o)` at least `date_bin(slide, W - size, o) + slide`), a GROUP BY key keeps its
//! input's bound, and an equi-join key bounded on both sides is bounded by the lesser. A column whose bound is
//! known this way *closes* rows: a row whose value in it is below the bound can no longer be
//! changed by rows that are not late. A tumbling window's `window_end` is such a column; it
//! closes a window once the watermark reaches its end.

use arrow::array::RecordBatch;
use arrow::array::RecordBatchOptions;
use arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ColumnarValue, Operator};
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::ScalarFunctionExpr;
use repr::GlobalId;

use crate::{JoinKind, Plan, ScalarExpr};

use datafusion::arrow;

/// The function the SQL layer plans `HOP`'s window starts with: `(time, slide, size,
/// origin)` gives the list of the starts of the windows holding `time`.
pub const HOP_STARTS: &str = "__fluxion_hop_starts";

/// Microseconds in a day, for intervals given in days.
const DAY_MICROS: i64 = 86_400_000_000;

/// One step from a watermark towards a column's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundStep {
    /// Adds this many microseconds.
    Add(i64),
    /// `date_bin(stride, value, origin)`, in microseconds.
    Bin {
        /// The width of a bin.
        stride: i64,
        /// Where bins are aligned.
        origin: i64,
    },
}

/// A bound derived from one source's watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkTerm {
    /// The source whose watermark it starts from.
    pub source: GlobalId,
    /// The steps applied to the watermark, in order.
    pub steps: Vec<BoundStep>,
}

/// A column that closes rows: every row the plan will still produce or retract because of
/// rows that are not late has a value in it at least the least of `terms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosingColumn {
    /// The column.
    pub column: usize,
    /// Its bound is the least of these.
    pub terms: Vec<WatermarkTerm>,
}

impl ClosingColumn {
    /// The column's bound, from each source's watermark in microseconds; `None` while some
    /// source it depends on has none.
    pub fn bound(&self, watermark: impl Fn(GlobalId) -> Option<i64>) -> Option<i64> {
        self.terms
            .iter()
            .map(|term| {
                let start = watermark(term.source)?;
                Some(
                    term.steps
                        .iter()
                        .fold(start, |value, step| step.apply(value)),
                )
            })
            .try_fold(i64::MAX, |least, bound| Some(least.min(bound?)))
    }
}

impl BoundStep {
    fn apply(self, value: i64) -> i64 {
        match self {
            BoundStep::Add(micros) => value.saturating_add(micros),
            BoundStep::Bin { stride, origin } => {
                let offset = value.saturating_sub(origin).div_euclid(stride);
                origin.saturating_add(offset.saturating_mul(stride))
            }
        }
    }
}

/// The sources whose watermarks the bounds of `closing` start from.
pub fn sources(closing: &[ClosingColumn]) -> std::collections::BTreeSet<GlobalId> {
    closing
        .iter()
        .flat_map(|c| c.terms.iter().map(|t| t.source))
        .collect()
}

/// What is known of one column's values in rows still to come.
#[derive(Debug, Clone)]
enum Bound {
    /// The value is at least the least of the terms.
    Value(Vec<WatermarkTerm>),
    /// The column is a list whose elements are at least the least of the terms.
    Elements(Vec<WatermarkTerm>),
}

/// The columns of `plan`'s rows that close them, given the column of each source that its
/// watermark is declared on (`watermark_column`; `None` for relations without one). Only
/// timestamp columns (of any unit: bounds are in microseconds) close rows.
pub fn closing_columns(
    plan: &Plan,
    watermark_column: &dyn Fn(GlobalId) -> Option<usize>,
) -> Vec<ClosingColumn> {
    let schema = plan.schema().clone();
    column_bounds(plan, watermark_column)
        .into_iter()
        .enumerate()
        .filter(|(column, _)| {
            matches!(schema.field(*column).data_type(), DataType::Timestamp(_, _))
        })
        .filter_map(|(column, bound)| match bound {
            Some(Bound::Value(terms)) => Some(ClosingColumn { column, terms }),
            _ => None,
        })
        .collect()
}

/// `plan` under `EMIT ON WINDOW CLOSE`, or `None` if no column of its rows closes them.
///
/// Below it, the state that closed windows leave behind is forgotten: where a closing column
/// leads (through plain column references, equi-join keys, unions and top-k groups) to the
/// group key of an aggregation, the aggregation's input forgets the rows of each group just
/// after it closes ([`Plan::ForgetClosed`]); where it leads to both keys of a join, each input
/// of the join does (and so the aggregation above it). They close on the same bound as the
/// result's column, so the result has been emitted by then, and what they keep is the open
/// windows' state instead of the whole history's.
pub fn emit_on_window_close(
    plan: Plan,
    watermark_column: &dyn Fn(GlobalId) -> Option<usize>,
) -> Option<Plan> {
    let closing = closing_columns(&plan, watermark_column);
    if closing.is_empty() {
        return None;
    }
    let (input, _) = forget_closed(plan, &closing);
    Some(Plan::EmitOnWindowClose {
        input: Box::new(input),
        closing,
    })
}

/// `plan`, forgetting its closed rows: further down if [`forget_closed`] can place that there,
/// else right on top of it (nothing to forget without a closing column).
fn forget_at_or_below(plan: Plan, closing: Vec<ClosingColumn>) -> Plan {
    match forget_closed(plan, &closing) {
        (plan, true) => plan,
        (plan, false) if closing.is_empty() => plan,
        (plan, false) => Plan::ForgetClosed {
            input: Box::new(plan),
            closing,
        },
    }
}

/// `plan` with [`Plan::ForgetClosed`] under the aggregations (or joins) that `closing`
/// (closing columns of `plan`'s rows, with the bounds they close on) leads to, and whether
/// every row of `plan` is now retracted once it closes.
fn forget_closed(plan: Plan, closing: &[ClosingColumn]) -> (Plan, bool) {
    if closing.is_empty() {
        return (plan, false);
    }
    let moved = |closing: &[ClosingColumn], to: &dyn Fn(usize) -> Option<usize>| {
        closing
            .iter()
            .filter_map(|c| {
                Some(ClosingColumn {
                    column: to(c.column)?,
                    terms: c.terms.clone(),
                })
            })
            .collect::<Vec<_>>()
    };
    match plan {
        Plan::Map {
            input,
            predicate,
            projection,
            schema,
        } => {
            // A column computed as `x + k` or `date_bin(…, x, …)` closes when x is below
            // its bound - k (date_bin never exceeds its value): x's rows are then closed too.
            let below: Vec<ClosingColumn> = closing
                .iter()
                .filter_map(|c| {
                    let (column, shift) = closing_input(projection.get(c.column)?)?;
                    let terms = match shift {
                        0 => c.terms.clone(),
                        shift => shifted_terms(&c.terms, Some(shift)),
                    };
                    Some(ClosingColumn { column, terms })
                })
                .collect();
            let (input, placed) = forget_closed(*input, &below);
            let plan = Plan::Map {
                input: Box::new(input),
                predicate,
                projection,
                schema,
            };
            (plan, placed)
        }
        Plan::Distinct { input } => {
            let (input, placed) = forget_closed(*input, closing);
            let input = Box::new(input);
            (Plan::Distinct { input }, placed)
        }
        Plan::TopK {
            input,
            group_by,
            order_by,
            offset,
            limit,
        } => {
            let below = moved(closing, &|c| group_by.contains(&c).then_some(c));
            let (input, placed) = forget_closed(*input, &below);
            let plan = Plan::TopK {
                input: Box::new(input),
                group_by,
                order_by,
                offset,
                limit,
            };
            (plan, placed)
        }
        Plan::Union { inputs, schema } => {
            let mut placed = true;
            let inputs = inputs
                .into_iter()
                .map(|input| {
                    let (input, here) = forget_closed(input, closing);
                    placed &= here;
                    input
                })
                .collect();
            (Plan::Union { inputs, schema }, placed)
        }
        Plan::Reduce {
            input,
            group_len,
            aggregates,
            is_global,
            schema,
        } => {
            let keys = moved(closing, &|c| (c < group_len).then_some(c));
            let placed = !keys.is_empty();
            let input = Box::new(forget_at_or_below(*input, keys));
            let plan = Plan::Reduce {
                input,
                group_len,
                aggregates,
                is_global,
                schema,
            };
            (plan, placed)
        }
        Plan::Join {
            left,
            right,
            kind,
            left_key,
            right_key,
            key_schema,
            filter,
            nulls_equal,
            schema,
        } => {
            let left_width = left.schema().fields().len();
            let keys: Vec<(usize, usize)> = left_key
                .iter()
                .zip(&right_key)
                .filter_map(|(l, r)| Some((column_index(l)?, column_index(r)?)))
                .collect();
            let mut on_left = moved(closing, &|c| {
                keys.iter()
                    .find(|(l, r)| *l == c || left_width + r == c)
                    .map(|(l, _)| *l)
            });
            let mut on_right = moved(closing, &|c| {
                keys.iter()
                    .find(|(l, r)| *l == c || left_width + r == c)
                    .map(|(_, r)| *r)
            });
            // A closing column `y` with an interval condition `y <= x + k` (x of the other
            // side): every output row of a row whose x is below the bound - k is closed, and so
            // is every output row of a row whose own y is below the bound. Each side forgets
            // those.
            for below in interval_relations(filter.as_ref(), left_width) {
                let Some(closed) = closing.iter().find(|c| c.column == below.x) else {
                    continue;
                };
                let other = shifted_terms(&closed.terms, below.k.checked_neg());
                if other.is_empty() {
                    continue;
                }
                for (column, terms) in [(below.x, closed.terms.clone()), (below.y, other)] {
                    match column.checked_sub(left_width) {
                        None => on_left.push(ClosingColumn { column, terms }),
                        Some(column) => on_right.push(ClosingColumn { column, terms }),
                    }
                }
            }
            let placed = !on_left.is_empty() && !on_right.is_empty();
            let (left, right) = if placed {
                (
                    forget_at_or_below(*left, on_left),
                    forget_at_or_below(*right, on_right),
                )
            } else {
                (*left, *right)
            };
            let plan = Plan::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                left_key,
                right_key,
                key_schema,
                filter,
                nulls_equal,
                schema,
            };
            (plan, placed)
        }
        other => (other, false),
    }
}

fn column_bounds(
    plan: &Plan,
    watermark_column: &dyn Fn(GlobalId) -> Option<usize>,
) -> Vec<Option<Bound>> {
    let width = plan.schema().fields().len();
    let mut bounds: Vec<Option<Bound>> = vec![None; width];
    match plan {
        Plan::Get { id, .. } => {
            if let Some(column) = watermark_column(*id).filter(|c| *c < width) {
                bounds[column] = Some(Bound::Value(vec![WatermarkTerm {
                    source: *id,
                    steps: Vec::new(),
                }]));
            }
        }
        // A temporal filter retracts rows as the clock moves, whatever their times.
        Plan::Constant { .. } | Plan::TemporalFilter { .. } => {}
        // A recursive query's rows derive from each other, without a bound on their times.
        Plan::Recursive { .. } | Plan::RecursiveRef { .. } => {}
        // A right row still to come can change the match of left rows of any time.
        Plan::AsOfJoin { .. } => {}
        // Left rows look up whatever the right side holds: nothing bounds either.
        Plan::LookupJoin { .. } => {}
        Plan::Map {
            input, projection, ..
        } => {
            let input_bounds = column_bounds(input, watermark_column);
            for (bound, expr) in bounds.iter_mut().zip(projection) {
                *bound = expr_bound(expr, &input_bounds);
            }
        }
        Plan::Unnest { input, column, .. } => {
            let input_bounds = column_bounds(input, watermark_column);
            for (position, bound) in input_bounds.into_iter().enumerate().take(width) {
                bounds[position] = match bound {
                    Some(Bound::Elements(terms)) if position == *column => {
                        Some(Bound::Value(terms))
                    }
                    Some(Bound::Value(terms)) if position != *column => Some(Bound::Value(terms)),
                    _ => None,
                };
            }
        }
        Plan::Join {
            left,
            right,
            kind,
            left_key,
            right_key,
            filter,
            ..
        } => {
            let left_bounds = column_bounds(left, watermark_column);
            let right_bounds = column_bounds(right, watermark_column);
            let left_width = left.schema().fields().len();
            // An interval condition `x <= y + k` (a right row's time within a span of a left
            // row's): a row still to come on x's side (x at least its bound) changes only
            // output rows whose y is at least x's bound - k.
            let input_bound = |column: usize| match column.checked_sub(left_width) {
                None => left_bounds.get(column),
                Some(right) => right_bounds.get(right),
            };
            let keeps = |column: usize| match kind {
                JoinKind::Inner => true,
                JoinKind::LeftOuter => column < left_width,
                JoinKind::RightOuter => column >= left_width,
                _ => false,
            };
            for below in interval_relations(filter.as_ref(), left_width) {
                let (Some(Some(Bound::Value(own))), Some(Some(Bound::Value(other)))) =
                    (input_bound(below.y), input_bound(below.x))
                else {
                    continue;
                };
                if keeps(below.y) && below.y < width {
                    let shifted = shifted_terms(other, below.k.checked_neg());
                    let terms = own.iter().cloned().chain(shifted).collect();
                    bounds[below.y] = Some(Bound::Value(terms));
                }
            }
            let keeps_right = !matches!(
                kind,
                JoinKind::LeftSemi | JoinKind::LeftAnti | JoinKind::LeftAntiNullAware
            );
            for (l, r) in left_key.iter().zip(right_key) {
                let (Some(l), Some(r)) = (column_index(l), column_index(r)) else {
                    continue;
                };
                let (Some(Some(Bound::Value(lt))), Some(Some(Bound::Value(rt)))) =
                    (left_bounds.get(l), right_bounds.get(r))
                else {
                    continue;
                };
                let terms: Vec<WatermarkTerm> = lt.iter().chain(rt).cloned().collect();
                if l < width {
                    bounds[l] = Some(Bound::Value(terms.clone()));
                }
                if keeps_right && left_width + r < width {
                    bounds[left_width + r] = Some(Bound::Value(terms));
                }
            }
        }
        Plan::Reduce {
            input, group_len, ..
        } => {
            let input_bounds = column_bounds(input, watermark_column);
            for (position, bound) in input_bounds.into_iter().enumerate().take(*group_len) {
                if let Some(Bound::Value(terms)) = bound {
                    bounds[position] = Some(Bound::Value(terms));
                }
            }
        }
        Plan::Distinct { input }
        | Plan::EmitOnWindowClose { input, .. }
        | Plan::ForgetClosed { input, .. } => {
            bounds = column_bounds(input, watermark_column);
        }
        Plan::Session {
            input,
            time,
            bounds: appended,
            ..
        } => {
            // A row still to come (not late) changes only sessions that end after the
            // watermark: the one it starts, and any it extends (which ended after its time).
            // So a session's end is bounded as its time is; nothing else is.
            let input_bounds = column_bounds(input, watermark_column);
            let input_width = input.schema().fields().len();
            if let Some(Some(Bound::Value(terms))) = input_bounds.get(*time) {
                for (i, bound) in appended.iter().enumerate() {
                    if *bound == crate::SessionBound::End && input_width + i < width {
                        bounds[input_width + i] = Some(Bound::Value(terms.clone()));
                    }
                }
            }
        }
        Plan::TopK {
            input,
            group_by: partition,
            ..
        }
        | Plan::Window {
            input,
            partition_by: partition,
            ..
        } => {
            // A partition's rows change only when the partition does.
            let input_bounds = column_bounds(input, watermark_column);
            for &column in partition {
                if let Some(Some(Bound::Value(terms))) = input_bounds.get(column) {
                    bounds[column] = Some(Bound::Value(terms.clone()));
                }
            }
        }
        Plan::Union { inputs, .. } => {
            let all: Vec<Vec<Option<Bound>>> = inputs
                .iter()
                .map(|input| column_bounds(input, watermark_column))
                .collect();
            for (position, bound) in bounds.iter_mut().enumerate() {
                let mut terms = Vec::new();
                for input in &all {
                    match input.get(position) {
                        Some(Some(Bound::Value(t))) => terms.extend(t.iter().cloned()),
                        _ => {
                            terms.clear();
                            break;
                        }
                    }
                }
                if !terms.is_empty() {
                    *bound = Some(Bound::Value(terms));
                }
            }
        }
    }
    bounds
}

/// The bound of `expr`'s value, from the bounds of its input's columns.
fn expr_bound(expr: &ScalarExpr, input: &[Option<Bound>]) -> Option<Bound> {
    let any: &dyn datafusion::physical_expr::PhysicalExpr = expr.as_ref();
    if let Some(column) = any.downcast_ref::<Column>() {
        return input.get(column.index()).cloned().flatten();
    }
    if let Some(cast) = any.downcast_ref::<CastExpr>() {
        let keeps_order = matches!(cast.cast_type(), DataType::Timestamp(_, _));
        return keeps_order
            .then(|| value_bound(cast.expr(), input))
            .flatten()
            .map(Bound::Value);
    }
    if let Some(binary) = any.downcast_ref::<BinaryExpr>() {
        let shifted = |terms: Vec<WatermarkTerm>, micros: i64| {
            Bound::Value(
                terms
                    .into_iter()
                    .map(|mut term| {
                        term.steps.push(BoundStep::Add(micros));
                        term
                    })
                    .collect(),
            )
        };
        return match binary.op() {
            Operator::Plus => match (
                value_bound(binary.left(), input),
                value_bound(binary.right(), input),
            ) {
                (Some(terms), None) => Some(shifted(terms, constant_micros(binary.right())?)),
                (None, Some(terms)) => Some(shifted(terms, constant_micros(binary.left())?)),
                _ => None,
            },
            Operator::Minus => {
                let terms = value_bound(binary.left(), input)?;
                Some(shifted(
                    terms,
                    constant_micros(binary.right())?.checked_neg()?,
                ))
            }
            _ => None,
        };
    }
    let function = any.downcast_ref::<ScalarFunctionExpr>()?;
    let args = function.args();
    match (function.name(), args) {
        ("date_bin", [stride, value, rest @ ..]) if rest.len() <= 1 => {
            let stride = constant_micros(stride).filter(|s| *s > 0)?;
            let origin = match rest {
                [origin] => constant_micros(origin)?,
                _ => 0,
            };
            let terms = value_bound(value, input)?;
            Some(Bound::Value(
                terms
                    .into_iter()
                    .map(|mut term| {
                        term.steps.push(BoundStep::Bin { stride, origin });
                        term
                    })
                    .collect(),
            ))
        }
        ("generate_series" | "range", [start, _stop, step]) => {
            constant_micros(step).filter(|s| *s > 0)?;
            value_bound(start, input).map(Bound::Elements)
        }
        // The first start is date_bin(slide, time - size, origin) + slide.
        (HOP_STARTS, [time, slide, size, origin]) => {
            let slide = constant_micros(slide).filter(|s| *s > 0)?;
            let size = constant_micros(size)?;
            let origin = constant_micros(origin)?;
            let terms = value_bound(time, input)?;
            Some(Bound::Elements(
                terms
                    .into_iter()
                    .map(|mut term| {
                        term.steps.extend([
                            BoundStep::Add(size.checked_neg()?),
                            BoundStep::Bin {
                                stride: slide,
                                origin,
                            },
                            BoundStep::Add(slide),
                        ]);
                        Some(term)
                    })
                    .collect::<Option<_>>()?,
            ))
        }
        _ => None,
    }
}

fn value_bound(expr: &ScalarExpr, input: &[Option<Bound>]) -> Option<Vec<WatermarkTerm>> {
    match expr_bound(expr, input)? {
        Bound::Value(terms) => Some(terms),
        Bound::Elements(_) => None,
    }
}

/// `x <= y + k`: what a join's condition says of two columns of its `left ++ right` rows, one
/// of each side (`k` in microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Below {
    x: usize,
    y: usize,
    k: i64,
}

/// The conditions `x <= y + k` (or `<`) between a left and a right column that the conjuncts
/// of a join's `filter` state, as `c.ts BETWEEN s.ts AND s.ts + INTERVAL '1' HOUR` does
/// (`s.ts <= c.ts + 0` and `c.ts <= s.ts + 1 hour`).
fn interval_relations(filter: Option<&ScalarExpr>, left_width: usize) -> Vec<Below> {
    let mut relations = Vec::new();
    let mut pending: Vec<&ScalarExpr> = filter.into_iter().collect();
    while let Some(expr) = pending.pop() {
        let any: &dyn datafusion::physical_expr::PhysicalExpr = expr.as_ref();
        let Some(binary) = any.downcast_ref::<BinaryExpr>() else {
            continue;
        };
        let (lesser, greater) = match binary.op() {
            Operator::And => {
                pending.extend([binary.left(), binary.right()]);
                continue;
            }
            Operator::Lt | Operator::LtEq => (binary.left(), binary.right()),
            Operator::Gt | Operator::GtEq => (binary.right(), binary.left()),
            _ => continue,
        };
        let (Some((x, x_offset)), Some((y, y_offset))) =
            (column_offset(lesser), column_offset(greater))
        else {
            continue;
        };
        let Some(k) = y_offset.checked_sub(x_offset) else {
            continue;
        };
        if (x < left_width) != (y < left_width) {
            relations.push(Below { x, y, k });
        }
    }
    relations
}

/// `column + offset` (microseconds), through casts between timestamps.
fn column_offset(expr: &ScalarExpr) -> Option<(usize, i64)> {
    let any: &dyn datafusion::physical_expr::PhysicalExpr = expr.as_ref();
    if let Some(column) = any.downcast_ref::<Column>() {
        return Some((column.index(), 0));
    }
    if let Some(cast) = any.downcast_ref::<CastExpr>() {
        return matches!(cast.cast_type(), DataType::Timestamp(_, _))
            .then(|| column_offset(cast.expr()))
            .flatten();
    }
    let binary = any.downcast_ref::<BinaryExpr>()?;
    match binary.op() {
        Operator::Plus => match column_offset(binary.left()) {
            Some((column, offset)) => Some((
                column,
                offset.checked_add(constant_micros(binary.right())?)?,
            )),
            None => {
                let (column, offset) = column_offset(binary.right())?;
                Some((column, offset.checked_add(constant_micros(binary.left())?)?))
            }
        },
        Operator::Minus => {
            let (column, offset) = column_offset(binary.left())?;
            Some((
                column,
                offset.checked_sub(constant_micros(binary.right())?)?,
            ))
        }
        _ => None,
    }
}

/// The input column whose rows are closed when `expr`'s value is below a bound, and how far
/// below that bound (negated) they must be: `x + k` gives `(x, -k)`, `date_bin(s, x, o)`
/// gives `(x, 0)`.
fn closing_input(expr: &ScalarExpr) -> Option<(usize, i64)> {
    if let Some((column, offset)) = column_offset(expr) {
        return Some((column, offset.checked_neg()?));
    }
    let any: &dyn datafusion::physical_expr::PhysicalExpr = expr.as_ref();
    let function = any.downcast_ref::<ScalarFunctionExpr>()?;
    match (function.name(), function.args()) {
        ("date_bin", [_, value, ..]) => closing_input(value),
        _ => None,
    }
}

/// `terms`, each moved by `micros` (none if the shift overflowed).
fn shifted_terms(terms: &[WatermarkTerm], micros: Option<i64>) -> Vec<WatermarkTerm> {
    let Some(micros) = micros else {
        return Vec::new();
    };
    terms
        .iter()
        .cloned()
        .map(|mut term| {
            term.steps.push(BoundStep::Add(micros));
            term
        })
        .collect()
}

/// The column a key expression is, if it is a plain column.
fn column_index(expr: &ScalarExpr) -> Option<usize> {
    expr.downcast_ref::<Column>().map(Column::index)
}

/// The value of a constant expression (no column in it) as microseconds: an interval of
/// days or less, a duration or a timestamp.
fn constant_micros(expr: &ScalarExpr) -> Option<i64> {
    scalar_micros(&constant_value(expr)?)
}

/// The value of `expr` if it reads no column (`None` if it does, or fails).
pub fn constant_value(expr: &ScalarExpr) -> Option<ScalarValue> {
    if !collect_columns(expr).is_empty() {
        return None;
    }
    let one_row = RecordBatch::try_new_with_options(
        std::sync::Arc::new(Schema::empty()),
        Vec::new(),
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )
    .ok()?;
    match expr.evaluate(&one_row).ok()? {
        ColumnarValue::Scalar(value) => Some(value),
        ColumnarValue::Array(array) => ScalarValue::try_from_array(&array, 0).ok(),
    }
}

/// A constant as microseconds: an interval of days or less, a duration or a timestamp
/// (`None` for a NULL, an interval with months, or anything else).
pub fn scalar_micros(value: &ScalarValue) -> Option<i64> {
    match *value {
        ScalarValue::IntervalMonthDayNano(Some(v)) if v.months == 0 => i64::from(v.days)
            .checked_mul(DAY_MICROS)?
            .checked_add(v.nanoseconds / 1_000),
        ScalarValue::IntervalDayTime(Some(v)) => i64::from(v.days)
            .checked_mul(DAY_MICROS)?
            .checked_add(i64::from(v.milliseconds) * 1_000),
        ScalarValue::DurationMicrosecond(Some(v))
        | ScalarValue::TimestampMicrosecond(Some(v), _) => Some(v),
        ScalarValue::DurationNanosecond(Some(v)) | ScalarValue::TimestampNanosecond(Some(v), _) => {
            Some(v / 1_000)
        }
        ScalarValue::DurationMillisecond(Some(v))
        | ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1_000),
        ScalarValue::DurationSecond(Some(v)) | ScalarValue::TimestampSecond(Some(v), _) => {
            v.checked_mul(1_000_000)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_join_closes_its_rows_behind_both_watermarks_and_forgets_them() {
        use arrow::datatypes::{Field, IntervalMonthDayNano, TimeUnit};
        use datafusion::physical_expr::expressions::Literal;
        use std::sync::Arc;

        const HOUR: i64 = 3_600_000_000;
        let fields = || {
            vec![
                Field::new("k", DataType::Int64, true),
                Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            ]
        };
        let side = |id| Plan::Get {
            id: GlobalId(id),
            schema: Arc::new(Schema::new(fields())),
        };
        let column = |index| -> ScalarExpr { Arc::new(Column::new("c", index)) };
        let binary = |l, op, r| -> ScalarExpr { Arc::new(BinaryExpr::new(l, op, r)) };
        let hour: ScalarExpr = Arc::new(Literal::new(ScalarValue::IntervalMonthDayNano(Some(
            IntervalMonthDayNano::new(0, 0, HOUR * 1_000),
        ))));
        // s JOIN c ON s.k = c.k AND c.ts BETWEEN s.ts AND s.ts + INTERVAL '1' HOUR
        let filter = binary(
            binary(column(3), Operator::GtEq, column(1)),
            Operator::And,
            binary(
                column(3),
                Operator::LtEq,
                binary(column(1), Operator::Plus, hour),
            ),
        );
        let join = Plan::Join {
            left: Box::new(side(1)),
            right: Box::new(side(2)),
            kind: JoinKind::Inner,
            left_key: vec![column(0)],
            right_key: vec![column(0)],
            key_schema: Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)])),
            filter: Some(filter),
            nulls_equal: false,
            schema: Arc::new(Schema::new([fields(), fields()].concat())),
        };
        let watermark_column = |_| Some(1);
        let closing = closing_columns(&join, &watermark_column);
        let bound = |column: usize, searches: i64, clicks: i64| {
            closing
                .iter()
                .find(|c| c.column == column)
                .and_then(|c| c.bound(|id| Some(if id == GlobalId(1) { searches } else { clicks })))
        };
        // A search closes once no click still to come falls in its hour; a click once no
        // search still to come can start an hour holding it.
        assert_eq!(bound(1, 10 * HOUR, 20 * HOUR), Some(10 * HOUR));
        assert_eq!(bound(1, 10 * HOUR, 5 * HOUR), Some(4 * HOUR));
        assert_eq!(bound(3, 10 * HOUR, 5 * HOUR), Some(5 * HOUR));
        assert_eq!(bound(3, 2 * HOUR, 5 * HOUR), Some(2 * HOUR));
        // Under EMIT ON WINDOW CLOSE both inputs forget their closed rows.
        let Some(Plan::EmitOnWindowClose { input, .. }) =
            emit_on_window_close(join, &watermark_column)
        else {
            panic!("the interval join's rows close");
        };
        let Plan::Join { left, right, .. } = *input else {
            panic!("the join stays on top");
        };
        assert!(matches!(*left, Plan::ForgetClosed { .. }), "{left:?}");
        assert!(matches!(*right, Plan::ForgetClosed { .. }), "{right:?}");
    }

    #[test]
    fn a_bin_rounds_down_towards_its_origin() {
        let bin = BoundStep::Bin {
            stride: 10,
            origin: 3,
        };
        assert_eq!(bin.apply(3), 3);
        assert_eq!(bin.apply(12), 3);
        assert_eq!(bin.apply(13), 13);
        assert_eq!(bin.apply(2), -7);
        assert_eq!(BoundStep::Add(-5).apply(i64::MIN), i64::MIN);
    }

    #[test]
    fn a_bound_is_the_least_of_its_terms_and_waits_for_every_source() {
        let (a, b) = (GlobalId(1), GlobalId(2));
        let column = ClosingColumn {
            column: 0,
            terms: vec![
                WatermarkTerm {
                    source: a,
                    steps: vec![BoundStep::Add(100)],
                },
                WatermarkTerm {
                    source: b,
                    steps: Vec::new(),
                },
            ],
        };
        assert_eq!(column.bound(|_| Some(50)), Some(50));
        assert_eq!(
            column.bound(|s| Some(if s == a { 0 } else { 500 })),
            Some(100)
        );
        assert_eq!(column.bound(|s| (s == a).then_some(0)), None);
    }
}
