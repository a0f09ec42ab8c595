//! `EMIT ON WINDOW CLOSE` at the end of a `CREATE MATERIALIZED VIEW`.
//!
//! sqlparser does not know the clause, and would take `EMIT` after `FROM t` for an alias of
//! `t`. So the clause is taken out of the token stream before parsing, and the statement that
//! ends where it stood is marked with it.

use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

/// The words of the clause.
const CLAUSE: [&str; 4] = ["EMIT", "ON", "WINDOW", "CLOSE"];

/// `tokens` without every `EMIT ON WINDOW CLOSE` that ends a statement, and the positions
/// (in the tokens returned) where each stood.
pub(super) fn strip_emit_clauses(tokens: Vec<TokenWithSpan>) -> (Vec<TokenWithSpan>, Vec<usize>) {
    let mut kept = Vec::with_capacity(tokens.len());
    let mut positions = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        match clause_end(&tokens, index) {
            Some(end) => {
                positions.push(kept.len());
                index = end;
            }
            None => {
                kept.push(tokens[index].clone());
                index += 1;
            }
        }
    }
    (kept, positions)
}

/// Whether a clause stood at `position` of `tokens`, right after the statement that ends
/// at `end` (the parser's position after it): only whitespace lies between them.
pub(super) fn ends_at(tokens: &[TokenWithSpan], end: usize, position: usize) -> bool {
    position >= end
        && tokens[end..position.min(tokens.len())]
            .iter()
            .all(|t| matches!(t.token, Token::Whitespace(_)))
}

/// If the clause starts at `start` and ends its statement, the index just past it.
fn clause_end(tokens: &[TokenWithSpan], start: usize) -> Option<usize> {
    let mut index = start;
    for (n, word) in CLAUSE.iter().enumerate() {
        if n > 0 {
            index = skip_whitespace(tokens, index);
        }
        match tokens.get(index).map(|t| &t.token) {
            Some(Token::Word(w))
                if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word) =>
            {
                index += 1;
            }
            _ => return None,
        }
    }
    match tokens.get(skip_whitespace(tokens, index)).map(|t| &t.token) {
        None | Some(Token::SemiColon) | Some(Token::EOF) => Some(index),
        _ => None,
    }
}

/// The index of the first token at or after `index` that is not whitespace.
pub(super) fn skip_whitespace(tokens: &[TokenWithSpan], mut index: usize) -> usize {
    while matches!(
        tokens.get(index).map(|t| &t.token),
        Some(Token::Whitespace(_))
    ) {
        index += 1;
    }
    index
}
