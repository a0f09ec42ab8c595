//! Random view queries from the set issue 2 requires Fluxion to maintain incrementally.
//!
//! One function per query shape. Every query names its output columns `o0, o1, …` so views
//! over joins never have duplicate names, and every ORDER BY … LIMIT orders by all output
//! columns, so the rows it keeps are determined up to identical rows.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::expr::{
    column_or_literal, expr, literal, predicate, random_kind, Kind, Scope, ScopeColumn,
};
use super::lateral::lateral_top_k;
use super::model::Table;
use super::recursive::recursive_query;
use super::subquery::{scalar_subquery_select, subquery_filter};

/// A view's query, and the query the oracle runs for it: the same text except where
/// DataFusion cannot run a construct and an equivalent one is substituted.
#[derive(Debug, Clone)]
pub struct ViewQuery {
    /// The query Fluxion maintains.
    pub sql: String,
    /// The equivalent query the oracle runs.
    pub oracle_sql: String,
    /// Whether PostgreSQL lacks a construct of `sql` (ASOF joins) and runs `oracle_sql`.
    is_beyond_postgres: bool,
    /// The kind of each output column `o0, o1, …` (`None`: floating point, never referred
    /// to by another view).
    pub outputs: Vec<Option<Kind>>,
}

/// One output column: its expression and its kind (`None` for floating point).
pub(super) struct Output {
    pub(super) sql: String,
    pub(super) kind: Option<Kind>,
}

impl Output {
    fn of(sql: String, kind: Kind) -> Output {
        Output {
            sql,
            kind: Some(kind),
        }
    }
}

/// A generated query: its text, the oracle's equivalent when it differs, and the kinds of
/// its output columns `o0, o1, …`.
pub(super) struct Query {
    pub(super) sql: String,
    pub(super) oracle_sql: Option<String>,
    /// Whether PostgreSQL lacks a construct of `sql` and runs `oracle_sql` instead.
    pub(super) is_beyond_postgres: bool,
    pub(super) outputs: Vec<Option<Kind>>,
}

impl Query {
    /// `SELECT <outputs AS o0, …> <rest>`, the same for Fluxion and the oracle.
    fn select(outputs: &[Output], rest: &str) -> Query {
        Query {
            sql: format!("SELECT {}{rest}", aliased(outputs)),
            oracle_sql: None,
            is_beyond_postgres: false,
            outputs: outputs.iter().map(|o| o.kind).collect(),
        }
    }
}

impl ViewQuery {
    /// The query PostgreSQL runs: `sql`, except where it has no such construct (ASOF joins),
    /// then the oracle's equivalent.
    pub fn postgres_sql(&self) -> &str {
        if self.is_beyond_postgres {
            &self.oracle_sql
        } else {
            &self.sql
        }
    }
}

/// A random query over `tables` (base tables, and earlier views described as tables).
pub fn random_query(rng: &mut StdRng, tables: &[Table]) -> ViewQuery {
    let query = match rng.random_range(0..22) {
        0..=1 => select_filter(rng, tables),
        19 => recursive_query(rng, tables),
        20 => lateral_top_k(rng, tables),
        21 => scalar_subquery_select(rng, tables),
        2..=3 => join_query(rng, tables),
        18 => asof_join_query(rng, tables),
        4..=6 => group_by_query(rng, tables),
        7 => global_aggregate(rng, tables),
        8 => distinct_query(rng, tables),
        9..=10 => set_operation(rng, tables),
        11..=13 => subquery_filter(rng, tables),
        14..=15 => window_functions(rng, tables),
        _ => top_k(rng, tables),
    };
    ViewQuery {
        oracle_sql: query.oracle_sql.unwrap_or_else(|| query.sql.clone()),
        is_beyond_postgres: query.is_beyond_postgres,
        sql: query.sql,
        outputs: query.outputs,
    }
}

/// A FROM clause and the columns it brings into scope.
pub(super) struct From {
    pub(super) sql: String,
    pub(super) scope: Scope,
}

/// The columns of `table` under `alias`.
pub(super) fn scope_of(table: &Table, alias: &str) -> Scope {
    Scope {
        columns: table
            .columns
            .iter()
            .map(|c| ScopeColumn {
                qualifier: alias.to_string(),
                name: c.name.clone(),
                ty: c.ty,
            })
            .collect(),
    }
}

