//! ASOF joins: `left ASOF [LEFT] JOIN right ON l.k = r.k AND l.t >= r.t`.
//!
//! Each left row joins the right rows of its key whose time is the closest to its own on the
//! side the comparison allows (`>=`: the latest at or before it; `>`: strictly before; `<=`,
//! `<`: the earliest at or after, strictly after). Every right row at that closest time
//! matches. In the `LEFT` form a left row without a match is kept, padded with NULLs.
//!
//! The parser marks the join's `ON` condition with [`ASOF_MARKER`] (see
//! `parse::asof`). [`AsOfJoins`] then plans the join as DataFusion can run it once: the
//! ordinary join on the keys and the comparison, a window over each left row's matches
//! ([`ASOF_CLOSEST`], partitioned by every left column and ordered by the right time) that
//! marks the closest, and a filter keeping those. Lowering recognizes that window over the
//! join and maintains the ASOF join with its own operator, which never builds the pairs.

use std::sync::Arc;

use datafusion::arrow::array::{make_comparator, Array, ArrayRef, BooleanArray};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{exec_err, not_impl_err, Column, Result, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    col, lit, BinaryExpr, ColumnarValue, Expr, ExprFunctionExt, Join, JoinType, LogicalPlan,
    LogicalPlanBuilder, Operator, PartitionEvaluator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility, WindowUDF, WindowUDFImpl,
};
use datafusion::optimizer::AnalyzerRule;
use plan::AsOfMatch;

use crate::catalog::as_relation;
use crate::expression_rewrites::has_node;

/// The function the parser puts first in an ASOF join's `ON` condition: `'inner'` or
/// `'left'`; or [`VERSIONED`] and the time, for a join `FOR SYSTEM_TIME AS OF time`.
pub const ASOF_MARKER: &str = "__fluxion_asof";

/// The marker's kind for a join `FOR SYSTEM_TIME AS OF time`: each row joins the version of
/// the other relation at its time, the latest row of the same key whose event time (the
/// column of its `WATERMARK`) is at or before it.
pub const VERSIONED: &str = "versioned";

/// The marker's kind for a join `FOR SYSTEM_TIME AS OF PROCTIME()` (see
/// [`crate::lookup_joins`]).
pub const PROCESSING_TIME: &str = "proctime";

/// The window function marking each left row's closest matches: `(left time, right time,
/// match)` with the match spelled as [`match_name`] gives it.
pub const ASOF_CLOSEST: &str = "__fluxion_asof_closest";

/// The column holding [`ASOF_CLOSEST`]'s marks.
const CLOSEST_COLUMN: &str = "__fluxion_asof_is_closest";

