//! `ASOF [LEFT] JOIN relation ON condition` and `JOIN relation FOR SYSTEM_TIME AS OF time
//! ON condition`.
//!
//! sqlparser knows only Snowflake's `ASOF JOIN … MATCH_CONDITION (…)`, and `FOR SYSTEM_TIME`
//! in other dialects than PostgreSQL's. So before parsing, the `ASOF` of each such join (or the
//! `FOR SYSTEM_TIME AS OF time` clause) is taken out of the token stream and its condition is
//! marked instead: `ON __fluxion_asof('inner' | 'left') AND condition`, or
//! `ON __fluxion_asof('versioned', time) AND condition` (`'proctime'` for `PROCTIME()`; see
//! [`crate::asof_joins`], which plans the marked join). [`written_as_asof`] turns printed SQL
//! back into the form the user wrote.

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Span, Token, TokenWithSpan, Tokenizer, Whitespace};

use super::emit::skip_whitespace;
use crate::asof_joins::{ASOF_MARKER, PROCESSING_TIME, VERSIONED};
use crate::SqlError;

/// `tokens` with every ASOF join and every join `FOR SYSTEM_TIME AS OF` turned into a
/// marked join.
pub(super) fn mark_time_joins(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>, SqlError> {
    mark_versioned_joins(mark_asof_joins(tokens)?)
}

/// The words of the clause naming the version of a relation.
const VERSIONING: [&str; 4] = ["FOR", "SYSTEM_TIME", "AS", "OF"];

/// `tokens` with every `relation FOR SYSTEM_TIME AS OF time … ON` turned into a marked join.
/// The time is a column (`o.ts`) or a call without arguments (`PROCTIME()`).
fn mark_versioned_joins(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>, SqlError> {
    if !tokens.iter().any(|t| is_word(&t.token, "SYSTEM_TIME")) {
        return Ok(tokens);
    }
    let mut marked = Vec::with_capacity(tokens.len() + 8);
    let mut index = 0;
    while index < tokens.len() {
        let Some(time_start) = words_end(&tokens, index, &VERSIONING) else {
            marked.push(tokens[index].clone());
            index += 1;
            continue;
        };
        while matches!(
            marked.last().map(|t: &TokenWithSpan| &t.token),
            Some(Token::Whitespace(_))
        ) {
            marked.pop();
        }
        let time_start = skip_whitespace(&tokens, time_start);
        let time_end = time_end(&tokens, time_start).ok_or_else(|| {
            SqlError::Syntax(
                "FOR SYSTEM_TIME AS OF takes a column of the left side (o.ts) or PROCTIME()".into(),
            )
        })?;
        let on = condition_start(&tokens, time_end)
            .filter(|&on| is_alias(&tokens[time_end..on]))
            .ok_or_else(|| {
                SqlError::Syntax(
                    "FOR SYSTEM_TIME AS OF time [AS alias] ON condition: the time is a column \
                     of the left side (o.ts) or PROCTIME()"
                        .into(),
                )
            })?;
        marked.extend(tokens[time_end..=on].iter().cloned());
        let span = tokens[on].span;
        let time = &tokens[time_start..time_end];
        let arguments = if is_word(&time[0].token, "PROCTIME") && time.len() == 3 {
            vec![Token::SingleQuotedString(PROCESSING_TIME.into())]
        } else {
            let mut arguments = vec![Token::SingleQuotedString(VERSIONED.into()), Token::Comma];
            arguments.extend(time.iter().map(|t| t.token.clone()));
            arguments
        };
        marked.extend(marker(arguments, span));
        index = on + 1;
    }
    Ok(marked)
}

/// ` __fluxion_asof(arguments) AND`, to follow a marked join's `ON`.
fn marker(arguments: Vec<Token>, span: Span) -> impl Iterator<Item = TokenWithSpan> {
    [
        Token::Whitespace(Whitespace::Space),
        Token::make_word(ASOF_MARKER, None),
        Token::LParen,
    ]
    .into_iter()
    .chain(arguments)
    .chain([
        Token::RParen,
        Token::Whitespace(Whitespace::Space),
        Token::make_keyword("AND"),
    ])
    .map(move |token| TokenWithSpan::new(token, span))
}

/// Whether `tokens` are nothing but an alias: `[AS] name`, with whitespace.
fn is_alias(tokens: &[TokenWithSpan]) -> bool {
    let words: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    match words.as_slice() {
        [] => true,
        [Token::Word(_)] => true,
        [Token::Word(as_word), Token::Word(_)] => as_word.value.eq_ignore_ascii_case("AS"),
        _ => false,
    }
}

/// If `words` (separated by whitespace) start at `start`, the index just past them.
fn words_end(tokens: &[TokenWithSpan], start: usize, words: &[&str]) -> Option<usize> {
    let mut index = start;
    for (n, word) in words.iter().enumerate() {
        if n > 0 {
            index = skip_whitespace(tokens, index);
        }
        if !is_word(&tokens.get(index)?.token, word) {
            return None;
        }
        index += 1;
    }
    Some(index)
}

/// The end of the time at `start`: `name[.name…]`, or `name()`.
fn time_end(tokens: &[TokenWithSpan], start: usize) -> Option<usize> {
    let is_name =
        |index: usize| matches!(tokens.get(index).map(|t| &t.token), Some(Token::Word(_)));
    if !is_name(start) {
        return None;
    }
    let mut index = start + 1;
    match tokens.get(index).map(|t| &t.token) {
        Some(Token::LParen) => {
            matches!(tokens.get(index + 1).map(|t| &t.token), Some(Token::RParen))
                .then_some(index + 2)
        }
        _ => {
            while matches!(tokens.get(index).map(|t| &t.token), Some(Token::Period))
                && is_name(index + 1)
            {
                index += 2;
            }
            Some(index)
        }
    }
}

/// `tokens` with every `ASOF [LEFT [OUTER]] JOIN … ON` turned into a marked join.
fn mark_asof_joins(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>, SqlError> {
    if !tokens.iter().any(|t| is_word(&t.token, "ASOF")) {
        return Ok(tokens);
    }
    let mut marked = Vec::with_capacity(tokens.len() + 8);
    let mut index = 0;
    while index < tokens.len() {
        if !is_word(&tokens[index].token, "ASOF") {
            marked.push(tokens[index].clone());
            index += 1;
            continue;
        }
        let Some((kind, join_end)) = join_words(&tokens, index + 1) else {
            marked.push(tokens[index].clone());
            index += 1;
            continue;
        };
        let Some(on) = condition_start(&tokens, join_end) else {
            return Err(SqlError::Syntax(
                "ASOF JOIN needs an ON condition: equalities and one comparison of times".into(),
            ));
        };
        // The join words after `ASOF`, the relation, and `ON`; then the marker.
        marked.extend(
            tokens[skip_whitespace(&tokens, index + 1)..=on]
                .iter()
                .cloned(),
        );
        let kind = vec![Token::SingleQuotedString(kind.into())];
        marked.extend(marker(kind, tokens[on].span));
        index = on + 1;
    }
    Ok(marked)
}

/// `sql` (as sqlparser prints a parsed statement) with each marked join written as the
/// `ASOF [LEFT] JOIN` it was parsed from.
pub(crate) fn written_as_asof(sql: String) -> String {
    if !sql.contains(ASOF_MARKER) {
        return sql;
    }
    let Ok(mut tokens) = Tokenizer::new(&PostgreSqlDialect {}, &sql).tokenize() else {
        return sql;
    };
    while let Some(marker) = tokens.iter().position(|t| is_word(t, ASOF_MARKER)) {
        if unmark(&mut tokens, marker).is_none() {
            return sql;
        }
    }
    tokens.iter().map(|t| t.to_string()).collect()
}

/// Writes the join marked at `marker` as the user wrote it.
fn unmark(tokens: &mut Vec<Token>, marker: usize) -> Option<()> {
    let Some(Token::SingleQuotedString(kind)) = tokens.get(marker + 2).cloned() else {
        return None;
    };
    // `__fluxion_asof ( 'kind' [, time] )`, whitespace, `AND`, whitespace.
    let mut depth = 0usize;
    let close = marker
        + tokens[marker..].iter().position(|t| {
            match t {
                Token::LParen => depth += 1,
                Token::RParen => depth = depth.saturating_sub(1),
                _ => {}
            }
            *t == Token::RParen && depth == 0
        })?;
    let time: Vec<Token> = match kind.as_str() {
        PROCESSING_TIME => vec![
            Token::make_word("PROCTIME", None),
            Token::LParen,
            Token::RParen,
        ],
        VERSIONED => tokens
            .get(marker + 4..close)?
            .iter()
            .skip_while(|t| matches!(t, Token::Whitespace(_)))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    let mut end = close + 1;
    while matches!(tokens.get(end), Some(Token::Whitespace(_))) {
        end += 1;
    }
    if !is_word(tokens.get(end)?, "AND") {
        return None;
    }
    end += 1;
    if matches!(tokens.get(end), Some(Token::Whitespace(_))) {
        end += 1;
    }
    let join = join_word_before(tokens, marker)?;
    tokens.drain(marker..end);
    if kind == VERSIONED || kind == PROCESSING_TIME {
        // After the relation's name: `JOIN name FOR SYSTEM_TIME AS OF time`.
        let mut after_name = join + 1;
        while matches!(tokens.get(after_name), Some(Token::Whitespace(_))) {
            after_name += 1;
        }
        after_name += 1;
        while matches!(tokens.get(after_name), Some(Token::Period)) {
            after_name += 2;
        }
        let mut clause = Vec::new();
        for word in VERSIONING {
            clause.push(Token::Whitespace(Whitespace::Space));
            clause.push(Token::make_keyword(word));
        }
        clause.push(Token::Whitespace(Whitespace::Space));
        clause.extend(time);
        tokens.splice(
            after_name.min(tokens.len())..after_name.min(tokens.len()),
            clause,
        );
        return Some(());
    }
    let mut start = join;
    if kind == "left" {
        let word_before = |index: usize| {
            (0..index)
                .rev()
                .find(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        };
        if let Some(outer) = word_before(start).filter(|&i| is_word(&tokens[i], "OUTER")) {
            start = outer;
        }
        if let Some(left) = word_before(start).filter(|&i| is_word(&tokens[i], "LEFT")) {
            start = left;
        }
    }
    tokens.splice(
        start..start,
        [
            Token::make_keyword("ASOF"),
            Token::Whitespace(Whitespace::Space),
        ],
    );
    Some(())
}

/// The `JOIN` keyword of the join whose condition holds the token at `marker`: the nearest
/// one before it outside parentheses.
fn join_word_before(tokens: &[Token], marker: usize) -> Option<usize> {
    let mut depth = 0usize;
    for index in (0..marker).rev() {
        match &tokens[index] {
            Token::RParen => depth += 1,
            Token::LParen => depth = depth.checked_sub(1)?,
            token if depth == 0 && is_word(token, "JOIN") => return Some(index),
            _ => {}
        }
    }
    None
}

/// After `ASOF`, at `start`: `JOIN` (`inner`) or `LEFT [OUTER] JOIN` (`left`), and the index
/// just past `JOIN`.
fn join_words(tokens: &[TokenWithSpan], start: usize) -> Option<(&'static str, usize)> {
    let mut index = skip_whitespace(tokens, start);
    let kind = if is_word(&tokens.get(index)?.token, "LEFT") {
        index = skip_whitespace(tokens, index + 1);
        if is_word(&tokens.get(index)?.token, "OUTER") {
            index = skip_whitespace(tokens, index + 1);
        }
        "left"
    } else {
        "inner"
    };
    is_word(&tokens.get(index)?.token, "JOIN").then_some((kind, index + 1))
}

/// The index of the `ON` that starts the join's condition: the first outside parentheses
/// after `start`. `None` if the statement ends first, or the join is written the Snowflake
/// way (`MATCH_CONDITION`).
fn condition_start(tokens: &[TokenWithSpan], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(start) {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.checked_sub(1)?,
            Token::SemiColon | Token::EOF if depth == 0 => return None,
            token if depth == 0 && is_word(token, "MATCH_CONDITION") => return None,
            token if depth == 0 && is_word(token, "ON") => return Some(index),
            _ => {}
        }
    }
    None
}

pub(super) fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(sql: &str) -> String {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        let marked = mark_time_joins(tokens).unwrap();
        marked.iter().map(|t| t.token.to_string()).collect()
    }

    #[test]
    fn asof_joins_are_marked_and_printed_back_as_written() {
        for (sql, marker) in [
            (
                "SELECT * FROM t ASOF JOIN q ON t.k = q.k AND t.ts >= q.ts",
                "JOIN q ON __fluxion_asof('inner') AND t.k",
            ),
            (
                "SELECT * FROM t ASOF LEFT OUTER JOIN (SELECT * FROM a JOIN b ON a.x = b.x) AS q \
                 ON t.ts > q.ts WHERE t.k = 1",
                "AS q ON __fluxion_asof('left') AND t.ts",
            ),
            (
                "SELECT * FROM t asof left join q ON t.ts < q.ts ASOF JOIN r ON r.ts <= t.ts",
                "left join q ON __fluxion_asof('left') AND t.ts",
            ),
            (
                "SELECT * FROM o LEFT JOIN s.rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.c = r.c",
                "s.rates AS r ON __fluxion_asof('versioned',o.ts) AND o.c",
            ),
            (
                "SELECT * FROM o JOIN rates FOR SYSTEM_TIME AS OF PROCTIME() r ON o.c = r.c",
                "rates r ON __fluxion_asof('proctime') AND o.c",
            ),
        ] {
            let parsed = marked(sql);
            assert!(parsed.contains(marker), "{parsed}");
            assert!(!parsed.to_uppercase().contains("ASOF "), "{parsed}");
            assert!(!parsed.to_uppercase().contains("SYSTEM_TIME"), "{parsed}");
            assert_eq!(written_as_asof(parsed).to_uppercase(), sql.to_uppercase());
        }
    }

    #[test]
    fn time_joins_without_a_condition_or_with_an_expression_are_refused() {
        for sql in [
            "SELECT * FROM t ASOF JOIN q USING (k)",
            "SELECT * FROM t ASOF JOIN q MATCH_CONDITION (t.ts >= q.ts) ON t.k = q.k",
            "SELECT * FROM t JOIN q FOR SYSTEM_TIME AS OF t.ts + 1 ON t.k = q.k",
            "SELECT * FROM t JOIN q FOR SYSTEM_TIME AS OF t.ts",
        ] {
            let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
                .tokenize_with_location()
                .unwrap();
            assert!(mark_time_joins(tokens).is_err(), "{sql}");
        }
    }
}