/// `FROM t AS alias` for a random table.
pub(super) fn single_table(rng: &mut StdRng, tables: &[Table], alias: &str) -> From {
    let table = tables.choose(rng).unwrap();
    From {
        sql: format!("{} AS {alias}", table.name),
        scope: scope_of(table, alias),
    }
}

/// A single table, or a 2- or 3-way equi-join of (possibly repeated) tables.
fn from_clause(rng: &mut StdRng, tables: &[Table]) -> From {
    match rng.random_range(0..5) {
        0..=1 => single_table(rng, tables, "x0"),
        2..=3 => join_chain(rng, tables, 2),
        _ => join_chain(rng, tables, 3),
    }
}

/// `x0 JOIN x1 ON … [JOIN x2 ON …]`: each join is inner, left, right or full, on one or two
/// equalities between comparable columns, sometimes with an extra non-equi condition, and
/// sometimes on no equality at all (a cross join: `ON true`, or a comparison).
fn join_chain(rng: &mut StdRng, tables: &[Table], count: usize) -> From {
    let mut from = single_table(rng, tables, "x0");
    for i in 1..count {
        let alias = format!("x{i}");
        let table = tables.choose(rng).unwrap();
        let right = scope_of(table, &alias);
        let kind = ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]
            .choose(rng)
            .unwrap();
        // PostgreSQL runs a FULL JOIN only on an equality.
        let cross = *kind != "FULL JOIN" && rng.random_bool(0.1);
        let condition = join_condition(rng, &from.scope, &right, cross);
        from.sql = format!(
            "{} {kind} {} AS {alias} ON {condition}",
            from.sql, table.name
        );
        from.scope.columns.extend(right.columns);
    }
    from
}

/// One or two equalities `left.col = right.col` (the first always on integer columns, which
/// every table has), sometimes with an extra condition on the right side's columns; with
/// `cross`, no equality: `true`, or `left.col < right.col`.
fn join_condition(rng: &mut StdRng, left: &Scope, right: &Scope, cross: bool) -> String {
    let pairs: Vec<(&ScopeColumn, &ScopeColumn)> = left
        .columns
        .iter()
        .flat_map(|l| right.columns.iter().map(move |r| (l, r)))
        .filter(|(l, r)| l.ty.is_comparable_with(r.ty))
        .collect();
    let integer_pairs: Vec<_> = pairs
        .iter()
        .filter(|(l, _)| l.kind() == Kind::Int)
        .collect();
    let (l, r) = integer_pairs
        .choose(rng)
        .expect("invariant: every table has an integer column");
    if cross {
        return match rng.random_bool(0.5) {
            true => format!("{} < {}", l.sql(), r.sql()),
            false => "true".to_string(),
        };
    }
    let mut condition = format!("{} = {}", l.sql(), r.sql());
    if rng.random_bool(0.2) {
        let (l, r) = pairs.choose(rng).unwrap();
        condition.push_str(&format!(" AND {} = {}", l.sql(), r.sql()));
    }
    if rng.random_bool(0.15) {
        condition.push_str(&format!(" AND {}", predicate(rng, right)));
    }
    condition
}

/// 1–4 expressions of random kinds for a select list.
pub(super) fn select_exprs(rng: &mut StdRng, scope: &Scope) -> Vec<Output> {
    (0..rng.random_range(1..=4))
        .map(|_| any_expr(rng, scope))
        .collect()
}

/// An expression of a random kind.
fn any_expr(rng: &mut StdRng, scope: &Scope) -> Output {
    let kind = random_kind(rng);
    Output::of(expr(rng, scope, kind), kind)
}

/// ` WHERE p` half of the time.
fn maybe_where(rng: &mut StdRng, scope: &Scope) -> String {
    if rng.random_bool(0.5) {
        format!(" WHERE {}", predicate(rng, scope))
    } else {
        String::new()
    }
}

/// `SELECT exprs FROM t [WHERE p]`.
pub(super) fn select_filter(rng: &mut StdRng, tables: &[Table]) -> Query {
    let from = single_table(rng, tables, "x0");
    let outputs = select_exprs(rng, &from.scope);
    let filter = maybe_where(rng, &from.scope);
    Query::select(&outputs, &format!(" FROM {}{filter}", from.sql))
}

