//! COPY … FROM STDIN (text and csv formats) and the row-level helpers INSERT shares with it.
//! (COPY … TO STDOUT is [`crate::copy_to`].)
//!
//! COPY data is parsed into text columns, cast to the table's types (a value that does not
//! parse is an error naming the line), and inserted like an INSERT of those rows.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DFSchema;
use datafusion::execution::context::SessionState;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget,
    DoUpdate, Statement,
};
use repr::{GlobalId, Row};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::postgres_literals::{normalize, Temporal};
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::table_rows::{check_not_null, TableCodecs};

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
    pub(crate) fn from_statement(
        options: Vec<CopyOption>,
        legacy: Vec<CopyLegacyOption>,
    ) -> Result<Self, CoordError> {
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
                    other => {
                        return Err(CoordError::Unsupported(format!("COPY format \"{other}\"")))
                    }
                },
                CopyOption::Delimiter(d) => copy.delimiter = d,
                CopyOption::Null(null) => copy.null = null,
                CopyOption::Header(header) => copy.header = header,
                other => return Err(CoordError::Unsupported(format!("COPY option {other}"))),
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
                                return Err(CoordError::Unsupported(format!("COPY option {other}")))
                            }
                        }
                    }
                }
                CopyLegacyOption::Delimiter(d) => copy.delimiter = d,
                CopyLegacyOption::Null(null) => copy.null = null,
                CopyLegacyOption::Header => copy.header = true,
                other => return Err(CoordError::Unsupported(format!("COPY option {other}"))),
            }
        }
        Ok(copy)
    }

    /// The options of `COPY (SUBSCRIBE …) TO STDOUT WITH (name value, …)`.
    pub(crate) fn from_pairs(options: &[(String, String)]) -> Result<Self, CoordError> {
        let mut parsed = Vec::with_capacity(options.len());
        for (name, value) in options {
            let single_char = || {
                let mut chars = value.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Ok(c),
                    _ => Err(CoordError::InvalidStatement(format!(
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
                other => return Err(CoordError::Unsupported(format!("COPY option {other}"))),
            });
        }
        Self::from_statement(parsed, Vec::new())
    }
}

/// A COPY FROM STDIN waiting for its data.
#[derive(Clone, Debug)]
pub(crate) struct CopyPlan {
    table: GlobalId,
    table_name: String,
    /// The table columns the data's fields go to, in order.
    columns: Vec<usize>,
    options: CopyOptions,
}

impl Coordinator {
    pub(crate) fn start_copy(
        &self,
        session: &mut Session,
        statement: Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        let Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        } = statement
        else {
            return Err(CoordError::Internal("not a COPY".into()));
        };
        let (
            CopySource::Table {
                table_name,
                columns,
            },
            false,
            CopyTarget::Stdin,
        ) = (source, to, target)
        else {
            return Err(CoordError::Unsupported(
                "COPY FROM a file or program (COPY … FROM STDIN, psql's \\copy, works)".into(),
            ));
        };
        let (table, codecs) = self.writable_table(session, &table_name)?;
        let columns = if columns.is_empty() {
            (0..codecs.schema.fields().len()).collect()
        } else {
            columns
                .iter()
                .map(|c| {
                    codecs
                        .schema
                        .index_of(&crate::naming::fold_ident(c))
                        .map_err(|_| {
                            CoordError::UnknownColumn(format!(
                                "column \"{}\" of relation \"{}\" does not exist",
                                c.value, table.name
                            ))
                        })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let plan = CopyPlan {
            table: table.id,
            table_name: table.name.clone(),
            columns,
            options: CopyOptions::from_statement(options, legacy_options)?,
        };
        let response = ExecuteResponse::CopyIn {
            columns: plan.columns.len(),
            format: plan.options.format,
        };
        session.pending_copy = Some(plan);
        Ok(response)
    }

    /// Inserts the data of the session's pending COPY; returns the number of rows.
    pub async fn finish_copy(&self, session: &mut Session, data: &[u8]) -> Result<u64, CoordError> {
        let plan = session
            .pending_copy
            .take()
            .ok_or_else(|| CoordError::InvalidStatement("no COPY in progress".into()))?;
        let item = crate::catalog::read(&self.catalog).get(plan.table).cloned();
        let (table, codecs) =
            self.writable_item(item.ok_or_else(|| CoordError::UnknownObject {
                kind: "relation",
                name: plan.table_name.clone(),
            })?)?;
        let text = std::str::from_utf8(data)
            .map_err(|e| CoordError::InvalidValue(format!("invalid UTF-8 in COPY data: {e}")))?;
        let text = before_end_marker(text);
        let records = match plan.options.format {
            CopyFormat::Text => parse_text(text, plan.options.delimiter, &plan.options.null)?,
            CopyFormat::Csv => parse_csv(text, plan.options.delimiter, &plan.options.null)?,
        };
        let records = if plan.options.header {
            records.into_iter().skip(1).collect()
        } else {
            records
        };
        let batch = typed_batch(&codecs, &table.name, &plan.columns, &records)?;
        check_not_null(&codecs, &batch)?;
        let count = batch.num_rows() as u64;
        let sequencer = self.lock_for_autocommit(session).await;
        let hold = self.holds.hold_read_time(&self.oracle);
        let read_time = hold.time();
        let writes = self
            .plain_insert(session, &codecs, &table, &batch, read_time)
            .await?;
        self.apply_writes(session, table.id, writes, read_time, sequencer)
            .await?;
        Ok(count)
    }
}

/// Parses text-format COPY data into records of optional field values.
/// The data before a line `\.`, which ends COPY data (in both formats).
fn before_end_marker(text: &str) -> &str {
    if text.starts_with("\\.\n") || text.starts_with("\\.\r\n") || text == "\\." {
        return "";
    }
    match text.find("\n\\.\n").or_else(|| text.find("\n\\.\r\n")) {
        Some(at) => &text[..at + 1],
        None => text
            .strip_suffix("\n\\.")
            .map_or(text, |t| &text[..t.len() + 1]),
    }
}

fn parse_text(
    text: &str,
    delimiter: char,
    null: &str,
) -> Result<Vec<Vec<Option<String>>>, CoordError> {
    let mut records = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line == "\\." {
            continue;
        }
        let fields = line
            .split(delimiter)
            .map(|field| {
                if field == null {
                    None
                } else {
                    Some(unescape_text(field))
                }
            })
            .collect();
        records.push(fields);
    }
    Ok(records)
}

fn unescape_text(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Parses CSV COPY data. An unquoted field equal to `null` is NULL; a quoted one is text.
fn parse_csv(
    text: &str,
    delimiter: char,
    null: &str,
) -> Result<Vec<Vec<Option<String>>>, CoordError> {
    let mut records = Vec::new();
    let mut record: Vec<Option<String>> = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut in_quotes = false;
    let mut chars = text.chars().peekable();
    let mut line = 1;
    let finish_field = |field: &mut String, quoted: &mut bool, record: &mut Vec<Option<String>>| {
        let value = std::mem::take(field);
        record.push(if !*quoted && value == null {
            None
        } else {
            Some(value)
        });
        *quoted = false;
    };
    while let Some(c) = chars.next() {
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => in_quotes = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                in_quotes = true;
                quoted = true;
            }
            c if c == delimiter => finish_field(&mut field, &mut quoted, &mut record),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                line += 1;
                if !(record.is_empty() && field.is_empty() && !quoted) {
                    finish_field(&mut field, &mut quoted, &mut record);
                    records.push(std::mem::take(&mut record));
                }
            }
            _ => field.push(c),
        }
    }
    if in_quotes {
        return Err(CoordError::InvalidValue(format!(
            "unterminated CSV quoted field at line {line}"
        )));
    }
    if !(record.is_empty() && field.is_empty() && !quoted) && field != "\\." {
        finish_field(&mut field, &mut quoted, &mut record);
        records.push(record);
    }
    Ok(records)
}

