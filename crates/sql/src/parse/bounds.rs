//! Bounds on a statement's shape, checked right after parsing: how deeply it nests, and how
//! many columns a select list has.
//!
//! Everything after the parser walks a statement recursively: cloning, printing, rewriting,
//! planning, lowering and evaluating it. A flat chain such as `1+1+…+1` or `a OR b OR …`
//! parses without recursion but makes a tree as deep as the chain is long, and `SELECT 1 UNION
//! ALL SELECT 1 …` a set operation as deep; walked recursively, a deep enough one overflows a
//! thread's stack, which aborts the whole server. PostgreSQL refuses such statements with 54001
//! (`stack depth limit exceeded`): it runs `1+1+…` of 1,000 terms and a union of 5,000
//! selects, and refuses 5,000 terms and 20,000 selects. Fluxion refuses an expression nested
//! more than [`MAX_EXPRESSION_DEPTH`] deep and a chain of more than [`MAX_SET_OPERATIONS`] set
//! operations (fewer than PostgreSQL runs: each level of a chain costs several kilobytes of
//! stack in the walks after parsing), before anything else walks the statement.
//!
//! A select list is bounded as PostgreSQL bounds it: at most [`MAX_TARGET_LIST_ENTRIES`]
//! entries (54011, `target lists can have at most 1664 entries`). Planning a select list costs
//! time quadratic in its length (DataFusion compares each column's name with every earlier
//! one), so a statement of tens of thousands of columns would otherwise plan for minutes.
//!
//! Before that, the tokens are checked for how deeply function calls nest
//! ([`check_call_nesting`]): sqlparser's time to parse them grows exponentially with it.
//!
//! A refused statement is taken apart bottom-up before it is dropped ([`dismantle`]): dropping
//! a deep tree recurses as deeply as the tree is deep. The walks here are sqlparser's visitor,
//! which grows its stack on the heap as it goes deeper (its `recursive-protection` feature), and
//! loops.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, Expr, Query, Select, SetExpr, Statement, Value, Values, Visit, VisitMut,
    Visitor, VisitorMut,
};

use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::SqlError;

/// The deepest nesting of expressions (and the subqueries within them) a statement may have.
pub const MAX_EXPRESSION_DEPTH: usize = 1000;

/// The longest chain of set operations (`UNION`, `INTERSECT`, `EXCEPT`) one query may have.
pub const MAX_SET_OPERATIONS: usize = 1000;

/// The most entries a select list may have, as in PostgreSQL.
pub const MAX_TARGET_LIST_ENTRIES: usize = 1664;

/// The stack a thread needs to walk a statement within these bounds (parse, plan, lower,
/// evaluate), with room to spare in a debug build: every thread that handles statements or
/// runs dataflows gets at least this much.
pub const STATEMENT_STACK_BYTES: usize = 32 << 20;

/// How many times the parser may read the tokens of a statement, beyond
/// [`READS_PER_TOKEN`] times each.
const EXTRA_TOKEN_READS: u64 = 1 << 16;

/// How many times, on average, the parser may read each token of a statement.
const READS_PER_TOKEN: u64 = 64;

/// Refuses (54001) a statement whose function calls nest so deeply that parsing it would
/// take too long, before the parser sees it.
///
/// sqlparser (0.62, PostgreSQL dialect) reads each argument of a call first as a named
/// argument whose name is an expression, and reads it again when no `=>` follows: a token
/// inside `d` nested calls is read 2^d times, so that `abs(abs(…abs(1)…))` 30 calls deep
/// would keep a core busy for half an hour, and 40 for weeks. The reads are counted here, and
/// a statement is refused if it would need more than [`READS_PER_TOKEN`] per token plus
/// [`EXTRA_TOKEN_READS`]: a short statement may nest about 15 calls deep.
pub(crate) fn check_call_nesting(tokens: &[TokenWithSpan]) -> Result<(), SqlError> {
    let mut open: Vec<bool> = Vec::new();
    let mut calls_open: u32 = 0;
    let mut previous_is_word = false;
    let mut tokens_read: u64 = 0;
    let mut reads: u64 = 0;
    for token in tokens {
        match token.token {
            Token::Whitespace(_) => continue,
            Token::LParen => {
                open.push(previous_is_word);
                calls_open += u32::from(previous_is_word);
            }
            Token::RParen if open.pop() == Some(true) => calls_open -= 1,
            _ => {}
        }
        previous_is_word = matches!(token.token, Token::Word(_));
        tokens_read += 1;
        reads = reads.saturating_add(1u64.checked_shl(calls_open).unwrap_or(u64::MAX));
    }
    let allowed = tokens_read
        .saturating_mul(READS_PER_TOKEN)
        .saturating_add(EXTRA_TOKEN_READS);
    if reads > allowed {
        return Err(SqlError::StackDepthExceeded(
            "the statement nests function calls too deeply to be parsed".into(),
        ));
    }
    Ok(())
}

