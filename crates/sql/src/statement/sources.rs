//! Fluxion's own statements, parsed on top of sqlparser's PostgreSQL dialect:
//! `CREATE SOURCE` and `DROP SOURCE` (see `../shared/design/SQL.md`).
//!
//! ```sql
//! CREATE SOURCE [IF NOT EXISTS] name [(column type, …, [PRIMARY KEY (col, …)],
//!                                      [WATERMARK FOR col AS expr])]
//!   WITH (connector = '…', option = 'value', …)
//!   [FORMAT PLAIN | UPSERT | DEBEZIUM  ENCODE JSON | CSV | AVRO | BYTES]
//!   [INCLUDE offset | partition | timestamp | key [AS col], …];
//! DROP SOURCE [IF EXISTS] name [, …] [CASCADE | RESTRICT] [WITH (drop_slot = true)];
//! SHOW CREATE SOURCE name;
//! CREATE TABLE [IF NOT EXISTS] name [(column type, …)] FROM source TABLE 'schema.table';
//! ```
//!
//! Option names may be dotted (`nexmark.table.type`) or quoted; values are string, number or
//! boolean literals, or bare words.

use std::fmt;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::context::SessionState;
use datafusion::sql::sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;
use datafusion::sql::sqlparser::ast::{ColumnDef, Ident, ObjectName, Statement, TableConstraint};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::ddl::{CreateTable, TableDefinition};
use super::watermark::{WatermarkClause, WatermarkSpec};
use crate::names::{fold_ident, object_name, object_ref, ObjectRef};
use crate::parse::options::{parse_options, parse_upper_word, parse_word, quoted, write_options};
use crate::SqlError;

/// `CREATE SOURCE`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateSource {
    /// The source's name.
    pub name: ObjectRef,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// The declared columns (none: the connector's own).
    columns: Vec<ColumnDef>,
    /// Table constraints (`PRIMARY KEY (…)`).
    constraints: Vec<TableConstraint>,
    /// `WATERMARK FOR column AS expr`.
    watermark: Option<WatermarkClause>,
    /// The `WITH (…)` options, names in lower case, in the order written.
    pub options: Vec<(String, String)>,
    /// `FORMAT …` (upper case).
    pub format: Option<String>,
    /// `ENCODE …` (upper case).
    pub encode: Option<String>,
    /// `INCLUDE what [AS column]`.
    include: Vec<(String, Option<Ident>)>,
}

impl CreateSource {
    /// Whether the statement declares the source's columns (else the connector's are taken).
    pub fn has_declared_columns(&self) -> bool {
        !self.columns.is_empty()
    }

    /// Whether it declares table constraints (a primary key).
    pub fn has_constraints(&self) -> bool {
        !self.constraints.is_empty()
    }

    /// What its `WATERMARK FOR column AS column [- INTERVAL '…']` declares, if anything
    /// (`state` evaluates the interval).
    pub fn watermark(&self, state: &SessionState) -> Result<Option<WatermarkSpec>, SqlError> {
        self.watermark.as_ref().map(|w| w.spec(state)).transpose()
    }

    /// What `INCLUDE` asks for, each with the column it goes to if one is named.
    pub fn include(&self) -> Vec<(String, Option<String>)> {
        self.include
            .iter()
            .map(|(what, alias)| (what.clone(), alias.as_ref().map(fold_ident)))
            .collect()
    }

    /// The declared columns and primary key, planned like a table's (`state` plans the
    /// DEFAULT expressions).
    pub fn plan_columns(&self, state: &SessionState) -> Result<TableDefinition, SqlError> {
        let table = CreateTableBuilder::new(object_name(&self.name))
            .columns(self.columns.clone())
            .constraints(self.constraints.clone())
            .build();
        CreateTable::from_sql(table)?.plan(state)
    }
}

/// `DROP SOURCE`, as parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DropSource {
    /// The sources to drop.
    pub names: Vec<ObjectName>,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// `CASCADE`: drop what reads from them too.
    pub cascade: bool,
    /// `WITH (…)` options (`drop_slot`).
    pub options: Vec<(String, String)>,
}

/// `CREATE TABLE … FROM source TABLE 'schema.table'`: a table whose rows come from an
/// upstream table of a source (Postgres CDC).
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTableFromSource {
    /// The table (its columns may be empty: the upstream table's are taken).
    pub table: CreateTable,
    /// The source.
    pub source: ObjectRef,
    /// The upstream table (`public.orders`).
    pub reference: String,
}

