//! Window table functions. `TUMBLE(relation, time column, size [, offset])` in a `FROM` clause
//! is the relation with two more columns, `window_start` and `window_end`: the bounds of the
//! window `[start, start + size)` that each row's time falls in, windows of `size` laid end to
//! end from the Unix epoch moved by `offset`. It becomes a derived table that computes them
//! with `date_bin`, so it is planned, and maintained incrementally, like any projection; it is
//! named after the relation unless it has an alias.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, Statement, TableAlias,
    TableFactor, VisitMut, VisitorMut,
};

use crate::error::SqlError;

/// The columns a window table function adds to its relation's.
pub(crate) const WINDOW_COLUMNS: [&str; 2] = ["window_start", "window_end"];

/// The origin windows are aligned to before their offset.
const EPOCH: &str = "TIMESTAMP '1970-01-01 00:00:00'";

/// Rewrites every window table function in `statement` into the derived table it stands for.
pub(crate) fn rewrite_window_functions(statement: &mut Statement) -> Result<(), SqlError> {
    let mut rewriter = WindowRewriter { error: None };
    let _ = statement.visit(&mut rewriter);
    rewriter.error.map_or(Ok(()), Err)
}

struct WindowRewriter {
    /// The first misuse found; the visit stops there.
    error: Option<SqlError>,
}

impl VisitorMut for WindowRewriter {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let function = match name.0.as_slice() {
            [ObjectNamePart::Identifier(ident)] => ident.value.to_lowercase(),
            _ => return ControlFlow::Continue(()),
        };
        if function != "tumble" {
            return ControlFlow::Continue(());
        }
        let arguments: Vec<&Expr> = args
            .args
            .iter()
            .filter_map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect();
        match tumble(&arguments, alias.take()) {
            Ok(derived) => {
                *factor = derived;
                ControlFlow::Continue(())
            }
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

/// `TUMBLE(relation, time column, size [, offset])` as a derived table named `alias` (or
/// after the relation).
fn tumble(arguments: &[&Expr], alias: Option<TableAlias>) -> Result<TableFactor, SqlError> {
    let usage = || {
        SqlError::UnknownFunction(
            "TUMBLE takes a relation, a time column, a window size and an optional offset: \
             TUMBLE(bid, date_time, INTERVAL '10' SECOND)"
                .into(),
        )
    };
    let (relation, column, size, offset) = match arguments {
        [relation, column, size] => (relation, column, size, None),
        [relation, column, size, offset] => (relation, column, size, Some(offset)),
        _ => return Err(usage()),
    };
    let relation = relation_name(relation).ok_or_else(usage)?;
    let column = match column {
        Expr::Identifier(ident) => ident.to_string(),
        _ => return Err(usage()),
    };
    let origin = match offset {
        Some(offset) => format!("{EPOCH} + ({offset})"),
        None => EPOCH.to_string(),
    };
    let start = format!("date_bin(({size}), {column}, {origin})");
    let sql = format!(
        "SELECT *, {start} AS window_start, {start} + ({size}) AS window_end FROM {relation}"
    );
    let Some(Statement::Query(subquery)) = crate::parse::parse_sql(&sql)?.pop() else {
        return Err(SqlError::Internal(format!("TUMBLE became {sql}")));
    };
    let alias = alias.or_else(|| {
        relation
            .0
            .last()
            .and_then(ObjectNamePart::as_ident)
            .map(|name| TableAlias {
                explicit: true,
                name: name.clone(),
                columns: Vec::new(),
                at: None,
            })
    });
    Ok(TableFactor::Derived {
        lateral: false,
        subquery,
        alias,
        sample: None,
    })
}

/// The relation an argument names (`bid`, `public.bid`).
fn relation_name(argument: &Expr) -> Option<ObjectName> {
    let parts: Vec<Ident> = match argument {
        Expr::Identifier(ident) => vec![ident.clone()],
        Expr::CompoundIdentifier(idents) => idents.clone(),
        _ => return None,
    };
    Some(ObjectName(
        parts.into_iter().map(ObjectNamePart::Identifier).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Result<String, SqlError> {
        let mut statement = crate::parse::parse_sql(sql)?.pop().expect("a statement");
        rewrite_window_functions(&mut statement)?;
        Ok(statement.to_string())
    }

    #[test]
    fn tumble_becomes_a_derived_table_named_after_its_relation() {
        assert_eq!(
            rewritten("SELECT window_start, count(*) FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_start").unwrap(),
            "SELECT window_start, count(*) FROM (SELECT *, date_bin((INTERVAL '10' SECOND), date_time, TIMESTAMP '1970-01-01 00:00:00') AS window_start, \
             date_bin((INTERVAL '10' SECOND), date_time, TIMESTAMP '1970-01-01 00:00:00') + (INTERVAL '10' SECOND) AS window_end FROM bid) AS bid GROUP BY window_start"
        );
    }

    #[test]
    fn an_offset_moves_the_origin_and_an_alias_names_it() {
        let sql = rewritten(
            "SELECT * FROM TUMBLE(s.bid, t, INTERVAL '1' HOUR, INTERVAL '15' MINUTE) AS w",
        )
        .unwrap();
        assert!(
            sql.contains("TIMESTAMP '1970-01-01 00:00:00' + (INTERVAL '15' MINUTE)"),
            "{sql}"
        );
        assert!(sql.ends_with("FROM s.bid) AS w"), "{sql}");
    }

    #[test]
    fn a_misused_tumble_is_an_error() {
        for sql in [
            "SELECT * FROM TUMBLE(bid, date_time)",
            "SELECT * FROM TUMBLE(bid, date_time + 1, INTERVAL '1' SECOND)",
            "SELECT * FROM TUMBLE('bid', date_time, INTERVAL '1' SECOND)",
        ] {
            assert!(
                matches!(rewritten(sql), Err(SqlError::UnknownFunction(_))),
                "{sql}"
            );
        }
    }
}
