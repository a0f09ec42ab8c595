//! `fluxion_catalog.late_events`: rows that arrived behind their source's watermark.
//!
//! Like `source_errors`, it is an arranged relation written with the batches sources commit
//! (a late row is kept in the same log frame as the batch it came in, so it is recorded
//! exactly once and survives restarts), not a view of the system's status. This module
//! defines it; whoever runs the sources writes it.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use repr::{GlobalId, RelationDesc};
use sql::catalog::RelationTable;

use crate::SYSTEM_SCHEMA;

/// The id of `fluxion_catalog.late_events`.
pub const LATE_EVENTS: GlobalId = GlobalId::system(2);

/// The name of the relation in `fluxion_catalog`.
pub const LATE_EVENTS_NAME: &str = "late_events";

/// `late_events (source, row, event_time, watermark, received_at)`, without a key: the
/// source's name, the late row as JSON text, its event time, the source's watermark when it
/// arrived, and when that was.
pub fn late_events_desc() -> RelationDesc {
    let utc = || DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")));
    let local = || DataType::Timestamp(TimeUnit::Microsecond, None);
    RelationDesc {
        schema: Arc::new(Schema::new(vec![
            Field::new("source", DataType::Utf8, false),
            Field::new("row", DataType::Utf8, false),
            Field::new("event_time", local(), false),
            Field::new("watermark", local(), false),
            Field::new("received_at", utc(), false),
        ])),
        primary_key: None,
    }
}

/// The relation as queries read it; its columns say they come from `oid`.
pub(crate) fn late_events_relation(oid: u32) -> RelationTable {
    RelationTable::new(
        LATE_EVENTS,
        format!("{SYSTEM_SCHEMA}.{LATE_EVENTS_NAME}"),
        late_events_desc(),
    )
    .with_origin(oid)
}
