//! `CREATE SINK` and `DROP SINK` (see `../shared/design/SQL.md`), parsed on top of
//! sqlparser's PostgreSQL dialect:
//!
//! ```sql
//! CREATE SINK [IF NOT EXISTS] name FROM object
//!   WITH (connector = 'file' | 'kafka' | 'postgres', option = 'value', …)
//!   [FORMAT PLAIN | UPSERT | DEBEZIUM ENCODE JSON | CSV];
//! DROP SINK [IF EXISTS] name [, …];
//! ```

use std::fmt;

use datafusion::sql::sqlparser::ast::ObjectName;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};

use crate::names::{object_ref, ObjectRef};
use crate::parse::options::{parse_options, parse_upper_word, parse_word, write_options};

/// `CREATE SINK`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateSink {
    /// The sink's name.
    pub name: ObjectRef,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// The relation whose changes it delivers.
    pub from: ObjectRef,
    /// The `WITH (…)` options, names in lower case, in the order written.
    pub options: Vec<(String, String)>,
    /// `FORMAT …` (upper case; default PLAIN).
    pub format: Option<String>,
    /// `ENCODE …` (upper case; default JSON).
    pub encode: Option<String>,
}

/// One of the statements this module parses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SinkStatement {
    /// `CREATE SINK`.
    Create(CreateSink),
    /// `DROP SINK [IF EXISTS] names`.
    Drop {
        names: Vec<ObjectName>,
        if_exists: bool,
    },
}

/// What a speculative parse fails with when the statement is not one of this module's.
const NOT_OURS: &str = "not a statement of sink_statements";

/// Parses the statement at the parser's position if it is one of this module's; `Ok(None)`
/// (with nothing consumed) otherwise.
pub(crate) fn parse_sink_statement(
    parser: &mut Parser,
) -> Result<Option<SinkStatement>, ParserError> {
    match parser.try_parse(parse_own_statement) {
        Ok(statement) => Ok(Some(statement)),
        Err(ParserError::ParserError(message)) if message == NOT_OURS => Ok(None),
        Err(e) => Err(e),
    }
}

fn parse_own_statement(parser: &mut Parser) -> Result<SinkStatement, ParserError> {
    let create = parser.parse_keyword(Keyword::CREATE);
    if !create && !parser.parse_keyword(Keyword::DROP) {
        return Err(ParserError::ParserError(NOT_OURS.into()));
    }
    if !parse_word(parser, "SINK") {
        return Err(ParserError::ParserError(NOT_OURS.into()));
    }
    if !create {
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let names = parser.parse_comma_separated(|p| p.parse_object_name(false))?;
        return Ok(SinkStatement::Drop { names, if_exists });
    }
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parse_name(parser)?;
    parser.expect_keyword(Keyword::FROM)?;
    let from = parse_name(parser)?;
    parser.expect_keyword(Keyword::WITH)?;
    let options = parse_options(parser)?;
    let (format, encode) = if parser.parse_keyword(Keyword::FORMAT) {
        let format = parse_upper_word(parser)?;
        if !parse_word(parser, "ENCODE") {
            return parser.expected("ENCODE", parser.peek_token());
        }
        (Some(format), Some(parse_upper_word(parser)?))
    } else {
        (None, None)
    };
    Ok(SinkStatement::Create(CreateSink {
        name,
        if_not_exists,
        from,
        options,
        format,
        encode,
    }))
}

impl CreateSink {
    /// The value of option `name`.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An object name written in a sink statement.
fn parse_name(parser: &mut Parser) -> Result<ObjectRef, ParserError> {
    let name = parser.parse_object_name(false)?;
    object_ref(&name).map_err(|e| ParserError::ParserError(e.to_string()))
}

impl fmt::Display for CreateSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE SINK ")?;
        if self.if_not_exists {
            write!(f, "IF NOT EXISTS ")?;
        }
        write!(
            f,
            "{} FROM {} WITH ",
            self.name.to_sql(),
            self.from.to_sql()
        )?;
        write_options(f, &self.options)?;
        if let (Some(format), Some(encode)) = (&self.format, &self.encode) {
            write!(f, " FORMAT {format} ENCODE {encode}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;

    use super::*;

    fn parse(sql: &str) -> Result<Option<SinkStatement>, ParserError> {
        let dialect = PostgreSqlDialect {};
        let mut parser = Parser::new(&dialect).try_with_sql(sql)?;
        parse_sink_statement(&mut parser)
    }

    #[test]
    fn create_sink_round_trips_through_its_text() {
        let sql = "CREATE SINK IF NOT EXISTS s FROM shop.orders WITH (connector = 'file', \
                   path = '/tmp/out') FORMAT UPSERT ENCODE JSON";
        let Some(SinkStatement::Create(create)) = parse(sql).expect("parsed") else {
            panic!("not CREATE SINK");
        };
        assert_eq!(create.to_string(), sql);
        assert_eq!(create.options[0], ("connector".into(), "file".into()));
    }

    #[test]
    fn drop_sink_and_other_statements() {
        assert_eq!(
            parse("DROP SINK IF EXISTS a, b").expect("parsed"),
            Some(SinkStatement::Drop {
                names: vec![
                    ObjectName::from(vec!["a".into()]),
                    ObjectName::from(vec!["b".into()])
                ],
                if_exists: true,
            })
        );
        assert_eq!(parse("DROP TABLE t").expect("parsed"), None);
        assert_eq!(
            parse("CREATE SOURCE s WITH (connector = 'counter')").expect("parsed"),
            None
        );
        assert!(parse("CREATE SINK s FROM").is_err());
    }
}
