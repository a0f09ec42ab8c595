//! Checks and rewrites of statements before DataFusion plans them, where DataFusion's
//! behaviour differs from Postgres's.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Insert, ObjectName, Query, SetExpr, SetOperator, SetQuantifier, Statement, Value,
    ValueWithSpan, Visit, Visitor,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::literals::{normalize_string_literal, Temporal};
use crate::statement::InsertTarget;
use crate::SqlError;

/// Refuses `INTERSECT ALL` and `EXCEPT ALL`: DataFusion computes them as semi and anti joins,
/// which keep the wrong number of duplicates (Postgres keeps min(m, n) and max(m - n, 0)).
pub(crate) fn reject_bag_set_operations(statement: &Statement) -> Result<(), SqlError> {
    struct BagSetOperations;
    impl Visitor for BagSetOperations {
        type Break = &'static str;
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Self::Break> {
            find_bag_operation(&query.body)
        }
    }
    match statement.visit(&mut BagSetOperations) {
        ControlFlow::Break(operation) => Err(SqlError::Unsupported(format!(
            "{operation} is not supported yet; use {} without ALL, or UNION ALL",
            operation.trim_end_matches(" ALL")
        ))),
        ControlFlow::Continue(()) => Ok(()),
    }
}

fn find_bag_operation(body: &SetExpr) -> ControlFlow<&'static str> {
    if let SetExpr::SetOperation {
        left,
        op,
        set_quantifier,
        right,
    } = body
    {
        let all = matches!(
            set_quantifier,
            SetQuantifier::All | SetQuantifier::AllByName
        );
        match op {
            SetOperator::Intersect if all => return ControlFlow::Break("INTERSECT ALL"),
            SetOperator::Except | SetOperator::Minus if all => {
                return ControlFlow::Break("EXCEPT ALL")
            }
            _ => {}
        }
        find_bag_operation(left)?;
        find_bag_operation(right)?;
    }
    ControlFlow::Continue(())
}

/// Gives an INSERT Postgres's shape: `VALUES` rows shorter than the table fill the leading
/// columns (the rest get their defaults), a longer row is an error, and `DEFAULT` in a row
/// becomes the column's default expression.
pub(crate) fn normalize_insert(insert: &mut Insert, table: &InsertTarget) -> Result<(), SqlError> {
    let Some(source) = insert.source.as_mut() else {
        return Ok(());
    };
    let SetExpr::Values(values) = source.body.as_mut() else {
        return Ok(());
    };
    let target: Vec<String> = if insert.columns.is_empty() {
        table
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    } else {
        insert
            .columns
            .iter()
            .map(|c| c.to_string().trim_matches('"').to_string())
            .collect()
    };
    let width = values
        .rows
        .iter()
        .map(|row| row.content.len())
        .max()
        .unwrap_or(0);
    if width > target.len() {
        return Err(SqlError::Syntax(
            "INSERT has more expressions than target columns".into(),
        ));
    }
    if !insert.columns.is_empty() && width < target.len() {
        return Err(SqlError::Syntax(
            "INSERT has more target columns than expressions".into(),
        ));
    }
    if insert.columns.is_empty() && width < target.len() {
        insert.columns = target[..width]
            .iter()
            .map(|name| ObjectName::from(vec![Ident::with_quote('"', name.clone())]))
            .collect();
    }
    for row in values.rows.iter_mut() {
        for (position, expr) in row.content.iter_mut().enumerate() {
            if is_default_keyword(expr) {
                *expr = default_expr(table, &target[position])?;
            }
            let Ok(field) = table.schema.field_with_name(&target[position]) else {
                continue;
            };
            match field.data_type() {
                DataType::Binary => rewrite_bytea_literal(expr),
                DataType::Timestamp(..) => normalize_string_literal(expr, Temporal::Timestamp),
                DataType::Interval(_) => normalize_string_literal(expr, Temporal::Interval),
                DataType::Boolean if is_number_literal(expr) => {
                    return Err(SqlError::TypeMismatch(format!(
                        "column \"{}\" is of type boolean but expression is of type integer",
                        field.name()
                    )))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// `'\x00ff'` written into a `bytea` column means the bytes 00 ff (Postgres's hex input), not
/// the text's bytes: it becomes the hex literal `X'00ff'`.
pub(crate) fn rewrite_bytea_literal(expr: &mut Expr) {
    if let Expr::Value(ValueWithSpan {
        value: Value::SingleQuotedString(text),
        span,
    }) = expr
    {
        if let Some(hex) = text.strip_prefix("\\x") {
            *expr = Expr::Value(ValueWithSpan {
                value: Value::HexStringLiteral(hex.to_string()),
                span: *span,
            });
        }
    }
}

fn is_number_literal(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Value(ValueWithSpan {
            value: Value::Number(..),
            ..
        })
    )
}

fn is_default_keyword(expr: &Expr) -> bool {
    matches!(expr, Expr::Identifier(ident) if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("default"))
}

/// The default of a column as an expression (`NULL` without a default).
fn default_expr(table: &InsertTarget, column: &str) -> Result<Expr, SqlError> {
    let text = table
        .default_sql
        .get(column)
        .map(String::as_str)
        .unwrap_or("NULL");
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| SqlError::Internal(format!("default of column {column}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn bag_set_operations_are_refused_anywhere_in_a_statement() {
        assert!(reject_bag_set_operations(&parse("SELECT 1 INTERSECT ALL SELECT 1")).is_err());
        assert!(reject_bag_set_operations(&parse(
            "SELECT * FROM (SELECT a FROM t EXCEPT ALL SELECT a FROM u) s"
        ))
        .is_err());
        assert!(reject_bag_set_operations(&parse(
            "SELECT 1 INTERSECT SELECT 1 UNION ALL SELECT 2"
        ))
        .is_ok());
    }
}
