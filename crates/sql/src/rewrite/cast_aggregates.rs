//! Aggregate calls whose arguments differ only in casts (`sum(x::int)` and `sum(x::bigint)`)
//! get one name in DataFusion, which names an expression without its casts, and one
//! aggregation cannot hold two outputs of one name (42701). Each such call after the first is
//! told apart by an identity function around its cast arguments, numbered, which computes
//! the same value: `sum(__fluxion_as_is(x::bigint, 1))`.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{
    visit_expressions, visit_expressions_mut, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArguments, OrderByKind, Query, SelectItem, SetExpr, Statement, Value, VisitMut,
    VisitorMut,
};

use super::postgres_syntax::call;

/// The identity function that tells aggregate arguments apart.
pub(crate) const AS_IS: &str = "__fluxion_as_is";

/// Numbers the aggregate calls of each query of `statement` that only casts tell apart (see
/// the module documentation). `is_aggregate` tells whether a function name is an aggregate.
pub(crate) fn distinguish_cast_aggregates(
    statement: &mut Statement,
    is_aggregate: &dyn Fn(&str) -> bool,
) {
    let _ = statement.visit(&mut Distinguisher { is_aggregate });
}

struct Distinguisher<'a> {
    is_aggregate: &'a dyn Fn(&str) -> bool,
}

impl VisitorMut for Distinguisher<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let mut numbers = Numbers::default();
        for_each_aggregate_site(query, &mut |expr| {
            let _ = visit_expressions(expr, |e| {
                if let Some(function) = self.aggregate(e) {
                    numbers.assign(function);
                }
                ControlFlow::<()>::Continue(())
            });
        });
        if !numbers.any_repeated() {
            return ControlFlow::Continue(());
        }
        for_each_aggregate_site_mut(query, &mut |expr| {
            let _ = visit_expressions_mut(expr, |e| {
                let number = self.aggregate(e).and_then(|f| numbers.number_of(f));
                if let (Some(number), Expr::Function(function)) = (number, e) {
                    wrap_cast_arguments(function, number);
                }
                ControlFlow::<()>::Continue(())
            });
        });
        ControlFlow::Continue(())
    }
}

impl Distinguisher<'_> {
    fn aggregate<'e>(&self, expr: &'e Expr) -> Option<&'e Function> {
        match expr {
            Expr::Function(f) if f.over.is_none() => {
                let name = f.name.0.last()?.as_ident()?.value.to_lowercase();
                (self.is_aggregate)(&name).then_some(f)
            }
            _ => None,
        }
    }
}

/// For each aggregate call written without casts, the calls written with them, in order of
/// appearance; where there are several, each call with a cast gets its position, counted from
/// one (a call with none keeps its name).
#[derive(Default)]
struct Numbers {
    by_uncast: HashMap<String, Vec<String>>,
}

impl Numbers {
    fn assign(&mut self, function: &Function) {
        let written = function.to_string();
        let calls = self.by_uncast.entry(uncast(function)).or_default();
        if !calls.contains(&written) {
            calls.push(written);
        }
    }

    fn any_repeated(&self) -> bool {
        self.by_uncast.values().any(|calls| calls.len() > 1)
    }

    /// The number of `function` among the calls of its uncast form, if it needs one.
    fn number_of(&self, function: &Function) -> Option<usize> {
        let uncast = uncast(function);
        let calls = self
            .by_uncast
            .get(&uncast)
            .filter(|calls| calls.len() > 1)?;
        let written = function.to_string();
        calls
            .iter()
            .filter(|call| **call != uncast)
            .position(|call| *call == written)
            .map(|n| n + 1)
    }
}

/// `function` as text with every cast in it removed.
fn uncast(function: &Function) -> String {
    let mut expr = Expr::Function(function.clone());
    let _ = visit_expressions_mut(&mut expr, |e| {
        while let Expr::Cast { expr: inner, .. } = e {
            *e = inner.as_ref().clone();
        }
        ControlFlow::<()>::Continue(())
    });
    expr.to_string()
}

fn wrap_cast_arguments(function: &mut Function, number: usize) {
    let FunctionArguments::List(list) = &mut function.args else {
        return;
    };
    for arg in &mut list.args {
        let (FunctionArg::Unnamed(FunctionArgExpr::Expr(expr))
        | FunctionArg::Named {
            arg: FunctionArgExpr::Expr(expr),
            ..
        }) = arg
        else {
            continue;
        };
        if has_cast(expr) {
            let number = Expr::value(Value::Number(number.to_string(), false));
            *expr = call(AS_IS, vec![expr.clone(), number]);
        }
    }
}

fn has_cast(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match e {
        Expr::Cast { .. } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Calls `visit` with each part of `query` where its own aggregates are written: the select
/// list, HAVING, QUALIFY and ORDER BY.
fn for_each_aggregate_site(query: &Query, visit: &mut impl FnMut(&Expr)) {
    if let SetExpr::Select(select) = query.body.as_ref() {
        for item in &select.projection {
            if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
                visit(expr);
            }
        }
        select
            .having
            .iter()
            .chain(&select.qualify)
            .for_each(&mut *visit);
    }
    if let Some(order_by) = &query.order_by {
        if let OrderByKind::Expressions(keys) = &order_by.kind {
            keys.iter().for_each(|key| visit(&key.expr));
        }
    }
}

/// [`for_each_aggregate_site`] for changing them.
fn for_each_aggregate_site_mut(query: &mut Query, visit: &mut impl FnMut(&mut Expr)) {
    if let SetExpr::Select(select) = query.body.as_mut() {
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
                visit(expr);
            }
        }
        select
            .having
            .iter_mut()
            .chain(&mut select.qualify)
            .for_each(&mut *visit);
    }
    if let Some(order_by) = &mut query.order_by {
        if let OrderByKind::Expressions(keys) = &mut order_by.kind {
            keys.iter_mut().for_each(|key| visit(&mut key.expr));
        }
    }
}

/// `__fluxion_as_is(value, number)`: `value`.
pub(crate) fn as_is_udf() -> ScalarUDF {
    ScalarUDF::from(AsIs {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AsIs {
    signature: Signature,
}

impl ScalarUDFImpl for AsIs {
    fn name(&self) -> &str {
        AS_IS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args[0].clone())
    }
}
