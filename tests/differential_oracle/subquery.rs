//! Subqueries in WHERE: EXISTS, NOT EXISTS, IN, NOT IN and scalar comparisons, correlated
//! (the inner query compares one of its integer columns with one of the outer query's) or
//! not. DataFusion decorrelates them into semi, anti and outer joins.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::expr::{column_or_literal, predicate, Kind, Scope};
use super::model::Table;
use super::query::{aliased, select_exprs, single_table, Query};

/// A subquery predicate, and the equivalent the oracle evaluates where DataFusion cannot run
/// the original.
struct Condition {
    sql: String,
    oracle_sql: Option<String>,
}

impl Condition {
    fn same(sql: String) -> Condition {
        Condition {
            sql,
            oracle_sql: None,
        }
    }
}

/// `SELECT exprs FROM t WHERE <subquery predicate> [AND p]`, the subquery predicate
/// sometimes one side of an `OR` (DataFusion makes a mark join of it).
pub(super) fn subquery_filter(rng: &mut StdRng, tables: &[Table]) -> Query {
    let from = single_table(rng, tables, "x0");
    let in_disjunction = rng.random_bool(0.4);
    let mut condition = subquery_predicate(rng, tables, &from.scope, in_disjunction);
    if in_disjunction {
        let other = predicate(rng, &from.scope);
        let or = |sql: &str| format!("({sql} OR {other})");
        condition = Condition {
            sql: or(&condition.sql),
            oracle_sql: condition.oracle_sql.as_deref().map(or),
        };
    }
    let extra = if rng.random_bool(0.3) {
        format!(" AND {}", predicate(rng, &from.scope))
    } else {
        String::new()
    };
    let outputs = select_exprs(rng, &from.scope);
    let query = |condition: &str| {
        format!(
            "SELECT {} FROM {} WHERE {condition}{extra}",
            aliased(&outputs),
            from.sql
        )
    };
    Query {
        sql: query(&condition.sql),
        oracle_sql: condition.oracle_sql.as_deref().map(query),
        is_beyond_postgres: false,
        outputs: outputs.iter().map(|o| o.kind).collect(),
    }
}

/// The parts of a subquery over the inner table `y0`.
struct Inner {
    /// `t AS y0`.
    from: String,
    /// Its columns.
    scope: Scope,
    /// `y0.int_col = x0.int_col`.
    correlation: String,
}

impl Inner {
    /// ` WHERE …`: the correlation if `is_correlated`, and half of the time a predicate.
    fn filter(&self, rng: &mut StdRng, is_correlated: bool) -> String {
        let mut parts = Vec::new();
        if is_correlated {
            parts.push(self.correlation.clone());
        }
        if rng.random_bool(0.5) {
            parts.push(predicate(rng, &self.scope));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", parts.join(" AND "))
        }
    }

    /// An integer column (or constant) of the inner table.
    fn int(&self, rng: &mut StdRng) -> String {
        column_or_literal(rng, &self.scope, Kind::Int)
    }
}

/// EXISTS / NOT EXISTS / IN / NOT IN / scalar comparison, correlated or not; no `NOT IN`
/// when it is to be one side of an `OR` (views refuse it there: a NULL answer is not false).
fn subquery_predicate(
    rng: &mut StdRng,
    tables: &[Table],
    outer: &Scope,
    in_disjunction: bool,
) -> Condition {
    let inner_table = single_table(rng, tables, "y0");
    let inner = Inner {
        correlation: format!(
            "{} = {}",
            column_or_literal(rng, &inner_table.scope, Kind::Int),
            column_or_literal(rng, outer, Kind::Int)
        ),
        from: inner_table.sql,
        scope: inner_table.scope,
    };
    let outer_int = column_or_literal(rng, outer, Kind::Int);
    let from = &inner.from;
    let mut choice = rng.random_range(0..10);
    if in_disjunction && choice == 5 {
        choice = 3;
    }
    match choice {
        0 => Condition::same(format!(
            "EXISTS (SELECT 1 FROM {from}{})",
            inner.filter(rng, true)
        )),
        1 => Condition::same(format!(
            "NOT EXISTS (SELECT 1 FROM {from}{})",
            inner.filter(rng, true)
        )),
        2 => Condition::same(format!(
            "EXISTS (SELECT 1 FROM {from}{})",
            inner.filter(rng, false)
        )),
        3 => Condition::same(format!(
            "{outer_int} IN (SELECT {} FROM {from}{})",
            inner.int(rng),
            inner.filter(rng, false)
        )),
        // Both sides cast to bigint: DataFusion cannot decorrelate `int8 IN (SELECT int4 …
        // WHERE <that int4 column> = outer)` (duplicate names in its own projection).
        4 => Condition::same(format!(
            "CAST({outer_int} AS BIGINT) IN (SELECT CAST({} AS BIGINT) AS k FROM {from}{})",
            inner.int(rng),
            inner.filter(rng, true)
        )),
        5 => Condition::same(format!(
            "{outer_int} NOT IN (SELECT {} FROM {from}{})",
            inner.int(rng),
            inner.filter(rng, false)
        )),
        // A correlated NOT IN is refused (see regressions.rs); its NOT EXISTS form is covered.
        6 => correlated_not_exists(rng, &inner, &outer_int),
        7 => Condition::same(format!(
            "{outer_int} > (SELECT {} FROM {from}{})",
            scalar_aggregate(rng, &inner.scope),
            inner.filter(rng, false)
        )),
        8 => Condition::same(format!(
            "{outer_int} <= (SELECT {} FROM {from}{})",
            scalar_aggregate(rng, &inner.scope),
            inner.filter(rng, true)
        )),
        _ => Condition::same(format!(
            "(SELECT count(*) FROM {from}{}) {} {}",
            inner.filter(rng, true),
            ["=", ">", "<"].choose(rng).unwrap(),
            rng.random_range(0..=2)
        )),
    }
}

