//! Random writes (INSERT, UPDATE, DELETE), their SQL, and their effect on the model.
//!
//! Writes aim at the interesting retractions: deleting the current maximum of a column (a
//! group's max must fall back to the next one), deleting every row holding a value (a group
//! disappears), setting values to NULL and back.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::model::{SqlType, Table, Value};
use super::schema::{random_non_null, random_row, random_value};

/// Which rows an UPDATE or DELETE touches.
#[derive(Debug, Clone)]
pub enum Predicate {
    /// `col = value` (never true on NULL).
    Equals(usize, Value),
    /// `col IS NULL`.
    IsNull(usize),
    /// `col < value` on an integer, numeric or timestamp column.
    LessThan(usize, Value),
    /// Every row (no WHERE).
    All,
}

impl Predicate {
    /// Whether `row` satisfies the predicate (SQL semantics: comparisons with NULL fail).
    fn matches(&self, row: &[Value]) -> bool {
        match self {
            Predicate::Equals(c, v) => !row[*c].is_null() && &row[*c] == v,
            Predicate::IsNull(c) => row[*c].is_null(),
            Predicate::LessThan(c, v) => !row[*c].is_null() && &row[*c] < v,
            Predicate::All => true,
        }
    }

    /// The WHERE clause (with a leading space), empty for [`Predicate::All`].
    fn sql(&self, table: &Table) -> String {
        let name = |c: &usize| &table.columns[*c].name;
        match self {
            Predicate::Equals(c, v) => format!(" WHERE {} = {}", name(c), comparand(v)),
            Predicate::IsNull(c) => format!(" WHERE {} IS NULL", name(c)),
            Predicate::LessThan(c, v) => format!(" WHERE {} < {}", name(c), comparand(v)),
            Predicate::All => String::new(),
        }
    }
}

/// A value to compare a column with. Numeric values are spelled as typed numerics: Fluxion
/// reads a bare `559.80` as a float and compares `numeric = float` inexactly (see the
/// regression test `deleting_by_a_numeric_literal_matches_exactly`), which would fail most
/// cases on that one known bug.
fn comparand(value: &Value) -> String {
    match value {
        Value::Numeric(_) => format!("CAST('{}' AS NUMERIC(10,2))", value.literal()),
        other => other.literal(),
    }
}

/// The new value of one column in an UPDATE.
#[derive(Debug, Clone)]
pub enum Assignment {
    /// `col = value`.
    Set(Value),
    /// `col = col + n` on an integer column.
    Add(i64),
}

/// One data-changing statement.
#[derive(Debug, Clone)]
pub enum Write {
    /// `INSERT INTO t (all columns) VALUES …`.
    Insert { table: usize, rows: Vec<Vec<Value>> },
    /// `UPDATE t SET … WHERE …` (never of the primary key).
    Update {
        table: usize,
        set: Vec<(usize, Assignment)>,
        filter: Predicate,
    },
    /// `DELETE FROM t WHERE …`.
    Delete { table: usize, filter: Predicate },
}

impl Write {
    /// The statement's SQL.
    pub fn sql(&self, tables: &[Table]) -> String {
        match self {
            Write::Insert { table, rows } => {
                let t = &tables[*table];
                let columns: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
                let values: Vec<String> = rows
                    .iter()
                    .map(|r| {
                        let literals: Vec<String> = r.iter().map(Value::literal).collect();
                        format!("({})", literals.join(", "))
                    })
                    .collect();
                format!(
                    "INSERT INTO {} ({}) VALUES {}",
                    t.name,
                    columns.join(", "),
                    values.join(", ")
                )
            }
            Write::Update { table, set, filter } => {
                let t = &tables[*table];
                let assignments: Vec<String> = set
                    .iter()
                    .map(|(c, a)| {
                        let name = &t.columns[*c].name;
                        match a {
                            Assignment::Set(v) => format!("{name} = {}", v.literal()),
                            Assignment::Add(n) => format!("{name} = {name} + {n}"),
                        }
                    })
                    .collect();
                format!(
                    "UPDATE {} SET {}{}",
                    t.name,
                    assignments.join(", "),
                    filter.sql(t)
                )
            }
            Write::Delete { table, filter } => {
                let t = &tables[*table];
                format!("DELETE FROM {}{}", t.name, filter.sql(t))
            }
        }
    }

    /// Applies the statement to the model.
    pub fn apply(&self, tables: &mut [Table]) {
        match self {
            Write::Insert { table, rows } => tables[*table].rows.extend(rows.iter().cloned()),
            Write::Update { table, set, filter } => {
                for row in tables[*table].rows.iter_mut() {
                    if !filter.matches(row) {
                        continue;
                    }
                    for (c, assignment) in set {
                        row[*c] = match (assignment, &row[*c]) {
                            (Assignment::Set(v), _) => v.clone(),
                            (Assignment::Add(n), Value::Int(old)) => Value::Int(old + n),
                            (Assignment::Add(_), _) => Value::Null,
                        };
                    }
                }
            }
            Write::Delete { table, filter } => tables[*table].rows.retain(|r| !filter.matches(r)),
        }
    }
}

