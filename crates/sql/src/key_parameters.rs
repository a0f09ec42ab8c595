//! Simple queries that pin a key with literals (`UPDATE items SET price = price + 1 WHERE id =
//! 42`) as prepared statements (`… WHERE id = $1` with the value 42), so that every such query
//! of one shape shares one generic plan, as a prepared statement's executions do. Clients that
//! put values into the SQL text themselves (psql scripts, psycopg2, pgbench's simple mode) then
//! skip planning as prepared statements do.
//!
//! Only integer literals compared for equality with a column, in the `AND`ed conditions of the
//! WHERE clause of a SELECT, UPDATE or DELETE, become parameters: such a literal is a `bigint`
//! (DataFusion reads it as one), so the parameter has that type and the statement means
//! exactly what the text does. Everything else stays in the text, and is part of the shape.

use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, SetExpr, Value, ValueWithSpan};

use crate::statement::Statement;

/// A statement with its key literals as parameters.
#[derive(Debug)]
pub struct KeyParameters {
    /// The statement, with `$n` where the literals were.
    pub statement: Statement,
    /// Its text, the same for every statement of the same shape.
    pub shape: String,
    /// The literals, `$1` first, as text with their type.
    pub values: Vec<(Option<String>, DataType)>,
}

impl Statement {
    /// The statement with its key literals as parameters, if it has any (see the module
    /// documentation).
    pub fn with_key_parameters(&self) -> Option<KeyParameters> {
        let mut statement = self.clone();
        let mut values = Vec::new();
        let shape = match &mut statement {
            Statement::Select(query) => {
                let SetExpr::Select(select) = query.0.body.as_mut() else {
                    return None;
                };
                parameterize(select.selection.as_mut()?, &mut values);
                query.to_string()
            }
            Statement::Update(update) => {
                let update = update.ast_mut();
                parameterize(update.selection.as_mut()?, &mut values);
                update.to_string()
            }
            Statement::Delete(delete) => {
                let delete = delete.ast_mut();
                parameterize(delete.selection.as_mut()?, &mut values);
                delete.to_string()
            }
            _ => return None,
        };
        // A `$n` in a simple query's text is an error binding reports; numbering would hide it.
        if values.is_empty() || self.parameter_count() > 0 {
            return None;
        }
        Some(KeyParameters {
            statement,
            shape,
            values,
        })
    }
}

/// Replaces the integers that `condition`'s `AND`ed `column = integer` comparisons compare
/// with by placeholders, numbered after those in `values`, adding their values to it.
fn parameterize(condition: &mut Expr, values: &mut Vec<(Option<String>, DataType)>) {
    match condition {
        Expr::Nested(inner) => parameterize(inner, values),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            parameterize(left, values);
            parameterize(right, values);
        }
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => {
            let literal = match (is_column(left), is_column(right)) {
                (true, false) => right,
                (false, true) => left,
                _ => return,
            };
            if let Some(value) = integer(literal) {
                values.push((Some(value), DataType::Int64));
                **literal = Expr::value(Value::Placeholder(format!("${}", values.len())));
            }
        }
        _ => {}
    }
}

fn is_column(expr: &Expr) -> bool {
    matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
}

/// The text of an integer literal that is a `bigint`.
fn integer(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Value(ValueWithSpan {
            value: Value::Number(text, false),
            ..
        }) if text.parse::<i64>().is_ok() => Some(text.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    fn parameters(sql: &str) -> Option<(String, Vec<Option<String>>)> {
        let statement = crate::parse(sql).unwrap().remove(0);
        statement.with_key_parameters().map(|p| {
            let values = p.values.into_iter().map(|(v, _)| v).collect();
            (p.shape, values)
        })
    }

    #[test]
    fn integers_compared_with_columns_become_parameters() {
        assert_eq!(
            parameters("UPDATE items SET price = price + 1 WHERE id = 42"),
            Some((
                "UPDATE items SET price = price + 1 WHERE id = $1".into(),
                vec![Some("42".into())]
            ))
        );
        assert_eq!(
            parameters("SELECT a, 7 FROM t WHERE (t.k = 3 AND 5 = j) AND x > 1"),
            Some((
                "SELECT a, 7 FROM t WHERE (t.k = $1 AND $2 = j) AND x > 1".into(),
                vec![Some("3".into()), Some("5".into())]
            ))
        );
        assert_eq!(
            parameters("DELETE FROM t WHERE k = 9"),
            Some(("DELETE FROM t WHERE k = $1".into(), vec![Some("9".into())]))
        );
    }

    #[test]
    fn other_literals_stay_in_the_text() {
        for sql in [
            "SELECT * FROM t WHERE k = 1.5",
            "SELECT * FROM t WHERE k = 'one'",
            "SELECT * FROM t WHERE k = 99999999999999999999",
            "SELECT * FROM t WHERE k = -1",
            "SELECT * FROM t WHERE k = 1 OR k = 2",
            "SELECT * FROM t WHERE k IN (1, 2)",
            "SELECT * FROM t WHERE 1 = 1",
            "SELECT * FROM t",
            "INSERT INTO t VALUES (1)",
            "SELECT 1 UNION SELECT k FROM t WHERE k = 1",
            "SELECT * FROM t WHERE k = 1 AND j = $1",
        ] {
            assert_eq!(parameters(sql), None, "{sql}");
        }
    }
}
