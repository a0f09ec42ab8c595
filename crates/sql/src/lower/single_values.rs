//! Scalar subqueries that do not aggregate, in a view: `SELECT (SELECT o.amount FROM o WHERE
//! o.customer = c.id) FROM c`.
//!
//! The subquery takes its value through `__single_value` (see [`crate::single_value`]), and
//! DataFusion decorrelates it into an outer join with an aggregate of `o` grouped by
//! `o.customer`. In a one-off read that aggregate fails when a group has two rows, as
//! PostgreSQL fails the query. A view leaves out the rows whose expressions fail, and a group
//! left out of the aggregate would make the outer join show NULL for its customer: a wrong
//! row, not a missing one. So here each `__single_value(x)` becomes `max(x)` (the value, when
//! there is one row) and `count(*)` (the rows), both carried up through the joins, filters
//! and projections above it, and the value is checked (`__single_value_check(rows, value)`)
//! where it is used: in the expression that reads it, or at the top of the plan. A customer
//! with two orders is then left out of the view and counted in `view_errors`; one with none
//! reads NULL.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Column;
use datafusion::error::Result;
use datafusion::functions_aggregate::expr_fn::{count, max};
use datafusion::logical_expr::expr::{AggregateFunction, Alias, ScalarFunction};
use datafusion::logical_expr::{
    lit, Aggregate, Expr, Filter, Join, LogicalPlan, Projection, SubqueryAlias,
};

use crate::single_value::{single_value_check_udf, SINGLE_VALUE};

/// `plan` with every `__single_value` aggregate counted and checked where its value is used.
pub(super) fn checked_where_used(plan: LogicalPlan) -> Result<LogicalPlan> {
    let has_single_value = crate::expression_rewrites::has_node(
        &plan,
        |node| matches!(node, LogicalPlan::Aggregate(a) if a.aggr_expr.iter().any(is_single_value)),
    );
    match has_single_value {
        true => checked(plan),
        false => Ok(plan),
    }
}

/// A `__single_value` not checked yet: the column holding the value, and the one holding its
/// group's row count.
#[derive(Clone)]
struct Unchecked {
    value: Column,
    rows: Column,
}

/// `plan` rewritten, with the values still unchecked at its top checked there.
fn checked(plan: LogicalPlan) -> Result<LogicalPlan> {
    let schema = plan.schema().clone();
    let (plan, unchecked) = rewritten(plan)?;
    if unchecked.is_empty() {
        return Ok(plan);
    }
    let exprs = schema
        .iter()
        .map(|(qualifier, field)| {
            let column = Column::new(qualifier.cloned(), field.name());
            match unchecked.iter().find(|u| u.value == column) {
                Some(u) => check(u).alias_qualified(qualifier.cloned(), field.name()),
                None => Expr::Column(column),
            }
        })
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(plan),
    )?))
}

/// `plan` rewritten, and the values it leaves unchecked (columns of its output).
fn rewritten(plan: LogicalPlan) -> Result<(LogicalPlan, Vec<Unchecked>)> {
    match plan {
        LogicalPlan::Aggregate(aggregate) if aggregate.aggr_expr.iter().any(is_single_value) => {
            counted(aggregate)
        }
        LogicalPlan::Projection(projection) => projected(projection),
        LogicalPlan::SubqueryAlias(alias) => {
            let (input, unchecked) = rewritten(Arc::unwrap_or_clone(alias.input))?;
            let requalified = unchecked
                .into_iter()
                .map(|u| Unchecked {
                    value: Column::new(Some(alias.alias.clone()), u.value.name),
                    rows: Column::new(Some(alias.alias.clone()), u.rows.name),
                })
                .collect();
            let plan = SubqueryAlias::try_new(Arc::new(input), alias.alias)?;
            Ok((LogicalPlan::SubqueryAlias(plan), requalified))
        }
        LogicalPlan::Filter(filter) => {
            let (input, unchecked) = rewritten(Arc::unwrap_or_clone(filter.input))?;
            let predicate = checked_expr(filter.predicate, &unchecked)?;
            let plan = Filter::try_new(predicate, Arc::new(input))?;
            Ok((LogicalPlan::Filter(plan), unchecked))
        }
        LogicalPlan::Join(join) => {
            let (left, mut unchecked) = rewritten(Arc::unwrap_or_clone(join.left))?;
            let (right, right_unchecked) = rewritten(Arc::unwrap_or_clone(join.right))?;
            unchecked.extend(right_unchecked);
            let on = join
                .on
                .into_iter()
                .map(|(l, r)| Ok((checked_expr(l, &unchecked)?, checked_expr(r, &unchecked)?)))
                .collect::<Result<Vec<_>>>()?;
            let filter = join
                .filter
                .map(|f| checked_expr(f, &unchecked))
                .transpose()?;
            let plan = Join::try_new(
                Arc::new(left),
                Arc::new(right),
                on,
                filter,
                join.join_type,
                join.join_constraint,
                join.null_equality,
                join.null_aware,
            )?;
            // A semi or anti join outputs one side only: the other's values were checked in
            // its conditions, if read at all.
            unchecked
                .retain(|u| plan.schema.has_column(&u.value) && plan.schema.has_column(&u.rows));
            Ok((LogicalPlan::Join(plan), unchecked))
        }
        // Any other node keeps its children's schemas: each child's values are checked at
        // its top.
        other => Ok((
            other
                .map_children(|child| checked(child).map(Transformed::yes))?
                .data,
            Vec::new(),
        )),
    }
}

