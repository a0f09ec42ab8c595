//! Window table functions, in a `FROM` clause: the relation with two more columns,
//! `window_start` and `window_end`, the bounds `[start, start + size)` of each window a row's
//! time falls in. Windows are aligned to the Unix epoch moved by an optional `offset`.
//!
//! - `TUMBLE(relation, time column, size [, offset])`: windows of `size` laid end to end, one
//!   per row.
//! - `HOP(relation, time column, slide, size [, offset])`: windows of `size` starting every
//!   `slide`, each row in every window that holds its time (`size / slide` of them when the
//!   slide divides the size).
//! - `CUMULATE(relation, time column, step, max size [, offset])`: windows that start where
//!   a window of the max size starts and end every `step` up to its end, each row in every
//!   one that holds its time (a day's running totals, hour by hour).
//! - `SESSION(relation, time column, gap [, key column …])`: per key, the runs of rows each
//!   less than `gap` after the one before, spanning `[first time, last time + gap)` (see
//!   [`crate::session_windows`]); each row is in its run's window.
//!
//! Each becomes a derived table computing the bounds with `date_bin` (and, for `HOP` and
//! `CUMULATE`, an `unnest` of the windows), so it is planned, and maintained incrementally,
//! like any projection; it is named after the relation unless it has an alias.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, Statement, TableAlias,
    TableFactor, VisitMut, VisitorMut,
};

use crate::error::SqlError;
use crate::hop_windows::{is_fixed_length, HOP_STARTS};

/// The columns a window table function adds to its relation's.
pub(crate) const WINDOW_COLUMNS: [&str; 2] = ["window_start", "window_end"];

/// The origin windows are aligned to before their offset.
const EPOCH: &str = "TIMESTAMP '1970-01-01 00:00:00'";

