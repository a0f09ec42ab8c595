//! Group windows, the older form of windows Flink and Beam write (Nexmark q11 is written so):
//! a window function in `GROUP BY` over the query's one relation, its bounds in the select
//! list.
//!
//! ```sql
//! SELECT B.bidder, count(*), SESSION_START(B.date_time, INTERVAL '10' SECOND)
//! FROM bid B GROUP BY B.bidder, SESSION(B.date_time, INTERVAL '10' SECOND)
//! ```
//!
//! is the window table function over that relation, grouped by its bounds:
//!
//! ```sql
//! SELECT B.bidder, count(*), window_start
//! FROM SESSION(bid, date_time, INTERVAL '10' SECOND, bidder) AS B
//! GROUP BY B.bidder, window_start, window_end
//! ```
//!
//! `TUMBLE(time, size)` and `HOP(time, slide, size)` work the same way, with `TUMBLE_START`,
//! `TUMBLE_END`, `HOP_START` and `HOP_END`. A session's key is the rest of the `GROUP BY`
//! (plain columns).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr,
    Ident, ObjectName, ObjectNamePart, Query, SetExpr, Statement, TableFactor, TableFunctionArgs,
    VisitMut, VisitorMut,
};

use crate::error::SqlError;

/// Rewrites every group window in `statement` into a window table function.
pub(super) fn rewrite_group_windows(statement: &mut Statement) -> Result<(), SqlError> {
    let mut rewriter = GroupWindowRewriter { error: None };
    let _ = statement.visit(&mut rewriter);
    rewriter.error.map_or(Ok(()), Err)
}

struct GroupWindowRewriter {
    /// The first misuse found; the visit stops there.
    error: Option<SqlError>,
}

impl VisitorMut for GroupWindowRewriter {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let SetExpr::Select(select) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        let GroupByExpr::Expressions(group_by, _) = &mut select.group_by else {
            return ControlFlow::Continue(());
        };
        let Some((position, function, arguments)) = group_by
            .iter()
            .enumerate()
            .find_map(|(i, e)| group_window(e).map(|(f, a)| (i, f, a)))
        else {
            return ControlFlow::Continue(());
        };
        let keys: Vec<Expr> = match function.as_str() {
            "session" => group_by
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != position)
                .filter_map(|(_, e)| last_ident(e).map(Expr::Identifier))
                .collect(),
            _ => Vec::new(),
        };
        group_by.splice(
            position..=position,
            ["window_start", "window_end"].map(|c| Expr::Identifier(Ident::new(c))),
        );
        let relation = match select.from.as_mut_slice() {
            [only] if only.joins.is_empty() => &mut only.relation,
            _ => {
                self.error = Some(SqlError::InvalidStatement(format!(
                    "GROUP BY {}(…) needs one relation in FROM",
                    function.to_uppercase()
                )));
                return ControlFlow::Break(());
            }
        };
        let TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = relation
        else {
            return ControlFlow::Continue(());
        };
        let Some((time, sizes)) = arguments.split_first() else {
            return ControlFlow::Continue(());
        };
        let Some(time) = last_ident(time) else {
            return ControlFlow::Continue(());
        };
        let relation_name = Expr::CompoundIdentifier(
            name.0
                .iter()
                .filter_map(ObjectNamePart::as_ident)
                .cloned()
                .collect(),
        );
        let table_arguments = std::iter::once(relation_name)
            .chain(std::iter::once(Expr::Identifier(time)))
            .chain(sizes.iter().cloned())
            .chain(keys)
            .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
            .collect();
        if alias.is_none() {
            *alias = name
                .0
                .last()
                .and_then(ObjectNamePart::as_ident)
                .map(|ident| datafusion::sql::sqlparser::ast::TableAlias {
                    explicit: true,
                    name: ident.clone(),
                    columns: Vec::new(),
                    at: None,
                });
        }
        *name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(
            function.to_uppercase(),
        ))]);
        if let TableFactor::Table { args, .. } = relation {
            *args = Some(TableFunctionArgs {
                args: table_arguments,
                settings: None,
            });
        }
        let _ = visit_expressions_mut(select, |expr| {
            if let Some(bound) = bound_function(expr) {
                *expr = Expr::Identifier(Ident::new(bound));
            }
            ControlFlow::<()>::Continue(())
        });
        ControlFlow::Continue(())
    }
}

/// The function's lower-case name and arguments, if `expr` is a group window
/// (`SESSION(…)`, `TUMBLE(…)`, `HOP(…)`).
fn group_window(expr: &Expr) -> Option<(String, Vec<Expr>)> {
    let (name, arguments) = function_call(expr)?;
    matches!(name.as_str(), "session" | "tumble" | "hop").then_some((name, arguments))
}

/// The window column a bound function (`SESSION_START(…)`, `TUMBLE_END(…)`, …) stands for.
fn bound_function(expr: &Expr) -> Option<&'static str> {
    let (name, _) = function_call(expr)?;
    match name.as_str() {
        "session_start" | "tumble_start" | "hop_start" => Some("window_start"),
        "session_end" | "tumble_end" | "hop_end" => Some("window_end"),
        _ => None,
    }
}

/// A call of a function with a one-part name: its lower-case name and plain arguments.
fn function_call(expr: &Expr) -> Option<(String, Vec<Expr>)> {
    let Expr::Function(function) = expr else {
        return None;
    };
    let [ObjectNamePart::Identifier(name)] = function.name.0.as_slice() else {
        return None;
    };
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let arguments = list
        .args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((name.value.to_lowercase(), arguments))
}

/// The column a plain (maybe qualified) column reference names.
fn last_ident(expr: &Expr) -> Option<Ident> {
    match expr {
        Expr::Identifier(ident) => Some(ident.clone()),
        Expr::CompoundIdentifier(idents) => idents.last().cloned(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_in_group_by_becomes_the_table_function_keyed_by_the_rest() {
        let mut statement = crate::parse::parse_sql(
            "SELECT B.bidder, count(*), SESSION_START(B.date_time, INTERVAL '10' SECOND) AS s, \
             SESSION_END(B.date_time, INTERVAL '10' SECOND) FROM bid B \
             GROUP BY B.bidder, SESSION(B.date_time, INTERVAL '10' SECOND)",
        )
        .unwrap()
        .pop()
        .unwrap();
        rewrite_group_windows(&mut statement).unwrap();
        assert_eq!(
            statement.to_string(),
            "SELECT B.bidder, count(*), window_start AS s, window_end \
             FROM SESSION(bid, date_time, INTERVAL '10' SECOND, bidder) B \
             GROUP BY B.bidder, window_start, window_end"
        );
    }
}
