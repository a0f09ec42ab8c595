//! `COPY table FROM STDIN`, `COPY table | (query) TO STDOUT`, and how COPY data is laid out.

use datafusion::sql::sqlparser::ast::{
    self, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopyTarget,
};

use super::{Query, Statement};
use crate::names::{fold_ident, object_ref, ObjectRef};
use crate::SqlError;

/// `COPY table [(columns)] FROM STDIN [options]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyFrom {
    /// The table written.
    pub table: ObjectRef,
    /// The columns the data's fields go to, in order (empty: all, in table order).
    pub columns: Vec<String>,
    /// How the data is laid out.
    pub options: CopyOptions,
}

/// `COPY table [(columns)] | (query) TO STDOUT [options]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyTo {
    /// What is copied out.
    pub source: CopySource,
    /// How the rows are laid out.
    pub options: CopyOptions,
}

/// What `COPY … TO` copies.
#[derive(Debug, Clone, PartialEq)]
pub enum CopySource {
    /// The columns of a relation (empty: all).
    Table {
        /// The relation.
        name: ObjectRef,
        /// The columns, in order.
        columns: Vec<String>,
    },
    /// The rows of a query.
    Query(Query),
}

/// Types a `COPY` statement.
pub(super) fn from_sql(statement: ast::Statement) -> Result<Statement, SqlError> {
    let ast::Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        ..
    } = statement
    else {
        return Err(SqlError::Internal("not a COPY".into()));
    };
    if to {
        if !matches!(target, CopyTarget::Stdout) {
            return Err(SqlError::Unsupported(
                "COPY TO a file or program (COPY … TO STDOUT, psql's \\copy, works)".into(),
            ));
        }
        let source = match source {
            ast::CopySource::Query(query) => CopySource::Query(Query::new(*query)),
            ast::CopySource::Table {
                table_name,
                columns,
            } => CopySource::Table {
                name: object_ref(&table_name)?,
                columns: columns.iter().map(fold_ident).collect(),
            },
        };
        return Ok(Statement::CopyTo(CopyTo {
            source,
            options: CopyOptions::from_statement(options, legacy_options)?,
        }));
    }
    let (
        ast::CopySource::Table {
            table_name,
            columns,
        },
        CopyTarget::Stdin,
    ) = (source, target)
    else {
        return Err(SqlError::Unsupported(
            "COPY FROM a file or program (COPY … FROM STDIN, psql's \\copy, works)".into(),
        ));
    };
    Ok(Statement::CopyFrom(CopyFrom {
        table: object_ref(&table_name)?,
        columns: columns.iter().map(fold_ident).collect(),
        options: CopyOptions::from_statement(options, legacy_options)?,
    }))
}

/// The wire format of COPY data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFormat {
    /// Tab-separated, `\N` for NULL, backslash escapes.
    Text,
    /// Comma-separated values with double-quote quoting.
    Csv,
}

/// How COPY data is laid out: the format and its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    /// Text or CSV.
    pub format: CopyFormat,
    /// The field separator.
    pub delimiter: char,
    /// The text of a NULL.
    pub null: String,
    /// Whether the first line names the columns.
    pub header: bool,
}

impl CopyOptions {
    /// The options of a COPY statement (text format unless it says otherwise), given in
    /// parentheses or in the older unparenthesized syntax (`CSV HEADER`, what psql's `\copy
    /// … csv` sends).
    fn from_statement(
        options: Vec<CopyOption>,
        legacy: Vec<CopyLegacyOption>,
    ) -> Result<Self, SqlError> {
        let mut copy = CopyOptions {
            format: CopyFormat::Text,
            delimiter: '\t',
            null: "\\N".into(),
            header: false,
        };
        for option in options {
            match option {
                CopyOption::Format(format) => match format.value.to_lowercase().as_str() {
                    "csv" => {
                        copy.format = CopyFormat::Csv;
                        copy.delimiter = ',';
                        copy.null = String::new();
                    }
                    "text" => {}
                    other => return Err(SqlError::Unsupported(format!("COPY format \"{other}\""))),
                },
                CopyOption::Delimiter(d) => copy.delimiter = d,
                CopyOption::Null(null) => copy.null = null,
                CopyOption::Header(header) => copy.header = header,
                other => return Err(SqlError::Unsupported(format!("COPY option {other}"))),
            }
        }
        for option in legacy {
            match option {
                CopyLegacyOption::Csv(csv_options) => {
                    copy.format = CopyFormat::Csv;
                    copy.delimiter = ',';
                    copy.null = String::new();
                    for csv_option in csv_options {
                        match csv_option {
                            CopyLegacyCsvOption::Header => copy.header = true,
                            other => {
                                return Err(SqlError::Unsupported(format!("COPY option {other}")))
                            }
                        }
                    }
                }
                CopyLegacyOption::Delimiter(d) => copy.delimiter = d,
                CopyLegacyOption::Null(null) => copy.null = null,
                CopyLegacyOption::Header => copy.header = true,
                other => return Err(SqlError::Unsupported(format!("COPY option {other}"))),
            }
        }
        Ok(copy)
    }

    /// The options of `COPY (SUBSCRIBE …) TO STDOUT WITH (name value, …)`.
    pub fn from_pairs(options: &[(String, String)]) -> Result<Self, SqlError> {
        let mut parsed = Vec::with_capacity(options.len());
        for (name, value) in options {
            let single_char = || {
                let mut chars = value.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Ok(c),
                    _ => Err(SqlError::InvalidStatement(format!(
                        "COPY {name} must be a single character"
                    ))),
                }
            };
            parsed.push(match name.as_str() {
                "format" => CopyOption::Format(value.as_str().into()),
                "delimiter" => CopyOption::Delimiter(single_char()?),
                "null" => CopyOption::Null(value.clone()),
                "header" => {
                    CopyOption::Header(matches!(value.to_lowercase().as_str(), "true" | "on" | "1"))
                }
                other => return Err(SqlError::Unsupported(format!("COPY option {other}"))),
            });
        }
        Self::from_statement(parsed, Vec::new())
    }
}
