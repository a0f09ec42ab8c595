//! Random scalar expressions of a requested type over the columns in scope.
//!
//! Expressions are mostly total on the value domains the schema generator uses; rarely, an
//! integer division (by zero for some rows) or a cast of text to an integer (which fails for
//! most texts) makes a view's rows fail, which PostgreSQL raises and Fluxion's view leaves
//! out and counts. Arithmetic stays far from overflow. One function per construct; the depth
//! bound keeps expressions readable in a failure report.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::model::{SqlType, Value};
use super::schema::random_non_null;

/// The kind of value an expression yields; `integer` and `bigint` are one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `integer` or `bigint`.
    Int,
    /// `numeric`.
    Numeric,
    /// `text`.
    Text,
    /// `boolean`.
    Bool,
    /// `timestamp`.
    Timestamp,
    /// `double precision` (quarters and their sums and doubles: exact in binary).
    Float,
}

impl Kind {
    /// The kind of a column type.
    pub fn of(ty: SqlType) -> Kind {
        match ty {
            SqlType::Int | SqlType::BigInt => Kind::Int,
            SqlType::Numeric => Kind::Numeric,
            SqlType::Text => Kind::Text,
            SqlType::Bool => Kind::Bool,
            SqlType::Timestamp => Kind::Timestamp,
            SqlType::Double => Kind::Float,
        }
    }

    /// A column type of this kind, for literals.
    fn column_type(self) -> SqlType {
        match self {
            Kind::Int => SqlType::Int,
            Kind::Numeric => SqlType::Numeric,
            Kind::Text => SqlType::Text,
            Kind::Bool => SqlType::Bool,
            Kind::Timestamp => SqlType::Timestamp,
            Kind::Float => SqlType::Double,
        }
    }
}

/// A column visible to an expression: `qualifier.name`.
#[derive(Debug, Clone)]
pub struct ScopeColumn {
    /// The table alias.
    pub qualifier: String,
    /// The column name.
    pub name: String,
    /// The column type.
    pub ty: SqlType,
}

impl ScopeColumn {
    /// The qualified reference.
    pub fn sql(&self) -> String {
        format!("{}.{}", self.qualifier, self.name)
    }

    /// The kind of value it holds.
    pub fn kind(&self) -> Kind {
        Kind::of(self.ty)
    }
}

/// The columns an expression may refer to.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Every visible column.
    pub columns: Vec<ScopeColumn>,
}

impl Scope {
    /// The visible columns of `kind`.
    pub fn of_kind(&self, kind: Kind) -> Vec<&ScopeColumn> {
        self.columns.iter().filter(|c| c.kind() == kind).collect()
    }
}

/// The deepest nesting of generated expressions.
const MAX_DEPTH: u32 = 2;

/// A random expression of `kind`; columns are preferred so results depend on the data.
pub fn expr(rng: &mut StdRng, scope: &Scope, kind: Kind) -> String {
    expr_at(rng, scope, kind, 0)
}

fn expr_at(rng: &mut StdRng, scope: &Scope, kind: Kind, depth: u32) -> String {
    let columns = scope.of_kind(kind);
    let leaf_probability = if depth >= MAX_DEPTH { 1.0 } else { 0.55 };
    if rng.random_bool(leaf_probability) {
        return match columns.choose(rng) {
            Some(column) if rng.random_bool(0.85) => column.sql(),
            _ => literal(rng, kind),
        };
    }
    let depth = depth + 1;
    match kind {
        Kind::Int => int_expr(rng, scope, depth),
        Kind::Numeric => numeric_expr(rng, scope, depth),
        Kind::Text => text_expr(rng, scope, depth),
        Kind::Bool => bool_expr(rng, scope, depth),
        Kind::Timestamp => timestamp_expr(rng, scope, depth),
        Kind::Float => float_expr(rng, scope, depth),
    }
}

/// A random kind, integers twice as often as the others.
pub fn random_kind(rng: &mut StdRng) -> Kind {
    *[
        Kind::Int,
        Kind::Int,
        Kind::Numeric,
        Kind::Text,
        Kind::Bool,
        Kind::Timestamp,
        Kind::Float,
    ]
    .choose(rng)
    .unwrap()
}

/// A column of `kind` if one is in scope, else a literal.
pub fn column_or_literal(rng: &mut StdRng, scope: &Scope, kind: Kind) -> String {
    match scope.of_kind(kind).choose(rng) {
        Some(column) => column.sql(),
        None => literal(rng, kind),
    }
}

/// A literal of `kind` from the data domains (numeric literals are cast to keep their type).
pub fn literal(rng: &mut StdRng, kind: Kind) -> String {
    match random_non_null(rng, kind.column_type()) {
        Value::Numeric(cents) => {
            format!("CAST({} AS NUMERIC(10,2))", Value::Numeric(cents).literal())
        }
        Value::Int(i) => Value::Int(i.clamp(-20, 20)).literal(),
        other => other.literal(),
    }
}

