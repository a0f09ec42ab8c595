//! Parsing: SQL text into typed [`Statement`]s.
//!
//! PostgreSQL's statements are parsed by sqlparser's PostgreSQL dialect (through DataFusion);
//! Fluxion's own statements — sources, sinks and subscriptions (see [`crate::statement`]) —
//! are parsed on top of it, with the same tokenizer, so that both kinds
//! mix freely in one query string. Literals are normalized to spellings DataFusion's parsers
//! accept (see [`crate::literals`]).

mod asof;
pub(crate) mod bounds;
mod emit;
pub(crate) mod options;
mod table_watermark;

use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::literals::normalize_literals;
use crate::names::{object_ref, ObjectRef};
use crate::statement::ddl::renamed_to;
use crate::statement::privileges::parse_privilege_statement;
use crate::statement::roles::{parse_user_statement, sign_connection_limits};
use crate::statement::sinks::{parse_sink_statement, SinkStatement};
use crate::statement::sources::{parse_source_statement, SourceStatement};
use crate::statement::subscriptions::{parse_subscribe_statement, SubscribeStatement};
use crate::statement::watermark::WatermarkClause;
use crate::statement::{Drop, ObjectKind, Rename, Show, Statement};
use crate::SqlError;
pub(crate) use asof::written_as_asof;

/// Parses SQL text into statements (separated by semicolons).
///
/// A statement that parses but that Fluxion cannot run is returned as
/// [`Statement::Rejected`]; text that does not parse is a [`SqlError::Syntax`].
///
/// ```
/// let statements = sql::parse("CREATE TABLE t (a int); SELECT a FROM t").unwrap();
/// assert!(matches!(statements[0], sql::Statement::CreateTable(_)));
/// assert!(matches!(statements[1], sql::Statement::Select(_)));
/// ```
pub fn parse(sql: &str) -> Result<Vec<Statement>, SqlError> {
    parse_noting_truncations(sql).map(|(statements, _)| statements)
}

/// PostgreSQL's longest identifier, in bytes (`max_identifier_length`): longer ones are cut.
pub const MAX_IDENTIFIER_BYTES: usize = 63;

/// An identifier longer than [`MAX_IDENTIFIER_BYTES`], as written and as cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncatedIdentifier {
    /// The identifier as the SQL text spells it.
    pub written: String,
    /// Its first [`MAX_IDENTIFIER_BYTES`] bytes (fewer if a character would be split).
    pub truncated: String,
}

