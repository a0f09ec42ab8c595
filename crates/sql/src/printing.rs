//! Statements that print as they read.
//!
//! Created items keep the SQL that made them, printed from the parsed statement, and some
//! rewrites print a part of a query and parse it again. sqlparser prints a unary minus
//! directly before its operand, so `- -x` (or `- -1`) would print as `--x`, which reads back
//! as a comment. Every parsed statement has a negative operand of a unary minus put in
//! parentheses, which change nothing else.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, Expr, UnaryOperator, Value, VisitMut,
};

/// Puts in parentheses each operand of a unary minus that prints starting with a minus.
pub(crate) fn parenthesize_negative_operands<V: VisitMut>(node: &mut V) {
    let _ = visit_expressions_mut(node, |expr| {
        if let Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: operand,
        } = expr
        {
            if prints_negative(operand) {
                **operand = Expr::Nested(operand.clone());
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Whether `expr` prints starting with a minus. The common operands (a number, a column, a
/// parenthesized expression) are decided without printing them: this runs on every parse.
fn prints_negative(expr: &Expr) -> bool {
    match expr {
        Expr::Value(value) => {
            matches!(&value.value, Value::Number(digits, _) if digits.starts_with('-'))
        }
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Nested(_) => false,
        other => other.to_string().starts_with('-'),
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse_sql;

    #[test]
    fn double_minus_prints_as_it_reads() {
        for sql in [
            "CREATE TABLE t (z INT DEFAULT - -5)",
            "SELECT - - col0, 3 - -col0, - - - col0 FROM tab0",
        ] {
            let printed = parse_sql(sql).unwrap().pop().unwrap().to_string();
            assert!(!printed.contains("--"), "{printed}");
            let again = parse_sql(&printed).unwrap().pop().unwrap().to_string();
            assert_eq!(again, printed);
        }
    }
}
