//! Postgres's spellings of literals that DataFusion's parsers read differently or not at all.
//!
//! - Postgres reads `TIMESTAMP '2024-01-01 10:00'` (no seconds) and intervals such as
//!   `'1 year 2 months 3 days 04:05:06.5'` or `'-1 days 00:00:01'` (a clock-time part); the
//!   Arrow parsers behind DataFusion reject both.
//! - `'\\x0102'::bytea` means the bytes 01 02 in Postgres, not the text's bytes.
//! - Literals with a decimal point are numeric (as in Postgres, so `n = 559.80` compares
//!   exactly), but DataFusion cannot hold exponent literals such as `1e300` as decimals; those
//!   are read as double precision.
//!
//! Such literals are rewritten into spellings DataFusion understands before planning.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, DataType as SqlType, Expr, Value, ValueWithSpan, VisitMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// Which kind of temporal value a literal becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Temporal {
    /// `timestamp` or `timestamptz`.
    Timestamp,
    /// `interval`.
    Interval,
}

/// The temporal kind of a SQL type, if it is one this module rewrites.
pub(crate) fn temporal_kind(data_type: &SqlType) -> Option<Temporal> {
    match data_type {
        SqlType::Timestamp(..) | SqlType::Datetime(_) => Some(Temporal::Timestamp),
        SqlType::Interval { .. } => Some(Temporal::Interval),
        SqlType::Custom(name, _) if name.to_string().eq_ignore_ascii_case("timestamptz") => {
            Some(Temporal::Timestamp)
        }
        _ => None,
    }
}

/// Rewrites the statement's literals (see the module documentation), and parenthesizes what
/// would not print as it reads ([`crate::printing`]).
pub(crate) fn normalize_literals<T: VisitMut>(node: &mut T) {
    crate::printing::parenthesize_negative_operands(node);
    let _ = visit_expressions_mut(node, |expr| {
        match expr {
            Expr::TypedString(typed) => {
                if let (Some(kind), Value::SingleQuotedString(text)) =
                    (temporal_kind(&typed.data_type), &mut typed.value.value)
                {
                    *text = normalize(kind, text);
                }
            }
            Expr::Cast {
                expr: inner,
                data_type,
                ..
            } => {
                if let Some(kind) = temporal_kind(data_type) {
                    normalize_string_literal(inner, kind);
                }
                if matches!(data_type, SqlType::Bytea) {
                    crate::rewrite::checks::rewrite_bytea_literal(inner);
                }
            }
            Expr::Value(ValueWithSpan {
                value: Value::Number(digits, _),
                ..
            }) if digits.contains(['e', 'E']) => {
                let text = format!("CAST('{digits}' AS DOUBLE PRECISION)");
                if let Ok(float) = Parser::new(&PostgreSqlDialect {})
                    .try_with_sql(&text)
                    .and_then(|mut p| p.parse_expr())
                {
                    *expr = float;
                }
            }
            Expr::Interval(interval) if interval.leading_field.is_none() => {
                normalize_string_literal(&mut interval.value, Temporal::Interval);
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Rewrites `expr` if it is a string literal of the given kind.
pub(crate) fn normalize_string_literal(expr: &mut Expr, kind: Temporal) {
    if let Expr::Value(value) = expr {
        if let Value::SingleQuotedString(text) = &mut value.value {
            *text = normalize(kind, text);
        }
    }
}

/// A Postgres spelling of a timestamp or interval in a spelling Arrow parses.
///
/// ```
/// use sql::literals::{normalize, Temporal};
/// assert_eq!(normalize(Temporal::Timestamp, "2024-01-01 10:00"), "2024-01-01 10:00:00");
/// ```
pub fn normalize(kind: Temporal, text: &str) -> String {
    match kind {
        Temporal::Timestamp => normalize_timestamp(text),
        Temporal::Interval => normalize_interval(text),
    }
}

/// `2024-01-01 10:00` → `2024-01-01 10:00:00`.
fn normalize_timestamp(text: &str) -> String {
    let trimmed = text.trim();
    let Some((date, time)) = trimmed.split_once([' ', 'T']) else {
        return text.to_string();
    };
    let clock_end = time
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(time.len());
    let (clock, rest) = time.split_at(clock_end);
    if clock.matches(':').count() == 1 {
        format!("{date} {clock}:00{rest}")
    } else {
        text.to_string()
    }
}

/// Spells an interval's clock-time part (`[-]HH:MM[:SS[.f]]`) and `mon`/`mons` units as
/// Arrow's parser expects: `3 days 04:05:06.5` → `3 days 4 hours 5 minutes 6.5 seconds`.
fn normalize_interval(text: &str) -> String {
    let mut parts = Vec::new();
    for token in text.split_whitespace() {
        if let Some(clock) = clock_time(token) {
            parts.push(clock);
            continue;
        }
        parts.push(match token.to_lowercase().as_str() {
            "mon" | "mons" => "months".to_string(),
            _ => token.to_string(),
        });
    }
    parts.join(" ")
}

fn clock_time(token: &str) -> Option<String> {
    let (sign, body) = match token.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", token.strip_prefix('+').unwrap_or(token)),
    };
    let fields: Vec<&str> = body.split(':').collect();
    if fields.len() < 2 || fields.len() > 3 || fields.iter().any(|f| f.is_empty()) {
        return None;
    }
    let numeric = |f: &str| f.chars().all(|c| c.is_ascii_digit() || c == '.');
    if !fields.iter().all(|f| numeric(f)) {
        return None;
    }
    let seconds = fields.get(2).copied().unwrap_or("0");
    Some(format!(
        "{sign}{} hours {sign}{} minutes {sign}{seconds} seconds",
        fields[0], fields[1]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_without_seconds_gain_them() {
        assert_eq!(
            normalize_timestamp("2024-01-01 10:00"),
            "2024-01-01 10:00:00"
        );
        assert_eq!(
            normalize_timestamp("2024-01-01 10:00+02"),
            "2024-01-01 10:00:00+02"
        );
        assert_eq!(
            normalize_timestamp("2024-01-01 10:00:05"),
            "2024-01-01 10:00:05"
        );
    }

    #[test]
    fn interval_clock_parts_become_units() {
        assert_eq!(
            normalize_interval("1 year 2 months 3 days 04:05:06.5"),
            "1 year 2 months 3 days 04 hours 05 minutes 06.5 seconds"
        );
        assert_eq!(
            normalize_interval("-1 days 00:00:01"),
            "-1 days 00 hours 00 minutes 01 seconds"
        );
        assert_eq!(
            normalize_interval("-01:30"),
            "-01 hours -30 minutes -0 seconds"
        );
        assert_eq!(normalize_interval("2 mons"), "2 months");
    }
}