/// [`parse`], also telling which identifiers were cut to [`MAX_IDENTIFIER_BYTES`]: as in
/// PostgreSQL's lexer, every identifier (quoted or not) is cut, so that a name always means
/// the same object however long it is written.
pub fn parse_noting_truncations(
    sql: &str,
) -> Result<(Vec<Statement>, Vec<TruncatedIdentifier>), SqlError> {
    let dialect = PostgreSqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(ParserError::from)?;
    let truncations = tokens
        .iter_mut()
        .filter_map(|token| match &mut token.token {
            Token::Word(word) => truncate_identifier(&mut word.value),
            _ => None,
        })
        .collect();
    let tokens = asof::mark_time_joins(tokens)?;
    let (tokens, table_watermarks) = table_watermark::strip_table_watermarks(tokens)?;
    let (tokens, emit_clauses) = emit::strip_emit_clauses(tokens);
    let tokens = sign_connection_limits(tokens);
    bounds::check_call_nesting(&tokens)?;
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(tokens.clone());
    let mut statements = Vec::new();
    loop {
        let mut ended = false;
        while parser.consume_token(&Token::SemiColon) {
            ended = true;
        }
        if parser.peek_token().token == Token::EOF {
            break;
        }
        if !statements.is_empty() && !ended {
            return Err(parser
                .expected::<()>("end of statement", parser.peek_token())
                .unwrap_err()
                .into());
        }
        if let Some(name) = parse_refresh(&mut parser)? {
            statements.push(Statement::RefreshMaterializedView(name));
            continue;
        }
        if let Some(statement) = parse_privilege_statement(&mut parser)? {
            statements.push(statement);
            continue;
        }
        if let Some(statement) = parse_user_statement(&mut parser)? {
            statements.push(statement);
            continue;
        }
        if let Some(rename) = parse_view_rename(&mut parser)? {
            statements.push(Statement::Rename(rename));
            continue;
        }
        if let Some(statement) = parse_subscribe_statement(&mut parser)? {
            statements.push(typed_subscribe_statement(statement)?);
            continue;
        }
        if let Some(statement) = parse_sink_statement(&mut parser)? {
            statements.push(match statement {
                SinkStatement::Create(create) => Statement::CreateSink(create),
                SinkStatement::Drop { names, if_exists } => {
                    drop_statement(ObjectKind::Sink, &names, if_exists, false, Vec::new())?
                }
            });
            continue;
        }
        let start = parser.index();
        let statement = match parse_source_statement(&mut parser)? {
            Some(SourceStatement::Create(create)) => Statement::CreateSource(*create),
            Some(SourceStatement::Drop(drop)) => drop_statement(
                ObjectKind::Source,
                &drop.names,
                drop.if_exists,
                drop.cascade,
                drop.options,
            )?,
            Some(SourceStatement::ShowCreate(name)) => Statement::Show(Show::Create {
                name: object_ref(&name)?,
                kind: Some(ObjectKind::Source),
            }),
            Some(SourceStatement::CreateTableFrom(create)) => {
                Statement::CreateTableFromSource(*create)
            }
            Some(SourceStatement::Sql(statement)) => {
                let mut statement = bounds::check_bounds(*statement)?;
                normalize_literals(&mut statement);
                Statement::from_sql(statement)
            }
            None => {
                let mut statement = bounds::check_bounds(parser.parse_statement()?)?;
                normalize_literals(&mut statement);
                let emits = emit_clauses
                    .iter()
                    .any(|p| *p > start && emit::ends_at(&tokens, parser.index(), *p));
                let statement = Statement::from_sql(statement);
                if emits {
                    emit_on_window_close(statement)
                } else {
                    statement
                }
            }
        };
        let watermark = table_watermarks
            .iter()
            .find(|w| w.belongs_to(start, parser.index()));
        let statement = match watermark {
            Some(watermark) => with_table_watermark(statement, &watermark.clause),
            None => statement,
        };
        statements.push(statement);
    }
    Ok((statements, truncations))
}

/// Cuts `identifier` to [`MAX_IDENTIFIER_BYTES`] at a character boundary, if it is longer.
fn truncate_identifier(identifier: &mut String) -> Option<TruncatedIdentifier> {
    if identifier.len() <= MAX_IDENTIFIER_BYTES {
        return None;
    }
    let end = (0..=MAX_IDENTIFIER_BYTES)
        .rev()
        .find(|i| identifier.is_char_boundary(*i))
        .unwrap_or(0);
    let written = identifier.clone();
    identifier.truncate(end);
    Some(TruncatedIdentifier {
        written,
        truncated: identifier.clone(),
    })
}

/// `statement` with `EMIT ON WINDOW CLOSE`: only a materialized view takes it.
fn emit_on_window_close(statement: Statement) -> Statement {
    match statement {
        Statement::CreateView(mut create) if create.materialized => {
            create.emit_on_window_close = true;
            Statement::CreateView(create)
        }
        Statement::Explain(crate::statement::Explain::View(mut create)) if create.materialized => {
            create.emit_on_window_close = true;
            Statement::Explain(crate::statement::Explain::View(create))
        }
        Statement::Rejected(e) => Statement::Rejected(e),
        _ => Statement::Rejected(SqlError::Unsupported(
            "EMIT ON WINDOW CLOSE outside CREATE MATERIALIZED VIEW".into(),
        )),
    }
}

