//! Event time of sources: the watermark a source declares, checked against its columns, and
//! the system relation `fluxion_catalog.late_events`, which keeps the rows that arrive
//! behind it (its columns are `system_catalog`'s, its rows `pipelines`').

use std::sync::{Arc, Mutex};

use std::time::{Duration, Instant};

use connectors::{Change, SourceBatch, SourceOptions};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use pipelines::{
    late_event_rows, WatermarkTracker, DEFAULT_IDLE_TIMEOUT, IDLE_TIMEOUT_OPTION, LATE_TABLE_OPTION,
};
use repr::{GlobalId, ItemKind};
use sql::{CreateSource, SqlError, WatermarkSpec};
use system_catalog::{late_events_desc, LATE_EVENTS, LATE_EVENTS_NAME};

use crate::coordinator::Coordinator;
use crate::error::CoordError;

impl Coordinator {
    /// The watermark of the source `create` declares over columns `schema`, resuming at
    /// `recovered`; `None` if it declares none. Checks that the column is a timestamp and
    /// reads the `watermark.idle_timeout` option.
    pub(super) fn event_time(
        &self,
        create: &CreateSource,
        schema: &SchemaRef,
        recovered: Option<i64>,
    ) -> Result<Option<Arc<Mutex<WatermarkTracker>>>, CoordError> {
        let options = SourceOptions::new(create.options.clone());
        let idle_timeout = options
            .duration(IDLE_TIMEOUT_OPTION)
            .map_err(|e| CoordError::InvalidSourceOption(e.to_string()))?;
        let Some(spec) = create.watermark(&self.base_state)? else {
            // The tables a CDC source feeds declare their own watermarks.
            let feeds_tables = options
                .connector()
                .is_some_and(|c| c.eq_ignore_ascii_case(super::tables::CDC_CONNECTOR));
            let needs_watermark = [IDLE_TIMEOUT_OPTION, LATE_TABLE_OPTION]
                .into_iter()
                .filter(|_| !feeds_tables)
                .find(|option| super::option_value(create, option).is_some());
            return match needs_watermark {
                Some(option) => Err(CoordError::InvalidSourceOption(format!(
                    "option {option} needs a WATERMARK FOR clause"
                ))),
                None => Ok(None),
            };
        };
        let idle_timeout = idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT);
        let tracker = watermark_tracker(&spec, schema, idle_timeout, recovered)?;
        Ok(Some(Arc::new(Mutex::new(tracker))))
    }

    /// The column of source or table `id` its watermark is declared on; `None` if `id` is
    /// not a source or table with a watermark.
    pub(crate) fn watermark_column(&self, id: GlobalId) -> Option<usize> {
        let catalog = crate::catalog::read(&self.catalog);
        let item = catalog
            .get(id)
            .filter(|i| matches!(i.kind, ItemKind::Source | ItemKind::Table))?;
        let relation = item.relation()?;
        let column = relation.event_time.as_deref()?;
        relation.desc.schema.index_of(column).ok()
    }

    /// The watermark of every source and table that has one, as visible now.
    pub(crate) fn watermarks(&self) -> Vec<(GlobalId, i64)> {
        let mut watermarks = self.sources.watermarks();
        watermarks.extend(self.table_watermarks.visible());
        watermarks
    }

    /// Makes `fluxion_catalog.late_events` readable and writable; at startup, before the log
    /// is replayed.
    pub(crate) fn install_late_events(&self) -> Result<(), CoordError> {
        self.install_system_relation(LATE_EVENTS, LATE_EVENTS_NAME, &late_events_desc())
    }
}

/// The tracker of the watermark `spec` declares over columns `schema` (`spec`'s column must
/// be a timestamp), resuming at `recovered`.
pub(crate) fn watermark_tracker(
    spec: &WatermarkSpec,
    schema: &SchemaRef,
    idle_timeout: Duration,
    recovered: Option<i64>,
) -> Result<WatermarkTracker, CoordError> {
    let column = schema.index_of(&spec.column).map_err(|_| {
        CoordError::unknown_column(format!(
            "column \"{}\" named in WATERMARK does not exist",
            spec.column
        ))
    })?;
    let field = schema.field(column);
    if !matches!(field.data_type(), DataType::Timestamp(_, _)) {
        return Err(SqlError::TypeMismatch(format!(
            "the WATERMARK column \"{}\" must be a timestamp, not {}",
            spec.column,
            repr::pg_type::format_type(field)
        ))
        .into());
    }
    Ok(WatermarkTracker::new(
        column,
        spec.delay_micros,
        idle_timeout,
        recovered,
    ))
}

/// What event time makes of `batch`, a batch of source `source` whose watermark `tracker`
/// keeps: the rows of `late_events` for its late rows (if any), and the watermark after it
/// if it moved. Only rows the batch inserts or upserts into the source itself count.
pub(super) fn observe_batch(
    source: &str,
    tracker: &Mutex<WatermarkTracker>,
    batch: &SourceBatch,
) -> Result<(Option<RecordBatch>, Option<i64>), CoordError> {
    let mut tracker = tracker.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    let mut late = Vec::new();
    let mut offset = 0;
    for change in batch.changes.iter().filter(|c| c.output == 0) {
        let rows = match &change.change {
            Change::Insert(rows) | Change::Upsert { rows, .. } => rows,
            _ => continue,
        };
        let count = rows.num_rows();
        let partitions = batch
            .row_partitions
            .get(offset..offset + count)
            .unwrap_or_default();
        offset += count;
        let observed = tracker.observe(rows, partitions, now)?;
        if !observed.late.is_empty() {
            late.push(late_event_rows(source, rows, tracker.column(), &observed)?);
        }
    }
    let late = match late.first() {
        Some(first) => Some(
            concat_batches(&first.schema(), &late)
                .map_err(|e| CoordError::Internal(e.to_string()))?,
        ),
        None => None,
    };
    Ok((late, tracker.advance(now)))
}
