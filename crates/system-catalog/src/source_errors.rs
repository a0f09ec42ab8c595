//! `fluxion_catalog.source_errors`: the records sources could not turn into rows.
//!
//! Unlike the other relations of `fluxion_catalog` it is not built from the system's status:
//! it is an arranged relation like a table, written with the batches sources commit and read
//! through the query's snapshot. This module defines it; whoever runs the sources writes it.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use repr::{GlobalId, RelationDesc};
use sql::catalog::RelationTable;

use crate::SYSTEM_SCHEMA;

/// The id of `fluxion_catalog.source_errors`.
pub const SOURCE_ERRORS: GlobalId = GlobalId::system(1);

/// The name of the relation in `fluxion_catalog`.
pub const SOURCE_ERRORS_NAME: &str = "source_errors";

/// `source_errors (source, position, raw, error, received_at)`, without a key; a source's
/// `error_table` has the same columns.
pub fn source_errors_desc() -> RelationDesc {
    RelationDesc {
        schema: Arc::new(Schema::new(vec![
            Field::new("source", DataType::Utf8, false),
            Field::new("position", DataType::Utf8, true),
            Field::new("raw", DataType::Utf8, true),
            Field::new("error", DataType::Utf8, false),
            Field::new(
                "received_at",
                DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
                false,
            ),
        ])),
        primary_key: None,
    }
}

/// The relation as queries read it; its columns say they come from `oid`.
pub(crate) fn source_errors_relation(oid: u32) -> RelationTable {
    RelationTable::new(
        SOURCE_ERRORS,
        format!("{SYSTEM_SCHEMA}.{SOURCE_ERRORS_NAME}"),
        source_errors_desc(),
    )
    .with_origin(oid)
}