/// `SELECT exprs FROM a JOIN b ON … [JOIN c ON …] [WHERE p]`.
fn join_query(rng: &mut StdRng, tables: &[Table]) -> Query {
    let count = rng.random_range(2..=3);
    let from = join_chain(rng, tables, count);
    let outputs = select_exprs(rng, &from.scope);
    let filter = maybe_where(rng, &from.scope);
    Query::select(&outputs, &format!(" FROM {}{filter}", from.sql))
}

/// `SELECT exprs FROM a ASOF [LEFT] JOIN b ON a.k = b.k AND a.t <op> b.t [WHERE p]`, on
/// integer columns (the key sometimes left out). The oracle, which has no ASOF JOIN, runs the
/// join on the same condition keeping the pairs with no closer candidate (`NOT EXISTS`), and
/// for the `LEFT` form adds the left rows without a candidate, joined to NULLs.
fn asof_join_query(rng: &mut StdRng, tables: &[Table]) -> Query {
    let left = single_table(rng, tables, "x0");
    let table = tables.choose(rng).unwrap();
    let right = scope_of(table, "x1");
    let integers = |scope: &Scope| -> Vec<ScopeColumn> {
        scope
            .columns
            .iter()
            .filter(|c| c.kind() == Kind::Int)
            .cloned()
            .collect()
    };
    let (left_ints, right_ints) = (integers(&left.scope), integers(&right));
    let pick = |rng: &mut StdRng, columns: &[ScopeColumn]| {
        columns
            .choose(rng)
            .expect("invariant: every table has an integer column")
            .clone()
    };
    let (left_time, right_time) = (pick(rng, &left_ints), pick(rng, &right_ints));
    let op = *[">=", ">", "<=", "<"].choose(rng).unwrap();
    let key = rng
        .random_bool(0.9)
        .then(|| (pick(rng, &left_ints), pick(rng, &right_ints)));
    // The condition with the right side under `alias`.
    let condition = |alias: &str| {
        let time = format!("{} {op} {alias}.{}", left_time.sql(), right_time.name);
        match &key {
            Some((l, r)) => format!("{} = {alias}.{} AND {time}", l.sql(), r.name),
            None => time,
        }
    };
    let closer = if op.starts_with('>') { ">" } else { "<" };
    let outer = rng.random_bool(0.5);
    let mut scope = left.scope;
    scope.columns.extend(right.columns);
    let outputs = select_exprs(rng, &scope);
    let filter = rng.random_bool(0.5).then(|| predicate(rng, &scope));
    let and_filter = filter
        .as_ref()
        .map(|p| format!(" AND {p}"))
        .unwrap_or_default();
    let kind = if outer { "ASOF LEFT JOIN" } else { "ASOF JOIN" };
    let mut query = Query::select(
        &outputs,
        &format!(
            " FROM {} {kind} {} AS x1 ON {}{}",
            left.sql,
            table.name,
            condition("x1"),
            filter.map(|p| format!(" WHERE {p}")).unwrap_or_default()
        ),
    );
    let matched = format!(
        "SELECT {} FROM {} JOIN {} AS x1 ON {} WHERE NOT EXISTS (SELECT 1 FROM {} AS y \
         WHERE {} AND y.{} {closer} x1.{}){and_filter}",
        aliased(&outputs),
        left.sql,
        table.name,
        condition("x1"),
        table.name,
        condition("y"),
        right_time.name,
        right_time.name,
    );
    query.is_beyond_postgres = true;
    query.oracle_sql = Some(if outer {
        format!(
            "{matched} UNION ALL SELECT {} FROM {} LEFT JOIN {} AS x1 ON false \
             WHERE NOT EXISTS (SELECT 1 FROM {} AS y WHERE {}){and_filter}",
            aliased(&outputs),
            left.sql,
            table.name,
            table.name,
            condition("y"),
        )
    } else {
        matched
    });
    query
}

/// `count` aggregate calls with at most one string_agg (DataFusion, the oracle, cannot run
/// two aggregates ordered differently in one query).
fn aggregates(rng: &mut StdRng, scope: &Scope, count: usize) -> Vec<Output> {
    let mut calls: Vec<Output> = Vec::with_capacity(count);
    while calls.len() < count {
        let call = aggregate(rng, scope);
        let is_ordered = |c: &Output| c.sql.starts_with("string_agg");
        if !(is_ordered(&call) && calls.iter().any(is_ordered)) {
            calls.push(call);
        }
    }
    calls
}

