//! Random `WITH RECURSIVE` views: two integer columns of a table (or earlier view) read as
//! edges, followed transitively (`UNION`: every pair once, cycles converge) or along paths up
//! to a length (`UNION ALL`: one row per path, duplicates and all), possibly aggregated.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::expr::{predicate, Kind};
use super::model::Table;
use super::query::{scope_of, select_filter, Query};

/// A recursive query over the edges of a random table with integer columns (a plain filter
/// query if there is none).
pub(super) fn recursive_query(rng: &mut StdRng, tables: &[Table]) -> Query {
    let candidates: Vec<&Table> = tables
        .iter()
        .filter(|t| t.columns.iter().any(|c| Kind::of(c.ty) == Kind::Int))
        .collect();
    let Some(table) = candidates.choose(rng) else {
        return select_filter(rng, tables);
    };
    let integers: Vec<&str> = table
        .columns
        .iter()
        .filter(|c| Kind::of(c.ty) == Kind::Int)
        .map(|c| c.name.as_str())
        .collect();
    let from = *integers.choose(rng).unwrap();
    let to = *integers.choose(rng).unwrap();
    let scope = |alias: &str| scope_of(table, alias);
    let base_filter = if rng.random_bool(0.5) {
        format!(" WHERE {}", predicate(rng, &scope("x")))
    } else {
        String::new()
    };
    let step_filter = if rng.random_bool(0.3) {
        format!(" AND {}", predicate(rng, &scope("e")))
    } else {
        String::new()
    };
    let name = &table.name;
    let (body, mut outputs) = if rng.random_bool(0.5) {
        let body = format!(
            "SELECT x.{from}, x.{to} FROM {name} AS x{base_filter} \
             UNION SELECT r.o0, e.{to} FROM r JOIN {name} AS e ON r.o1 = e.{from}{step_filter}"
        );
        (format!("r(o0, o1) AS ({body})"), vec![Some(Kind::Int); 2])
    } else {
        let depth = rng.random_range(1..=3);
        let body = format!(
            "SELECT x.{from}, x.{to}, CAST(0 AS BIGINT) FROM {name} AS x{base_filter} \
             UNION ALL SELECT r.o0, e.{to}, r.o2 + 1 FROM r JOIN {name} AS e \
             ON r.o1 = e.{from} WHERE r.o2 < {depth}{step_filter}"
        );
        (
            format!("r(o0, o1, o2) AS ({body})"),
            vec![Some(Kind::Int); 3],
        )
    };
    let select = if rng.random_bool(0.3) {
        outputs.truncate(2);
        "SELECT o0, count(*) AS o1 FROM r GROUP BY o0"
    } else if outputs.len() == 3 {
        "SELECT o0, o1, o2 FROM r"
    } else {
        "SELECT o0, o1 FROM r"
    };
    Query {
        sql: format!("WITH RECURSIVE {body} {select}"),
        oracle_sql: None,
        is_beyond_postgres: false,
        outputs,
    }
}
