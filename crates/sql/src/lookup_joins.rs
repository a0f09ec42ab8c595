//! Processing-time lookup joins: `stream JOIN table FOR SYSTEM_TIME AS OF PROCTIME() t ON …`.
//!
//! Each row of the left side joins the right side as it stood when the row arrived; later
//! changes of the right side do not change what was joined (as a lookup into a table at
//! arrival would). A one-off query reads both sides as they are now, so for it this is the
//! plain join. For a view, the parser's marker (see [`crate::asof_joins`]) becomes
//! [`LOOKUP_MARKER`] in the join's condition: a function that is always true, so that
//! DataFusion runs the plain join, and that lowering recognizes and maintains with the
//! lookup join operator.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{not_impl_err, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, Join, JoinType, LogicalPlan, LogicalPlanBuilder, Operator,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The function marking a lookup join's condition.
pub const LOOKUP_MARKER: &str = "__fluxion_lookup";

/// The marker function, to register with a session state: always true. It is volatile, so
/// that no optimization folds it away, and it takes a column of each side (the first key's),
/// so that it stays in the join's condition.
pub fn lookup_marker() -> ScalarUDF {
    ScalarUDF::new_from_impl(LookupMarker {
        signature: Signature::variadic_any(Volatility::Volatile),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LookupMarker {
    signature: Signature,
}

impl ScalarUDFImpl for LookupMarker {
    fn name(&self) -> &str {
        LOOKUP_MARKER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))
    }
}

/// Whether `expr` is the lookup marker.
pub fn is_lookup_marker(expr: &Expr) -> bool {
    matches!(expr, Expr::ScalarFunction(ScalarFunction { func, .. }) if func.name() == LOOKUP_MARKER)
}

/// The join `FOR SYSTEM_TIME AS OF PROCTIME()` `join` is (its condition holding the parser's
/// marker, which `is_parser_marker` tells): the plain join on its equalities, marked.
pub(crate) fn lookup_join(
    join: Join,
    is_parser_marker: impl Fn(&Expr) -> bool,
) -> Result<LogicalPlan> {
    if !matches!(join.join_type, JoinType::Inner | JoinType::Left) {
        return not_impl_err!(
            "FOR SYSTEM_TIME AS OF PROCTIME() in a join other than JOIN or LEFT JOIN"
        );
    }
    let mut condition: Vec<Expr> = join
        .on
        .iter()
        .map(|(l, r)| l.clone().eq(r.clone()))
        .collect();
    let conjuncts = join
        .filter
        .as_ref()
        .map(split_conjunction)
        .unwrap_or_default();
    for conjunct in conjuncts {
        if is_parser_marker(conjunct) {
            continue;
        }
        let is_equality = matches!(conjunct, Expr::BinaryExpr(b) if b.op == Operator::Eq);
        if !is_equality {
            return not_impl_err!(
                "a join FOR SYSTEM_TIME AS OF PROCTIME() looks rows up by key: its ON \
                 condition takes equalities only, not {conjunct}"
            );
        }
        condition.push(conjunct.clone());
    }
    if condition.is_empty() {
        return not_impl_err!(
            "a join FOR SYSTEM_TIME AS OF PROCTIME() needs a key: equalities in its ON condition"
        );
    }
    let key_columns = match &condition[0] {
        Expr::BinaryExpr(b) => vec![b.left.as_ref().clone(), b.right.as_ref().clone()],
        _ => Vec::new(),
    };
    condition.push(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(lookup_marker()),
        key_columns,
    )));
    LogicalPlanBuilder::from(Arc::unwrap_or_clone(join.left))
        .join_on(
            Arc::unwrap_or_clone(join.right),
            join.join_type,
            condition.into_iter().reduce(Expr::and),
        )?
        .build()
}
