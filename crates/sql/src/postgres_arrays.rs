//! PostgreSQL array semantics that DataFusion's differ from.
//!
//! - `int2vector` and `oidvector` columns (`pg_index.indkey`, `pg_proc.proargtypes`) are
//!   subscripted from 0; DataFusion's lists from 1. [`VectorSubscripts`] shifts subscripts of
//!   such columns (their fields say what they are, see [`repr::pg_type::is_zero_based_vector`]).
//! - A string literal compared with an array (`polroles = '{0}'`) or a boolean
//!   (`indisprimary = 'f'`) is a literal of that type in Postgres, whose untyped literals take
//!   the type of the other operand. [`UntypedLiteralComparisons`] gives it that type (DataFusion
//!   reads every quoted literal as text).
//! - Arrays cast to and from text use Postgres's notation (`{a,"b c"}`), not Arrow's (`[a, b c]`):
//!   [`ArrayTextCasts`] routes such casts through `repr::pg_array`; `int2vector` and
//!   `oidvector` print as their elements separated by spaces.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::error::Result;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, GetFieldAccess, LogicalPlan,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::expression_rewrites::rewrite_expressions;

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
        let is_candidate = |e: &Expr| text_literal_comparison(e).is_some();
        rewrite_expressions(plan, is_candidate, |e, schema| {
            let typed_value = text_literal_comparison(&e).and_then(|(typed, literal, on_right)| {
                let value = match typed.get_type(schema) {
                    Ok(DataType::List(item)) => array_value(literal, item.data_type()),
                    Ok(DataType::Boolean) => boolean_value(literal),
                    _ => None,
                }?;
                Some((value, on_right))
            });
            Ok(match (typed_value, e) {
                (Some((value, on_right)), Expr::BinaryExpr(mut comparison)) => {
                    let literal = match on_right {
                        true => &mut comparison.right,
                        false => &mut comparison.left,
                    };
                    **literal = Expr::Literal(value, None);
                    Transformed::yes(Expr::BinaryExpr(comparison))
                }
                (_, e) => Transformed::no(e),
            })
        })
    }

    fn name(&self) -> &str {
        "untyped_literal_comparisons"
    }
}

/// A comparison of a text literal with another expression: that expression, the literal's
/// text, and whether the literal is on the right.
fn text_literal_comparison(e: &Expr) -> Option<(&Expr, &str, bool)> {
    let Expr::BinaryExpr(BinaryExpr { left, right, .. }) = e else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (other, Expr::Literal(ScalarValue::Utf8(Some(text)), _)) => Some((other, text, true)),
        (Expr::Literal(ScalarValue::Utf8(Some(text)), _), other) => Some((other, text, false)),
        _ => None,
    }
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

/// The analyzer rules of this module that run before type coercion.
pub fn analyzer_rules() -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    vec![Arc::new(UntypedLiteralComparisons)]
}

/// Casts between arrays and text in Postgres's notation. Runs after type coercion, which adds
/// casts of its own.
#[derive(Debug, Default)]
pub struct ArrayTextCasts;

impl AnalyzerRule for ArrayTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_casts(plan, |from, to| {
            let function = match (from.data_type(), to) {
                (DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8, DataType::List(_)) => {
                    ArrayText::reading(to.clone())
                }
                (DataType::List(_), DataType::Utf8) => {
                    ArrayText::writing(repr::pg_type::is_zero_based_vector(from))
                }
                _ => return None,
            };
            Some(ScalarUDF::from(function))
        })
    }

    fn name(&self) -> &str {
        "array_text_casts"
    }
}

/// Replaces every cast (and try-cast) in `plan` for which `function(input field, target
/// type)` gives a function with a call of that function on the cast's input, keeping the
/// expressions' names. The shared walk of the rules that give casts PostgreSQL's meaning.
pub(crate) fn rewrite_casts(
    plan: LogicalPlan,
    function: impl Fn(&Field, &DataType) -> Option<ScalarUDF>,
) -> Result<LogicalPlan> {
    let is_cast = |e: &Expr| matches!(e, Expr::Cast(_) | Expr::TryCast(_));
    rewrite_expressions(plan, is_cast, |e, schema| {
        let (inner, target) = match &e {
            Expr::Cast(cast) => (cast.expr.as_ref(), cast.field.data_type()),
            Expr::TryCast(cast) => (cast.expr.as_ref(), cast.field.data_type()),
            _ => return Ok(Transformed::no(e)),
        };
        let Ok((_, field)) = inner.to_field(schema) else {
            return Ok(Transformed::no(e));
        };
        match function(&field, target) {
            Some(udf) => Ok(Transformed::yes(udf.call(vec![inner.clone()]))),
            None => Ok(Transformed::no(e)),
        }
    })
}

/// `__array_in(text)` (an array literal read as a list of `target`) or `__array_out(list)`
/// (a list printed as an array literal, or as a vector's space-separated elements).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayText {
    /// The list type read into; `None` when printing.
    reading: Option<DataType>,
    vector: bool,
    signature: Signature,
}

impl ArrayText {
    fn reading(target: DataType) -> Self {
        Self {
            reading: Some(target),
            vector: false,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }

    fn writing(vector: bool) -> Self {
        Self {
            reading: None,
            vector,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ArrayText {
    fn name(&self) -> &str {
        match self.reading {
            Some(_) => "__array_in",
            None => "__array_out",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.reading.clone().unwrap_or(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // A constant argument makes one value; DataFusion reads a one-row result of constant
        // arguments as a constant.
        let rows = match args.args[0] {
            ColumnarValue::Scalar(_) => 1,
            ColumnarValue::Array(_) => args.number_rows,
        };
        let input = args.args[0].to_array(rows)?;
        let output: ArrayRef = match &self.reading {
            Some(target) => {
                let texts = datafusion::arrow::compute::cast(&input, &DataType::Utf8)?;
                repr::pg_array::text_to_list(texts.as_string::<i32>(), target)?
            }
            None => Arc::new(
                (0..input.len())
                    .map(|row| {
                        if input.is_null(row) {
                            return Ok(None);
                        }
                        let values = repr::pg_array::list_values(&input, row)
                            .ok_or_else(|| DataFusionError::Internal("not a list".into()))?;
                        let elements = (0..values.len())
                            .map(|i| {
                                if values.is_null(i) {
                                    return Ok("NULL".to_string());
                                }
                                let value = ScalarValue::try_from_array(&values, i)?.to_string();
                                Ok(if self.vector {
                                    value
                                } else {
                                    repr::pg_array::quote_element(&value)
                                })
                            })
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Some(if self.vector {
                            elements.join(" ")
                        } else {
                            format!("{{{}}}", elements.join(","))
                        }))
                    })
                    .collect::<Result<StringArray>>()?,
            ),
        };
        Ok(ColumnarValue::Array(output))
    }
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