impl CreateTableFromSource {
    /// The statement with the upstream table's columns and primary key (`key`, column
    /// positions) in place of its own.
    pub fn with_upstream_columns(
        &self,
        schema: &SchemaRef,
        key: Option<Vec<usize>>,
    ) -> Result<CreateTableFromSource, SqlError> {
        let mut elements: Vec<String> = schema
            .fields()
            .iter()
            .map(|field| {
                format!(
                    "\"{}\" {}{}",
                    field.name().replace('"', "\"\""),
                    repr::pg_type::storage_type(field),
                    if field.is_nullable() { "" } else { " NOT NULL" }
                )
            })
            .collect();
        if let Some(key) = key {
            let names: Vec<String> = key
                .iter()
                .map(|&c| format!("\"{}\"", schema.field(c).name().replace('"', "\"\"")))
                .collect();
            elements.push(format!("PRIMARY KEY ({})", names.join(", ")));
        }
        let sql = format!(
            "CREATE TABLE {} ({})",
            self.table.name.to_sql(),
            elements.join(", "),
        );
        let mut statements = crate::parse::parse_sql(&sql)?;
        let Some(Statement::CreateTable(mut table)) = statements.pop() else {
            return Err(SqlError::Internal(format!("cannot read back {sql}")));
        };
        table.if_not_exists = self.table.if_not_exists;
        let mut create = CreateTable::from_sql(table)?;
        if let Some(watermark) = &self.table.watermark {
            create = create.with_watermark(watermark);
        }
        Ok(CreateTableFromSource {
            table: create,
            source: self.source.clone(),
            reference: self.reference.clone(),
        })
    }
}

impl fmt::Display for CreateTableFromSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} FROM {} TABLE {}",
            self.table.to_sql(),
            self.source.to_sql(),
            quoted(&self.reference)
        )
    }
}

/// An object name written in one of these statements.
fn parse_name(parser: &mut Parser) -> Result<ObjectRef, ParserError> {
    let name = parser.parse_object_name(false)?;
    object_ref(&name).map_err(|e| ParserError::ParserError(e.to_string()))
}

/// Parses the statement at the parser's position if it is one of Fluxion's own; `Ok(None)`
/// (with nothing consumed) otherwise.
pub(crate) fn parse_source_statement(
    parser: &mut Parser,
) -> Result<Option<SourceStatement>, ParserError> {
    if parser.parse_keyword(Keyword::CREATE) {
        if parser.parse_keyword(Keyword::SOURCE) {
            return parse_create_source(parser).map(|s| Some(SourceStatement::Create(Box::new(s))));
        }
        let table = parser.peek_keyword(Keyword::TABLE);
        parser.prev_token();
        if table {
            return parse_create_table(parser).map(Some);
        }
    } else if parser.parse_keyword(Keyword::DROP) {
        if parser.parse_keyword(Keyword::SOURCE) {
            return parse_drop_source(parser).map(|s| Some(SourceStatement::Drop(s)));
        }
        parser.prev_token();
    } else if parser.parse_keywords(&[Keyword::SHOW, Keyword::CREATE, Keyword::SOURCE]) {
        return Ok(Some(SourceStatement::ShowCreate(
            parser.parse_object_name(false)?,
        )));
    }
    Ok(None)
}

/// One of the statements this module parses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SourceStatement {
    Create(Box<CreateSource>),
    Drop(DropSource),
    ShowCreate(ObjectName),
    CreateTableFrom(Box<CreateTableFromSource>),
    /// A plain `CREATE TABLE` (parsed on the way to finding no `FROM`).
    Sql(Box<Statement>),
}

/// `CREATE TABLE …`, with or without `FROM source TABLE '…'` after it.
fn parse_create_table(parser: &mut Parser) -> Result<SourceStatement, ParserError> {
    let statement = parser.parse_statement()?;
    if !parser.parse_keyword(Keyword::FROM) {
        return Ok(SourceStatement::Sql(Box::new(statement)));
    }
    let Statement::CreateTable(create) = statement else {
        return parser.expected("CREATE TABLE before FROM", parser.peek_token());
    };
    let source = parse_name(parser)?;
    parser.expect_keyword(Keyword::TABLE)?;
    let reference = parser.parse_literal_string()?;
    let table =
        CreateTable::from_sql(create).map_err(|e| ParserError::ParserError(e.to_string()))?;
    Ok(SourceStatement::CreateTableFrom(Box::new(
        CreateTableFromSource {
            table,
            source,
            reference,
        },
    )))
}