/// `statement` if it keeps within the bounds; otherwise a 54001 or 54011 error, `statement`
/// having been taken apart so that dropping it cannot overflow the stack.
pub(crate) fn check_bounds(mut statement: Statement) -> Result<Statement, SqlError> {
    let mut measure = Measure::default();
    if let ControlFlow::Break(error) = statement.visit(&mut measure) {
        dismantle(&mut statement);
        return Err(error);
    }
    Ok(statement)
}

/// `query` if it keeps within the bounds (see [`check_bounds`]): for statements of Fluxion's
/// own that hold a query (`SUBSCRIBE TO (…)`).
pub(crate) fn check_query_bounds(query: Box<Query>) -> Result<Box<Query>, SqlError> {
    match check_bounds(Statement::Query(query))? {
        Statement::Query(query) => Ok(query),
        _ => Err(SqlError::Internal(
            "a query came back as another statement".into(),
        )),
    }
}

/// Walks a statement keeping the current expression depth, and stops at the first bound
/// crossed.
#[derive(Default)]
struct Measure {
    expression_depth: usize,
}

impl Visitor for Measure {
    type Break = SqlError;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<SqlError> {
        self.enter()?;
        let operations = set_operation_depth(&query.body);
        if operations > MAX_SET_OPERATIONS {
            return ControlFlow::Break(SqlError::StackDepthExceeded(format!(
                "a query chains more than {MAX_SET_OPERATIONS} set operations"
            )));
        }
        if widest_select_list(&query.body) > MAX_TARGET_LIST_ENTRIES {
            return ControlFlow::Break(SqlError::TooManyColumns(format!(
                "target lists can have at most {MAX_TARGET_LIST_ENTRIES} entries"
            )));
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<SqlError> {
        self.expression_depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<SqlError> {
        self.enter()
    }

    fn post_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<SqlError> {
        self.expression_depth -= 1;
        ControlFlow::Continue(())
    }
}

impl Measure {
    fn enter(&mut self) -> ControlFlow<SqlError> {
        self.expression_depth += 1;
        if self.expression_depth > MAX_EXPRESSION_DEPTH {
            return ControlFlow::Break(SqlError::StackDepthExceeded(format!(
                "the statement nests expressions more than {MAX_EXPRESSION_DEPTH} deep"
            )));
        }
        ControlFlow::Continue(())
    }
}

/// How deeply set operations nest in `body` (0 for a plain SELECT), counted with a loop.
fn set_operation_depth(body: &SetExpr) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(body, 0)];
    while let Some((node, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        match node {
            SetExpr::SetOperation { left, right, .. } => {
                pending.push((left, depth + 1));
                pending.push((right, depth + 1));
            }
            SetExpr::Query(query) => pending.push((&query.body, depth)),
            _ => {}
        }
    }
    deepest
}

/// The most entries a select list of `body`'s own (not of its subqueries) has, counted with
/// a loop.
fn widest_select_list(body: &SetExpr) -> usize {
    let mut widest = 0;
    let mut pending = vec![body];
    while let Some(node) = pending.pop() {
        match node {
            SetExpr::Select(select) => widest = widest.max(select_list_entries(select)),
            SetExpr::SetOperation { left, right, .. } => {
                pending.push(left);
                pending.push(right);
            }
            SetExpr::Query(query) => pending.push(&query.body),
            _ => {}
        }
    }
    widest
}

fn select_list_entries(select: &Select) -> usize {
    select.projection.len()
}

/// Takes `statement` apart bottom-up, leaving nothing deep to drop: every expression becomes
/// NULL once its own operands have, and every query body's chain of set operations is
/// unlinked with a loop.
fn dismantle(statement: &mut Statement) {
    let _ = visit_expressions_mut(statement, |expr| {
        *expr = Expr::value(Value::Null);
        ControlFlow::<()>::Continue(())
    });
    let _ = statement.visit(&mut SetOperationUnlinker);
}

/// Unlinks the set operations of every query body, innermost query first.
struct SetOperationUnlinker;

impl VisitorMut for SetOperationUnlinker {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let mut pending = vec![std::mem::replace(query.body.as_mut(), empty_body())];
        while let Some(mut node) = pending.pop() {
            match &mut node {
                SetExpr::SetOperation { left, right, .. } => {
                    pending.push(std::mem::replace(left.as_mut(), empty_body()));
                    pending.push(std::mem::replace(right.as_mut(), empty_body()));
                }
                SetExpr::Query(inner) => {
                    pending.push(std::mem::replace(inner.body.as_mut(), empty_body()));
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }
}

fn empty_body() -> SetExpr {
    SetExpr::Values(Values {
        explicit_row: false,
        value_keyword: false,
        rows: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn checked(sql: &str) -> Result<Statement, SqlError> {
        let statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        check_bounds(statement)
    }

    fn chain(term: &str, operator: &str, terms: usize) -> String {
        vec![term; terms].join(operator)
    }

    #[test]
    fn chains_up_to_the_bounds_pass() {
        let sum = format!("SELECT {}", chain("1", "+", MAX_EXPRESSION_DEPTH - 1));
        assert!(checked(&sum).is_ok());
        let union = chain("SELECT 1", " UNION ALL ", MAX_SET_OPERATIONS + 1);
        assert!(checked(&union).is_ok());
    }

    #[test]
    fn deeper_chains_are_54001_and_drop_without_overflow() {
        for sql in [
            format!("SELECT {}", chain("1", "+", 200_000)),
            format!("SELECT 1 WHERE {}", chain("a = 1", " OR ", 100_000)),
            format!("SELECT (SELECT {})", chain("'a'", " || ", 100_000)),
            chain("SELECT 1", " UNION ALL ", 100_000),
        ] {
            let error = checked(&sql).unwrap_err();
            assert!(matches!(error, SqlError::StackDepthExceeded(_)), "{error}");
        }
    }

    #[test]
    fn calls_nested_too_deeply_to_parse_are_refused_first() {
        let nested =
            |depth: usize| format!("SELECT {}1{}", "abs(".repeat(depth), ")".repeat(depth));
        assert!(crate::parse(&nested(12)).is_ok());
        let error = crate::parse(&nested(40)).unwrap_err();
        assert!(matches!(error, SqlError::StackDepthExceeded(_)), "{error}");
        let side_by_side = format!("SELECT {}", chain("coalesce(abs(a), 1)", ", ", 1000));
        assert!(crate::parse(&side_by_side).is_ok());
    }

    #[test]
    fn select_lists_are_bounded_as_in_postgres() {
        let widest = format!("SELECT {}", chain("1", ", ", MAX_TARGET_LIST_ENTRIES));
        assert!(checked(&widest).is_ok());
        for sql in [
            format!("SELECT {}", chain("1", ", ", MAX_TARGET_LIST_ENTRIES + 1)),
            format!(
                "SELECT 1 UNION SELECT {}",
                chain("$1", ", ", MAX_TARGET_LIST_ENTRIES + 1)
            ),
            format!(
                "SELECT * FROM (SELECT {}) AS t",
                chain("1", ", ", MAX_TARGET_LIST_ENTRIES + 1)
            ),
        ] {
            let error = checked(&sql).unwrap_err();
            assert_eq!(
                error.to_string(),
                "target lists can have at most 1664 entries"
            );
        }
    }
}
