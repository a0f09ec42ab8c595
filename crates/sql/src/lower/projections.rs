//! Projections that only pick columns, simplified away while lowering.
//!
//! DataFusion's plans stack projections: one picks an aggregate's arguments, another puts its
//! results in the query's order and names. Each Map costs a pass over every row (evaluate,
//! encode), so a Map that picks every column of its input in order becomes its input renamed,
//! a Map that picks columns of another Map becomes that Map picking its expressions, and a
//! Map over a Map that only picks columns reads those columns itself.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::plan_err;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use plan::{Plan, ScalarExpr};

use super::with_schema;

/// `Plan::Map` of `projection` (under `predicate`) over `input`, with the picking of columns
/// simplified away where the result is the same.
pub(super) fn map(
    input: Plan,
    predicate: Option<ScalarExpr>,
    projection: Vec<ScalarExpr>,
    schema: SchemaRef,
) -> Plan {
    let picked: Option<Vec<usize>> = projection.iter().map(picked_column).collect();
    match (predicate, picked, input) {
        (None, Some(columns), input) if is_identity(&input, &columns, &schema) => {
            with_schema(input, schema)
        }
        (
            None,
            Some(columns),
            Plan::Map {
                input: inner,
                predicate,
                projection: expressions,
                ..
            },
        ) => Plan::Map {
            input: inner,
            predicate,
            projection: columns.iter().map(|&c| expressions[c].clone()).collect(),
            schema,
        },
        (predicate, _, input) => over_picked_columns(input, predicate, projection, schema),
    }
}

/// `Plan::Map` of `projection` under `predicate` over `input`; where `input` is a Map that
/// only picks columns (under a predicate, if this Map has none), over that Map's input: the
/// columns are picked directly, and the one predicate still filters before the projection.
fn over_picked_columns(
    input: Plan,
    predicate: Option<ScalarExpr>,
    projection: Vec<ScalarExpr>,
    schema: SchemaRef,
) -> Plan {
    if let Plan::Map {
        input: inner,
        predicate: inner_predicate,
        projection: inner_projection,
        ..
    } = &input
    {
        let picked: Option<Vec<usize>> = inner_projection.iter().map(picked_column).collect();
        let one_predicate = inner_predicate.is_none() || predicate.is_none();
        if let (Some(picked), true) = (picked, one_predicate) {
            let remapped_predicate = match &predicate {
                None => Some(None),
                Some(p) => remap_columns(p, &picked).map(Some),
            };
            let remapped_projection: Option<Vec<_>> = projection
                .iter()
                .map(|e| remap_columns(e, &picked))
                .collect();
            if let (Some(predicate), Some(projection)) = (remapped_predicate, remapped_projection) {
                return Plan::Map {
                    input: inner.clone(),
                    predicate: predicate.or_else(|| inner_predicate.clone()),
                    projection,
                    schema,
                };
            }
        }
    }
    Plan::Map {
        input: Box::new(input),
        predicate,
        projection,
        schema,
    }
}

/// `expression` with each column `i` it reads replaced by column `to[i]`.
fn remap_columns(expression: &ScalarExpr, to: &[usize]) -> Option<ScalarExpr> {
    expression
        .clone()
        .transform_up(|e| {
            let any: &dyn PhysicalExpr = e.as_ref();
            Ok(match any.downcast_ref::<Column>() {
                Some(column) => match to.get(column.index()) {
                    Some(&index) => Transformed::yes(Arc::new(Column::new(column.name(), index))),
                    None => return plan_err!("column {} out of range", column.index()),
                },
                None => Transformed::no(e),
            })
        })
        .ok()
        .map(|t| t.data)
}

/// The input column `expression` picks, if it is a plain column reference.
pub(super) fn picked_column(expression: &ScalarExpr) -> Option<usize> {
    let any: &dyn PhysicalExpr = expression.as_ref();
    any.downcast_ref::<Column>().map(Column::index)
}

/// Whether picking `columns` of `input` into rows of `schema` changes nothing but names: every
/// column, in order, of the same type (rows are encoded by their types alone).
fn is_identity(input: &Plan, columns: &[usize], schema: &SchemaRef) -> bool {
    let fields = input.schema().fields();
    columns.len() == fields.len()
        && columns.iter().enumerate().all(|(i, &c)| i == c)
        && fields
            .iter()
            .zip(schema.fields())
            .all(|(from, to)| from.data_type() == to.data_type())
}