fn parse_create_source(parser: &mut Parser) -> Result<CreateSource, ParserError> {
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parse_name(parser)?;
    let mut create = CreateSource {
        name,
        if_not_exists,
        columns: Vec::new(),
        constraints: Vec::new(),
        watermark: None,
        options: Vec::new(),
        format: None,
        encode: None,
        include: Vec::new(),
    };
    if parser.consume_token(&Token::LParen) {
        loop {
            if parse_word(parser, "WATERMARK") {
                if create.watermark.is_some() {
                    return Err(ParserError::ParserError(
                        "a source has at most one WATERMARK".into(),
                    ));
                }
                create.watermark = Some(WatermarkClause::parse_after_keyword(parser)?);
            } else if let Some(constraint) = parser.parse_optional_table_constraint()? {
                create.constraints.push(constraint);
            } else {
                create.columns.push(parser.parse_column_def()?);
            }
            if !parser.consume_token(&Token::Comma) {
                parser.expect_token(&Token::RParen)?;
                break;
            }
        }
    }
    parser.expect_keyword(Keyword::WITH)?;
    create.options = parse_options(parser)?;
    if parser.parse_keyword(Keyword::FORMAT) {
        create.format = Some(parse_upper_word(parser)?);
        if !parse_word(parser, "ENCODE") {
            return parser.expected("ENCODE after FORMAT", parser.peek_token());
        }
        create.encode = Some(parse_upper_word(parser)?);
    }
    if parser.parse_keyword(Keyword::INCLUDE) {
        create.include = parser.parse_comma_separated(|p| {
            let what = parse_upper_word(p)?.to_lowercase();
            let alias = if p.parse_keyword(Keyword::AS) {
                Some(p.parse_identifier()?)
            } else {
                None
            };
            Ok((what, alias))
        })?;
    }
    Ok(create)
}

fn parse_drop_source(parser: &mut Parser) -> Result<DropSource, ParserError> {
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let names = parser.parse_comma_separated(|p| p.parse_object_name(false))?;
    let cascade = parser.parse_keyword(Keyword::CASCADE);
    // RESTRICT is the default.
    let _restrict = !cascade && parser.parse_keyword(Keyword::RESTRICT);
    let options = if parser.parse_keyword(Keyword::WITH) {
        parse_options(parser)?
    } else {
        Vec::new()
    };
    Ok(DropSource {
        names,
        if_exists,
        cascade,
        options,
    })
}

