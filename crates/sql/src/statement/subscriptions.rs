//! `SUBSCRIBE` and the statements that carry one (see `../shared/design/SQL.md`), parsed on
//! top of sqlparser's PostgreSQL dialect:
//!
//! ```sql
//! SUBSCRIBE [TO] { name | (query) } [WITH (SNAPSHOT [= bool], PROGRESS [= bool])]
//!   [AS OF expr];
//! COPY (SUBSCRIBE …) TO STDOUT [WITH (…)];
//! DECLARE name [NO SCROLL] CURSOR [WITHOUT HOLD] FOR SUBSCRIBE …;
//! FETCH [NEXT | ALL | FORWARD [count | ALL] | count] [FROM | IN] name
//!   [WITH (timeout = 'interval')];
//! CREATE SUBSCRIPTION [IF NOT EXISTS] name FROM object [WITH (retention = 'interval')];
//! DROP SUBSCRIPTION [IF EXISTS] name [, …];
//! ```

use std::fmt;
use std::time::Duration;

use datafusion::arrow::array::{Array, Int64Array};
use datafusion::execution::context::SessionState;
use datafusion::sql::sqlparser::ast::{
    Expr, FetchDirection, FetchPosition, Ident, ObjectName, Statement,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::Query;
use crate::names::{object_ref, ObjectRef};
use crate::parse::options::{parse_option_value, parse_word};
use crate::SqlError;

/// `SUBSCRIBE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscribe {
    /// What to watch.
    pub target: SubscribeTarget,
    /// Start with the contents at the starting time (`SNAPSHOT`, default true).
    pub snapshot: bool,
    /// Report times that close without changes (`PROGRESS`, default false).
    pub progress: bool,
    /// The time to start at (`AS OF`; default: the current read time).
    pub as_of: Option<AsOf>,
}

/// The expression of `AS OF`: a time as `_timestamp` gives it (milliseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct AsOf(pub(crate) Expr);

impl AsOf {
    /// The time the expression names, evaluated once in `state`.
    pub async fn evaluate(&self, state: &SessionState) -> Result<u64, SqlError> {
        let query = format!("SELECT CAST(({}) AS BIGINT)", self.0);
        let statement = crate::parse::parse_sql(&query)?
            .pop()
            .ok_or_else(|| SqlError::Internal("AS OF query vanished".into()))?;
        let logical = state
            .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                statement,
            )))
            .await?;
        let state = crate::correlated_subqueries::state_for(state, &logical);
        let physical = state.create_physical_plan(&logical).await?;
        let batches = datafusion::physical_plan::collect(physical, state.task_ctx()).await?;
        let value = batches
            .first()
            .filter(|b| b.num_rows() == 1)
            .and_then(|b| b.column(0).as_any().downcast_ref::<Int64Array>())
            .filter(|a| !a.is_null(0))
            .map(|a| a.value(0));
        match value {
            Some(time) if time >= 0 => Ok(time as u64),
            _ => Err(SqlError::InvalidStatement(format!(
                "AS OF {} is not a timestamp (a non-negative number, as in _timestamp)",
                self.0
            ))),
        }
    }
}

impl fmt::Display for AsOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a subscription watches.
#[derive(Debug, Clone, PartialEq)]
pub enum SubscribeTarget {
    /// A table, source, view or materialized view.
    Object(ObjectRef),
    /// A query.
    Query(Query),
}

/// `CREATE SUBSCRIPTION`: a durable subscription, whose changes are kept for `retention`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateSubscription {
    /// The subscription's name.
    pub name: ObjectRef,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// What it watches.
    pub from: ObjectRef,
    /// How long changes are kept (`WITH (retention = '…')`, default one day).
    pub retention: Duration,
}

/// How long a durable subscription keeps its changes when `retention` is not given.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// One of the statements this module parses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SubscribeStatement {
    /// `SUBSCRIBE …`: rows of the statement, streamed.
    Subscribe(Subscribe),
    /// `COPY (SUBSCRIBE …) TO STDOUT [WITH (…)]`: COPY data, streamed.
    Copy {
        subscribe: Subscribe,
        options: Vec<(String, String)>,
    },
    /// `DECLARE name CURSOR FOR SUBSCRIBE …`.
    Declare { name: Ident, subscribe: Subscribe },
    /// A forward `FETCH` (`FROM` may be left out, as in Postgres).
    Fetch(Box<Statement>),
    /// `CREATE SUBSCRIPTION`.
    Create(CreateSubscription),
    /// `DROP SUBSCRIPTION [IF EXISTS] names`.
    Drop {
        names: Vec<ObjectName>,
        if_exists: bool,
    },
    /// `FETCH … WITH (timeout = '…')`: the FETCH (sqlparser's) and how long it may wait.
    FetchWithTimeout {
        fetch: Box<Statement>,
        timeout: Duration,
    },
}

