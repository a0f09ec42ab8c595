//! `WATERMARK FOR column AS expr` among the columns of a `CREATE TABLE`.
//!
//! sqlparser takes every element of a table's column list for a column or a constraint. So
//! before parsing, the clause is taken out of the token stream and parsed on its own, and the
//! statement it stood in is given it (see [`TableWatermark::belongs_to`]).

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use super::asof::is_word;
use super::emit::skip_whitespace;
use crate::statement::watermark::WatermarkClause;
use crate::SqlError;

/// A clause taken out of a `CREATE TABLE`.
#[derive(Debug)]
pub(super) struct TableWatermark {
    /// Where it stood among the tokens.
    position: usize,
    /// The clause.
    pub clause: WatermarkClause,
}

impl TableWatermark {
    /// Whether it stood in the statement parsed from token `start` to token `end`.
    pub fn belongs_to(&self, start: usize, end: usize) -> bool {
        start < self.position && self.position < end
    }
}

/// `tokens` with the `WATERMARK` clause of each `CREATE TABLE` (and a `,` beside it) blanked
/// out, and the clauses. The tokens keep their positions.
pub(super) fn strip_table_watermarks(
    mut tokens: Vec<TokenWithSpan>,
) -> Result<(Vec<TokenWithSpan>, Vec<TableWatermark>), SqlError> {
    let mut clauses = Vec::new();
    if !tokens.iter().any(|t| is_word(&t.token, "WATERMARK")) {
        return Ok((tokens, clauses));
    }
    let mut statement_start = true;
    let mut index = 0;
    while index < tokens.len() {
        if statement_start && creates_table(&tokens, index) {
            statement_start = false;
            index = blank_clause(&mut tokens, index, &mut clauses)?;
            continue;
        }
        match tokens[index].token {
            Token::SemiColon => statement_start = true,
            Token::Whitespace(_) => {}
            _ => statement_start = false,
        }
        index += 1;
    }
    Ok((tokens, clauses))
}

/// Whether the statement starting at `index` is a `CREATE TABLE`.
fn creates_table(tokens: &[TokenWithSpan], index: usize) -> bool {
    is_word(&tokens[index].token, "CREATE")
        && tokens
            .get(skip_whitespace(tokens, index + 1))
            .is_some_and(|t| is_word(&t.token, "TABLE"))
}

/// Blanks out the `WATERMARK` clause among the column list of the `CREATE TABLE` starting at
/// `start`, if it has one (adding it to `clauses`); returns the index after the column list
/// (or of the statement's end, if it has none).
fn blank_clause(
    tokens: &mut [TokenWithSpan],
    start: usize,
    clauses: &mut Vec<TableWatermark>,
) -> Result<usize, SqlError> {
    let mut index = start;
    loop {
        match tokens.get(index).map(|t| &t.token) {
            None | Some(Token::SemiColon | Token::EOF) => return Ok(index),
            Some(Token::LParen) => break,
            _ => index += 1,
        }
    }
    index += 1;
    let mut separator_before = None;
    loop {
        let element = skip_whitespace(tokens, index);
        let end = element_end(tokens, element);
        let separator_after = tokens.get(end).is_some_and(|t| t.token == Token::Comma);
        if is_clause(tokens, element) {
            if clauses.last().is_some_and(|c| c.position > start) {
                return Err(SqlError::Syntax("a table has at most one WATERMARK".into()));
            }
            let clause = parse_clause(&tokens[element + 1..end])?;
            let (from, to) = match separator_before {
                Some(comma) => (comma, end),
                None if separator_after => (element, end + 1),
                None => (element, end),
            };
            for token in &mut tokens[from..to] {
                token.token = Token::Whitespace(Whitespace::Space);
            }
            clauses.push(TableWatermark {
                position: from,
                clause,
            });
            if separator_before.is_none() && separator_after {
                index = end + 1;
                continue;
            }
        }
        if !separator_after {
            return Ok(end);
        }
        separator_before = Some(end);
        index = end + 1;
    }
}

/// Whether a `WATERMARK FOR` clause starts at `index`.
fn is_clause(tokens: &[TokenWithSpan], index: usize) -> bool {
    tokens
        .get(index)
        .is_some_and(|t| is_word(&t.token, "WATERMARK"))
        && tokens
            .get(skip_whitespace(tokens, index + 1))
            .is_some_and(|t| is_word(&t.token, "FOR"))
}

