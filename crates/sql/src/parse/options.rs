//! The pieces Fluxion's own statements share: `WITH (name = value, …)` option lists, bare
//! words, and quoting them back.

use std::fmt;

use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// `(name = value, …)`.
pub(crate) fn parse_options(parser: &mut Parser) -> Result<Vec<(String, String)>, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let options = parser.parse_comma_separated(|p| {
        let name = parse_option_name(p)?;
        p.expect_token(&Token::Eq)?;
        Ok((name, parse_option_value(p)?))
    })?;
    parser.expect_token(&Token::RParen)?;
    Ok(options)
}

/// A dotted name (`nexmark.table.type`) or a quoted one, in lower case.
fn parse_option_name(parser: &mut Parser) -> Result<String, ParserError> {
    let token = parser.next_token();
    let first = match &token.token {
        Token::SingleQuotedString(s) => return Ok(s.to_lowercase()),
        Token::Word(word) => word.value.to_lowercase(),
        _ => return parser.expected("an option name", token),
    };
    let mut parts = vec![first];
    while parser.consume_token(&Token::Period) {
        let token = parser.next_token();
        match &token.token {
            Token::Word(word) => parts.push(word.value.to_lowercase()),
            Token::Number(n, _) => parts.push(n.clone()),
            _ => return parser.expected("an option name", token),
        }
    }
    Ok(parts.join("."))
}

/// A literal (string, number, boolean) or a bare word, as text.
pub(crate) fn parse_option_value(parser: &mut Parser) -> Result<String, ParserError> {
    let token = parser.next_token();
    match &token.token {
        Token::SingleQuotedString(s) => Ok(s.clone()),
        Token::Number(n, _) => Ok(n.clone()),
        Token::Word(word) => Ok(word.value.clone()),
        Token::Minus => match parser.next_token().token {
            Token::Number(n, _) => Ok(format!("-{n}")),
            _ => parser.expected("a number after -", token),
        },
        _ => parser.expected("an option value", token),
    }
}

/// Consumes the word `word` (case-insensitive) if it is next.
pub(crate) fn parse_word(parser: &mut Parser, word: &str) -> bool {
    match &parser.peek_token().token {
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word) => {
            parser.next_token();
            true
        }
        _ => false,
    }
}

/// A bare word, in upper case.
pub(crate) fn parse_upper_word(parser: &mut Parser) -> Result<String, ParserError> {
    let token = parser.next_token();
    match &token.token {
        Token::Word(word) => Ok(word.value.to_uppercase()),
        _ => parser.expected("a word", token),
    }
}

/// `'text'` with quotes doubled.
pub(crate) fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Writes `(name = 'value', …)`.
pub(crate) fn write_options(
    f: &mut fmt::Formatter<'_>,
    options: &[(String, String)],
) -> fmt::Result {
    let list: Vec<String> = options
        .iter()
        .map(|(k, v)| format!("{k} = {}", quoted(v)))
        .collect();
    write!(f, "({})", list.join(", "))
}
