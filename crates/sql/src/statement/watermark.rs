//! `WATERMARK FOR column AS expr`, as sources and tables declare it.

use std::fmt;

use datafusion::common::{DFSchema, ScalarValue};
use datafusion::execution::context::SessionState;
use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Ident};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};

use crate::names::fold_ident;
use crate::SqlError;

/// A `WATERMARK FOR column AS expr` clause, as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WatermarkClause {
    column: Ident,
    expr: Expr,
}

/// A relation's declared watermark: the largest event time seen in `column`, minus
/// `delay_micros`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkSpec {
    /// The event-time column (a timestamp).
    pub column: String,
    /// How far the watermark trails the largest event time seen, in microseconds (≥ 0).
    pub delay_micros: i64,
}

impl WatermarkClause {
    /// Parses the clause after its `WATERMARK`: `FOR column AS expr`.
    pub(crate) fn parse_after_keyword(parser: &mut Parser) -> Result<Self, ParserError> {
        parser.expect_keyword(Keyword::FOR)?;
        let column = parser.parse_identifier()?;
        parser.expect_keyword(Keyword::AS)?;
        let expr = parser.parse_expr()?;
        Ok(Self { column, expr })
    }

    /// The event-time column, folded as names are.
    pub(crate) fn column_name(&self) -> String {
        crate::names::fold_ident(&self.column)
    }

    /// What `WATERMARK FOR column AS column [- INTERVAL '…']` declares (`state` evaluates
    /// the interval). Other expressions are refused: a watermark trails the largest event
    /// time seen by a fixed delay.
    pub(crate) fn spec(&self, state: &SessionState) -> Result<WatermarkSpec, SqlError> {
        let (column, expr) = (fold_ident(&self.column), &self.expr);
        let unsupported = || {
            SqlError::Unsupported(format!(
                "WATERMARK FOR {column} AS {expr}: a watermark is the column itself or the \
                 column minus a constant interval ({column} - INTERVAL '5' SECOND)"
            ))
        };
        let names_column = |e: &Expr| match e {
            Expr::Identifier(ident) => fold_ident(ident) == column,
            _ => false,
        };
        let delay = match strip_nesting(expr) {
            e if names_column(e) => None,
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Minus,
                right,
            } if names_column(strip_nesting(left)) => Some(right.as_ref()),
            _ => return Err(unsupported()),
        };
        let delay_micros = match delay {
            None => 0,
            Some(interval) => interval_micros(state, interval).ok_or_else(unsupported)??,
        };
        Ok(WatermarkSpec {
            column,
            delay_micros,
        })
    }
}

impl fmt::Display for WatermarkClause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WATERMARK FOR {} AS {}", self.column, self.expr)
    }
}

/// The expression inside any parentheses.
fn strip_nesting(expr: &Expr) -> &Expr {
    match expr {
        Expr::Nested(inner) => strip_nesting(inner),
        other => other,
    }
}

/// The length of constant interval `expr` in microseconds: `None` if it is not a constant
/// interval; an error if it is one but counts months or is negative.
fn interval_micros(state: &SessionState, expr: &Expr) -> Option<Result<i64, SqlError>> {
    let empty = DFSchema::empty();
    let logical = state.create_logical_expr(&expr.to_string(), &empty).ok()?;
    let physical = state.create_physical_expr(logical, &empty).ok()?;
    let value = plan::window_close::constant_value(&physical)?;
    let (months, days, nanos) = match value {
        ScalarValue::IntervalMonthDayNano(Some(v)) => (v.months, v.days, v.nanoseconds),
        ScalarValue::IntervalDayTime(Some(v)) => (0, v.days, i64::from(v.milliseconds) * 1_000_000),
        ScalarValue::IntervalYearMonth(Some(months)) => (months, 0, 0),
        _ => return None,
    };
    let micros = i64::from(days)
        .checked_mul(86_400_000_000)
        .and_then(|d| d.checked_add(nanos / 1_000));
    Some(match micros {
        _ if months != 0 => Err(SqlError::Unsupported(format!(
            "a watermark delay of {expr} counts months, whose length varies: give it in days \
             or smaller units"
        ))),
        Some(micros) if micros >= 0 => Ok(micros),
        Some(_) => Err(SqlError::InvalidStatement(format!(
            "a watermark delay cannot be negative: {expr}"
        ))),
        None => Err(SqlError::OutOfRange(format!(
            "the watermark delay {expr} is out of range"
        ))),
    })
}