/// What a speculative parse fails with when the statement is not one of this module's.
const NOT_OURS: &str = "not a statement of subscribe_statements";

/// Parses the statement at the parser's position if it is one of this module's; `Ok(None)`
/// (with nothing consumed) otherwise.
pub(crate) fn parse_subscribe_statement(
    parser: &mut Parser,
) -> Result<Option<SubscribeStatement>, ParserError> {
    // `try_parse` puts the parser back where it was when the closure fails.
    match parser.try_parse(parse_own_statement) {
        Ok(statement) => Ok(Some(statement)),
        Err(ParserError::ParserError(message)) if message == NOT_OURS => Ok(None),
        Err(e) => Err(e),
    }
}

fn not_ours<T>() -> Result<T, ParserError> {
    Err(ParserError::ParserError(NOT_OURS.into()))
}

/// One of this module's statements, or the [`NOT_OURS`] error.
fn parse_own_statement(parser: &mut Parser) -> Result<SubscribeStatement, ParserError> {
    if parse_word(parser, "SUBSCRIBE") {
        return parse_subscribe(parser).map(SubscribeStatement::Subscribe);
    }
    if parser.parse_keyword(Keyword::COPY) {
        if !(parser.consume_token(&Token::LParen) && parse_word(parser, "SUBSCRIBE")) {
            return not_ours();
        }
        let subscribe = parse_subscribe(parser)?;
        parser.expect_token(&Token::RParen)?;
        parser.expect_keyword(Keyword::TO)?;
        if !parse_word(parser, "STDOUT") {
            return parser.expected(
                "STDOUT (a subscription is only copied out)",
                parser.peek_token(),
            );
        }
        let options =
            if parser.parse_keyword(Keyword::WITH) || parser.peek_token().token == Token::LParen {
                parse_copy_options(parser)?
            } else {
                Vec::new()
            };
        return Ok(SubscribeStatement::Copy { subscribe, options });
    }
    if parser.parse_keyword(Keyword::DECLARE) {
        let name = parser.parse_identifier()?;
        let _ = parser.parse_keywords(&[Keyword::NO, Keyword::SCROLL]);
        if !parser.parse_keyword(Keyword::CURSOR) {
            return not_ours();
        }
        let _ = parser.parse_keywords(&[Keyword::WITHOUT, Keyword::HOLD]);
        if !(parser.parse_keyword(Keyword::FOR) && parse_word(parser, "SUBSCRIBE")) {
            return not_ours();
        }
        let subscribe = parse_subscribe(parser)?;
        return Ok(SubscribeStatement::Declare { name, subscribe });
    }
    if parser.parse_keyword(Keyword::FETCH) {
        return match parse_forward_direction(parser)? {
            Some(direction) => parse_fetch(parser, direction),
            None => not_ours(),
        };
    }
    if parser.parse_keyword(Keyword::CREATE) {
        if !parse_word(parser, "SUBSCRIPTION") {
            return not_ours();
        }
        return parse_create_subscription(parser).map(SubscribeStatement::Create);
    }
    if parser.parse_keyword(Keyword::DROP) && parse_word(parser, "SUBSCRIPTION") {
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let names = parser.parse_comma_separated(|p| p.parse_object_name(false))?;
        return Ok(SubscribeStatement::Drop { names, if_exists });
    }
    not_ours()
}

