//! COPY data out: rows as PostgreSQL's COPY text format (tab-separated, `\N` for NULL,
//! backslash escapes) or CSV (quoted where needed), one CopyData message per row, sent as
//! they are computed.

use std::fmt::Debug;

use arrow::array::RecordBatch;
use bytes::Bytes;
use coord::{CopyFormat, CopyOptions};
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::results::{CopyResponse, Tag};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;

use crate::values::{text_value, Cell};

/// Sends a COPY TO STDOUT response, each message as it is computed, and its CommandComplete
/// (`COPY n`). An error ends the data: the caller sends it as an ErrorResponse, as PostgreSQL
/// does (pgwire's own sender would write a CopyFail, a message only clients send).
pub(crate) async fn send_copy_out<C>(client: &mut C, copy: CopyResponse) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let column_formats = copy.column_formats();
    let CopyResponse {
        format,
        columns,
        mut data_stream,
        ..
    } = copy;
    let columns = i16::try_from(columns).map_err(|_| {
        PgWireError::ApiError("a COPY of more columns than the protocol can describe".into())
    })?;
    client
        .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            format,
            columns,
            column_formats,
        )))
        .await?;
    let mut rows = 0;
    while let Some(data) = data_stream.next().await {
        client.feed(PgWireBackendMessage::CopyData(data?)).await?;
        rows += 1;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    let done: CommandComplete = Tag::new("COPY").with_rows(rows).into();
    client
        .feed(PgWireBackendMessage::CommandComplete(done))
        .await?;
    Ok(())
}

/// The COPY data messages of `batches`, after a header line when the options ask for one;
/// `timestamptz` values are written in time zone `zone`.
pub(crate) fn copy_data(
    column_names: &[String],
    batches: &[RecordBatch],
    options: &CopyOptions,
    zone: &str,
) -> PgWireResult<Vec<CopyData>> {
    let mut messages = Vec::new();
    let mut pending_header = options.header.then(|| {
        let fields: Vec<String> = column_names
            .iter()
            .map(|name| field(name, options))
            .collect();
        fields.join(&options.delimiter.to_string()) + "\n"
    });
    for batch in batches {
        for row in 0..batch.num_rows() {
            let mut line = pending_header.take().unwrap_or_default();
            for (i, column) in batch.columns().iter().enumerate() {
                if i > 0 {
                    line.push(options.delimiter);
                }
                if (Cell { array: column, row }).is_null() {
                    line.push_str(&options.null);
                    continue;
                }
                let text = text_value(column, row, zone).map_err(|e| {
                    PgWireError::UserError(Box::new(ErrorInfo::new(
                        "ERROR".into(),
                        "XX000".into(),
                        e.to_string(),
                    )))
                })?;
                line.push_str(&field(&text, options));
            }
            line.push('\n');
            messages.push(CopyData::new(Bytes::from(line)));
        }
    }
    if let Some(header) = pending_header {
        messages.push(CopyData::new(Bytes::from(header)));
    }
    Ok(messages)
}

/// A value as one field of a line.
fn field(text: &str, options: &CopyOptions) -> String {
    match options.format {
        CopyFormat::Text => {
            let mut escaped = String::with_capacity(text.len());
            for c in text.chars() {
                match c {
                    '\\' => escaped.push_str("\\\\"),
                    '\n' => escaped.push_str("\\n"),
                    '\r' => escaped.push_str("\\r"),
                    '\t' => escaped.push_str("\\t"),
                    c if c == options.delimiter => {
                        escaped.push('\\');
                        escaped.push(c);
                    }
                    c => escaped.push(c),
                }
            }
            escaped
        }
        CopyFormat::Csv => {
            let needs_quotes = text.is_empty()
                || text == options.null
                || text
                    .chars()
                    .any(|c| c == options.delimiter || matches!(c, '"' | '\n' | '\r'));
            if needs_quotes {
                format!("\"{}\"", text.replace('"', "\"\""))
            } else {
                text.to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(format: CopyFormat) -> CopyOptions {
        CopyOptions {
            format,
            delimiter: if format == CopyFormat::Csv { ',' } else { '\t' },
            null: if format == CopyFormat::Csv {
                String::new()
            } else {
                "\\N".into()
            },
            header: false,
        }
    }

    #[test]
    fn text_fields_escape_and_csv_fields_quote() {
        assert_eq!(
            field("a\tb\\c\n", &options(CopyFormat::Text)),
            "a\\tb\\\\c\\n"
        );
        assert_eq!(
            field("x,\"y\"", &options(CopyFormat::Csv)),
            "\"x,\"\"y\"\"\""
        );
        assert_eq!(field("", &options(CopyFormat::Csv)), "\"\"");
        assert_eq!(field("plain", &options(CopyFormat::Csv)), "plain");
    }
}