/// `statement`, a `CREATE TABLE`, with the watermark `clause` written among its columns.
fn with_table_watermark(statement: Statement, clause: &WatermarkClause) -> Statement {
    match statement {
        Statement::CreateTable(create) => Statement::CreateTable(create.with_watermark(clause)),
        Statement::CreateTableFromSource(mut from) => {
            from.table = from.table.with_watermark(clause);
            Statement::CreateTableFromSource(from)
        }
        Statement::Rejected(e) => Statement::Rejected(e),
        _ => Statement::Rejected(SqlError::Unsupported(
            "WATERMARK in CREATE TABLE … AS: declare the table's columns".into(),
        )),
    }
}

/// Parses SQL text into sqlparser's statements, literals normalized: for rewrites that build
/// SQL inside this crate.
pub(crate) fn parse_sql(sql: &str) -> Result<Vec<ast::Statement>, SqlError> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql)?;
    for statement in &mut statements {
        normalize_literals(statement);
    }
    Ok(statements)
}

/// The object name written in `text` (`orders`, `shop.orders`, `"Odd Name"`), as in an
/// option's value.
///
/// ```
/// let name = sql::parse_object_name("Shop.\"Odd Name\"").unwrap();
/// assert_eq!(name, sql::ObjectRef::qualified("shop", "Odd Name"));
/// ```
pub fn parse_object_name(text: &str) -> Result<ObjectRef, SqlError> {
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect).try_with_sql(text)?;
    let name = parser.parse_object_name(false)?;
    if parser.peek_token().token != Token::EOF {
        return Err(SqlError::Syntax(format!("\"{text}\" is not a name")));
    }
    object_ref(&name)
}

/// `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]`, which sqlparser does
/// not parse; `None` (nothing consumed) for any other statement.
fn parse_refresh(parser: &mut Parser) -> Result<Option<ObjectRef>, SqlError> {
    if !parser.parse_keywords(&[Keyword::REFRESH, Keyword::MATERIALIZED, Keyword::VIEW]) {
        return Ok(None);
    }
    let _ = parser.parse_keyword(Keyword::CONCURRENTLY);
    let name = parser.parse_object_name(false)?;
    if parser.parse_keyword(Keyword::WITH) {
        let _ = parser.parse_keyword(Keyword::NO);
        parser.expect_keyword_is(Keyword::DATA)?;
    }
    Ok(Some(object_ref(&name)?))
}

/// `ALTER [MATERIALIZED] VIEW [IF EXISTS] name RENAME TO new_name`, which sqlparser does not
/// parse; `None` (nothing consumed) for any other statement, other ALTER VIEWs included.
fn parse_view_rename(parser: &mut Parser) -> Result<Option<Rename>, SqlError> {
    let rename = parser.maybe_parse(|parser| {
        parser.expect_keyword_is(Keyword::ALTER)?;
        let kind = if parser.parse_keywords(&[Keyword::MATERIALIZED, Keyword::VIEW]) {
            ObjectKind::MaterializedView
        } else {
            parser.expect_keyword_is(Keyword::VIEW)?;
            ObjectKind::View
        };
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let name = parser.parse_object_name(false)?;
        parser.expect_keywords(&[Keyword::RENAME, Keyword::TO])?;
        Ok((kind, if_exists, name))
    })?;
    let Some((kind, if_exists, name)) = rename else {
        return Ok(None);
    };
    let new_name = parser.parse_object_name(false)?;
    Ok(Some(Rename {
        kind,
        name: object_ref(&name)?,
        new_name: renamed_to(&new_name)?,
        if_exists,
    }))
}

/// A `DROP` of objects of `kind`.
fn drop_statement(
    kind: ObjectKind,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
    options: Vec<(String, String)>,
) -> Result<Statement, SqlError> {
    Ok(Statement::Drop(Drop {
        kind,
        names: names.iter().map(object_ref).collect::<Result<_, _>>()?,
        if_exists,
        cascade,
        options,
    }))
}