/// A random aggregate call over the scope.
fn aggregate(rng: &mut StdRng, scope: &Scope) -> Output {
    let numeric_kind = if rng.random_bool(0.6) {
        Kind::Int
    } else {
        Kind::Numeric
    };
    let ordered_kind = *[
        Kind::Int,
        Kind::Numeric,
        Kind::Text,
        Kind::Timestamp,
        Kind::Float,
    ]
    .choose(rng)
    .unwrap();
    let of = Output::of;
    match rng.random_range(0..11) {
        0 => of("count(*)".to_string(), Kind::Int),
        1 => of(format!("count({})", any_expr(rng, scope).sql), Kind::Int),
        2 => of(
            format!("sum({})", expr(rng, scope, numeric_kind)),
            numeric_kind,
        ),
        3 => Output {
            sql: format!("avg({})", expr(rng, scope, numeric_kind)),
            // avg of integers is a double; of numerics, a numeric with fewer fractional
            // digits than PostgreSQL's (see docs/sql-compatibility.md): compared approximately.
            kind: None,
        },
        4 => of(
            format!("min({})", expr(rng, scope, ordered_kind)),
            ordered_kind,
        ),
        5 => of(
            format!("max({})", column_or_literal(rng, scope, ordered_kind)),
            ordered_kind,
        ),
        6 => distinct_aggregate(rng, scope, numeric_kind),
        7 => of(
            format!("bool_and({})", expr(rng, scope, Kind::Bool)),
            Kind::Bool,
        ),
        8 => of(
            format!("bool_or({})", expr(rng, scope, Kind::Bool)),
            Kind::Bool,
        ),
        9 => {
            let text = expr(rng, scope, Kind::Text);
            of(
                format!("string_agg({text}, ',' ORDER BY {text})"),
                Kind::Text,
            )
        }
        _ => of(
            format!("max({})", expr(rng, scope, ordered_kind)),
            ordered_kind,
        ),
    }
}

/// A DISTINCT count, sum or avg, sometimes with a FILTER.
fn distinct_aggregate(rng: &mut StdRng, scope: &Scope, numeric_kind: Kind) -> Output {
    let filter = if rng.random_bool(0.4) {
        format!(" FILTER (WHERE {})", expr(rng, scope, Kind::Bool))
    } else {
        String::new()
    };
    match rng.random_range(0..3) {
        0 => Output::of(
            format!("count(DISTINCT {}){filter}", any_expr(rng, scope).sql),
            Kind::Int,
        ),
        1 => Output::of(
            format!("sum(DISTINCT {}){filter}", expr(rng, scope, numeric_kind)),
            numeric_kind,
        ),
        _ => Output {
            sql: format!("avg(DISTINCT {}){filter}", expr(rng, scope, numeric_kind)),
            kind: None,
        },
    }
}

/// `HAVING` on an aggregate: a count threshold, a sum or extreme compared with a constant.
fn having(rng: &mut StdRng, scope: &Scope) -> String {
    match rng.random_range(0..4) {
        0 => format!("count(*) > {}", rng.random_range(0..=2)),
        1 => format!(
            "sum({}) > {}",
            column_or_literal(rng, scope, Kind::Int),
            rng.random_range(-2..=6)
        ),
        2 => format!(
            "max({}) >= {}",
            column_or_literal(rng, scope, Kind::Int),
            literal(rng, Kind::Int)
        ),
        // PostgreSQL has no min(boolean).
        _ => {
            let kind = *[Kind::Int, Kind::Numeric, Kind::Text].choose(rng).unwrap();
            format!("min({}) IS NOT NULL", expr(rng, scope, kind))
        }
    }
}

/// `SELECT keys, aggregates FROM … [WHERE] GROUP BY keys [HAVING]`.
fn group_by_query(rng: &mut StdRng, tables: &[Table]) -> Query {
    let from = from_clause(rng, tables);
    group_by_over(rng, from)
}

