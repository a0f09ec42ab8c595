//! Statements that print as they read.
//!
//! Created items keep the SQL that made them, printed from the parsed statement, and some
//! rewrites print a part of a query and parse it again. sqlparser prints a unary minus
//! directly before its operand, so `- -x` (or `- -1`) would print as `--x`, which reads back
//! as a comment. Every parsed statement has a negative operand of a unary minus put in
//! parentheses, which change nothing else.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{visit_expressions_mut, Expr, UnaryOperator, VisitMut};

/// Puts in parentheses each operand of a unary minus that prints starting with a minus.
pub(crate) fn parenthesize_negative_operands<V: VisitMut>(node: &mut V) {
    let _ = visit_expressions_mut(node, |expr| {
        if let Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: operand,
        } = expr
        {
            if operand.to_string().starts_with('-') {
                **operand = Expr::Nested(operand.clone());
            }
        }
        ControlFlow::<()>::Continue(())
    });
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
