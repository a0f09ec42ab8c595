use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

use pipelines::Subscription;

use crate::query_rows::QueryRows;
use sql::{CopyFormat, CopyOptions};

/// What executing one statement produced.
#[derive(Debug)]
pub enum ExecuteResponse {
    /// Rows, with their schema (possibly no batches), computed as they are read.
    Rows {
        /// Column names and types.
        schema: SchemaRef,
        /// The rows.
        rows: QueryRows,
    },
    /// A command without rows, with its completion tag (`INSERT 0 3`, `CREATE TABLE`).
    Command(String),
    /// The client should now send COPY data; the session remembers where it goes.
    CopyIn {
        /// The number of columns each row carries.
        columns: usize,
        /// The data format.
        format: CopyFormat,
    },
    /// Rows to send as COPY data (COPY … TO STDOUT), computed as they are read.
    CopyOut {
        /// Column names and types.
        schema: SchemaRef,
        /// The rows.
        rows: QueryRows,
        /// How to lay them out.
        options: CopyOptions,
    },
    /// Rows fetched from a cursor (completion tag `FETCH n`).
    Fetched {
        /// Column names and types.
        schema: SchemaRef,
        /// The rows.
        batches: Vec<RecordBatch>,
    },
    /// DEALLOCATE: the prepared statement to forget (`None`: all of them).
    Deallocate {
        /// The statement's name.
        name: Option<String>,
    },
    /// The query string held no statement.
    EmptyQuery,
    /// A running subscription (`SUBSCRIBE`), whose rows are streamed as they come.
    Subscribe(Subscription),
    /// A running subscription streamed as COPY data (`COPY (SUBSCRIBE …) TO STDOUT`).
    CopySubscribe {
        /// The subscription.
        subscription: Subscription,
        /// How to lay out its rows.
        options: CopyOptions,
    },
}

impl ExecuteResponse {
    pub(crate) fn command(tag: impl Into<String>) -> Self {
        ExecuteResponse::Command(tag.into())
    }

    /// This response, whose rows still to be computed end with 57014 past `deadline`.
    pub(crate) fn with_deadline(self, deadline: tokio::time::Instant) -> Self {
        match self {
            ExecuteResponse::Rows { schema, rows } => ExecuteResponse::Rows {
                schema,
                rows: rows.with_deadline(deadline),
            },
            ExecuteResponse::CopyOut {
                schema,
                rows,
                options,
            } => ExecuteResponse::CopyOut {
                schema,
                rows: rows.with_deadline(deadline),
                options,
            },
            other => other,
        }
    }
}
