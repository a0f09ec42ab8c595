//! `LATERAL` top-k per group: `FROM a, LATERAL (SELECT … FROM t WHERE t.k = a.k [AND …]
//! [ORDER BY …] LIMIT n [OFFSET m]) AS b`, and the same with `JOIN LATERAL … ON …` and
//! `LEFT JOIN LATERAL … ON …`.
//!
//! DataFusion cannot decorrelate a subquery under a `LIMIT`; it leaves the outer references
//! in the plan and fails at execution. Such a subquery is, for each row of `a`, the first `n`
//! rows (after `m`) of one group of `t`: the rows whose `t.k` equals the row's `a.k`. So it
//! becomes a join of `a` with every group's first rows, numbered by `row_number()` in the
//! subquery's order:
//!
//! ```text
//! a JOIN (SELECT …, t.k AS key FROM (SELECT *, row_number() OVER (PARTITION BY t.k ORDER BY …)
//!         AS row FROM t WHERE …) WHERE row > m AND row <= m + n) AS b ON a.k = b.key
//! ```
//!
//! which a materialized view maintains as a join with a window limited to the first rows of
//! each group. Only equalities between an outer column and an expression of the subquery's
//! rows, among the conjuncts of the WHERE under the `ORDER BY`, may correlate; any other
//! shape is left as it was.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, DFSchema, TableReference};
use datafusion::error::Result;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    col, lit, BinaryExpr, Expr, ExprFunctionExt, FetchType, Filter, Join, JoinType, Limit,
    LogicalPlan, LogicalPlanBuilder, Operator, Projection, SkipType, SortExpr, Subquery,
};
use datafusion::optimizer::AnalyzerRule;

use crate::expression_rewrites::has_node;

/// The column numbering the rows of each group.
const ROW: &str = "__lateral_row";

/// Rewrites joins with a `LATERAL` top-k per group into joins with numbered groups.
#[derive(Debug, Default)]
pub struct LateralTopK;

impl AnalyzerRule for LateralTopK {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if !has_node(
            &plan,
            |node| matches!(node, LogicalPlan::Join(join) if lateral(&join.right).is_some()),
        ) {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Join(join) => rewrite(join),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "lateral_top_k"
    }
}

/// The subquery of a `LATERAL` input, and its alias.
fn lateral(plan: &LogicalPlan) -> Option<(Option<&TableReference>, &Subquery)> {
    match plan {
        LogicalPlan::SubqueryAlias(alias) => match alias.input.as_ref() {
            LogicalPlan::Subquery(subquery) => Some((Some(&alias.alias), subquery)),
            _ => None,
        },
        LogicalPlan::Subquery(subquery) => Some((None, subquery)),
        _ => None,
    }
}

/// `join` with its lateral top-k per group as a join with numbered groups, if it has one.
fn rewrite(join: Join) -> Result<Transformed<LogicalPlan>> {
    let planned = match (&join.join_type, join.on.is_empty(), lateral(&join.right)) {
        (JoinType::Inner | JoinType::Left, true, Some((alias, subquery))) => {
            match TopK::of(&subquery.subquery) {
                Some(top) => top.grouped(alias, join.left.schema())?,
                None => None,
            }
        }
        _ => None,
    };
    let Some((right, on)) = planned else {
        return Ok(Transformed::no(LogicalPlan::Join(join)));
    };
    let columns: Vec<Expr> = join
        .schema
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let plan = LogicalPlanBuilder::from(Arc::unwrap_or_clone(join.left))
        .join_on(right, join.join_type, on.into_iter().chain(join.filter))?
        .project(columns)?
        .build()?;
    Ok(Transformed::yes(plan))
}

/// A subquery `[SELECT …] (rows [ORDER BY …] LIMIT n OFFSET m)`.
struct TopK<'a> {
    /// The select list over the rows (a query ordering by columns it does not select), under
    /// the limit or over it.
    projection: Option<&'a Projection>,
    limit: &'a Limit,
    /// The order (none: any rows will do, as in PostgreSQL; the rows' bytes decide).
    order: &'a [SortExpr],
    /// The correlated rows, under the order.
    rows: &'a LogicalPlan,
}

impl<'a> TopK<'a> {
    fn of(plan: &'a LogicalPlan) -> Option<Self> {
        let (above, below) = projected(plan);
        let LogicalPlan::Limit(limit) = below else {
            return None;
        };
        let (between, below) = projected(&limit.input);
        let projection = match (above, between) {
            (Some(_), Some(_)) => return None,
            (one, other) => one.or(other),
        };
        let (order, rows) = match below {
            LogicalPlan::Sort(sort) => (sort.expr.as_slice(), sort.input.as_ref()),
            rows => (&[][..], rows),
        };
        Some(Self {
            projection,
            limit,
            order,
            rows,
        })
    }

