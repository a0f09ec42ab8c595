//! Comparing two results as multisets of rows in canonical text.
//!
//! Cells are Postgres text. Exact numbers are compared by value, so `15` equals `15.00`
//! (Fluxion follows Postgres where DataFusion's result types differ, e.g. `sum(bigint)` is a
//! numeric there); floating-point values are compared with a relative tolerance (an
//! incremental average and a from-scratch one may round differently in the last bits);
//! everything else must match character for character.

/// One cell: Postgres text, `None` for NULL.
pub type Cell = Option<String>;

/// How a column's cells are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Text, booleans: exactly.
    Text,
    /// Integers and numerics: by exact value.
    Number,
    /// `real` / `double precision`: within the relative tolerance.
    Float,
    /// An exact number Fluxion rounds to fewer fractional digits than the reference (`avg` of
    /// numerics): the reference's value within the last place Fluxion prints, or within the
    /// relative tolerance.
    Rounded,
}

/// A result: its rows and how to compare each column.
#[derive(Debug, Clone)]
pub struct ResultSet {
    /// Per column: how its cells compare.
    pub columns: Vec<ColumnKind>,
    /// The rows, in no particular order.
    pub rows: Vec<Vec<Cell>>,
}

/// The relative tolerance for floating-point cells.
const RELATIVE_TOLERANCE: f64 = 1e-9;

/// Whether two float texts denote values equal within the tolerance.
fn floats_match(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) if x.is_nan() || y.is_nan() => x.is_nan() && y.is_nan(),
        (Ok(x), Ok(y)) if x == y => true,
        (Ok(x), Ok(y)) => (x - y).abs() <= RELATIVE_TOLERANCE * x.abs().max(y.abs()),
        _ => a == b,
    }
}

/// Whether `expected` is within one unit of the last fractional place `actual` prints
/// (`772.7371428571` and `772.737142`).
fn within_last_place(expected: &str, actual: &str) -> bool {
    let digits = actual
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len());
    match (expected.parse::<f64>(), actual.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 10f64.powi(-(digits as i32)),
        _ => false,
    }
}

/// An exact number's text without trailing fractional zeros (`-1.50` → `-1.5`, `2.00` → `2`,
/// `-0.00` → `0`); other text unchanged.
fn canonical_number(text: &str) -> String {
    let is_number = !text.is_empty()
        && text
            .trim_start_matches('-')
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.');
    if !is_number || !text.contains('.') {
        return if text == "-0" {
            "0".into()
        } else {
            text.into()
        };
    }
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    match trimmed {
        "-0" | "" | "-" => "0".into(),
        other => other.into(),
    }
}

/// The cell's canonical form: the key rows sort by, and (except for floats) what must match.
fn canonical(kind: ColumnKind, cell: &Cell) -> Cell {
    let text = cell.as_deref()?;
    Some(match kind {
        ColumnKind::Text => text.to_string(),
        ColumnKind::Number => canonical_number(text),
        ColumnKind::Float | ColumnKind::Rounded => text
            .parse::<f64>()
            .map(|v| format!("{v:.6e}"))
            .unwrap_or_else(|_| text.to_string()),
    })
}

/// Whether `actual` equals `expected` cell by cell.
fn rows_match(columns: &[ColumnKind], expected: &[Cell], actual: &[Cell]) -> bool {
    expected.len() == actual.len()
        && expected
            .iter()
            .zip(actual)
            .zip(columns)
            .all(|((e, a), &kind)| match (e, a) {
                (Some(e), Some(a)) if kind == ColumnKind::Float => floats_match(e, a),
                (Some(e), Some(a)) if kind == ColumnKind::Rounded => {
                    floats_match(e, a) || within_last_place(e, a)
                }
                (e, a) => canonical(kind, e) == canonical(kind, a),
            })
}

/// A sort key that puts matching rows next to each other.
fn sort_key(columns: &[ColumnKind], row: &[Cell]) -> Vec<Cell> {
    row.iter()
        .zip(columns.iter().chain(std::iter::repeat(&ColumnKind::Text)))
        .map(|(cell, &kind)| canonical(kind, cell))
        .collect()
}

/// `None` when `actual` and `expected` are equal multisets of rows; otherwise a description
/// of the rows missing from `actual` and the rows it has in excess.
pub fn differences(expected: &ResultSet, actual: &[Vec<Cell>]) -> Option<String> {
    let (missing, extra) = unmatched(expected, actual);
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    Some(format!(
        "rows expected but missing ({}):\n{}rows present but not expected ({}):\n{}",
        missing.len(),
        format_rows(&missing),
        extra.len(),
        format_rows(&extra)
    ))
}

