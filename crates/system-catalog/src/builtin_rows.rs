//! The built-in rows PostgreSQL 15 ships in its catalogs (types, functions, operators, access
//! methods, collations, keywords …), read from the CSV files `catalog-data/generate.sh`
//! exported from a real PostgreSQL 15, so that clients see the same built-in objects.

use std::collections::HashMap;
use std::sync::OnceLock;

use datafusion::arrow::array::RecordBatch;

use crate::column_types::{arrow_type, known_relation};
use crate::rows::{RelationRows, Value};

/// The CSV text of each relation with built-in rows, by relation name.
const BUILTIN_CSV: &[(&str, &str)] = &[
    ("pg_am", include_str!("../catalog-data/pg_am.csv")),
    ("pg_cast", include_str!("../catalog-data/pg_cast.csv")),
    (
        "pg_collation",
        include_str!("../catalog-data/pg_collation.csv"),
    ),
    (
        "pg_language",
        include_str!("../catalog-data/pg_language.csv"),
    ),
    ("pg_opclass", include_str!("../catalog-data/pg_opclass.csv")),
    (
        "pg_operator",
        include_str!("../catalog-data/pg_operator.csv"),
    ),
    ("pg_proc", include_str!("../catalog-data/pg_proc.csv")),
    ("pg_range", include_str!("../catalog-data/pg_range.csv")),
    (
        "pg_tablespace",
        include_str!("../catalog-data/pg_tablespace.csv"),
    ),
    ("pg_type", include_str!("../catalog-data/pg_type.csv")),
];

/// `pg_get_keywords()`: PostgreSQL 15's keywords.
const KEYWORDS_CSV: &str = include_str!("../catalog-data/pg_keywords.csv");

/// The built-in rows of `relation` (a `pg_catalog` relation), as values in column order.
pub(crate) fn builtin_rows(relation: &str) -> &'static [Vec<Value>] {
    static ROWS: OnceLock<HashMap<&'static str, Vec<Vec<Value>>>> = OnceLock::new();
    ROWS.get_or_init(|| {
        BUILTIN_CSV
            .iter()
            .map(|(name, csv)| {
                let def = known_relation("pg_catalog", name);
                let types: Vec<u32> = def.columns.iter().map(|c| c.type_oid).collect();
                (*name, parse_rows(csv, &types))
            })
            .collect()
    })
    .get(relation)
    .map(Vec::as_slice)
    .unwrap_or(&[])
}

/// The built-in rows of `relation` as a batch builder, to which dynamic rows can be added.
pub(crate) fn rows_with_builtins(relation: &'static str) -> RelationRows {
    let mut rows = RelationRows::new(known_relation("pg_catalog", relation));
    for row in builtin_rows(relation) {
        rows.push_ordered(row.clone());
    }
    rows
}

/// The keyword rows: `(word, catcode, barelabel, catdesc, baredesc)`.
pub(crate) fn keyword_rows() -> &'static [Vec<Value>] {
    static ROWS: OnceLock<Vec<Vec<Value>>> = OnceLock::new();
    ROWS.get_or_init(|| parse_rows(KEYWORDS_CSV, &[25, 18, 16, 25, 25]))
}

/// A built-in catalog batch (cached: built-in rows never change).
pub(crate) fn builtin_batch(relation: &'static str) -> RecordBatch {
    static BATCHES: OnceLock<std::sync::Mutex<HashMap<&'static str, RecordBatch>>> =
        OnceLock::new();
    let batches = BATCHES.get_or_init(Default::default);
    let mut batches = batches.lock().unwrap_or_else(|p| p.into_inner());
    batches
        .entry(relation)
        .or_insert_with(|| {
            rows_with_builtins(relation)
                .into_batch()
                .expect("invariant: built-in rows fit their relation")
        })
        .clone()
}

