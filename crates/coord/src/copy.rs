//! COPY … FROM STDIN (text and csv formats). (COPY … TO STDOUT is [`crate::copy_to`].)
//!
//! COPY data is parsed into text columns, cast to the table's types (a value that does not
//! parse is an error naming the line), and inserted like an INSERT of those rows.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use repr::GlobalId;
use sql::literals::{normalize, Temporal};
use sql::{CopyFormat, CopyFrom, CopyOptions};

use crate::commit::WriteAttempt;
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::table_rows::{check_not_null, TableCodecs};

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
        copy: CopyFrom,
    ) -> Result<ExecuteResponse, CoordError> {
        let (table, codecs) = self.writable_table(session, &copy.table)?;
        let columns = if copy.columns.is_empty() {
            (0..codecs.schema.fields().len()).collect()
        } else {
            copy.columns
                .iter()
                .map(|c| {
                    codecs.schema.index_of(c).map_err(|_| {
                        CoordError::unknown_column(format!(
                            "column \"{c}\" of relation \"{}\" does not exist",
                            table.name
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let plan = CopyPlan {
            table: table.id,
            table_name: table.name.clone(),
            columns,
            options: copy.options,
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
            .ok_or_else(|| CoordError::invalid("no COPY in progress"))?;
        let item = crate::catalog::read(&self.catalog).get(plan.table).cloned();
        let (table, codecs) = self.writable_item(
            item.ok_or_else(|| CoordError::unknown("relation", plan.table_name.clone()))?,
        )?;
        let text = std::str::from_utf8(data)
            .map_err(|e| CoordError::invalid_value(format!("invalid UTF-8 in COPY data: {e}")))?;
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
        let zone = sql::SessionTimeZone::of(session.variable("timezone")).map(|zone| zone.name);
        let batch = typed_batch(
            &codecs,
            &table.name,
            &plan.columns,
            &records,
            zone.as_deref(),
        )?;
        check_not_null(&codecs, &batch)?;
        let count = batch.num_rows() as u64;
        // A bulk load checks many keys: it holds the sequencer rather than risk a conflict.
        let (access, _hold, snapshot) = self.begin_write(session, WriteAttempt::Sequenced).await?;
        let writes = self
            .plain_insert(&snapshot, &codecs, &table, &batch)
            .await?;
        self.apply_writes(session, table.id, writes, &snapshot, access)
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
        return Err(CoordError::invalid_value(format!(
            "unterminated CSV quoted field at line {line}"
        )));
    }
    if !(record.is_empty() && field.is_empty() && !quoted) && field != "\\." {
        finish_field(&mut field, &mut quoted, &mut record);
        records.push(record);
    }
    Ok(records)
}

/// Casts text records into a batch of the table's columns; unlisted columns are NULL. A
/// `timestamptz` without an offset is local time in `zone`, the session's (`None`: UTC).
fn typed_batch(
    codecs: &TableCodecs,
    table: &str,
    columns: &[usize],
    records: &[Vec<Option<String>>],
    zone: Option<&str>,
) -> Result<RecordBatch, CoordError> {
    for (line, record) in records.iter().enumerate() {
        if record.len() != columns.len() {
            return Err(CoordError::invalid_value(format!(
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
            DataType::Timestamp(..) => Some(Temporal::Timestamp),
            DataType::Interval(_) => Some(Temporal::Interval),
            _ => None,
        };
        let text: StringArray = records
            .iter()
            .map(|r| match (temporal, r[position].as_deref()) {
                (Some(kind), Some(value)) => Some(normalize(kind, value)),
                (_, value) => value.map(str::to_string),
            })
            .collect();
        if field.data_type() == &DataType::Binary {
            let text: ArrayRef = Arc::new(text);
            arrays[column] = crate::table_rows::cast_column(&text, field.data_type())?;
            continue;
        }
        let invalid = |e: ArrowError| {
            CoordError::invalid_value(format!(
                "invalid input for column \"{}\" of {table}: {e}",
                field.name()
            ))
        };
        arrays[column] = match (field.data_type(), zone) {
            (DataType::Timestamp(unit, Some(_)), Some(zone)) => {
                let local = DataType::Timestamp(*unit, Some(zone.into()));
                let read = cast_with_options(&text, &local, &strict).map_err(invalid)?;
                cast_with_options(&read, field.data_type(), &strict).map_err(invalid)?
            }
            (to, _) => cast_with_options(&text, to, &strict).map_err(invalid)?,
        };
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