/// Whether `actual` is `expected` with some rows missing and none added.
pub fn lacks_rows_only(expected: &ResultSet, actual: &[Vec<Cell>]) -> bool {
    unmatched(expected, actual).1.is_empty()
}

/// The rows of `expected` that `actual` lacks, and the rows of `actual` beyond `expected`.
fn unmatched(expected: &ResultSet, actual: &[Vec<Cell>]) -> (Vec<Vec<Cell>>, Vec<Vec<Cell>>) {
    let columns = &expected.columns;
    let mut expected_rows = expected.rows.clone();
    let mut actual_rows = actual.to_vec();
    expected_rows.sort_by_cached_key(|r| sort_key(columns, r));
    actual_rows.sort_by_cached_key(|r| sort_key(columns, r));
    if expected_rows.len() == actual_rows.len()
        && expected_rows
            .iter()
            .zip(&actual_rows)
            .all(|(e, a)| rows_match(columns, e, a))
    {
        return (Vec::new(), Vec::new());
    }
    // Match greedily (rows that round differently may sort apart), then list what is left.
    let mut missing = Vec::new();
    for row in expected_rows {
        match actual_rows
            .iter()
            .position(|a| rows_match(columns, &row, a))
        {
            Some(i) => {
                actual_rows.remove(i);
            }
            None => missing.push(row),
        }
    }
    (missing, actual_rows)
}

/// Rows as `(a, b, NULL)` lines.
pub fn format_rows(rows: &[Vec<Cell>]) -> String {
    rows.iter()
        .map(|row| {
            let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect();
            format!("    ({})\n", cells.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnKind::{Float, Number, Rounded, Text};

    fn set(columns: Vec<ColumnKind>, rows: &[&[Option<&str>]]) -> ResultSet {
        ResultSet {
            columns,
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.map(str::to_string)).collect())
                .collect(),
        }
    }

    #[test]
    fn equal_multisets_in_any_order_match() {
        let expected = set(vec![Text], &[&[Some("1")], &[Some("2")], &[Some("1")]]);
        let actual = set(vec![Text], &[&[Some("1")], &[Some("1")], &[Some("2")]]);
        assert_eq!(differences(&expected, &actual.rows), None);
    }

    #[test]
    fn multiplicities_matter() {
        let expected = set(vec![Text], &[&[Some("1")], &[Some("1")]]);
        let actual = set(vec![Text], &[&[Some("1")]]);
        assert!(differences(&expected, &actual.rows).is_some());
    }

    #[test]
    fn floats_match_within_the_tolerance_only() {
        let expected = set(vec![Float, Text], &[&[Some("0.30000000000000004"), None]]);
        let close = set(vec![Float, Text], &[&[Some("0.3"), None]]);
        let far = set(vec![Float, Text], &[&[Some("0.3001"), None]]);
        assert_eq!(differences(&expected, &close.rows), None);
        assert!(differences(&expected, &far.rows).is_some());
    }

    #[test]
    fn rounded_numbers_match_within_their_last_place_only() {
        let expected = set(vec![Rounded], &[&[Some("772.7371428571428571")]]);
        let rounded = set(vec![Rounded], &[&[Some("772.737142")]]);
        let off = set(vec![Rounded], &[&[Some("772.737152")]]);
        assert_eq!(differences(&expected, &rounded.rows), None);
        assert!(differences(&expected, &off.rows).is_some());
    }

    #[test]
    fn exact_numbers_match_by_value_not_by_scale() {
        let expected = set(
            vec![Number],
            &[&[Some("15")], &[Some("-1.5")], &[Some("0")]],
        );
        let actual = set(
            vec![Number],
            &[&[Some("15.00")], &[Some("-1.50")], &[Some("-0.00")]],
        );
        assert_eq!(differences(&expected, &actual.rows), None);
        let off = set(
            vec![Number],
            &[&[Some("150")], &[Some("-1.5")], &[Some("0")]],
        );
        assert!(differences(&expected, &off.rows).is_some());
    }

    #[test]
    fn null_differs_from_empty_text() {
        let expected = set(vec![Text], &[&[None]]);
        let actual = set(vec![Text], &[&[Some("")]]);
        assert!(differences(&expected, &actual.rows).is_some());
    }
}