/// Parses CSV as PostgreSQL's `COPY … (FORMAT csv, HEADER)` writes it, each column as the
/// Postgres type of the same position in `types`.
fn parse_rows(csv: &str, types: &[u32]) -> Vec<Vec<Value>> {
    let mut records = parse_csv(csv).into_iter();
    let _header = records.next();
    records
        .map(|fields| {
            fields
                .into_iter()
                .zip(types)
                .map(|(field, type_oid)| match field {
                    None => Value::Null,
                    Some(text) => parse_value(&text, *type_oid),
                })
                .collect()
        })
        .collect()
}

/// Splits CSV into records of fields; an unquoted empty field is `None` (NULL), a quoted
/// one `Some("")`.
fn parse_csv(csv: &str) -> Vec<Vec<Option<String>>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut in_quotes = false;
    let mut chars = csv.chars().peekable();
    while let Some(c) = chars.next() {
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => in_quotes = false,
                other => field.push(other),
            }
            continue;
        }
        match c {
            '"' => {
                in_quotes = true;
                quoted = true;
            }
            ',' => record.push(finish_field(&mut field, &mut quoted)),
            '\n' => {
                record.push(finish_field(&mut field, &mut quoted));
                records.push(std::mem::take(&mut record));
            }
            '\r' => {}
            other => field.push(other),
        }
    }
    if !field.is_empty() || quoted || !record.is_empty() {
        record.push(finish_field(&mut field, &mut quoted));
        records.push(record);
    }
    records
}

fn finish_field(field: &mut String, quoted: &mut bool) -> Option<String> {
    let text = std::mem::take(field);
    let was_quoted = std::mem::replace(quoted, false);
    if text.is_empty() && !was_quoted {
        None
    } else {
        Some(text)
    }
}

/// A value of Postgres type `type_oid` from its text form.
fn parse_value(text: &str, type_oid: u32) -> Value {
    match type_oid {
        22 | 30 => Value::List(
            text.split_whitespace()
                .map(|n| n.parse().map_or(Value::Null, Value::Int))
                .collect(),
        ),
        oid if crate::column_types::is_array_type(oid) => {
            let element = match arrow_type(oid) {
                datafusion::arrow::datatypes::DataType::List(item) => item.data_type().clone(),
                _ => datafusion::arrow::datatypes::DataType::Utf8,
            };
            Value::List(
                repr::pg_array::parse_array_literal(text)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| match e {
                        None => Value::Null,
                        Some(e) => scalar_of(&e, &element),
                    })
                    .collect(),
            )
        }
        oid => scalar_of(text, &arrow_type(oid)),
    }
}

fn scalar_of(text: &str, data_type: &datafusion::arrow::datatypes::DataType) -> Value {
    use datafusion::arrow::datatypes::DataType;
    match data_type {
        DataType::Boolean => Value::Bool(text == "t" || text == "true"),
        DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            text.parse().map_or(Value::Null, Value::Int)
        }
        DataType::Float32 | DataType::Float64 => text.parse().map_or(Value::Null, Value::Float),
        _ => Value::Text(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_tells_null_from_the_empty_string() {
        let records = parse_csv("a,b,c\n1,,\"\"\n\"x,\"\"y\",2,\n");
        assert_eq!(
            records[1],
            vec![Some("1".into()), None, Some(String::new())]
        );
        assert_eq!(
            records[2],
            vec![Some("x,\"y".into()), Some("2".into()), None]
        );
    }

    #[test]
    fn every_builtin_relation_builds() {
        for (name, _) in BUILTIN_CSV {
            let batch = builtin_batch(name);
            assert!(batch.num_rows() > 0, "{name} has rows");
        }
        assert!(builtin_batch("pg_type").num_rows() > 400);
    }

    #[test]
    fn the_sql_front_end_reserves_postgres_reserved_keywords() {
        let reserved: Vec<&str> = keyword_rows()
            .iter()
            .filter_map(|row| match (&row[0], &row[1]) {
                (Value::Text(word), Value::Text(code)) if code == "R" => Some(word.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reserved, sql::RESERVED_KEYWORDS);
    }
}