/// The marker function, to register with a session state. Planning replaces it; it is never
/// evaluated.
pub fn asof_marker() -> ScalarUDF {
    ScalarUDF::new_from_impl(AsOfMarker {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

/// The window function marking the closest matches, to register with a session state.
pub fn asof_closest() -> WindowUDF {
    WindowUDF::new_from_impl(AsOfClosest {
        signature: Signature::any(3, Volatility::Immutable),
    })
}

/// How a match is spelled in [`ASOF_CLOSEST`]'s third argument.
pub fn match_name(matches: AsOfMatch) -> &'static str {
    match matches {
        AsOfMatch::AtOrBefore => "at_or_before",
        AsOfMatch::Before => "before",
        AsOfMatch::AtOrAfter => "at_or_after",
        AsOfMatch::After => "after",
    }
}

/// The match spelled `name` by [`match_name`].
pub fn match_named(name: &str) -> Option<AsOfMatch> {
    [
        AsOfMatch::AtOrBefore,
        AsOfMatch::Before,
        AsOfMatch::AtOrAfter,
        AsOfMatch::After,
    ]
    .into_iter()
    .find(|m| match_name(*m) == name)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AsOfMarker {
    signature: Signature,
}

impl ScalarUDFImpl for AsOfMarker {
    fn name(&self) -> &str {
        ASOF_MARKER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("ASOF JOIN's marker is replaced by planning and never evaluated")
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AsOfClosest {
    signature: Signature,
}

impl WindowUDFImpl for AsOfClosest {
    fn name(&self) -> &str {
        ASOF_CLOSEST
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(
        &self,
        _: PartitionEvaluatorArgs,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        Ok(Box::new(ClosestEvaluator))
    }

    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(
            field_args.name(),
            DataType::Boolean,
            false,
        )))
    }
}

#[derive(Debug)]
struct ClosestEvaluator;

impl PartitionEvaluator for ClosestEvaluator {
    /// `values` are one left row's candidate pairs, closest first (NULL right times, from a
    /// padded row, last): the rows at the first row's right time are the closest.
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        let [_, right_times, _] = values else {
            return exec_err!("{ASOF_CLOSEST} takes a left time, a right time and a match");
        };
        let same = make_comparator(
            right_times.as_ref(),
            right_times.as_ref(),
            SortOptions::default(),
        )?;
        let first_is_null = num_rows > 0 && right_times.is_null(0);
        let marks: BooleanArray = (0..num_rows)
            .map(|i| Some(first_is_null || same(i, 0).is_eq()))
            .collect();
        Ok(Arc::new(marks))
    }
}

/// Plans the joins whose `ON` condition holds [`ASOF_MARKER`] as ASOF joins (see the module
/// documentation).
#[derive(Debug, Default)]
pub struct AsOfJoins;

impl AnalyzerRule for AsOfJoins {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if !has_node(
            &plan,
            |node| matches!(node, LogicalPlan::Join(join) if marker(join).is_some()),
        ) {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Join(join) if marker(&join).is_some() => {
                Ok(Transformed::yes(closest_matches(join)?))
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "asof_joins"
    }
}

/// What the marker of a join says.
#[derive(Clone)]
struct Marker {
    /// `inner`, `left` or [`VERSIONED`].
    kind: String,
    /// The time a versioned join reads the other relation at.
    time: Option<Expr>,
}

/// The marker in `join`'s condition, if it has one (anywhere in it).
fn marker(join: &Join) -> Option<Marker> {
    let filter = join.filter.as_ref()?;
    let mut found = None;
    let _ = datafusion::common::tree_node::TreeNode::apply(filter, |e| {
        if let Some(marker) = as_marker(e) {
            found = Some(marker);
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    found
}

fn as_marker(expr: &Expr) -> Option<Marker> {
    match expr {
        Expr::ScalarFunction(ScalarFunction { func, args }) if func.name() == ASOF_MARKER => {
            let kind = match args.first() {
                Some(Expr::Literal(ScalarValue::Utf8(Some(kind)), _)) => kind.clone(),
                _ => String::new(),
            };
            Some(Marker {
                kind,
                time: args.get(1).cloned(),
            })
        }
        _ => None,
    }
}

/// What an ASOF join's condition is made of.
struct Condition {
    equalities: Vec<Expr>,
    left_time: Expr,
    right_time: Expr,
    matches: AsOfMatch,
}

/// The refusal of a condition that is not an ASOF join's.
fn refused<T>(what: &str) -> Result<T> {
    not_impl_err!(
        "ASOF JOIN's ON condition must be equalities between the two sides and one comparison \
         (<, <=, >, >=) of a left and a right time, ANDed: {what}"
    )
}

/// Splits `join`'s condition into key equalities and the one time comparison (for a
/// versioned join, the comparison of its time with the other relation's event time).
fn condition(join: &Join, marker: &Marker) -> Result<Condition> {
    let sides = Sides { join };
    let mut equalities: Vec<Expr> = join
        .on
        .iter()
        .map(|(l, r)| l.clone().eq(r.clone()))
        .collect();
    let mut comparison = match &marker.time {
        Some(time) => Some(versioned_comparison(join, time)?),
        None => None,
    };
    let filter = join
        .filter
        .as_ref()
        .map(split_conjunction)
        .unwrap_or_default();
    for conjunct in filter {
        if as_marker(conjunct).is_some() {
            continue;
        }
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = conjunct else {
            return refused(&conjunct.to_string());
        };
        let (left_first, left_side, right_side) = match (sides.of(left), sides.of(right)) {
            (Some(Side::Left), Some(Side::Right)) => (true, left, right),
            (Some(Side::Right), Some(Side::Left)) => (false, right, left),
            _ => return refused(&conjunct.to_string()),
        };
        if *op == Operator::Eq {
            equalities.push(conjunct.clone());
            continue;
        }
        // The comparison read as `left_side op right_side`.
        let op = if left_first {
            *op
        } else {
            op.swap().unwrap_or(*op)
        };
        let matches = match op {
            Operator::GtEq => AsOfMatch::AtOrBefore,
            Operator::Gt => AsOfMatch::Before,
            Operator::LtEq => AsOfMatch::AtOrAfter,
            Operator::Lt => AsOfMatch::After,
            _ => return refused(&conjunct.to_string()),
        };
        if marker.time.is_some() {
            return not_impl_err!(
                "a join FOR SYSTEM_TIME AS OF compares the times itself: its ON condition \
                 takes equalities only, not {conjunct}"
            );
        }
        if comparison.is_some() {
            return refused("it has more than one comparison");
        }
        comparison = Some((
            left_side.as_ref().clone(),
            right_side.as_ref().clone(),
            matches,
        ));
    }
    let Some((left_time, right_time, matches)) = comparison else {
        return refused("it has no comparison of times");
    };
    Ok(Condition {
        equalities,
        left_time,
        right_time,
        matches,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

/// Which input of a join an expression's columns belong to.
struct Sides<'a> {
    join: &'a Join,
}

impl Sides<'_> {
    fn of(&self, expr: &Expr) -> Option<Side> {
        let columns = expr.column_refs();
        let all_in = |plan: &LogicalPlan| columns.iter().all(|c| plan.schema().has_column(c));
        match (
            columns.is_empty(),
            all_in(&self.join.left),
            all_in(&self.join.right),
        ) {
            (false, true, false) => Some(Side::Left),
            (false, false, true) => Some(Side::Right),
            _ => None,
        }
    }
}

/// The comparison a join `FOR SYSTEM_TIME AS OF time` makes: `time` at or after the event
/// time of its right side, a relation with a `WATERMARK`.
fn versioned_comparison(join: &Join, time: &Expr) -> Result<(Expr, Expr, AsOfMatch)> {
    let Some(event_time) = event_time_column(&join.right) else {
        return not_impl_err!(
            "FOR SYSTEM_TIME AS OF {time}: the versioned relation must be a source or table \
             with a WATERMARK, whose column is its event time; or write the comparison of \
             times in an ASOF JOIN"
        );
    };
    let sides = Sides { join };
    if sides.of(time) != Some(Side::Left) {
        return not_impl_err!(
            "FOR SYSTEM_TIME AS OF {time}: the time must be an expression of the left side"
        );
    }
    Ok((
        time.clone(),
        Expr::Column(event_time),
        AsOfMatch::AtOrBefore,
    ))
}

/// The event-time column (the column of its `WATERMARK`) of the relation `plan` scans.
fn event_time_column(plan: &LogicalPlan) -> Option<Column> {
    match plan {
        LogicalPlan::SubqueryAlias(alias) => {
            let inner = event_time_column(&alias.input)?;
            Some(Column::new(Some(alias.alias.clone()), inner.name))
        }
        LogicalPlan::TableScan(scan) => {
            let provider = source_as_provider(&scan.source).ok()?;
            let name = as_relation(provider.as_ref())?.event_time.clone()?;
            Some(Column::new(Some(scan.table_name.clone()), name))
        }
        _ => None,
    }
}

/// The ASOF join `join` (marked) as a join on its condition, the closest matches marked by a
/// window and kept by a filter, projected back to the join's columns.
fn closest_matches(join: Join) -> Result<LogicalPlan> {
    let Some(marker) = marker(&join) else {
        return refused("the ASOF marker is misplaced");
    };
    let join_type = match (marker.kind.as_str(), join.join_type) {
        ("inner" | VERSIONED, JoinType::Inner) => JoinType::Inner,
        ("left" | VERSIONED, JoinType::Left) => JoinType::Left,
        (VERSIONED, _) => {
            return not_impl_err!("FOR SYSTEM_TIME AS OF in a join other than JOIN or LEFT JOIN")
        }
        (PROCESSING_TIME, _) => {
            return crate::lookup_joins::lookup_join(join, |e| as_marker(e).is_some())
        }
        _ => return refused("the ASOF marker is misplaced"),
    };
    if join.filter.as_ref().is_some_and(|f| {
        !split_conjunction(f)
            .into_iter()
            .any(|c| as_marker(c).is_some())
    }) {
        return refused("it must be a conjunction");
    }
    let condition = condition(&join, &marker)?;
    let output: Vec<Expr> = join
        .schema
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let left_columns: Vec<Expr> = join
        .left
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let comparison = Expr::BinaryExpr(BinaryExpr::new(
        Box::new(condition.left_time.clone()),
        match condition.matches {
            AsOfMatch::AtOrBefore => Operator::GtEq,
            AsOfMatch::Before => Operator::Gt,
            AsOfMatch::AtOrAfter => Operator::LtEq,
            AsOfMatch::After => Operator::Lt,
        },
        Box::new(condition.right_time.clone()),
    ));
    let filter = condition
        .equalities
        .into_iter()
        .chain([comparison])
        .reduce(Expr::and);
    let plain = LogicalPlanBuilder::from(Arc::unwrap_or_clone(join.left))
        .join_on(Arc::unwrap_or_clone(join.right), join_type, filter)?
        .build()?;
    let closest = Expr::from(datafusion::logical_expr::expr::WindowFunction::new(
        Arc::new(asof_closest()),
        vec![
            condition.left_time,
            condition.right_time.clone(),
            lit(match_name(condition.matches)),
        ],
    ))
    .partition_by(left_columns)
    .order_by(vec![condition
        .right_time
        .sort(!condition.matches.takes_latest(), false)])
    .build()?
    .alias(CLOSEST_COLUMN);
    LogicalPlanBuilder::from(plain)
        .window(vec![closest])?
        .filter(col(Column::from_name(CLOSEST_COLUMN)))?
        .project(output)?
        .build()
}
