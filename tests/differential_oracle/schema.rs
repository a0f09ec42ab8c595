//! Random schemas and random cell values.
//!
//! Value domains are deliberately tiny (a dozen integers, a handful of strings) so joins
//! match, groups collide, and deleting a value empties a group; a few large values keep
//! `bigint` and wide sums honest.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::model::{Column, SqlType, Table, Value};

/// The strings text columns draw from: empty, case variants, a separator, a space and a
/// number (the one text a cast to an integer accepts).
const TEXT_POOL: &[&str] = &["", "a", "b", "c", "ab", "ba", "B", "a b", "x,y", "zz", "12"];

/// The middle of the timestamp domain: 2024-03-10 00:00:00, in microseconds since 1970.
/// Most values are a multiple of 90 minutes from it (13 values over two days, so days and
/// hours group them differently); a few are anywhere within 400 days, at whole seconds.
const BASE_TIMESTAMP: i64 = 1_710_028_800 * SECOND;

/// A second in microseconds.
const SECOND: i64 = 1_000_000;

/// A day in microseconds.
const DAY: i64 = 86_400 * SECOND;

/// How often a nullable column gets NULL.
const NULL_PROBABILITY: f64 = 0.15;

/// Tables named `ta`, `tb`, `tc`; their columns are prefixed with the table's letter.
const TABLE_LETTERS: &[char] = &['a', 'b', 'c'];

/// A schema of 2–3 tables. Each has 3–5 columns; the first non-key column is an integer
/// (every pair of tables can be equi-joined), about half the tables have an integer primary
/// key, and every other column is nullable.
pub fn random_schema(rng: &mut StdRng) -> Vec<Table> {
    let count = rng.random_range(2..=3);
    TABLE_LETTERS[..count]
        .iter()
        .map(|&letter| random_table(rng, letter))
        .collect()
}

/// One table `t<letter>` with columns `<letter>0`, `<letter>1`, ….
fn random_table(rng: &mut StdRng, letter: char) -> Table {
    let has_primary_key = rng.random_bool(0.5);
    let width = rng.random_range(3..=5);
    let mut columns = Vec::with_capacity(width);
    for i in 0..width {
        let (ty, nullable) = match i {
            0 if has_primary_key => (*[SqlType::Int, SqlType::BigInt].choose(rng).unwrap(), false),
            0 | 1 => (*[SqlType::Int, SqlType::BigInt].choose(rng).unwrap(), true),
            _ => (random_type(rng), true),
        };
        columns.push(Column {
            name: format!("{letter}{i}"),
            ty,
            nullable,
        });
    }
    Table {
        name: format!("t{letter}"),
        columns,
        primary_key: has_primary_key.then_some(0),
        rows: Vec::new(),
    }
}

/// Any of the five column types, text and integers a little more often.
fn random_type(rng: &mut StdRng) -> SqlType {
    *[
        SqlType::Int,
        SqlType::BigInt,
        SqlType::Numeric,
        SqlType::Numeric,
        SqlType::Text,
        SqlType::Text,
        SqlType::Bool,
        SqlType::Timestamp,
        SqlType::Double,
    ]
    .choose(rng)
    .unwrap()
}

/// A value for `column` (NULL now and then when the column is nullable).
pub fn random_value(rng: &mut StdRng, column: &Column) -> Value {
    if column.nullable && rng.random_bool(NULL_PROBABILITY) {
        return Value::Null;
    }
    random_non_null(rng, column.ty)
}

/// A non-NULL value of `ty` from the small domains.
pub fn random_non_null(rng: &mut StdRng, ty: SqlType) -> Value {
    match ty {
        SqlType::Int if rng.random_bool(0.03) => {
            Value::Int(rng.random_range(-2_000_000..2_000_000))
        }
        SqlType::BigInt if rng.random_bool(0.03) => {
            Value::Int(rng.random_range(-20_000_000_000..20_000_000_000))
        }
        SqlType::Int | SqlType::BigInt => Value::Int(rng.random_range(-2..=8)),
        SqlType::Numeric if rng.random_bool(0.1) => {
            Value::Numeric(rng.random_range(-99_999..99_999))
        }
        SqlType::Numeric => Value::Numeric(rng.random_range(-4..=12) * 25),
        SqlType::Text => Value::Text(TEXT_POOL.choose(rng).unwrap().to_string()),
        SqlType::Bool => Value::Bool(rng.random_bool(0.5)),
        SqlType::Double => Value::Double(rng.random_range(-8..=40)),
        SqlType::Timestamp if rng.random_bool(0.05) => Value::Timestamp(
            BASE_TIMESTAMP + rng.random_range(-400 * DAY..400 * DAY) / SECOND * SECOND,
        ),
        SqlType::Timestamp => {
            Value::Timestamp(BASE_TIMESTAMP + rng.random_range(-2..=10) * 90 * 60 * SECOND)
        }
    }
}

/// A primary key value no row of `table` holds yet (keys are small integers, so they join
/// with the other integer columns).
pub fn fresh_key(rng: &mut StdRng, table: &Table, taken: &[Value]) -> Value {
    loop {
        let key = Value::Int(rng.random_range(0..64));
        if !table.has_key(&key) && !taken.contains(&key) {
            return key;
        }
    }
}

/// A new row for `table` whose key (if any) is neither in the table nor in `taken`.
pub fn random_row(rng: &mut StdRng, table: &Table, taken: &[Value]) -> Vec<Value> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if table.primary_key == Some(i) {
                fresh_key(rng, table, taken)
            } else {
                random_value(rng, c)
            }
        })
        .collect()
}