/// Integer arithmetic, CASE, COALESCE, length, abs, modulo by a positive constant, fields
/// of timestamps and the days between two dates; rarely a division or a cast of text that
/// can fail.
fn int_expr(rng: &mut StdRng, scope: &Scope, depth: u32) -> String {
    let sub = |rng: &mut StdRng, kind| expr_at(rng, scope, kind, depth);
    // Of columns, not constants: a constant that fails refuses the view at its creation, in
    // PostgreSQL too.
    let (integers, texts) = (scope.of_kind(Kind::Int), scope.of_kind(Kind::Text));
    if rng.random_bool(0.03) && !integers.is_empty() && !texts.is_empty() {
        return if rng.random_bool(0.5) {
            let divisor = integers.choose(rng).unwrap().sql();
            format!("({} / {divisor})", sub(rng, Kind::Int))
        } else {
            format!("CAST({} AS INTEGER)", texts.choose(rng).unwrap().sql())
        };
    }
    match rng.random_range(0..10) {
        8 => {
            let field = ["HOUR", "DAY", "MONTH", "DOW", "MINUTE"]
                .choose(rng)
                .unwrap();
            format!(
                "CAST(EXTRACT({field} FROM {}) AS INTEGER)",
                sub(rng, Kind::Timestamp)
            )
        }
        9 => format!(
            "(CAST({} AS DATE) - CAST({} AS DATE))",
            sub(rng, Kind::Timestamp),
            sub(rng, Kind::Timestamp)
        ),
        0 => format!("({} + {})", sub(rng, Kind::Int), sub(rng, Kind::Int)),
        1 => format!("({} - {})", sub(rng, Kind::Int), sub(rng, Kind::Int)),
        2 => format!("({} * {})", sub(rng, Kind::Int), rng.random_range(-3..=3)),
        3 => case_expr(rng, scope, Kind::Int, depth),
        4 => format!(
            "COALESCE({}, {})",
            sub(rng, Kind::Int),
            literal(rng, Kind::Int)
        ),
        5 => format!("length({})", sub(rng, Kind::Text)),
        6 => format!("abs({})", sub(rng, Kind::Int)),
        _ => format!("({} % {})", sub(rng, Kind::Int), rng.random_range(2..=4)),
    }
}

/// Numeric arithmetic, casts from integers, CASE, COALESCE.
fn numeric_expr(rng: &mut StdRng, scope: &Scope, depth: u32) -> String {
    let sub = |rng: &mut StdRng, kind| expr_at(rng, scope, kind, depth);
    match rng.random_range(0..5) {
        0 => format!(
            "({} + {})",
            sub(rng, Kind::Numeric),
            sub(rng, Kind::Numeric)
        ),
        1 => format!("({} - {})", sub(rng, Kind::Numeric), sub(rng, Kind::Int)),
        2 => format!("CAST({} AS NUMERIC(20,2))", sub(rng, Kind::Int)),
        3 => case_expr(rng, scope, Kind::Numeric, depth),
        _ => format!(
            "COALESCE({}, {})",
            sub(rng, Kind::Numeric),
            literal(rng, Kind::Numeric)
        ),
    }
}

/// String functions, concatenation, casts from integers, timestamps, dates and intervals,
/// CASE, COALESCE.
fn text_expr(rng: &mut StdRng, scope: &Scope, depth: u32) -> String {
    let sub = |rng: &mut StdRng, kind| expr_at(rng, scope, kind, depth);
    match rng.random_range(0..13) {
        9 => format!("CAST({} AS TEXT)", sub(rng, Kind::Timestamp)),
        10 => format!("CAST(CAST({} AS DATE) AS TEXT)", sub(rng, Kind::Timestamp)),
        11 => format!(
            "CAST(({} - {}) AS TEXT)",
            sub(rng, Kind::Timestamp),
            sub(rng, Kind::Timestamp)
        ),
        12 => format!("CAST({} AS TEXT)", sub(rng, Kind::Float)),
        0 => format!("upper({})", sub(rng, Kind::Text)),
        1 => format!("lower({})", sub(rng, Kind::Text)),
        2 => format!("({} || {})", sub(rng, Kind::Text), sub(rng, Kind::Text)),
        3 => format!("substr({}, 1, 2)", sub(rng, Kind::Text)),
        4 => format!("CAST({} AS TEXT)", sub(rng, Kind::Int)),
        5 => format!("replace({}, 'a', 'q')", sub(rng, Kind::Text)),
        6 => format!("concat({}, {})", sub(rng, Kind::Text), sub(rng, Kind::Int)),
        7 => case_expr(rng, scope, Kind::Text, depth),
        _ => format!(
            "COALESCE({}, {})",
            sub(rng, Kind::Text),
            literal(rng, Kind::Text)
        ),
    }
}