    /// The subquery as every group's first rows, each with the values of the group's key
    /// (the inner sides of the correlation), and the join conditions between those and the
    /// outer columns of `outer`. `None` if the subquery does not have that shape.
    fn grouped(
        &self,
        alias: Option<&TableReference>,
        outer: &DFSchema,
    ) -> Result<Option<(LogicalPlan, Vec<Expr>)>> {
        let (SkipType::Literal(skip), FetchType::Literal(Some(fetch))) =
            (self.limit.get_skip_type()?, self.limit.get_fetch_type()?)
        else {
            return Ok(None);
        };
        let correlated_outside_rows = self.order.iter().any(|s| s.expr.contains_outer())
            || self
                .projection
                .is_some_and(|p| p.expr.iter().any(Expr::contains_outer));
        if correlated_outside_rows {
            return Ok(None);
        }
        let Some((rows, outer_columns)) = with_group_keys(self.rows)? else {
            return Ok(None);
        };
        if !outer_columns.iter().all(|c| outer.has_column(c)) {
            return Ok(None);
        }
        let keys: Vec<Expr> = (0..outer_columns.len()).map(|i| col(key(i))).collect();
        let mut numbered = row_number().partition_by(keys.clone());
        if !self.order.is_empty() {
            numbered = numbered.order_by(self.order.to_vec());
        }
        let numbered = numbered.build()?.alias(ROW);
        let first = u64::try_from(skip).unwrap_or(u64::MAX);
        let last = first.saturating_add(u64::try_from(fetch).unwrap_or(u64::MAX));
        let selected: Vec<Expr> = match self.projection {
            Some(projection) => projection.expr.clone(),
            None => self
                .rows
                .schema()
                .columns()
                .into_iter()
                .map(Expr::Column)
                .collect(),
        };
        let mut builder = LogicalPlanBuilder::from(rows)
            .window(vec![numbered])?
            .filter(col(ROW).gt(lit(first)).and(col(ROW).lt_eq(lit(last))))?
            .project(selected.into_iter().chain(keys))?;
        if let Some(alias) = alias {
            builder = builder.alias(alias.clone())?;
        }
        let on = outer_columns
            .into_iter()
            .enumerate()
            .map(|(i, outer)| {
                Expr::Column(outer).eq(Expr::Column(Column::new(alias.cloned(), key(i))))
            })
            .collect();
        Ok(Some((builder.build()?, on)))
    }
}

/// The projection at the top of `plan`, if any, and what is under it.
fn projected(plan: &LogicalPlan) -> (Option<&Projection>, &LogicalPlan) {
    match plan {
        LogicalPlan::Projection(projection) => (Some(projection), projection.input.as_ref()),
        other => (None, other),
    }
}

/// The name of the column holding the inner side of correlation `i`.
fn key(i: usize) -> String {
    format!("__lateral_key_{i}")
}

/// `plan` (the rows under the subquery's ORDER BY) without its correlation, and with the
/// inner side of each correlated equality appended as a column [`key`]; the outer columns,
/// in the same order. `None` unless the correlation is equalities in one WHERE, under
/// projections only.
fn with_group_keys(plan: &LogicalPlan) -> Result<Option<(LogicalPlan, Vec<Column>)>> {
    match plan {
        LogicalPlan::Projection(projection) => {
            if projection.expr.iter().any(Expr::contains_outer) {
                return Ok(None);
            }
            let Some((input, outer)) = with_group_keys(&projection.input)? else {
                return Ok(None);
            };
            let exprs = projection
                .expr
                .iter()
                .cloned()
                .chain((0..outer.len()).map(|i| col(key(i))));
            let plan = LogicalPlanBuilder::from(input).project(exprs)?.build()?;
            Ok(Some((plan, outer)))
        }
        LogicalPlan::Filter(filter) => ungrouped_filter(filter),
        _ => Ok(None),
    }
}

/// A filter's correlated equalities taken out and their inner sides appended as columns.
fn ungrouped_filter(filter: &Filter) -> Result<Option<(LogicalPlan, Vec<Column>)>> {
    if !filter.input.all_out_ref_exprs().is_empty() {
        return Ok(None);
    }
    let mut outer = Vec::new();
    let mut inner = Vec::new();
    let mut rest = Vec::new();
    for conjunct in split_conjunction(&filter.predicate) {
        if !conjunct.contains_outer() {
            rest.push(conjunct.clone());
            continue;
        }
        let Some((column, expr)) = correlated_equality(conjunct) else {
            return Ok(None);
        };
        outer.push(column);
        inner.push(expr);
    }
    if outer.is_empty() {
        return Ok(None);
    }
    let mut builder = LogicalPlanBuilder::from(filter.input.as_ref().clone());
    if let Some(predicate) = conjunction(rest) {
        builder = builder.filter(predicate)?;
    }
    let columns = filter
        .input
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column);
    let keys = inner
        .into_iter()
        .enumerate()
        .map(|(i, expr)| expr.alias(key(i)));
    let plan = builder.project(columns.chain(keys))?.build()?;
    Ok(Some((plan, outer)))
}

/// `(outer column, inner expression)` of `outer = inner` (either way round).
fn correlated_equality(conjunct: &Expr) -> Option<(Column, Expr)> {
    let Expr::BinaryExpr(BinaryExpr {
        left,
        op: Operator::Eq,
        right,
    }) = conjunct
    else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (Expr::OuterReferenceColumn(_, column), inner)
        | (inner, Expr::OuterReferenceColumn(_, column))
            if !inner.contains_outer() =>
        {
            Some((column.clone(), inner.clone()))
        }
        _ => None,
    }
}