/// Casts text records into a batch of the table's columns; unlisted columns are NULL.
fn typed_batch(
    codecs: &TableCodecs,
    table: &str,
    columns: &[usize],
    records: &[Vec<Option<String>>],
) -> Result<RecordBatch, CoordError> {
    for (line, record) in records.iter().enumerate() {
        if record.len() != columns.len() {
            return Err(CoordError::InvalidValue(format!(
                "COPY {table}, line {}: expected {} columns, got {}",
                line + 1,
                columns.len(),
                record.len()
            )));
        }
    }
    let schema: &SchemaRef = &codecs.schema;
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let mut arrays: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| datafusion::arrow::array::new_null_array(f.data_type(), records.len()))
        .collect();
    for (position, &column) in columns.iter().enumerate() {
        let field = schema.field(column);
        let temporal = match field.data_type() {
            datafusion::arrow::datatypes::DataType::Timestamp(..) => Some(Temporal::Timestamp),
            datafusion::arrow::datatypes::DataType::Interval(_) => Some(Temporal::Interval),
            _ => None,
        };
        let text: StringArray = records
            .iter()
            .map(|r| match (temporal, r[position].as_deref()) {
                (Some(kind), Some(value)) => Some(normalize(kind, value)),
                (_, value) => value.map(str::to_string),
            })
            .collect();
        if field.data_type() == &datafusion::arrow::datatypes::DataType::Binary {
            let text: ArrayRef = Arc::new(text);
            arrays[column] = crate::table_rows::cast_column(&text, field.data_type())?;
            continue;
        }
        arrays[column] = cast_with_options(&text, field.data_type(), &strict).map_err(|e| {
            CoordError::InvalidValue(format!(
                "invalid input for column \"{}\" of {table}: {e}",
                field.name()
            ))
        })?;
    }
    let relaxed = Arc::new(datafusion::arrow::datatypes::Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ));
    RecordBatch::try_new(relaxed, arrays).map_err(|e| CoordError::Internal(e.to_string()))
}