/// The direction of a FETCH that moves forward (`NEXT`, `ALL`, `FORWARD [n | ALL]`, `n`, or
/// nothing: `NEXT`); `None` (nothing consumed) for the others, which sqlparser parses.
fn parse_forward_direction(parser: &mut Parser) -> Result<Option<FetchDirection>, ParserError> {
    if parser.parse_keyword(Keyword::NEXT) {
        return Ok(Some(FetchDirection::Next));
    }
    if parser.parse_keyword(Keyword::ALL) {
        return Ok(Some(FetchDirection::All));
    }
    if parser.parse_keyword(Keyword::FORWARD) {
        if parser.parse_keyword(Keyword::ALL) {
            return Ok(Some(FetchDirection::ForwardAll));
        }
        let limit = match parser.peek_token().token {
            Token::Number(..) => Some(parser.parse_number_value()?),
            _ => None,
        };
        return Ok(Some(FetchDirection::Forward { limit }));
    }
    match &parser.peek_token().token {
        Token::Number(..) => Ok(Some(FetchDirection::Count {
            limit: parser.parse_number_value()?,
        })),
        Token::Word(word)
            if matches!(
                word.keyword,
                Keyword::PRIOR
                    | Keyword::FIRST
                    | Keyword::LAST
                    | Keyword::ABSOLUTE
                    | Keyword::RELATIVE
                    | Keyword::BACKWARD
            ) =>
        {
            Ok(None)
        }
        _ => Ok(Some(FetchDirection::Next)),
    }
}

/// The rest of a forward FETCH: `[FROM | IN] name [WITH (timeout = '…')]` (Postgres lets
/// FROM be left out).
fn parse_fetch(
    parser: &mut Parser,
    direction: FetchDirection,
) -> Result<SubscribeStatement, ParserError> {
    let position = if parser.parse_keyword(Keyword::IN) {
        FetchPosition::In
    } else {
        let _ = parser.parse_keyword(Keyword::FROM);
        FetchPosition::From
    };
    let fetch = Statement::Fetch {
        name: parser.parse_identifier()?,
        direction,
        position,
        into: None,
    };
    if !parser.parse_keyword(Keyword::WITH) {
        return Ok(SubscribeStatement::Fetch(Box::new(fetch)));
    }
    parser.expect_token(&Token::LParen)?;
    if !parse_word(parser, "TIMEOUT") {
        return parser.expected("timeout (the only FETCH option)", parser.peek_token());
    }
    parser.expect_token(&Token::Eq)?;
    let text = parse_option_value(parser)?;
    parser.expect_token(&Token::RParen)?;
    let timeout = parse_timeout(&text)
        .ok_or_else(|| ParserError::ParserError(format!("invalid FETCH timeout \"{text}\"")))?;
    Ok(SubscribeStatement::FetchWithTimeout {
        fetch: Box::new(fetch),
        timeout,
    })
}

/// What follows `CREATE SUBSCRIPTION`.
fn parse_create_subscription(parser: &mut Parser) -> Result<CreateSubscription, ParserError> {
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parse_name(parser)?;
    parser.expect_keyword(Keyword::FROM)?;
    let from = parse_name(parser)?;
    let mut retention = DEFAULT_RETENTION;
    if parser.parse_keyword(Keyword::WITH) {
        parser.expect_token(&Token::LParen)?;
        if !parse_word(parser, "RETENTION") {
            return parser.expected(
                "retention (the only subscription option)",
                parser.peek_token(),
            );
        }
        parser.expect_token(&Token::Eq)?;
        let text = parse_option_value(parser)?;
        parser.expect_token(&Token::RParen)?;
        retention = parse_timeout(&text)
            .ok_or_else(|| ParserError::ParserError(format!("invalid retention \"{text}\"")))?;
    }
    Ok(CreateSubscription {
        name,
        if_not_exists,
        from,
        retention,
    })
}

/// What follows `SUBSCRIBE`.
fn parse_subscribe(parser: &mut Parser) -> Result<Subscribe, ParserError> {
    let _ = parser.parse_keyword(Keyword::TO);
    let target = if parser.consume_token(&Token::LParen) {
        // Too deep a query is reported as sqlparser's own recursion limit (54001).
        let query = crate::parse::bounds::check_query_bounds(parser.parse_query()?)
            .map_err(|_| ParserError::RecursionLimitExceeded)?;
        parser.expect_token(&Token::RParen)?;
        SubscribeTarget::Query(Query::new(*query))
    } else {
        SubscribeTarget::Object(parse_name(parser)?)
    };
    let mut subscribe = Subscribe {
        target,
        snapshot: true,
        progress: false,
        as_of: None,
    };
    if parser.parse_keyword(Keyword::WITH) {
        parser.expect_token(&Token::LParen)?;
        loop {
            let option = parser.parse_identifier()?.value.to_lowercase();
            let value = if parser.consume_token(&Token::Eq) {
                parse_bool(parser)?
            } else {
                true
            };
            match option.as_str() {
                "snapshot" => subscribe.snapshot = value,
                "progress" => subscribe.progress = value,
                other => {
                    return Err(ParserError::ParserError(format!(
                        "unknown SUBSCRIBE option \"{other}\" (known: SNAPSHOT, PROGRESS)"
                    )))
                }
            }
            if !parser.consume_token(&Token::Comma) {
                parser.expect_token(&Token::RParen)?;
                break;
            }
        }
    }
    if parser.parse_keywords(&[Keyword::AS, Keyword::OF]) {
        subscribe.as_of = Some(AsOf(parser.parse_expr()?));
    }
    Ok(subscribe)
}

