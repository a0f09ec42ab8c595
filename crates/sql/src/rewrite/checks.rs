//! Checks and rewrites of statements before DataFusion plans them, where DataFusion's
//! behaviour differs from Postgres's.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Insert, ObjectName, Query, SelectItem, SetExpr, SetOperator, SetQuantifier,
    Statement, TableFactor, Value, ValueWithSpan, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::bag_set_operations::{BAG_LEFT, BAG_RIGHT};
use crate::literals::{normalize_string_literal, Temporal};
use crate::statement::InsertTarget;
use crate::SqlError;

/// Marks the operands of every `INTERSECT ALL` and `EXCEPT ALL` for
/// [`crate::bag_set_operations`], which gives them PostgreSQL's duplicates: each operand
/// becomes `SELECT * FROM (operand) AS __bag_left` (or `__bag_right`). Marking twice changes
/// nothing.
pub(crate) fn mark_bag_set_operations(statement: &mut Statement) {
    struct Marker;
    impl VisitorMut for Marker {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            mark_operands(&mut query.body);
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Marker);
}

fn mark_operands(body: &mut SetExpr) {
    if let SetExpr::SetOperation {
        left,
        op,
        set_quantifier,
        right,
    } = body
    {
        mark_operands(left);
        mark_operands(right);
        let all = matches!(
            set_quantifier,
            SetQuantifier::All | SetQuantifier::AllByName
        );
        if all
            && matches!(
                op,
                SetOperator::Intersect | SetOperator::Except | SetOperator::Minus
            )
        {
            mark(left, BAG_LEFT);
            mark(right, BAG_RIGHT);
        }
    }
}

/// Replaces `operand` with `SELECT * FROM (operand) AS alias`, unless it is that already.
fn mark(operand: &mut Box<SetExpr>, alias: &str) {
    if marked_as(operand).is_some_and(|marked| marked == alias) {
        return;
    }
    let template = format!("SELECT * FROM (SELECT 1) AS {alias}");
    let Ok(Statement::Query(mut wrapper)) = Parser::parse_sql(&PostgreSqlDialect {}, &template)
        .map(|mut statements| statements.remove(0))
    else {
        return;
    };
    let SetExpr::Select(select) = wrapper.body.as_mut() else {
        return;
    };
    let Some(TableFactor::Derived { subquery, .. }) =
        select.from.first_mut().map(|from| &mut from.relation)
    else {
        return;
    };
    std::mem::swap(subquery.body.as_mut(), operand.as_mut());
    std::mem::swap(operand, &mut wrapper.body);
}

/// The alias of `SELECT * FROM (…) AS alias`, if `operand` has that shape.
fn marked_as(operand: &SetExpr) -> Option<&str> {
    let SetExpr::Select(select) = operand else {
        return None;
    };
    match (select.projection.as_slice(), select.from.as_slice()) {
        ([SelectItem::Wildcard(_)], [from]) if from.joins.is_empty() => match &from.relation {
            TableFactor::Derived {
                alias: Some(alias), ..
            } => Some(alias.name.value.as_str()),
            _ => None,
        },
        _ => None,
    }
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
            if let Ok(field) = table.schema.field_with_name(&target[position]) {
                conform_literal(expr, field)?;
            }
        }
    }
    Ok(())
}

/// A literal written into column `field` in the spelling its type reads (as Postgres reads an
/// untyped literal as the column's type): timestamps and intervals as Arrow parses them,
/// `bytea` from hex. A number written into a boolean column is an error.
pub(crate) fn conform_literal(expr: &mut Expr, field: &Field) -> Result<(), SqlError> {
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
    fn bag_set_operations_are_marked_anywhere_in_a_statement_once() {
        let marked = |sql: &str| {
            let mut statement = parse(sql);
            mark_bag_set_operations(&mut statement);
            statement.to_string()
        };
        assert_eq!(
            marked("SELECT 1 INTERSECT ALL SELECT 2"),
            "SELECT * FROM (SELECT 1) AS __bag_left INTERSECT ALL SELECT * FROM (SELECT 2) AS __bag_right"
        );
        let nested = marked("SELECT * FROM (SELECT a FROM t EXCEPT ALL SELECT a FROM u) s");
        assert!(
            nested.contains("(SELECT a FROM t) AS __bag_left EXCEPT ALL"),
            "{nested}"
        );
        let twice = marked(&marked("SELECT 1 EXCEPT ALL SELECT 2 EXCEPT ALL SELECT 3"));
        assert_eq!(twice.matches("__bag_left").count(), 2, "{twice}");
        assert_eq!(
            marked("SELECT 1 INTERSECT SELECT 1 UNION ALL SELECT 2"),
            "SELECT 1 INTERSECT SELECT 1 UNION ALL SELECT 2"
        );
    }
}