/// A statement of [`subscriptions`], typed.
fn typed_subscribe_statement(statement: SubscribeStatement) -> Result<Statement, SqlError> {
    Ok(match statement {
        SubscribeStatement::Subscribe(subscribe) => Statement::Subscribe(subscribe),
        SubscribeStatement::Copy { subscribe, options } => Statement::CopySubscribe {
            subscribe,
            options: crate::statement::CopyOptions::from_pairs(&options)?,
        },
        SubscribeStatement::Declare { name, subscribe } => {
            Statement::Declare(crate::statement::Declare::subscription(&name, subscribe))
        }
        SubscribeStatement::Fetch(fetch) => Statement::from_sql(*fetch),
        SubscribeStatement::Create(create) => Statement::CreateSubscription(create),
        SubscribeStatement::Drop { names, if_exists } => drop_statement(
            ObjectKind::Subscription,
            &names,
            if_exists,
            false,
            Vec::new(),
        )?,
        SubscribeStatement::FetchWithTimeout { fetch, timeout } => match *fetch {
            ast::Statement::Fetch {
                name, direction, ..
            } => match crate::statement::Fetch::from_sql(&name, &direction, Some(timeout)) {
                Ok(fetch) => Statement::Fetch(fetch),
                Err(e) => Statement::Rejected(e),
            },
            other => Statement::Rejected(SqlError::Internal(format!("{other} is not a FETCH"))),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_identifiers_are_cut_at_a_character_boundary() {
        let long = "a".repeat(70);
        let accented = format!("x{}", "é".repeat(40));
        let sql = format!("SELECT {long} FROM \"{accented}\"");
        let (statements, truncations) = parse_noting_truncations(&sql).unwrap();
        assert_eq!(statements.len(), 1);
        assert_eq!(
            truncations,
            [
                TruncatedIdentifier {
                    written: long.clone(),
                    truncated: "a".repeat(63),
                },
                TruncatedIdentifier {
                    written: accented.clone(),
                    truncated: format!("x{}", "é".repeat(31)),
                },
            ]
        );
        let (_, none) = parse_noting_truncations("SELECT a FROM t").unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn mixes_fluxion_and_postgres_statements() {
        let statements =
            parse("CREATE SOURCE c WITH (connector = 'counter'); SELECT 1;; DROP SOURCE c; COMMIT")
                .unwrap();
        assert!(matches!(statements[0], Statement::CreateSource(_)));
        assert!(matches!(statements[1], Statement::Select(_)));
        assert!(matches!(
            &statements[2],
            Statement::Drop(Drop {
                kind: ObjectKind::Source,
                ..
            })
        ));
        assert!(matches!(statements[3], Statement::Commit));
    }

    #[test]
    fn emit_on_window_close_ends_a_materialized_view() {
        let statements = parse(
            "CREATE MATERIALIZED VIEW v AS SELECT * FROM t emit on window close; \
             CREATE MATERIALIZED VIEW w AS SELECT * FROM t; SELECT * FROM t emit",
        )
        .unwrap();
        let emits = |s: &Statement| match s {
            Statement::CreateView(create) => Some(create.emit_on_window_close),
            _ => None,
        };
        assert_eq!(emits(&statements[0]), Some(true));
        assert_eq!(emits(&statements[1]), Some(false));
        assert!(
            matches!(statements[2], Statement::Select(_)),
            "EMIT as an alias"
        );
        let Statement::CreateView(create) = &statements[0] else {
            unreachable!()
        };
        assert!(create.to_sql().ends_with(" EMIT ON WINDOW CLOSE"));
        assert!(matches!(
            &parse("CREATE VIEW v AS SELECT 1 EMIT ON WINDOW CLOSE").unwrap()[0],
            Statement::Rejected(SqlError::Unsupported(_))
        ));
        assert!(parse("CREATE MATERIALIZED VIEW v AS SELECT 1 EMIT ON WINDOW CLOSE 1").is_err());
    }

    #[test]
    fn statements_need_separators() {
        assert!(parse("SELECT 1 SELECT 2").is_err());
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn what_fluxion_cannot_run_is_rejected_when_run_not_when_parsed() {
        let statements = parse("DROP FUNCTION f; SELECT 1").unwrap();
        assert!(matches!(
            &statements[0],
            Statement::Rejected(SqlError::Unsupported(message)) if message == "statement DROP FUNCTION"
        ));
    }
}