/// The row `ON CONFLICT DO UPDATE` makes of the existing row `old` and the proposed row
/// `excluded`, or `None` when its WHERE condition rejects the update.
pub(crate) fn apply_conflict_update(
    codecs: &TableCodecs,
    table: &str,
    old: &Row,
    excluded: &RecordBatch,
    update: &DoUpdate,
    state: &SessionState,
) -> Result<Option<Row>, CoordError> {
    let old_batch = codecs
        .rows
        .decode([old])
        .map_err(|e| CoordError::Internal(e.to_string()))?;
    let width = codecs.schema.fields().len();
    let table_schema = DFSchema::try_from_qualified_schema(table, old_batch.schema().as_ref())?;
    let excluded_schema =
        DFSchema::try_from_qualified_schema("excluded", excluded.schema().as_ref())?;
    let both_schema = table_schema.join(&excluded_schema)?;
    let mut columns: Vec<ArrayRef> = old_batch.columns().to_vec();
    columns.extend(excluded.columns().iter().cloned());
    let both = RecordBatch::try_new(Arc::new(both_schema.as_arrow().clone()), columns)
        .map_err(|e| CoordError::Internal(e.to_string()))?;
    let evaluate = |sql: &str| -> Result<ArrayRef, CoordError> {
        let expr = state.create_logical_expr(sql, &both_schema)?;
        let physical = state.create_physical_expr(expr, &both_schema)?;
        Ok(physical.evaluate(&both)?.into_array(1)?)
    };
    if let Some(selection) = &update.selection {
        let keep = evaluate(&selection.to_string())?;
        let keep = keep
            .as_any()
            .downcast_ref::<datafusion::arrow::array::BooleanArray>()
            .ok_or_else(|| CoordError::TypeMismatch("ON CONFLICT WHERE must be boolean".into()))?;
        if !(datafusion::arrow::array::Array::is_valid(keep, 0) && keep.value(0)) {
            return Ok(None);
        }
    }
    let mut new_columns: Vec<ArrayRef> = old_batch.columns().to_vec();
    for assignment in &update.assignments {
        let AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(CoordError::Unsupported(
                "ON CONFLICT update of a column tuple".into(),
            ));
        };
        let name = crate::naming::column_name(column)?;
        let index = codecs.schema.index_of(&name).map_err(|_| {
            CoordError::UnknownColumn(format!(
                "column \"{name}\" of relation \"{table}\" does not exist"
            ))
        })?;
        let value = evaluate(&assignment.value.to_string())?;
        new_columns[index] =
            datafusion::arrow::compute::cast(&value, codecs.schema.field(index).data_type())
                .map_err(|e| CoordError::InvalidValue(e.to_string()))?;
    }
    debug_assert_eq!(new_columns.len(), width);
    let new = RecordBatch::try_new(old_batch.schema(), new_columns)
        .map_err(|e| CoordError::Internal(e.to_string()))?;
    check_not_null(codecs, &new)?;
    let mut rows = codecs
        .rows
        .encode(&new)
        .map_err(|e| CoordError::Internal(e.to_string()))?;
    Ok(rows.pop())
}
