//! A statement as the coordinator receives it: PostgreSQL's SQL (parsed by sqlparser) or one
//! of Fluxion's own (`CREATE SOURCE`, `DROP SOURCE`, `SUBSCRIBE`, …).

use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::error::CoordError;
use crate::sink_statements::{parse_sink_statement, CreateSink, SinkStatement};
use crate::source_statements::{
    parse_source_statement, CreateSource, CreateTableFromSource, DropSource, SourceStatement,
};
use crate::subscribe_statements::{
    parse_subscribe_statement, CreateSubscription, Subscribe, SubscribeStatement,
};

/// One parsed statement.
// sqlparser's statement is the large variant and is moved by value everywhere already;
// boxing it would only add an allocation per statement.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// A statement of PostgreSQL's SQL.
    Sql(ast::Statement),
    /// `CREATE SOURCE`.
    CreateSource(CreateSource),
    /// `DROP SOURCE`.
    DropSource(DropSource),
    /// `SHOW CREATE SOURCE name`.
    ShowCreateSource(ast::ObjectName),
    /// `CREATE TABLE … FROM source TABLE '…'`.
    CreateTableFromSource(CreateTableFromSource),
    /// `SUBSCRIBE …`: the changes, streamed as the statement's rows.
    Subscribe(Subscribe),
    /// `COPY (SUBSCRIBE …) TO STDOUT [WITH (…)]`: the changes, streamed as COPY data.
    CopySubscribe {
        /// The subscription.
        subscribe: Subscribe,
        /// COPY's options (`format`, `delimiter`, `null`, `header`).
        options: Vec<(String, String)>,
    },
    /// `DECLARE name CURSOR FOR SUBSCRIBE …`.
    DeclareSubscribe {
        /// The cursor.
        name: ast::Ident,
        /// The subscription.
        subscribe: Subscribe,
    },
    /// `CREATE SUBSCRIPTION`.
    CreateSubscription(CreateSubscription),
    /// `CREATE SINK`.
    CreateSink(CreateSink),
    /// `DROP SINK`.
    DropSink {
        /// The sinks.
        names: Vec<ast::ObjectName>,
        /// `IF EXISTS`.
        if_exists: bool,
    },
    /// `DROP SUBSCRIPTION`.
    DropSubscription {
        /// The subscriptions.
        names: Vec<ast::ObjectName>,
        /// `IF EXISTS`.
        if_exists: bool,
    },
    /// `FETCH … WITH (timeout = '…')`.
    FetchWithTimeout {
        /// The FETCH itself (sqlparser's).
        fetch: Box<ast::Statement>,
        /// How long to wait for a row.
        timeout: std::time::Duration,
    },
}

impl std::fmt::Display for Statement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Statement::Sql(statement) => write!(f, "{statement}"),
            Statement::CreateSource(create) => write!(f, "{create}"),
            Statement::DropSource(drop) => {
                let names: Vec<String> = drop.names.iter().map(ToString::to_string).collect();
                write!(f, "DROP SOURCE {}", names.join(", "))
            }
            Statement::ShowCreateSource(name) => write!(f, "SHOW CREATE SOURCE {name}"),
            Statement::CreateTableFromSource(create) => write!(f, "{create}"),
            Statement::Subscribe(subscribe) => write!(f, "{subscribe}"),
            Statement::CopySubscribe { subscribe, .. } => write!(f, "COPY ({subscribe}) TO STDOUT"),
            Statement::DeclareSubscribe { name, subscribe } => {
                write!(f, "DECLARE {name} CURSOR FOR {subscribe}")
            }
            Statement::FetchWithTimeout { fetch, timeout } => {
                write!(f, "{fetch} WITH (timeout = '{}ms')", timeout.as_millis())
            }
            Statement::CreateSubscription(create) => write!(f, "{create}"),
            Statement::CreateSink(create) => write!(f, "{create}"),
            Statement::DropSink { names, .. } => {
                let names: Vec<String> = names.iter().map(ToString::to_string).collect();
                write!(f, "DROP SINK {}", names.join(", "))
            }
            Statement::DropSubscription { names, .. } => {
                let names: Vec<String> = names.iter().map(ToString::to_string).collect();
                write!(f, "DROP SUBSCRIPTION {}", names.join(", "))
            }
        }
    }
}

