//! Bad records: `fluxion_catalog.source_errors` and a source's own `error_table`.
//!
//! A record that a connector cannot turn into a row is committed with the batch it came in,
//! as a row of the system relation `fluxion_catalog.source_errors` (and of the user table
//! the source's `error_table` option names). It is in the same log record as the batch's
//! rows and position, so it is kept exactly once, survives restarts, and the source moves on
//! past it: a poison record is never retried.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use connectors::BadRecord;
use datafusion::arrow::array::{RecordBatch, StringArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::SchemaRef;
use system_catalog::source_errors_desc;

use crate::error::PipelineError;

/// The option naming a user table that also receives a source's bad records.
pub const ERROR_TABLE_OPTION: &str = "error_table";

/// The rows recording `errors` of source `source`, received now.
pub fn bad_record_rows(source: &str, errors: &[BadRecord]) -> Result<RecordBatch, PipelineError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or_default();
    RecordBatch::try_new(
        source_errors_desc().schema,
        vec![
            Arc::new(StringArray::from_iter_values(errors.iter().map(|_| source))),
            Arc::new(StringArray::from_iter_values(
                errors.iter().map(|e| e.position.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                errors.iter().map(|e| e.raw.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                errors.iter().map(|e| e.error.as_str()),
            )),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(errors.iter().map(|_| now))
                    .with_timezone("UTC"),
            ),
        ],
    )
    .map_err(|e| PipelineError::Internal(e.to_string()))
}

/// Whether a table's columns can hold bad records (those of `source_errors`, in order).
pub fn fits_error_table(schema: &SchemaRef) -> bool {
    same_columns(schema, &source_errors_desc().schema)
}

/// Whether `schema` has the columns of `wanted`: the same names and types, in order.
pub(crate) fn same_columns(schema: &SchemaRef, wanted: &SchemaRef) -> bool {
    schema.fields().len() == wanted.fields().len()
        && schema
            .fields()
            .iter()
            .zip(wanted.fields())
            .all(|(have, want)| have.name() == want.name() && have.data_type() == want.data_type())
}