/// Sums, doubling, halving, casts from integers, abs, floor, CASE, COALESCE: values stay
/// exact in binary, so any order of evaluation gives the same bits.
fn float_expr(rng: &mut StdRng, scope: &Scope, depth: u32) -> String {
    let sub = |rng: &mut StdRng, kind| expr_at(rng, scope, kind, depth);
    match rng.random_range(0..8) {
        0 => format!("({} + {})", sub(rng, Kind::Float), sub(rng, Kind::Float)),
        1 => format!("({} * 2)", sub(rng, Kind::Float)),
        2 => format!("({} / 2)", sub(rng, Kind::Float)),
        3 => format!("CAST({} AS DOUBLE PRECISION)", sub(rng, Kind::Int)),
        4 => format!("abs({})", sub(rng, Kind::Float)),
        5 => format!("floor({})", sub(rng, Kind::Float)),
        6 => case_expr(rng, scope, Kind::Float, depth),
        _ => format!(
            "COALESCE({}, {})",
            sub(rng, Kind::Float),
            literal(rng, Kind::Float)
        ),
    }
}

/// Interval arithmetic, truncation to a day or an hour, the day's start through a date,
/// CASE, COALESCE.
fn timestamp_expr(rng: &mut StdRng, scope: &Scope, depth: u32) -> String {
    let sub = |rng: &mut StdRng, kind| expr_at(rng, scope, kind, depth);
    match rng.random_range(0..7) {
        0 => format!("({} + INTERVAL '1 day')", sub(rng, Kind::Timestamp)),
        1 => format!("({} - INTERVAL '90 minutes')", sub(rng, Kind::Timestamp)),
        2 => format!("date_trunc('day', {})", sub(rng, Kind::Timestamp)),
        3 => format!("date_trunc('hour', {})", sub(rng, Kind::Timestamp)),
        4 => format!(
            "CAST(CAST({} AS DATE) AS TIMESTAMP)",
            sub(rng, Kind::Timestamp)
        ),
        5 => case_expr(rng, scope, Kind::Timestamp, depth),
        _ => format!(
            "COALESCE({}, {})",
            sub(rng, Kind::Timestamp),
            literal(rng, Kind::Timestamp)
        ),
    }
}

/// Comparisons, NULL tests, boolean connectives, BETWEEN, IN lists, LIKE.
fn bool_expr(rng: &mut StdRng, scope: &Scope, depth: u32) -> String {
    match rng.random_range(0..9) {
        0..=2 => comparison(rng, scope, depth),
        3 => {
            let kind = random_kind(rng);
            let negation = if rng.random_bool(0.5) { " NOT" } else { "" };
            format!("({} IS{negation} NULL)", expr_at(rng, scope, kind, depth))
        }
        4 => format!("(NOT {})", expr_at(rng, scope, Kind::Bool, depth)),
        5 => {
            let connective = if rng.random_bool(0.5) { "AND" } else { "OR" };
            format!(
                "({} {connective} {})",
                expr_at(rng, scope, Kind::Bool, depth),
                expr_at(rng, scope, Kind::Bool, depth)
            )
        }
        6 => format!(
            "({} BETWEEN {} AND {})",
            expr_at(rng, scope, Kind::Int, depth),
            rng.random_range(-2..=3),
            rng.random_range(3..=8)
        ),
        7 => {
            let values: Vec<String> = (0..rng.random_range(1..=3))
                .map(|_| literal(rng, Kind::Int))
                .collect();
            let negation = if rng.random_bool(0.3) { " NOT" } else { "" };
            format!(
                "({}{negation} IN ({}))",
                expr_at(rng, scope, Kind::Int, depth),
                values.join(", ")
            )
        }
        _ => {
            let pattern = ["a%", "%b", "_", "%a%"].choose(rng).unwrap();
            format!(
                "({} LIKE '{pattern}')",
                expr_at(rng, scope, Kind::Text, depth)
            )
        }
    }
}

/// `a op b` for two expressions of one comparable kind.
pub fn comparison(rng: &mut StdRng, scope: &Scope, depth: u32) -> String {
    let kind = random_kind(rng);
    let op = ["=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM"]
        .choose(rng)
        .unwrap();
    format!(
        "({} {op} {})",
        expr_at(rng, scope, kind, depth),
        expr_at(rng, scope, kind, depth)
    )
}

/// `CASE WHEN cond THEN a [WHEN cond THEN b] ELSE c END`, sometimes without ELSE (NULL).
fn case_expr(rng: &mut StdRng, scope: &Scope, kind: Kind, depth: u32) -> String {
    let mut sql = String::from("CASE");
    for _ in 0..rng.random_range(1..=2) {
        sql.push_str(&format!(
            " WHEN {} THEN {}",
            expr_at(rng, scope, Kind::Bool, depth),
            expr_at(rng, scope, kind, depth)
        ));
    }
    if rng.random_bool(0.7) {
        sql.push_str(&format!(" ELSE {}", expr_at(rng, scope, kind, depth)));
    }
    sql.push_str(" END");
    sql
}

/// A predicate for a WHERE clause (a boolean expression that is never just a literal).
pub fn predicate(rng: &mut StdRng, scope: &Scope) -> String {
    match rng.random_range(0..3) {
        0 => comparison(rng, scope, 1),
        _ => bool_expr(rng, scope, 1),
    }
}