/// Parses SQL text into statements (separated by semicolons).
///
/// Literals in PostgreSQL statements are normalized to spellings DataFusion's parsers accept
/// (see [`crate::postgres_literals`]).
pub fn parse(sql: &str) -> Result<Vec<Statement>, CoordError> {
    let syntax =
        |e: datafusion::sql::sqlparser::parser::ParserError| CoordError::Syntax(e.to_string());
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect).try_with_sql(sql).map_err(syntax)?;
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
            return Err(syntax(
                parser
                    .expected::<()>("end of statement", parser.peek_token())
                    .unwrap_err(),
            ));
        }
        if let Some(statement) = parse_subscribe_statement(&mut parser).map_err(syntax)? {
            statements.push(match statement {
                SubscribeStatement::Subscribe(subscribe) => Statement::Subscribe(subscribe),
                SubscribeStatement::Copy { subscribe, options } => {
                    Statement::CopySubscribe { subscribe, options }
                }
                SubscribeStatement::Declare { name, subscribe } => {
                    Statement::DeclareSubscribe { name, subscribe }
                }
                SubscribeStatement::Fetch(fetch) => Statement::Sql(*fetch),
                SubscribeStatement::Create(create) => Statement::CreateSubscription(create),
                SubscribeStatement::Drop { names, if_exists } => {
                    Statement::DropSubscription { names, if_exists }
                }
                SubscribeStatement::FetchWithTimeout { fetch, timeout } => {
                    Statement::FetchWithTimeout { fetch, timeout }
                }
            });
            continue;
        }
        if let Some(statement) = parse_sink_statement(&mut parser).map_err(syntax)? {
            statements.push(match statement {
                SinkStatement::Create(create) => Statement::CreateSink(create),
                SinkStatement::Drop { names, if_exists } => {
                    Statement::DropSink { names, if_exists }
                }
            });
            continue;
        }
        let statement = match parse_source_statement(&mut parser).map_err(syntax)? {
            Some(SourceStatement::Create(create)) => Statement::CreateSource(*create),
            Some(SourceStatement::Drop(drop)) => Statement::DropSource(drop),
            Some(SourceStatement::ShowCreate(name)) => Statement::ShowCreateSource(name),
            Some(SourceStatement::CreateTableFrom(create)) => {
                Statement::CreateTableFromSource(*create)
            }
            Some(SourceStatement::Sql(mut statement)) => {
                crate::postgres_literals::normalize_literals(&mut statement);
                Statement::Sql(*statement)
            }
            None => {
                let mut statement = parser.parse_statement().map_err(syntax)?;
                crate::postgres_literals::normalize_literals(&mut statement);
                Statement::Sql(statement)
            }
        };
        statements.push(statement);
    }
    Ok(statements)
}

/// The object name written in `text` (`orders`, `shop.orders`, `"Odd Name"`), as in an
/// option's value.
pub(crate) fn parse_object_name(text: &str) -> Result<ast::ObjectName, CoordError> {
    let syntax =
        |e: datafusion::sql::sqlparser::parser::ParserError| CoordError::Syntax(e.to_string());
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect).try_with_sql(text).map_err(syntax)?;
    let name = parser.parse_object_name(false).map_err(syntax)?;
    if parser.peek_token().token != Token::EOF {
        return Err(CoordError::Syntax(format!("\"{text}\" is not a name")));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_fluxion_and_postgres_statements() {
        let statements =
            parse("CREATE SOURCE c WITH (connector = 'counter'); SELECT 1;; DROP SOURCE c; COMMIT")
                .unwrap();
        assert!(matches!(statements[0], Statement::CreateSource(_)));
        assert!(matches!(
            statements[1],
            Statement::Sql(ast::Statement::Query(_))
        ));
        assert!(matches!(statements[2], Statement::DropSource(_)));
        assert!(matches!(
            statements[3],
            Statement::Sql(ast::Statement::Commit { .. })
        ));
    }

    #[test]
    fn statements_need_separators() {
        assert!(parse("SELECT 1 SELECT 2").is_err());
        assert!(parse("").unwrap().is_empty());
    }
}