/// `NOT EXISTS (SELECT … WHERE correlation AND (b = a OR b IS NULL OR a IS NULL))`: the
/// textbook form of a correlated `a NOT IN (SELECT b …)`, which Fluxion refuses.
fn correlated_not_exists(rng: &mut StdRng, inner: &Inner, outer_int: &str) -> Condition {
    let from = &inner.from;
    let value = format!("CAST({} AS BIGINT)", inner.int(rng));
    let outer_int = format!("CAST({outer_int} AS BIGINT)");
    let filter = inner.filter(rng, true);
    Condition::same(format!(
        "NOT EXISTS (SELECT 1 FROM {from}{filter} AND ({value} = {outer_int} OR {value} IS NULL OR {outer_int} IS NULL))"
    ))
}

/// An aggregate of an integer column for a scalar subquery.
fn scalar_aggregate(rng: &mut StdRng, scope: &Scope) -> String {
    let column = column_or_literal(rng, scope, Kind::Int);
    let function = ["min", "max", "sum", "avg", "count"].choose(rng).unwrap();
    format!("{function}({column})")
}

/// `SELECT exprs, (SELECT y0.c FROM t AS y0 WHERE y0.k = x0.i [AND p]) AS oN FROM t0 AS x0`: a
/// correlated scalar subquery that does not aggregate, on the inner table's primary key (at
/// most one row: with two, PostgreSQL fails the read, and a view leaves the outer row out,
/// which a view over this one would see and PostgreSQL's would not; `sql-tests` covers that).
/// The oracle, which cannot run it, takes the `max` (the same value). A plain filter query if
/// no table has a primary key.
pub(super) fn scalar_subquery_select(rng: &mut StdRng, tables: &[Table]) -> Query {
    let keyed: Vec<&Table> = tables.iter().filter(|t| t.primary_key.is_some()).collect();
    let Some(table) = keyed.choose(rng) else {
        return super::query::select_filter(rng, tables);
    };
    let from = single_table(rng, tables, "x0");
    let inner = super::query::scope_of(table, "y0");
    let inner_key = table
        .primary_key
        .map(|i| format!("y0.{}", table.columns[i].name))
        .expect("invariant: a keyed table has a primary key");
    let outer_key = column_or_literal(rng, &from.scope, Kind::Int);
    let filter = if rng.random_bool(0.3) {
        format!(" AND {}", predicate(rng, &inner))
    } else {
        String::new()
    };
    let value = inner.columns.choose(rng).unwrap().clone();
    let outputs = select_exprs(rng, &from.scope);
    let n = outputs.len();
    let kinds: Vec<Option<Kind>> = outputs
        .iter()
        .map(|o| o.kind)
        .chain([Some(value.kind()).filter(|k| *k != Kind::Float)])
        .collect();
    let query = |value: &str| {
        format!(
            "SELECT {}, (SELECT {value} FROM {} AS y0 WHERE {inner_key} = {outer_key}{filter}) AS o{n} FROM {}",
            aliased(&outputs),
            table.name,
            from.sql
        )
    };
    Query {
        sql: query(&value.sql()),
        oracle_sql: Some(query(&format!("max({})", value.sql()))),
        is_beyond_postgres: false,
        outputs: kinds,
    }
}