/// Rewrites every window table function in `statement` into the derived table it stands for
/// (group windows first become window table functions, see [`super::group_windows`]).
pub(crate) fn rewrite_window_functions(statement: &mut Statement) -> Result<(), SqlError> {
    super::group_windows::rewrite_group_windows(statement)?;
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
        let constructor = match function.as_str() {
            "tumble" => Window::tumble,
            "hop" => Window::hop,
            "cumulate" => Window::cumulate,
            "session" => Window::session,
            _ => return ControlFlow::Continue(()),
        };
        let arguments: Vec<&Expr> = args
            .args
            .iter()
            .filter_map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect();
        match constructor(&arguments).and_then(|window| window.derived_table(alias.take())) {
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

/// A window table function: the relation it windows and the query it stands for.
struct Window {
    relation: ObjectName,
    query: String,
}

impl Window {
    /// `TUMBLE(relation, time column, size [, offset])`.
    fn tumble(arguments: &[&Expr]) -> Result<Window, SqlError> {
        let usage = || usage("TUMBLE", "a window size", "INTERVAL '10' SECOND");
        let (relation, column, [size], origin) = split(arguments).ok_or_else(usage)?;
        let start = format!("date_bin(({size}), {column}, {origin})");
        Ok(Window {
            query: format!(
                "SELECT *, {start} AS window_start, {start} + ({size}) AS window_end \
                 FROM {relation}"
            ),
            relation,
        })
    }

    /// `HOP(relation, time column, slide, size [, offset])`: the windows holding time `t`
    /// start on the slide's grid in `(t - size, t]`.
    fn hop(arguments: &[&Expr]) -> Result<Window, SqlError> {
        let usage = || {
            usage(
                "HOP",
                "a slide, a window size",
                "INTERVAL '2' SECOND, INTERVAL '10' SECOND",
            )
        };
        let (relation, column, [slide, size], origin) = split(arguments).ok_or_else(usage)?;
        let starts = if is_fixed_length(&slide) && is_fixed_length(&size) {
            format!("{HOP_STARTS}({column}, ({slide}), ({size}), {origin})")
        } else {
            let first = format!("date_bin(({slide}), {column} - ({size}), {origin}) + ({slide})");
            let last = format!("date_bin(({slide}), {column}, {origin})");
            format!("generate_series({first}, {last}, ({slide}))")
        };
        Ok(Window {
            query: format!(
                "SELECT *, window_start + ({size}) AS window_end FROM \
                 (SELECT *, unnest({starts}) AS window_start \
                 FROM {relation}) AS {WINDOWED}"
            ),
            relation,
        })
    }

    /// `CUMULATE(relation, time column, step, max size [, offset])`: windows that all start
    /// where a window of the max size starts and end every `step` up to its end; time `t` is
    /// in those ending on the step's grid in `(t, start + max size]`.
    fn cumulate(arguments: &[&Expr]) -> Result<Window, SqlError> {
        let usage = || {
            usage(
                "CUMULATE",
                "a step, a maximum window size",
                "INTERVAL '1' HOUR, INTERVAL '1' DAY",
            )
        };
        let (relation, column, [step, max], origin) = split(arguments).ok_or_else(usage)?;
        let start = format!("date_bin(({max}), {column}, {origin})");
        let first_end = format!("date_bin(({step}), {column}, {origin}) + ({step})");
        Ok(Window {
            query: format!(
                "SELECT *, {start} AS window_start, \
                 unnest(generate_series({first_end}, {start} + ({max}), ({step}))) AS window_end \
                 FROM {relation}"
            ),
            relation,
        })
    }

    /// `SESSION(relation, time column, gap [, key column …])`: two window functions over the
    /// relation, partitioned by the keys and ordered by time.
    fn session(arguments: &[&Expr]) -> Result<Window, SqlError> {
        let usage = || {
            usage(
                "SESSION",
                "a gap, key columns",
                "INTERVAL '10' SECOND, bidder",
            )
        };
        let (relation, column, gap, keys) = match arguments {
            [relation, column, gap, keys @ ..] => (relation, column, gap, keys),
            _ => return Err(usage()),
        };
        let (Some(relation), Expr::Identifier(column)) = (relation_name(relation), column) else {
            return Err(usage());
        };
        let keys = keys
            .iter()
            .map(|key| match key {
                Expr::Identifier(ident) => Ok(ident.to_string()),
                _ => Err(usage()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let partition = match keys.is_empty() {
            true => String::new(),
            false => format!("PARTITION BY {} ", keys.join(", ")),
        };
        let over = format!("OVER ({partition}ORDER BY {column})");
        Ok(Window {
            query: format!(
                "SELECT *, {start}({column}, ({gap})) {over} AS window_start, \
                 {end}({column}, ({gap})) {over} AS window_end FROM {relation}",
                start = crate::session_windows::SESSION_START,
                end = crate::session_windows::SESSION_END,
            ),
            relation,
        })
    }

    /// The derived table the function stands for, named `alias` (or after the relation).
    fn derived_table(self, alias: Option<TableAlias>) -> Result<TableFactor, SqlError> {
        let Window { relation, query } = self;
        let Some(Statement::Query(subquery)) = crate::parse::parse_sql(&query)?.pop() else {
            return Err(SqlError::Internal(format!("a window became {query}")));
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
}

/// A window function's arguments: the relation, the time column, `N` sizes and the origin
/// (the Unix epoch, moved by the optional offset after the sizes).
fn split<const N: usize>(arguments: &[&Expr]) -> Option<(ObjectName, String, [String; N], String)> {
    let (relation, column, rest) = match arguments {
        [relation, column, rest @ ..] => (relation, column, rest),
        _ => return None,
    };
    let (sizes, offset) = match rest.len() {
        n if n == N => (rest, None),
        n if n == N + 1 => (&rest[..N], Some(rest[N])),
        _ => return None,
    };
    let column = match column {
        Expr::Identifier(ident) => ident.to_string(),
        _ => return None,
    };
    let origin = match offset {
        Some(offset) => format!("{EPOCH} + ({offset})"),
        None => EPOCH.to_string(),
    };
    let sizes = std::array::from_fn(|i| sizes[i].to_string());
    Some((relation_name(relation)?, column, sizes, origin))
}

/// The name of the inner derived table of a `HOP`.
const WINDOWED: &str = "__fluxion_windows";

/// What `function` takes, as the error for a misuse.
fn usage(function: &str, sizes: &str, example: &str) -> SqlError {
    SqlError::UnknownFunction(format!(
        "{function} takes a relation, a time column, {sizes} and an optional offset: \
         {function}(bid, date_time, {example})"
    ))
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
    fn hop_unnests_the_starts_of_the_windows_holding_each_time() {
        let sql = rewritten(
            "SELECT * FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS h",
        )
        .unwrap();
        assert!(
            sql.contains(
                "unnest(__fluxion_hop_starts(date_time, (INTERVAL '2' SECOND), (INTERVAL '10' SECOND), \
                 TIMESTAMP '1970-01-01 00:00:00')) AS window_start"
            ),
            "{sql}"
        );
        let monthly = rewritten(
            "SELECT * FROM HOP(bid, date_time, INTERVAL '1' MONTH, INTERVAL '3' MONTH) AS h",
        )
        .unwrap();
        assert!(
            monthly.contains(
                "unnest(generate_series(date_bin((INTERVAL '1' MONTH), date_time - (INTERVAL '3' MONTH), \
                 TIMESTAMP '1970-01-01 00:00:00') + (INTERVAL '1' MONTH), date_bin((INTERVAL '1' MONTH), \
                 date_time, TIMESTAMP '1970-01-01 00:00:00'), (INTERVAL '1' MONTH))) AS window_start"
            ),
            "{monthly}"
        );
        assert!(
            sql.contains("window_start + (INTERVAL '10' SECOND) AS window_end"),
            "{sql}"
        );
        assert!(sql.ends_with(") AS h"), "{sql}");
        assert!(matches!(
            rewritten("SELECT * FROM HOP(bid, date_time, INTERVAL '2' SECOND)"),
            Err(SqlError::UnknownFunction(_))
        ));
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