fn is_single_value(expr: &Expr) -> bool {
    matches!(unaliased(expr), Expr::AggregateFunction(AggregateFunction { func, .. }) if func.name() == SINGLE_VALUE)
}

fn unaliased(expr: &Expr) -> &Expr {
    match expr {
        Expr::Alias(Alias { expr, .. }) => unaliased(expr),
        other => other,
    }
}

/// An aggregate with each `__single_value(x)` as `max(x)` under the same name, and its row
/// count as a column after the others.
fn counted(aggregate: Aggregate) -> Result<(LogicalPlan, Vec<Unchecked>)> {
    let input = checked(Arc::unwrap_or_clone(aggregate.input))?;
    let group_len = aggregate.group_expr.len();
    let mut exprs = Vec::with_capacity(aggregate.aggr_expr.len());
    let mut counts = Vec::new();
    let mut unchecked = Vec::new();
    for (i, expr) in aggregate.aggr_expr.into_iter().enumerate() {
        let name = aggregate.schema.field(group_len + i).name().clone();
        let Expr::AggregateFunction(AggregateFunction { params, .. }) = unaliased(&expr) else {
            exprs.push(expr);
            continue;
        };
        if !is_single_value(&expr) {
            exprs.push(expr);
            continue;
        }
        let rows = format!("__single_value_rows_{i}");
        exprs.push(max(params.args[0].clone()).alias(&name));
        counts.push(count(lit(1)).alias(&rows));
        unchecked.push(Unchecked {
            value: Column::from_name(name),
            rows: Column::from_name(rows),
        });
    }
    exprs.extend(counts);
    let plan = Aggregate::try_new(Arc::new(input), aggregate.group_expr, exprs)?;
    Ok((LogicalPlan::Aggregate(plan), unchecked))
}

/// A projection that passes the unchecked values it selects as they are, with their row
/// counts beside them, and checks those its expressions compute with.
fn projected(projection: Projection) -> Result<(LogicalPlan, Vec<Unchecked>)> {
    let (input, unchecked) = rewritten(Arc::unwrap_or_clone(projection.input))?;
    if unchecked.is_empty() {
        let plan = Projection::try_new(projection.expr, Arc::new(input))?;
        return Ok((LogicalPlan::Projection(plan), Vec::new()));
    }
    let mut exprs = Vec::with_capacity(projection.expr.len() + unchecked.len());
    let mut passed = Vec::new();
    for (expr, (qualifier, field)) in projection.expr.into_iter().zip(projection.schema.iter()) {
        let selected = match unaliased(&expr) {
            Expr::Column(column) => unchecked.iter().find(|u| u.value == *column),
            _ => None,
        };
        match selected {
            Some(u) => {
                passed.push(Unchecked {
                    value: Column::new(qualifier.cloned(), field.name()),
                    rows: u.rows.clone(),
                });
                exprs.push(expr);
            }
            None => exprs.push(checked_expr(expr, &unchecked)?),
        }
    }
    let mut carried = Vec::with_capacity(passed.len());
    for (i, u) in passed.into_iter().enumerate() {
        let rows = format!("{}_{i}", u.rows.name);
        exprs.push(Expr::Column(u.rows).alias(&rows));
        carried.push(Unchecked {
            value: u.value,
            rows: Column::from_name(rows),
        });
    }
    let plan = Projection::try_new(exprs, Arc::new(input))?;
    Ok((LogicalPlan::Projection(plan), carried))
}

/// `expr` with every unchecked value it reads checked.
fn checked_expr(expr: Expr, unchecked: &[Unchecked]) -> Result<Expr> {
    expr.transform(|e| match &e {
        Expr::Column(column) => match unchecked.iter().find(|u| u.value == *column) {
            Some(u) => Ok(Transformed::yes(check(u))),
            None => Ok(Transformed::no(e)),
        },
        _ => Ok(Transformed::no(e)),
    })
    .map(|t| t.data)
}

/// `__single_value_check(rows, value)`.
fn check(unchecked: &Unchecked) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(single_value_check_udf()),
        vec![
            Expr::Column(unchecked.rows.clone()),
            Expr::Column(unchecked.value.clone()),
        ],
    ))
}