/// An object name written in one of these statements.
fn parse_name(parser: &mut Parser) -> Result<ObjectRef, ParserError> {
    let name = parser.parse_object_name(false)?;
    object_ref(&name).map_err(|e| ParserError::ParserError(e.to_string()))
}

/// `true`, `false`, `on`, `off`, `1`, `0`, quoted or not.
fn parse_bool(parser: &mut Parser) -> Result<bool, ParserError> {
    let text = parse_option_value(parser)?;
    match text.to_lowercase().as_str() {
        "true" | "on" | "1" | "yes" => Ok(true),
        "false" | "off" | "0" | "no" => Ok(false),
        _ => Err(ParserError::ParserError(format!(
            "\"{text}\" is not a boolean"
        ))),
    }
}

/// COPY's `(option value, …)` list, names in lower case.
fn parse_copy_options(parser: &mut Parser) -> Result<Vec<(String, String)>, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let options = parser.parse_comma_separated(|p| {
        let name = p.parse_identifier()?.value.to_lowercase();
        let _ = p.consume_token(&Token::Eq);
        Ok((name, parse_option_value(p)?))
    })?;
    parser.expect_token(&Token::RParen)?;
    Ok(options)
}

/// A duration: `'1s'`, `'250ms'`, `'2 seconds'`, `'1 day'`, `'0'`; a bare number is seconds.
pub(crate) fn parse_timeout(text: &str) -> Option<Duration> {
    let text = text.trim().to_lowercase();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => number,
        "ms" | "millisecond" | "milliseconds" => number / 1000.0,
        "min" | "mins" | "minute" | "minutes" => number * 60.0,
        "h" | "hour" | "hours" => number * 3600.0,
        "d" | "day" | "days" => number * 86400.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}

impl fmt::Display for CreateSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE SUBSCRIPTION {} FROM {} WITH (retention = '{}ms')",
            self.name.to_sql(),
            self.from.to_sql(),
            self.retention.as_millis()
        )
    }
}