/// `SELECT keys, aggregates FROM <from> [WHERE] GROUP BY keys [HAVING]`.
fn group_by_over(rng: &mut StdRng, from: From) -> Query {
    let mut outputs: Vec<Output> = Vec::new();
    for _ in 0..rng.random_range(1..=2) {
        let key = group_key(rng, &from.scope);
        if outputs.iter().all(|k| k.sql != key.sql) {
            outputs.push(key);
        }
    }
    let keys: Vec<String> = outputs.iter().map(|k| k.sql.clone()).collect();
    let count = rng.random_range(1..=3);
    outputs.extend(aggregates(rng, &from.scope, count));
    let filter = maybe_where(rng, &from.scope);
    let having = if rng.random_bool(0.3) {
        format!(" HAVING {}", having(rng, &from.scope))
    } else {
        String::new()
    };
    Query::select(
        &outputs,
        &format!(
            " FROM {}{filter} GROUP BY {}{having}",
            from.sql,
            keys.join(", ")
        ),
    )
}

/// A grouping expression: mostly a column, sometimes an expression over columns. Never a
/// constant (GROUP BY would read it as a position), nor a bare CAST (DataFusion names
/// `CAST(x AS t)` like `x`, and fails on `GROUP BY x, CAST(x AS t)`).
fn group_key(rng: &mut StdRng, scope: &Scope) -> Output {
    if rng.random_bool(0.75) {
        let column = scope.columns.choose(rng).unwrap();
        return Output::of(column.sql(), column.kind());
    }
    loop {
        let e = any_expr(rng, scope);
        if !e.sql.starts_with("CAST(") && scope.columns.iter().any(|c| e.sql.contains(&c.sql())) {
            return e;
        }
    }
}

/// `SELECT aggregates FROM … [WHERE]`: one row even over no input.
fn global_aggregate(rng: &mut StdRng, tables: &[Table]) -> Query {
    let from = from_clause(rng, tables);
    let count = rng.random_range(1..=4);
    let outputs = aggregates(rng, &from.scope, count);
    let filter = maybe_where(rng, &from.scope);
    let having = if rng.random_bool(0.15) {
        format!(" HAVING {}", having(rng, &from.scope))
    } else {
        String::new()
    };
    Query::select(&outputs, &format!(" FROM {}{filter}{having}", from.sql))
}

