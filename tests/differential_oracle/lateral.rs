//! Random `LATERAL` top-k per group: for each row of one table, the first rows of the rows of
//! another (or the same) table that it matches on an integer column, in an order over every
//! column of that table (so the rows taken are determined), with `LIMIT` and sometimes
//! `OFFSET`; inner or `LEFT JOIN LATERAL … ON true`. PostgreSQL runs the query as written; the
//! oracle, which cannot run a correlated `LIMIT`, numbers each group's rows with
//! `row_number()` and joins the ones in range.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::expr::{predicate, Kind};
use super::model::Table;
use super::query::{aliased, scope_of, select_exprs, single_table, Query};

/// A join of a table with the first rows of each group of another.
pub(super) fn lateral_top_k(rng: &mut StdRng, tables: &[Table]) -> Query {
    let left = single_table(rng, tables, "x0");
    let table = tables.choose(rng).unwrap();
    let right = scope_of(table, "x1");
    let integer = |columns: &[super::expr::ScopeColumn], rng: &mut StdRng| {
        columns
            .iter()
            .filter(|c| c.kind() == Kind::Int)
            .collect::<Vec<_>>()
            .choose(rng)
            .map(|c| (*c).clone())
            .expect("invariant: every table has an integer column")
    };
    let outer_key = integer(&left.scope.columns, rng);
    let inner_key = integer(&right.columns, rng);
    let order = right
        .columns
        .iter()
        .map(|c| {
            let direction = if rng.random_bool(0.5) { "ASC" } else { "DESC" };
            let nulls = if rng.random_bool(0.5) {
                "NULLS FIRST"
            } else {
                "NULLS LAST"
            };
            format!("{} {direction} {nulls}", c.sql())
        })
        .collect::<Vec<_>>()
        .join(", ");
    let filter = rng
        .random_bool(0.4)
        .then(|| predicate(rng, &right))
        .map(|p| format!(" AND {p}"))
        .unwrap_or_default();
    let limit: u32 = rng.random_range(1..=3);
    let offset: u32 = if rng.random_bool(0.3) { 1 } else { 0 };
    let left_join = rng.random_bool(0.4);
    let mut scope = left.scope;
    scope.columns.extend(right.columns.iter().cloned());
    let outputs = select_exprs(rng, &scope);
    let select = aliased(&outputs);
    let correlation = format!("{} = {}", inner_key.sql(), outer_key.sql());
    let join = if left_join { "LEFT JOIN" } else { "JOIN" };
    let sql = format!(
        "SELECT {select} FROM {} {join} LATERAL (SELECT * FROM {} AS x1 WHERE {correlation}{filter} \
         ORDER BY {order} LIMIT {limit} OFFSET {offset}) AS x1 ON true",
        left.sql, table.name
    );
    let columns = right
        .columns
        .iter()
        .map(|c| c.sql())
        .collect::<Vec<_>>()
        .join(", ");
    let oracle_sql = format!(
        "SELECT {select} FROM {} {join} (SELECT {columns}, row_number() OVER (PARTITION BY {} \
         ORDER BY {order}) AS n FROM {} AS x1 WHERE true{filter}) AS x1 \
         ON {correlation} AND x1.n > {offset} AND x1.n <= {}",
        left.sql,
        inner_key.sql(),
        table.name,
        offset + limit
    );
    Query {
        sql,
        oracle_sql: Some(oracle_sql),
        is_beyond_postgres: false,
        outputs: outputs.iter().map(|o| o.kind).collect(),
    }
}