impl fmt::Display for Subscribe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            SubscribeTarget::Object(name) => write!(f, "SUBSCRIBE TO {}", name.to_sql())?,
            SubscribeTarget::Query(query) => write!(f, "SUBSCRIBE TO ({query})")?,
        }
        write!(
            f,
            " WITH (SNAPSHOT = {}, PROGRESS = {})",
            self.snapshot, self.progress
        )?;
        if let Some(as_of) = &self.as_of {
            write!(f, " AS OF {as_of}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;

    use super::*;

    /// Runs `f` on a parser of `sql`.
    fn with_parser<T>(sql: &str, f: impl FnOnce(&mut Parser) -> T) -> T {
        let dialect = PostgreSqlDialect {};
        f(&mut Parser::new(&dialect).try_with_sql(sql).unwrap())
    }

    fn parse(sql: &str) -> Option<SubscribeStatement> {
        with_parser(sql, |parser| parse_subscribe_statement(parser).unwrap())
    }

    fn subscribe(sql: &str) -> Subscribe {
        match parse(sql) {
            Some(SubscribeStatement::Subscribe(s)) => s,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn subscribe_to_an_object_or_a_query_with_options() {
        let plain = subscribe("SUBSCRIBE mv");
        assert!(plain.snapshot && !plain.progress && plain.as_of.is_none());
        assert!(matches!(plain.target, SubscribeTarget::Object(_)));
        let full = subscribe(
            "SUBSCRIBE TO (SELECT a FROM t WHERE a > 1) WITH (SNAPSHOT = false, PROGRESS) AS OF 42",
        );
        assert!(!full.snapshot && full.progress);
        assert_eq!(full.as_of.map(|e| e.to_string()), Some("42".into()));
        assert!(matches!(full.target, SubscribeTarget::Query(_)));
        assert_eq!(
            subscribe("subscribe to s.mv with (progress = 'on')").to_string(),
            "SUBSCRIBE TO s.mv WITH (SNAPSHOT = true, PROGRESS = true)"
        );
    }

    #[test]
    fn copy_declare_and_fetch_carry_a_subscription() {
        assert!(matches!(
            parse("COPY (SUBSCRIBE mv) TO STDOUT"),
            Some(SubscribeStatement::Copy { .. })
        ));
        match parse("COPY (SUBSCRIBE mv WITH (PROGRESS)) TO STDOUT WITH (FORMAT csv)") {
            Some(SubscribeStatement::Copy { subscribe, options }) => {
                assert!(subscribe.progress);
                assert_eq!(options, vec![("format".to_string(), "csv".to_string())]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse("DECLARE c CURSOR FOR SUBSCRIBE mv"),
            Some(SubscribeStatement::Declare { .. })
        ));
        match parse("FETCH 10 c WITH (timeout = '1.5s')") {
            Some(SubscribeStatement::FetchWithTimeout { timeout, .. }) => {
                assert_eq!(timeout, Duration::from_millis(1500))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_statements_are_left_alone() {
        for sql in [
            "COPY (SELECT 1) TO STDOUT",
            "DECLARE c CURSOR FOR SELECT 1",
            "FETCH BACKWARD 2 FROM c",
            "SELECT 1",
        ] {
            with_parser(sql, |parser| {
                assert_eq!(parse_subscribe_statement(parser).unwrap(), None, "{sql}");
                assert!(parser.parse_statement().is_ok(), "{sql} parses after");
            });
        }
    }

    #[test]
    fn fetch_may_leave_out_from() {
        for (sql, shown) in [
            ("FETCH ALL c", "FETCH ALL FROM c"),
            ("FETCH 3 IN c", "FETCH 3 IN c"),
            ("FETCH c", "FETCH NEXT FROM c"),
            ("fetch forward 2 from c", "FETCH FORWARD 2 FROM c"),
        ] {
            match parse(sql) {
                Some(SubscribeStatement::Fetch(fetch)) => assert_eq!(fetch.to_string(), shown),
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_subscriptions_are_errors_not_panics() {
        for sql in [
            "SUBSCRIBE",
            "SUBSCRIBE mv WITH (SNAPSHOT = maybe)",
            "SUBSCRIBE mv WITH (COLOR = true)",
            "COPY (SUBSCRIBE mv) TO '/tmp/x'",
            "FETCH 1 c WITH (timeout = 'soon')",
            "FETCH 1 c WITH (color = '1s')",
        ] {
            let failed = with_parser(sql, |parser| parse_subscribe_statement(parser).is_err());
            assert!(failed, "{sql}");
        }
    }

    #[test]
    fn create_and_drop_subscription() {
        match parse("CREATE SUBSCRIPTION s FROM mv WITH (retention = '2 hours')") {
            Some(SubscribeStatement::Create(create)) => {
                assert_eq!(create.retention, Duration::from_secs(7200));
                assert_eq!(
                    create.to_string(),
                    "CREATE SUBSCRIPTION s FROM mv WITH (retention = '7200000ms')"
                );
            }
            other => panic!("{other:?}"),
        }
        match parse("CREATE SUBSCRIPTION IF NOT EXISTS s FROM mv") {
            Some(SubscribeStatement::Create(create)) => {
                assert!(create.if_not_exists);
                assert_eq!(create.retention, DEFAULT_RETENTION);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse("DROP SUBSCRIPTION IF EXISTS a, b"),
            Some(SubscribeStatement::Drop { if_exists: true, ref names }) if names.len() == 2
        ));
        for sql in ["CREATE TABLE t (a INT)", "DROP TABLE t"] {
            with_parser(sql, |parser| {
                assert_eq!(parse_subscribe_statement(parser).unwrap(), None, "{sql}");
                assert!(parser.parse_statement().is_ok(), "{sql} parses after");
            });
        }
    }

    #[test]
    fn timeouts_read_like_intervals() {
        assert_eq!(parse_timeout("0"), Some(Duration::ZERO));
        assert_eq!(parse_timeout("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_timeout("2 seconds"), Some(Duration::from_secs(2)));
        assert_eq!(parse_timeout("1 minute"), Some(Duration::from_secs(60)));
        assert_eq!(parse_timeout("-1s"), None);
        assert_eq!(parse_timeout("soon"), None);
        assert_eq!(parse_timeout("1e400 days"), None);
        assert_eq!(parse_timeout("99999999999999999999999 days"), None);
    }
}
