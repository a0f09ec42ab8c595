//! PostgreSQL array semantics that DataFusion's differ from.
//!
//! - `int2vector` and `oidvector` columns (`pg_index.indkey`, `pg_proc.proargtypes`) are
//!   subscripted from 0; DataFusion's lists from 1. [`VectorSubscripts`] shifts subscripts of
//!   such columns (their fields say what they are, see [`repr::pg_type::is_zero_based_vector`]).
//! - A string literal compared with an array (`polroles = '{0}'`) or a boolean
//!   (`indisprimary = 'f'`) is a literal of that type in Postgres, whose untyped literals take
//!   the type of the other operand. [`UntypedLiteralComparisons`] gives it that type (DataFusion
//!   reads every quoted literal as text).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, GetFieldAccess, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// Shifts subscripts of 0-based vectors by one.
#[derive(Debug, Default)]
pub struct VectorSubscripts;

impl ExprPlanner for VectorSubscripts {
    fn plan_field_access(
        &self,
        access: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        let GetFieldAccess::ListIndex { key } = &access.field_access else {
            return Ok(PlannerResult::Original(access));
        };
        let zero_based = access
            .expr
            .to_field(schema)
            .is_ok_and(|(_, field)| repr::pg_type::is_zero_based_vector(&field));
        if !zero_based {
            return Ok(PlannerResult::Original(access));
        }
        let shifted = key.as_ref().clone() + Expr::Literal(ScalarValue::Int64(Some(1)), None);
        Ok(PlannerResult::Planned(
            datafusion::functions_nested::expr_fn::array_element(access.expr, shifted),
        ))
    }
}

/// Reads string literals compared with arrays and booleans as literals of those types.
#[derive(Debug, Default)]
pub struct UntypedLiteralComparisons;

impl AnalyzerRule for UntypedLiteralComparisons {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let schema = merged_input_schema(&node);
            // Keep every expression's name: parents refer to aggregates by it.
            let names = NamePreserver::new(&node);
            node.map_expressions(|expr| {
                let name = names.save(&expr);
                let rewritten = expr.transform_up(|e| {
                    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
                        return Ok(Transformed::no(e));
                    };
                    let (typed, literal, literal_on_right) = match (left.as_ref(), right.as_ref()) {
                        (other, Expr::Literal(ScalarValue::Utf8(Some(text)), _)) => {
                            (other, text, true)
                        }
                        (Expr::Literal(ScalarValue::Utf8(Some(text)), _), other) => {
                            (other, text, false)
                        }
                        _ => return Ok(Transformed::no(e)),
                    };
                    let value = match typed.get_type(&schema) {
                        Ok(DataType::List(item)) => array_value(literal, item.data_type()),
                        Ok(DataType::Boolean) => boolean_value(literal),
                        _ => None,
                    };
                    let Some(value) = value else {
                        return Ok(Transformed::no(e));
                    };
                    let value = Expr::Literal(value, None);
                    let (left, right) = if literal_on_right {
                        (left.clone(), Box::new(value))
                    } else {
                        (Box::new(value), right.clone())
                    };
                    Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                        left,
                        op: *op,
                        right,
                    })))
                })?;
                Ok(rewritten.update_data(|e| name.restore(e)))
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "untyped_literal_comparisons"
    }
}

/// The schema the expressions of `node` are evaluated against.
fn merged_input_schema(node: &LogicalPlan) -> DFSchema {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    schema
}

/// `{a,b}` as a list value of `element` type.
fn array_value(text: &str, element: &DataType) -> Option<ScalarValue> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let values = if inner.trim().is_empty() {
        Vec::new()
    } else {
        inner
            .split(',')
            .map(|part| {
                let part = part.trim().trim_matches('"');
                if part.eq_ignore_ascii_case("null") {
                    ScalarValue::try_from(element)
                } else {
                    ScalarValue::Utf8(Some(part.to_string())).cast_to(element)
                }
            })
            .collect::<Result<Vec<_>>>()
            .ok()?
    };
    Some(ScalarValue::List(ScalarValue::new_list_nullable(
        &values, element,
    )))
}

/// A boolean literal as Postgres reads it (`t`, `false`, `yes`, `off`, `1` …).
fn boolean_value(text: &str) -> Option<ScalarValue> {
    let text = text.trim().to_lowercase();
    let value = match text.as_str() {
        "t" | "tr" | "tru" | "true" | "y" | "ye" | "yes" | "on" | "1" => true,
        "f" | "fa" | "fal" | "fals" | "false" | "n" | "no" | "of" | "off" | "0" => false,
        _ => return None,
    };
    Some(ScalarValue::Boolean(Some(value)))
}

/// The analyzer rules of this module, in the order they run (before type coercion).
pub fn analyzer_rules() -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    vec![Arc::new(UntypedLiteralComparisons)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boolean_literals_read_like_postgres() {
        assert_eq!(boolean_value("f"), Some(ScalarValue::Boolean(Some(false))));
        assert_eq!(boolean_value("Yes"), Some(ScalarValue::Boolean(Some(true))));
        assert_eq!(boolean_value("maybe"), None);
    }

    #[test]
    fn array_literals_take_the_element_type() {
        let value = array_value("{0,1}", &DataType::Int64).unwrap();
        assert_eq!(value.data_type().to_string(), "List(Int64)");
        assert!(array_value("0", &DataType::Int64).is_none());
    }
}