/// `expr AS o0, …`.
pub(super) fn aliased(outputs: &[Output]) -> String {
    outputs
        .iter()
        .enumerate()
        .map(|(i, o)| format!("{} AS o{i}", o.sql))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `SELECT DISTINCT exprs FROM … [WHERE]`.
fn distinct_query(rng: &mut StdRng, tables: &[Table]) -> Query {
    let from = from_clause(rng, tables);
    let outputs: Vec<Output> = (0..rng.random_range(1..=3))
        .map(|_| {
            let kind = random_kind(rng);
            Output::of(column_or_literal(rng, &from.scope, kind), kind)
        })
        .collect();
    let filter = maybe_where(rng, &from.scope);
    let mut query = Query::select(&outputs, &format!(" FROM {}{filter}", from.sql));
    query.sql = query.sql.replacen("SELECT", "SELECT DISTINCT", 1);
    query
}

/// `q1 {UNION ALL | UNION | INTERSECT | EXCEPT} q2 [… q3]` over one column signature, or
/// `q1 {INTERSECT ALL | EXCEPT ALL} q2`. DataFusion computes the last two as semi and anti
/// joins (wrong duplicates), so the oracle counts each side's copies instead (see
/// [`bag_oracle_sql`]).
fn set_operation(rng: &mut StdRng, tables: &[Table]) -> Query {
    let signature: Vec<Kind> = (0..rng.random_range(1..=2))
        .map(|_| *[Kind::Int, Kind::Int, Kind::Text].choose(rng).unwrap())
        .collect();
    let op = *[
        "UNION ALL",
        "UNION",
        "INTERSECT",
        "EXCEPT",
        "INTERSECT ALL",
        "EXCEPT ALL",
    ]
    .choose(rng)
    .unwrap();
    let bag = matches!(op, "INTERSECT ALL" | "EXCEPT ALL");
    let arms: Vec<String> = (0..if !bag && rng.random_bool(0.2) { 3 } else { 2 })
        .map(|_| set_operation_arm(rng, tables, &signature))
        .collect();
    Query {
        sql: arms.join(&format!(" {op} ")),
        oracle_sql: bag.then(|| bag_oracle_sql(op, &arms[0], &arms[1], signature.len())),
        is_beyond_postgres: false,
        outputs: signature.into_iter().map(Some).collect(),
    }
}

/// `left INTERSECT ALL right` (`min(m, n)` copies of a row that `left` has `m` times and
/// `right` `n` times) or `left EXCEPT ALL right` (`max(m - n, 0)` copies), computed from the
/// two sides' counts per row.
fn bag_oracle_sql(op: &str, left: &str, right: &str, width: usize) -> String {
    let columns: Vec<String> = (0..width).map(|i| format!("o{i}")).collect();
    let list = columns.join(", ");
    let qualified = |side: &str| {
        columns
            .iter()
            .map(|c| format!("{side}.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let counted = |arm: &str, name: &str| {
        format!(
            "(SELECT {list}, count(*) AS n FROM ({arm}) AS {name}_rows GROUP BY {list}) AS {name}"
        )
    };
    let same_row = columns
        .iter()
        .map(|c| format!("(l.{c} IS NOT DISTINCT FROM r.{c})"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let (join, copies) = match op {
        "INTERSECT ALL" => ("JOIN", "least(l.n, r.n)"),
        _ => ("LEFT JOIN", "l.n - COALESCE(r.n, 0)"),
    };
    format!(
        "SELECT {list} FROM (SELECT {}, unnest(generate_series(1, {copies})) AS copy FROM {} {join} {} ON {same_row}) AS bag",
        qualified("l"),
        counted(left, "l"),
        counted(right, "r"),
    )
}

/// One side of a set operation: integers are cast to bigint so every side has one type.
fn set_operation_arm(rng: &mut StdRng, tables: &[Table], signature: &[Kind]) -> String {
    let from = single_table(rng, tables, "x0");
    let outputs: Vec<Output> = signature
        .iter()
        .map(|&kind| {
            let e = if rng.random_bool(0.7) {
                column_or_literal(rng, &from.scope, kind)
            } else {
                expr(rng, &from.scope, kind)
            };
            match kind {
                Kind::Int => Output::of(format!("CAST({e} AS BIGINT)"), kind),
                _ => Output::of(e, kind),
            }
        })
        .collect();
    let filter = maybe_where(rng, &from.scope);
    Query::select(&outputs, &format!(" FROM {}{filter}", from.sql)).sql
}

/// Window functions over a filter or aggregate query `b` of one base table: its columns,
/// partitioned by some of them and ordered by all the others, and one function of each row's
/// window (or, the top-k per group idiom, the rows whose `row_number()` is at most k).
/// Ordering by every column makes the results determined up to identical rows, which get the
/// same values.
///
/// Base tables only, no joins: the oracle inlines views, and DataFusion 55 plans a window
/// over some outer joins wrongly (a constant column of an outer join's nullable side is taken
/// as sorted, and its SanityCheckPlan refuses the plan).
fn window_functions(rng: &mut StdRng, tables: &[Table]) -> Query {
    let base_tables: Vec<Table> = tables
        .iter()
        .filter(|t| !is_view(&t.name))
        .cloned()
        .collect();
    let base = if rng.random_bool(0.5) {
        select_filter(rng, &base_tables)
    } else {
        let from = single_table(rng, &base_tables, "x0");
        group_by_over(rng, from)
    };
    // Floating point values may differ in their last digits between the two: no ordering by
    // them, and so only functions that ties leave unchanged.
    let exact = base.outputs.iter().all(Option::is_some);
    let columns: Vec<usize> = (0..base.outputs.len())
        .filter(|&i| base.outputs[i].is_some())
        .collect();
    let partitions = rng.random_range(0..=columns.len().min(2));
    let (partition, order) = columns.split_at(partitions);
    let partition = match partition {
        [] => String::new(),
        columns => format!(
            "PARTITION BY {} ",
            columns
                .iter()
                .map(|i| format!("b.o{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let order_by = match order {
        [] => String::new(),
        columns => format!(
            "ORDER BY {}",
            columns
                .iter()
                .map(|i| sort_key(rng, &format!("b.o{i}")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let integers: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| base.outputs[i] == Some(Kind::Int))
        .collect();
    let mut functions = vec!["rank()", "dense_rank()", "count(*)"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    if exact {
        functions.push("row_number()".into());
        functions.push("ntile(3)".into());
        if let Some(i) = integers.choose(rng) {
            functions.push(format!("sum(b.o{i})"));
            functions.push(format!("lag(b.o{i})"));
            functions.push(format!("lead(b.o{i}, 2, -1)"));
            functions.push(format!("first_value(b.o{i})"));
            functions.push(format!("last_value(b.o{i})"));
            functions.push(format!("nth_value(b.o{i}, 2)"));
        }
    }
    let columns: Vec<String> = (0..base.outputs.len()).map(|i| format!("b.o{i}")).collect();
    let n = base.outputs.len();
    let mut outputs = base.outputs.clone();
    outputs.push(Some(Kind::Int));
    let (function, top) = if exact && rng.random_bool(0.4) {
        ("row_number()".to_string(), Some(rng.random_range(1..=3)))
    } else {
        (functions.choose(rng).unwrap().clone(), None)
    };
    let over = format!(
        "OVER ({partition}{order_by}{})",
        window_frame(rng, &function, exact && !order.is_empty())
    );
    // Beside a top-k's row number, sometimes a function that reaches rows after its own,
    // computed over the same window for the rows within the limit.
    let beside = match (top, integers.choose(rng)) {
        (Some(_), Some(i)) if rng.random_bool(0.5) => {
            outputs.push(Some(Kind::Int));
            let function = [format!("lead(b.o{i}, 2, -1)"), format!("sum(b.o{i})")]
                .choose(rng)
                .unwrap()
                .clone();
            format!(", {function} OVER ({partition}{order_by}) AS o{}", n + 1)
        }
        _ => String::new(),
    };
    let wrap = |inner: &str, function: &str, top: Option<u32>| {
        let windowed = format!(
            "SELECT {}, {function} {over} AS o{n}{beside} FROM ({inner}) AS b",
            columns.join(", ")
        );
        match top {
            Some(k) => format!("SELECT * FROM ({windowed}) AS w WHERE w.o{n} <= {k}"),
            None => windowed,
        }
    };
    Query {
        oracle_sql: base.oracle_sql.map(|q| wrap(&q, &function, top)),
        is_beyond_postgres: base.is_beyond_postgres,
        sql: wrap(&base.sql, &function, top),
        outputs,
    }
}

/// Sometimes a frame for `function` (if it is one that a frame changes, and the order is
/// total, so that which rows a `ROWS` frame holds is determined).
fn window_frame(rng: &mut StdRng, function: &str, total_order: bool) -> String {
    let framed = [
        "sum(",
        "count(",
        "first_value(",
        "last_value(",
        "nth_value(",
    ];
    if !total_order || !framed.iter().any(|f| function.starts_with(f)) || rng.random_bool(0.5) {
        return String::new();
    }
    let frames = [
        "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
        "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING",
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING",
        "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
        "ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING",
        "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
        "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
    ];
    format!(" {}", frames.choose(rng).unwrap())
}

/// `column` in a random direction, NULLs first or last at random.
fn sort_key(rng: &mut StdRng, column: &str) -> String {
    let direction = if rng.random_bool(0.5) { "ASC" } else { "DESC" };
    let nulls = if rng.random_bool(0.5) {
        "NULLS FIRST"
    } else {
        "NULLS LAST"
    };
    format!("{column} {direction} {nulls}")
}

/// Whether a relation in scope is an earlier view (`v0`, `v1`, …, see `case.rs`).
fn is_view(name: &str) -> bool {
    name.strip_prefix('v')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `<query> ORDER BY o0, o1, … LIMIT n [OFFSET m]` over a filter, join or aggregate query.
fn top_k(rng: &mut StdRng, tables: &[Table]) -> Query {
    let query = match rng.random_range(0..3) {
        0 => select_filter(rng, tables),
        1 => join_query(rng, tables),
        _ => group_by_query(rng, tables),
    };
    let order: Vec<String> = (0..query.outputs.len())
        .map(|i| sort_key(rng, &format!("o{i}")))
        .collect();
    let offset = if rng.random_bool(0.2) {
        format!(" OFFSET {}", rng.random_range(1..=2))
    } else {
        String::new()
    };
    let suffix = format!(
        " ORDER BY {} LIMIT {}{offset}",
        order.join(", "),
        rng.random_range(1..=5)
    );
    Query {
        oracle_sql: query.oracle_sql.map(|q| q + &suffix),
        is_beyond_postgres: query.is_beyond_postgres,
        sql: query.sql + &suffix,
        outputs: query.outputs,
    }
}