/// Rows per table above which deletes become more likely than inserts.
const COMFORTABLE_ROWS: usize = 20;

/// A random write against the current model `tables`.
pub fn random_write(rng: &mut StdRng, tables: &[Table]) -> Write {
    let table = rng.random_range(0..tables.len());
    let rows = tables[table].rows.len();
    let insert_weight = if rows > COMFORTABLE_ROWS { 1 } else { 4 };
    let delete_weight = if rows > COMFORTABLE_ROWS { 5 } else { 2 };
    let roll = rng.random_range(0..insert_weight + delete_weight + 4);
    if roll < insert_weight {
        random_insert(rng, tables, table)
    } else if roll < insert_weight + delete_weight {
        random_delete(rng, tables, table)
    } else {
        random_update(rng, tables, table)
    }
}

/// The initial contents: one multi-row INSERT per table.
pub fn initial_inserts(rng: &mut StdRng, tables: &[Table]) -> Vec<Write> {
    (0..tables.len())
        .map(|table| {
            let count = rng.random_range(3..=10);
            Write::Insert {
                table,
                rows: fresh_rows(rng, &tables[table], count),
            }
        })
        .collect()
}

/// `INSERT` of 1–3 new rows.
fn random_insert(rng: &mut StdRng, tables: &[Table], table: usize) -> Write {
    let count = rng.random_range(1..=3);
    Write::Insert {
        table,
        rows: fresh_rows(rng, &tables[table], count),
    }
}

/// `count` new rows with pairwise distinct, unused keys.
fn fresh_rows(rng: &mut StdRng, table: &Table, count: usize) -> Vec<Vec<Value>> {
    let mut rows: Vec<Vec<Value>> = Vec::with_capacity(count);
    for _ in 0..count {
        let taken: Vec<Value> = match table.primary_key {
            Some(k) => rows.iter().map(|r| r[k].clone()).collect(),
            None => Vec::new(),
        };
        rows.push(random_row(rng, table, &taken));
    }
    rows
}

/// `DELETE` of the rows matching a targeted predicate.
fn random_delete(rng: &mut StdRng, tables: &[Table], table: usize) -> Write {
    Write::Delete {
        table,
        filter: targeted_predicate(rng, &tables[table]),
    }
}

/// `UPDATE` of 1–2 non-key columns of the rows matching a targeted predicate.
fn random_update(rng: &mut StdRng, tables: &[Table], table: usize) -> Write {
    let t = &tables[table];
    let candidates: Vec<usize> = (0..t.columns.len())
        .filter(|&c| t.primary_key != Some(c))
        .collect();
    let count = rng.random_range(1..=2.min(candidates.len()));
    let columns: Vec<usize> = candidates.choose_multiple(rng, count).copied().collect();
    let set = columns
        .into_iter()
        .map(|c| {
            let column = &t.columns[c];
            let assignment = if column.ty.is_integer() && rng.random_bool(0.3) {
                Assignment::Add(rng.random_range(-2..=3))
            } else {
                Assignment::Set(random_value(rng, column))
            };
            (c, assignment)
        })
        .collect();
    let filter = match t.primary_key {
        Some(k) if rng.random_bool(0.5) && !t.rows.is_empty() => {
            Predicate::Equals(k, t.rows.choose(rng).unwrap()[k].clone())
        }
        _ => targeted_predicate(rng, t),
    };
    Write::Update { table, set, filter }
}

/// A predicate aimed at interesting rows: the current maximum of a column, all rows sharing
/// an existing value (a whole group), NULLs, a range, rarely every row.
fn targeted_predicate(rng: &mut StdRng, table: &Table) -> Predicate {
    let column = rng.random_range(0..table.columns.len());
    let ty = table.columns[column].ty;
    let present: Vec<&Value> = table
        .rows
        .iter()
        .map(|r| &r[column])
        .filter(|v| !v.is_null())
        .collect();
    match rng.random_range(0..20) {
        0..=6 if !present.is_empty() => {
            Predicate::Equals(column, present.iter().max().copied().unwrap().clone())
        }
        7..=12 if !present.is_empty() => {
            Predicate::Equals(column, present.choose(rng).copied().unwrap().clone())
        }
        13..=14 => Predicate::IsNull(column),
        15..=17
            if ty.is_integer()
                || matches!(ty, SqlType::Numeric | SqlType::Timestamp | SqlType::Double) =>
        {
            Predicate::LessThan(column, random_non_null(rng, ty))
        }
        18 if table.rows.len() > 12 => Predicate::All,
        _ => Predicate::Equals(column, random_non_null(rng, ty)),
    }
}