impl fmt::Display for CreateSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE SOURCE ")?;
        if self.if_not_exists {
            write!(f, "IF NOT EXISTS ")?;
        }
        write!(f, "{}", self.name.to_sql())?;
        let mut elements: Vec<String> = self.columns.iter().map(ToString::to_string).collect();
        elements.extend(self.constraints.iter().map(ToString::to_string));
        if let Some(watermark) = &self.watermark {
            elements.push(watermark.to_string());
        }
        if !elements.is_empty() {
            write!(f, " ({})", elements.join(", "))?;
        }
        write!(f, " WITH ")?;
        write_options(f, &self.options)?;
        if let (Some(format), Some(encode)) = (&self.format, &self.encode) {
            write!(f, " FORMAT {format} ENCODE {encode}")?;
        }
        if !self.include.is_empty() {
            let list: Vec<String> = self
                .include
                .iter()
                .map(|(what, alias)| match alias {
                    Some(alias) => format!("{what} AS {alias}"),
                    None => what.clone(),
                })
                .collect();
            write!(f, " INCLUDE {}", list.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;

    fn parse(sql: &str) -> SourceStatement {
        let mut parser = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(sql)
            .unwrap();
        parse_source_statement(&mut parser).unwrap().unwrap()
    }

    #[test]
    fn create_source_round_trips_through_its_text() {
        let sql = "CREATE SOURCE IF NOT EXISTS bid (auction BIGINT, price BIGINT, \
                   date_time TIMESTAMP, PRIMARY KEY (auction), \
                   WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) \
                   WITH (connector = 'nexmark', nexmark.table.type = 'Bid', \
                   nexmark.event.rate = 0) FORMAT PLAIN ENCODE JSON INCLUDE offset AS o, key";
        let SourceStatement::Create(create) = parse(sql) else {
            panic!("not a CREATE SOURCE")
        };
        assert_eq!(create.columns.len(), 3);
        assert_eq!(create.constraints.len(), 1);
        assert!(create.watermark.is_some());
        assert_eq!(
            create.options[1],
            ("nexmark.table.type".to_string(), "Bid".to_string())
        );
        assert_eq!(create.options[2].1, "0");
        assert_eq!(create.include.len(), 2);
        let SourceStatement::Create(again) = parse(&create.to_string()) else {
            panic!("not a CREATE SOURCE")
        };
        assert_eq!(again, create);
    }

    fn watermark_of(sql_watermark: &str) -> Result<Option<WatermarkSpec>, SqlError> {
        let sql = format!(
            "CREATE SOURCE s (ts TIMESTAMP, v INT, WATERMARK FOR ts AS {sql_watermark}) \
             WITH (connector = 'datagen')"
        );
        let SourceStatement::Create(create) = parse(&sql) else {
            panic!("not a CREATE SOURCE")
        };
        let catalog = datafusion::catalog::MemoryCatalogProvider::new();
        create.watermark(&crate::session::new_state(std::sync::Arc::new(catalog)))
    }

    #[test]
    fn watermark_delays_are_constant_intervals() {
        let delay = |sql: &str| watermark_of(sql).unwrap().unwrap().delay_micros;
        assert_eq!(delay("ts"), 0);
        assert_eq!(delay("ts - INTERVAL '4' SECOND"), 4_000_000);
        assert_eq!(delay("(ts - INTERVAL '1 minute 30 seconds')"), 90_000_000);
        assert_eq!(delay("TS - interval '2' day"), 172_800_000_000);
        assert_eq!(delay("ts - INTERVAL '250 milliseconds'"), 250_000);
        for refused in [
            "ts + INTERVAL '1' SECOND",
            "v - INTERVAL '1' SECOND",
            "ts - INTERVAL '1' MONTH",
            "ts - INTERVAL '-1' SECOND",
            "ts - v",
            "now()",
        ] {
            assert!(watermark_of(refused).is_err(), "{refused} was accepted");
        }
    }

    #[test]
    fn create_source_without_columns() {
        let SourceStatement::Create(create) =
            parse("create source c with (connector = 'counter', tick = '10ms')")
        else {
            panic!("not a CREATE SOURCE")
        };
        assert!(create.columns.is_empty());
        assert_eq!(
            create.to_string(),
            "CREATE SOURCE c WITH (connector = 'counter', tick = '10ms')"
        );
    }

    #[test]
    fn drop_source() {
        let SourceStatement::Drop(drop) =
            parse("DROP SOURCE IF EXISTS a, b CASCADE WITH (drop_slot = true)")
        else {
            panic!("not a DROP SOURCE")
        };
        assert!(drop.if_exists && drop.cascade);
        assert_eq!(drop.names.len(), 2);
        assert_eq!(
            drop.options,
            vec![("drop_slot".to_string(), "true".to_string())]
        );
    }

    #[test]
    fn show_create_source() {
        assert!(matches!(
            parse("SHOW CREATE SOURCE public.bid"),
            SourceStatement::ShowCreate(_)
        ));
    }

    #[test]
    fn other_statements_are_left_alone() {
        let mut parser = Parser::new(&PostgreSqlDialect {})
            .try_with_sql("CREATE VIEW v AS SELECT 1")
            .unwrap();
        assert!(parse_source_statement(&mut parser).unwrap().is_none());
        assert!(parser.parse_statement().is_ok());
        assert!(matches!(
            parse("CREATE TABLE t (a int)"),
            SourceStatement::Sql(statement) if matches!(*statement, Statement::CreateTable(_))
        ));
    }

    #[test]
    fn create_table_from_source_round_trips_through_its_text() {
        let sql = "CREATE TABLE public.orders (id INT, PRIMARY KEY (id)) \
                   FROM public.pg TABLE 'public.orders'";
        let SourceStatement::CreateTableFrom(from) = parse(sql) else {
            panic!("not CREATE TABLE … FROM");
        };
        assert_eq!(from.reference, "public.orders");
        assert_eq!(from.to_string(), sql);
        let SourceStatement::CreateTableFrom(bare) = parse("CREATE TABLE t FROM pg TABLE 'x.t'")
        else {
            panic!("not CREATE TABLE … FROM");
        };
        assert!(!bare.table.has_columns());
    }

    #[test]
    fn errors_are_errors_not_panics() {
        for sql in [
            "CREATE SOURCE",
            "CREATE SOURCE s",
            "CREATE SOURCE s WITH (",
            "CREATE SOURCE s (a int WITH (connector = 'x')",
            "CREATE SOURCE s WITH (connector = 'x') FORMAT PLAIN",
            "CREATE SOURCE s (WATERMARK FOR) WITH (connector = 'x')",
        ] {
            let mut parser = Parser::new(&PostgreSqlDialect {})
                .try_with_sql(sql)
                .unwrap();
            assert!(parse_source_statement(&mut parser).is_err(), "{sql}");
        }
    }
}
