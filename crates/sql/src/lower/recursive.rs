//! Lowering `WITH RECURSIVE` into a [`Plan::Recursive`], whose recursive term reads the
//! query through [`Plan::RecursiveRef`].
//!
//! PostgreSQL's rules ([`crate::recursive_queries`]) already keep the reference out of
//! subqueries, aggregates and the nullable side of outer joins. A view also needs the step
//! to be one the iteration can maintain: between the reference and the step's root only
//! maps, joins, unions and unnests, which are linear in the reference, so adding up the
//! iterations gives PostgreSQL's `UNION ALL` result. (PostgreSQL applies `DISTINCT`, an
//! aggregate or a window function to each iteration's new rows alone, which a fixed point
//! does not model.)

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::logical_expr::RecursiveQuery;
use plan::Plan;

use super::{arrow_schema, Lowerer};
use crate::SqlError;

impl Lowerer<'_> {
    pub(super) fn lower_recursive(&self, query: &RecursiveQuery) -> Result<Plan, SqlError> {
        let base = self.lower(&query.static_term)?;
        let step = self.lower(&query.recursive_term)?;
        check_step(&step, &query.name)?;
        let schema = arrow_schema(&query.schema);
        // DataFusion casts the recursive term to the non-recursive term's types; the iteration
        // feeds one's rows to the other, so they must be encoded alike.
        let types = |s: &SchemaRef| s.fields().iter().map(|f| f.data_type().clone()).collect();
        let expected: Vec<_> = types(&schema);
        if types(base.schema()) != expected || types(step.schema()) != expected {
            return Err(SqlError::Internal(format!(
                "the terms of recursive query \"{}\" differ in type",
                query.name
            )));
        }
        Ok(Plan::Recursive {
            name: query.name.clone(),
            base: Box::new(base),
            step: Box::new(step),
            distinct: query.is_distinct,
            schema,
        })
    }
}

/// Refuses a recursive term that reads the query `name` through an operator the iteration
/// cannot maintain as PostgreSQL evaluates it.
fn check_step(plan: &Plan, name: &str) -> Result<(), SqlError> {
    if plan.recursive_references(name) == 0 {
        return Ok(());
    }
    let construct = match plan {
        Plan::RecursiveRef { .. }
        | Plan::Map { .. }
        | Plan::Join { .. }
        | Plan::Union { .. }
        | Plan::Unnest { .. } => None,
        Plan::Distinct { .. } => Some("DISTINCT"),
        Plan::Window { .. } => Some("a window function"),
        Plan::TopK { .. } => Some("ORDER BY … LIMIT"),
        Plan::Recursive { .. } => Some("a nested WITH RECURSIVE"),
        Plan::Reduce { .. } => Some("an aggregate"),
        _ => Some("this operator"),
    };
    if let Some(construct) = construct {
        return Err(SqlError::not_incremental(
            format!("{construct} over the recursive reference of WITH RECURSIVE"),
            "a view maintains recursive terms built from joins, filters, projections, UNION \
             ALL and UNNEST over the reference",
        ));
    }
    plan.inputs()
        .into_iter()
        .try_for_each(|input| check_step(input, name))
}