/// The index of the `,` or `)` that ends the column-list element starting at `start` (or
/// of the statement's end, in a statement cut short).
fn element_end(tokens: &[TokenWithSpan], start: usize) -> usize {
    let mut depth = 0usize;
    let mut index = start;
    while let Some(token) = tokens.get(index).map(|t| &t.token) {
        match token {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket if depth == 0 => return index,
            Token::RParen | Token::RBracket => depth -= 1,
            Token::Comma if depth == 0 => return index,
            Token::SemiColon | Token::EOF => return index,
            _ => {}
        }
        index += 1;
    }
    index
}

/// The clause `FOR column AS expr` (the tokens after its `WATERMARK`).
fn parse_clause(tokens: &[TokenWithSpan]) -> Result<WatermarkClause, SqlError> {
    let mut parser = Parser::new(&PostgreSqlDialect {}).with_tokens_with_locations(tokens.to_vec());
    let clause = WatermarkClause::parse_after_keyword(&mut parser)?;
    if parser.peek_token().token != Token::EOF {
        return Err(parser
            .expected::<()>("the end of the WATERMARK clause", parser.peek_token())
            .unwrap_err()
            .into());
    }
    Ok(clause)
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;

    use super::*;

    fn stripped(sql: &str) -> (String, Vec<String>) {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        let (kept, clauses) = strip_table_watermarks(tokens).unwrap();
        let text: String = kept.iter().map(|t| t.token.to_string()).collect();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        (text, clauses.iter().map(|c| c.clause.to_string()).collect())
    }

    #[test]
    fn the_clause_leaves_the_column_list_wherever_it_stands() {
        let last = stripped(
            "CREATE TABLE t (ts timestamp, v int, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
        );
        assert_eq!(last.0, "CREATE TABLE t (ts timestamp, v int )");
        assert_eq!(last.1, ["WATERMARK FOR ts AS ts - INTERVAL '5' SECOND"]);
        let first = stripped("CREATE TABLE t (WATERMARK FOR ts AS ts, ts timestamp)");
        assert_eq!(first.0, "CREATE TABLE t ( ts timestamp)");
        let middle = stripped(
            "CREATE TABLE t (ts timestamp, watermark FOR ts AS (ts - INTERVAL '1' MINUTE), \
             PRIMARY KEY (ts)); SELECT 1",
        );
        assert_eq!(
            middle.0,
            "CREATE TABLE t (ts timestamp , PRIMARY KEY (ts)); SELECT 1"
        );
        assert_eq!(middle.1, ["WATERMARK FOR ts AS (ts - INTERVAL '1' MINUTE)"]);
    }

    #[test]
    fn a_column_named_watermark_and_other_statements_are_left_alone() {
        let sql = "CREATE TABLE t (watermark timestamp); SELECT watermark FROM t";
        assert_eq!(stripped(sql), (sql.to_string(), Vec::new()));
        let view = "CREATE VIEW v AS SELECT 1 AS watermark";
        assert_eq!(stripped(view).1.len(), 0);
    }

    #[test]
    fn two_clauses_or_a_broken_one_are_errors() {
        let parse = |sql: &str| {
            let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
                .tokenize_with_location()
                .unwrap();
            strip_table_watermarks(tokens)
        };
        assert!(parse(
            "CREATE TABLE t (ts timestamp, WATERMARK FOR ts AS ts, WATERMARK FOR ts AS ts)"
        )
        .is_err());
        assert!(parse("CREATE TABLE t (ts timestamp, WATERMARK FOR ts ts)").is_err());
    }

    #[test]
    fn a_table_keeps_its_watermark_through_its_stored_text() {
        let sql = "CREATE TABLE t (ts timestamp, note text DEFAULT 'a, (b)', \
                   WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (note)); SELECT 1";
        let statements = crate::parse(sql).unwrap();
        let crate::Statement::CreateTable(create) = &statements[0] else {
            panic!("not a CREATE TABLE: {:?}", statements[0]);
        };
        let stored = create.to_sql();
        assert_eq!(
            stored,
            "CREATE TABLE t (ts TIMESTAMP, note TEXT DEFAULT 'a, (b)', PRIMARY KEY (note), \
             WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)"
        );
        let again = crate::parse(&stored).unwrap();
        let crate::Statement::CreateTable(again) = &again[0] else {
            panic!("not a CREATE TABLE: {stored}");
        };
        assert_eq!(again, create);
        assert!(matches!(statements[1], crate::Statement::Select(_)));
    }
}
