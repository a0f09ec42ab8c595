//! `fluxion_catalog`: relations describing the running system, built when a query reads them.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    Float64Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::Result as DfResult;
use repr::{wall_clock_ms, GlobalId, ItemKind, Timestamp};

use crate::catalog_input::{CatalogInput, CatalogReader, ItemDetails};
use crate::late_events::{late_events_desc, late_events_relation, LATE_EVENTS, LATE_EVENTS_NAME};
use crate::oids::FLUXION_CATALOG_NAMESPACE;
use crate::source_errors::{
    source_errors_desc, source_errors_relation, SOURCE_ERRORS, SOURCE_ERRORS_NAME,
};
use crate::status::{SourceStatus, SubscriptionStatus, SystemStatus};
use crate::SYSTEM_SCHEMA;

/// The relations of `fluxion_catalog` and their columns.
pub(crate) fn relations() -> Vec<(&'static str, SchemaRef)> {
    vec![
        ("view_errors", view_errors_schema()),
        ("sources", sources_schema()),
        ("source_stats", source_stats_schema()),
        (SOURCE_ERRORS_NAME, source_errors_desc().schema),
        ("subscriptions", subscriptions_schema()),
        ("sink_stats", sink_stats_schema()),
        ("frontiers", frontiers_schema()),
        ("arrangement_sizes", arrangement_sizes_schema()),
        (LATE_EVENTS_NAME, late_events_desc().schema),
        ("views", views_schema()),
        ("hydration", hydration_schema()),
    ]
}

/// The OID of relation `name` of `fluxion_catalog` (they follow the namespace's).
pub(crate) fn relation_oid(name: &str) -> u32 {
    let position = relations()
        .iter()
        .position(|(n, _)| *n == name)
        .unwrap_or_default();
    FLUXION_CATALOG_NAMESPACE + 1 + position as u32
}

/// `sources`: one row per source.
fn sources_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("source_name", DataType::Utf8, false),
        Field::new("connector", DataType::Utf8, false),
        Field::new("create_sql", DataType::Utf8, false),
    ]))
}

/// `source_stats`: one row per source.
fn source_stats_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("source_name", DataType::Utf8, false),
        Field::new("connector", DataType::Utf8, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("rows", DataType::UInt64, false),
        Field::new("bytes", DataType::UInt64, false),
        Field::new("errors", DataType::UInt64, false),
        Field::new("batches", DataType::UInt64, false),
        Field::new("position", DataType::Utf8, true),
        Field::new("rows_per_second", DataType::Float64, false),
        Field::new("lag", DataType::UInt64, true),
        Field::new("last_error", DataType::Utf8, true),
        Field::new(
            "last_batch_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
            true,
        ),
        Field::new("late_rows", DataType::UInt64, false),
        Field::new(
            "watermark",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
    ]))
}

/// `subscriptions`: one row per durable subscription.
fn subscriptions_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("subscription_name", DataType::Utf8, false),
        Field::new("from_name", DataType::Utf8, false),
        Field::new("retention_ms", DataType::UInt64, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("earliest", DataType::UInt64, true),
        Field::new("lag_ms", DataType::UInt64, true),
        Field::new("log_bytes", DataType::UInt64, false),
        Field::new("subscribers", DataType::UInt64, false),
        Field::new("failure", DataType::Utf8, true),
    ]))
}

/// `sink_stats`: one row per sink.
fn sink_stats_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("sink_name", DataType::Utf8, false),
        Field::new("connector", DataType::Utf8, false),
        Field::new("from_name", DataType::Utf8, false),
        Field::new("rows_delivered", DataType::UInt64, false),
        Field::new("last_timestamp", DataType::UInt64, true),
        Field::new("lag_ms", DataType::UInt64, false),
        Field::new("failure", DataType::Utf8, true),
    ]))
}

/// `frontiers`: one row per arrangement (table, source, materialized view, index).
fn frontiers_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("object_name", DataType::Utf8, false),
        Field::new("object_type", DataType::Utf8, false),
        Field::new("upper", DataType::UInt64, true),
        Field::new("since", DataType::UInt64, false),
        Field::new("lag_ms", DataType::UInt64, true),
        Field::new(
            "watermark",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
    ]))
}

/// `arrangement_sizes`: one row per object whose dataflow keeps arrangements.
fn arrangement_sizes_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("object_name", DataType::Utf8, false),
        Field::new("object_type", DataType::Utf8, false),
        Field::new("records", DataType::Int64, false),
        Field::new("batches", DataType::Int64, false),
        Field::new("bytes", DataType::Int64, false),
    ]))
}

/// `views`: one row per materialized view.
fn views_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("view_name", DataType::Utf8, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("memory_bytes", DataType::Int64, true),
        Field::new("memory_budget", DataType::Int64, true),
        Field::new("stopped_reason", DataType::Utf8, true),
    ]))
}

/// `hydration`: one row per materialized view or index being built.
fn hydration_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_name", DataType::Utf8, false),
        Field::new("object_name", DataType::Utf8, false),
        Field::new("object_type", DataType::Utf8, false),
        Field::new("phase", DataType::Utf8, false),
        Field::new("rows_done", DataType::Int64, false),
        Field::new("rows_total", DataType::Int64, true),
        Field::new("progress", DataType::Float64, true),
        Field::new("rows_per_second", DataType::Float64, false),
        Field::new("elapsed_ms", DataType::Int64, false),
        Field::new("remaining_ms", DataType::Int64, true),
    ]))
}

/// `view_errors (view_name, rows_left_out, failures, last_error)`.
fn view_errors_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("view_name", DataType::Utf8, false),
        Field::new("rows_left_out", DataType::Int64, false),
        Field::new("failures", DataType::UInt64, false),
        Field::new("last_error", DataType::Utf8, false),
    ]))
}

/// The `fluxion_catalog` schema.
#[derive(Debug)]
pub(crate) struct FluxionCatalog {
    catalog: Arc<dyn CatalogReader>,
    status: Arc<dyn SystemStatus>,
}

impl FluxionCatalog {
    /// The schema of the catalog `catalog` gives and the system `status` describes.
    pub fn new(catalog: Arc<dyn CatalogReader>, status: Arc<dyn SystemStatus>) -> Self {
        Self { catalog, status }
    }

    /// `sources (schema_name, source_name, connector, create_sql)`: every source.
    fn sources(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = sources_schema();
        let connectors: HashMap<_, _> = self
            .status
            .sources()
            .into_iter()
            .map(|status| (status.id, status.connector))
            .collect();
        let catalog = self.catalog.catalog();
        let items: Vec<_> = catalog
            .items
            .iter()
            .filter(|(_, item)| item.kind == ItemKind::Source)
            .collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    items.iter().map(|(_, i)| &i.schema),
                )),
                Arc::new(StringArray::from_iter_values(
                    items.iter().map(|(_, i)| &i.name),
                )),
                Arc::new(StringArray::from_iter_values(items.iter().map(
                    |(id, _)| connectors.get(id).map(String::as_str).unwrap_or_default(),
                ))),
                Arc::new(StringArray::from_iter_values(
                    items.iter().map(|(_, i)| &i.create_sql),
                )),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `source_stats`: rows, bytes, errors and batches each source has made durable (counted
    /// since this server started), its position, status, and rows/s over the last seconds.
    fn source_stats(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = source_stats_schema();
        let stats = self.status.sources();
        let catalog = self.catalog.catalog();
        let names: Vec<(String, String)> = stats.iter().map(|s| name_of(&catalog, s.id)).collect();
        let column = |f: &dyn Fn(&SourceStatus) -> u64| {
            Arc::new(UInt64Array::from_iter_values(stats.iter().map(f)))
        };
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(names.iter().map(|n| &n.0))),
                Arc::new(StringArray::from_iter_values(names.iter().map(|n| &n.1))),
                Arc::new(StringArray::from_iter_values(
                    stats.iter().map(|s| &s.connector),
                )),
                Arc::new(StringArray::from_iter_values(
                    stats.iter().map(|s| s.status),
                )),
                column(&|s| s.rows),
                column(&|s| s.bytes),
                column(&|s| s.errors),
                column(&|s| s.batches),
                Arc::new(StringArray::from_iter(
                    stats.iter().map(|s| s.position.clone()),
                )),
                Arc::new(Float64Array::from_iter_values(
                    stats.iter().map(|s| s.rows_per_second),
                )),
                Arc::new(UInt64Array::from_iter(stats.iter().map(|s| s.lag))),
                Arc::new(StringArray::from_iter(
                    stats.iter().map(|s| s.last_error.clone()),
                )),
                Arc::new(
                    TimestampMicrosecondArray::from_iter(stats.iter().map(|s| {
                        s.last_batch_at
                            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                            .map(|d| d.as_micros() as i64)
                    }))
                    .with_timezone("UTC"),
                ),
                column(&|s| s.late_rows),
                Arc::new(TimestampMicrosecondArray::from_iter(
                    stats.iter().map(|s| s.watermark),
                )),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `subscriptions`: each durable subscription's log: `position` (every change before it is
    /// logged), `earliest` (the oldest `AS OF` it serves; NULL and `lag_ms` NULL until the
    /// first changes are logged), how far `position` trails the clock,
    /// its size, the subscribers reading it, and why it stopped, if it did.
    fn subscriptions(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = subscriptions_schema();
        let statuses = self.status.subscriptions();
        let catalog = self.catalog.catalog();
        let names: Vec<(String, String)> =
            statuses.iter().map(|s| name_of(&catalog, s.id)).collect();
        let from: Vec<String> = statuses
            .iter()
            .map(|s| {
                let from = catalog
                    .items
                    .get(&s.id)
                    .and_then(|item| match item.details {
                        ItemDetails::Subscription { from } => Some(from),
                        _ => None,
                    });
                from.map(|id| name_of(&catalog, id).1).unwrap_or_default()
            })
            .collect();
        let now = wall_clock_ms();
        let column = |f: &dyn Fn(&SubscriptionStatus) -> u64| {
            Arc::new(UInt64Array::from_iter_values(statuses.iter().map(f)))
        };
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(names.iter().map(|n| &n.0))),
                Arc::new(StringArray::from_iter_values(names.iter().map(|n| &n.1))),
                Arc::new(StringArray::from_iter_values(from)),
                column(&|s| s.retention.as_millis() as u64),
                column(&|s| s.upper),
                Arc::new(UInt64Array::from_iter(
                    statuses
                        .iter()
                        .map(|s| (s.earliest > 0).then_some(s.earliest)),
                )),
                Arc::new(UInt64Array::from_iter(
                    statuses
                        .iter()
                        .map(|s| (s.earliest > 0).then(|| now.saturating_sub(s.upper))),
                )),
                column(&|s| s.log_bytes),
                column(&|s| s.subscribers as u64),
                Arc::new(StringArray::from_iter(
                    statuses.iter().map(|s| s.failure.clone()),
                )),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `sink_stats`: each sink's changes handed to its target since the server started
    /// (`rows_delivered`), the last time its target holds for good (`last_timestamp`), how
    /// long the oldest change not there yet has waited (`lag_ms`, 0 when none waits), and why
    /// delivery last failed, until it succeeds again.
    fn sink_stats(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = sink_stats_schema();
        let sinks = self.status.sinks();
        let catalog = self.catalog.catalog();
        let mut schemas = Vec::new();
        let mut names = Vec::new();
        let mut from_names = Vec::new();
        for sink in &sinks {
            let item = catalog.items.get(&sink.id);
            schemas.push(item.map(|i| i.schema.clone()).unwrap_or_default());
            names.push(item.map_or_else(|| sink.id.to_string(), |i| i.name.clone()));
            let from = item.and_then(|i| match i.details {
                ItemDetails::Sink { from } => catalog.items.get(&from),
                _ => None,
            });
            from_names.push(from.map(|f| f.name.clone()).unwrap_or_default());
        }
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(schemas)),
                Arc::new(StringArray::from_iter_values(names)),
                Arc::new(StringArray::from_iter_values(
                    sinks.iter().map(|sink| sink.connector.clone()),
                )),
                Arc::new(StringArray::from_iter_values(from_names)),
                Arc::new(UInt64Array::from_iter_values(
                    sinks.iter().map(|sink| sink.rows_delivered),
                )),
                Arc::new(UInt64Array::from_iter(
                    sinks.iter().map(|sink| sink.last_timestamp),
                )),
                Arc::new(UInt64Array::from_iter_values(
                    sinks.iter().map(|sink| lag_ms(sink.oldest_pending)),
                )),
                Arc::new(StringArray::from_iter(
                    sinks.iter().map(|sink| sink.failure.clone()),
                )),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `frontiers`: how far each arrangement has got, as compute's workers report it: every
    /// update before `upper` is in it (NULL once it is closed for good), reads before `since`
    /// are no longer possible, and `lag_ms` is how far `upper` trails the clock (timestamps
    /// are milliseconds of wall-clock time); `watermark` is the object's event-time watermark
    /// (a source's own, a view's the least of its sources').
    fn frontiers(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = frontiers_schema();
        let frontiers = self.status.frontiers();
        let catalog = self.catalog.catalog();
        let now = wall_clock_ms();
        let mut schemas = Vec::new();
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut uppers = Vec::new();
        let mut sinces = Vec::new();
        let mut lags = Vec::new();
        let mut watermarks = Vec::new();
        for frontier in frontiers {
            let Some((schema_name, name, kind)) = arrangement_owner(&catalog, frontier.id) else {
                continue;
            };
            let open = (frontier.upper != Timestamp::MAX).then_some(frontier.upper);
            schemas.push(schema_name);
            names.push(name);
            types.push(kind);
            uppers.push(open);
            sinces.push(frontier.since);
            lags.push(open.map(|upper| now.saturating_sub(upper)));
            watermarks.push(frontier.watermark);
        }
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(schemas)),
                Arc::new(StringArray::from(names)),
                Arc::new(StringArray::from(types)),
                Arc::new(UInt64Array::from(uppers)),
                Arc::new(UInt64Array::from(sinces)),
                Arc::new(UInt64Array::from(lags)),
                Arc::new(TimestampMicrosecondArray::from(watermarks)),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `arrangement_sizes`: the updates (`records`) and batches that every arrangement of an
    /// object's dataflow holds, internal ones (join inputs, aggregations) included, as
    /// compute's workers last reported them.
    fn arrangement_sizes(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = arrangement_sizes_schema();
        let catalog = self.catalog.catalog();
        let mut schemas = Vec::new();
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut records = Vec::new();
        let mut batches = Vec::new();
        let mut bytes = Vec::new();
        for size in self.status.arrangement_sizes() {
            let Some((schema_name, name, kind)) = arrangement_owner(&catalog, size.id) else {
                continue;
            };
            schemas.push(schema_name);
            names.push(name);
            types.push(kind);
            records.push(size.records);
            batches.push(size.batches);
            bytes.push(size.bytes);
        }
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(schemas)),
                Arc::new(StringArray::from(names)),
                Arc::new(StringArray::from(types)),
                Arc::new(Int64Array::from(records)),
                Arc::new(Int64Array::from(batches)),
                Arc::new(Int64Array::from(bytes)),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `views`: every materialized view, `running` or `stopped` (and why), with the bytes
    /// its dataflow holds and its memory budget.
    fn views(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = views_schema();
        let catalog = self.catalog.catalog();
        let views = self.status.views();
        let names: Vec<(String, String)> = views.iter().map(|v| name_of(&catalog, v.id)).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(names.iter().map(|n| &n.0))),
                Arc::new(StringArray::from_iter_values(names.iter().map(|n| &n.1))),
                Arc::new(StringArray::from_iter_values(views.iter().map(
                    |v| match v.stopped {
                        Some(_) => "stopped",
                        None => "running",
                    },
                ))),
                Arc::new(Int64Array::from_iter(views.iter().map(|v| v.bytes))),
                Arc::new(Int64Array::from_iter(views.iter().map(|v| {
                    v.memory_budget
                        .map(|budget| i64::try_from(budget).unwrap_or(i64::MAX))
                }))),
                Arc::new(StringArray::from_iter(
                    views.iter().map(|v| v.stopped.clone()),
                )),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `hydration`: the materialized views and indexes being built (created, or rebuilt by a
    /// restart), and the sources reading their initial snapshot, with how far each has got.
    fn hydration(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = hydration_schema();
        let catalog = self.catalog.catalog();
        let builds: Vec<_> = self
            .status
            .hydrations()
            .into_iter()
            .filter_map(|build| {
                let item = catalog.items.get(&build.id)?;
                Some((item, build))
            })
            .collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    builds.iter().map(|(item, _)| &item.schema),
                )),
                Arc::new(StringArray::from_iter_values(
                    builds.iter().map(|(item, _)| &item.name),
                )),
                Arc::new(StringArray::from_iter_values(
                    builds.iter().map(|(item, _)| item.kind.name()),
                )),
                Arc::new(StringArray::from_iter_values(
                    builds.iter().map(|(_, build)| build.phase),
                )),
                Arc::new(Int64Array::from_iter_values(
                    builds.iter().map(|(_, build)| build.rows_done),
                )),
                Arc::new(Int64Array::from_iter(
                    builds.iter().map(|(_, build)| build.rows_total),
                )),
                Arc::new(Float64Array::from_iter(
                    builds.iter().map(|(_, build)| build.progress),
                )),
                Arc::new(Float64Array::from_iter_values(
                    builds.iter().map(|(_, build)| build.rows_per_second),
                )),
                Arc::new(Int64Array::from_iter_values(
                    builds.iter().map(|(_, build)| build.elapsed_ms),
                )),
                Arc::new(Int64Array::from_iter(
                    builds.iter().map(|(_, build)| build.remaining_ms),
                )),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }

    /// `view_errors (view_name, rows_left_out, failures, last_error)`: rows left out of
    /// materialized views because an expression failed on them (division by zero, a bad cast).
    fn view_errors(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = view_errors_schema();
        let errors = self.status.view_errors();
        let catalog = self.catalog.catalog();
        let mut names = Vec::new();
        let mut rows = Vec::new();
        let mut failures = Vec::new();
        let mut messages = Vec::new();
        for view in errors {
            let name = catalog.items.get(&view.id).map(|i| i.name.clone());
            names.push(name.unwrap_or_else(|| view.id.to_string()));
            rows.push(view.rows_left_out);
            failures.push(view.failures);
            messages.push(view.last_error);
        }
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(names)),
                Arc::new(Int64Array::from(rows)),
                Arc::new(UInt64Array::from(failures)),
                Arc::new(StringArray::from(messages)),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}

/// The schema and name of item `id` (its id as the name if it is gone).
fn name_of(catalog: &CatalogInput, id: GlobalId) -> (String, String) {
    catalog
        .items
        .get(&id)
        .map(|item| (item.schema.clone(), item.name.clone()))
        .unwrap_or_else(|| (String::new(), id.to_string()))
}

/// The schema, name and kind of the object arrangement `id` belongs to, if it still exists.
fn arrangement_owner(
    catalog: &CatalogInput,
    id: GlobalId,
) -> Option<(String, String, &'static str)> {
    match catalog.items.get(&id) {
        Some(item) => Some((item.schema.clone(), item.name.clone(), item.kind.name())),
        None if id == SOURCE_ERRORS => Some((
            SYSTEM_SCHEMA.to_string(),
            SOURCE_ERRORS_NAME.to_string(),
            "system relation",
        )),
        None if id == LATE_EVENTS => Some((
            SYSTEM_SCHEMA.to_string(),
            LATE_EVENTS_NAME.to_string(),
            "system relation",
        )),
        None => None,
    }
}

/// How far a sink's target trails what happened (0 when it holds every change).
fn lag_ms(oldest_pending: Option<Timestamp>) -> u64 {
    oldest_pending.map_or(0, |oldest| wall_clock_ms().saturating_sub(oldest))
}

#[async_trait]
impl SchemaProvider for FluxionCatalog {
    fn table_names(&self) -> Vec<String> {
        relations()
            .into_iter()
            .map(|(name, _)| name.to_string())
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        match name {
            "view_errors" => self.view_errors().map(Some),
            "sources" => self.sources().map(Some),
            "source_stats" => self.source_stats().map(Some),
            "subscriptions" => self.subscriptions().map(Some),
            "sink_stats" => self.sink_stats().map(Some),
            "frontiers" => self.frontiers().map(Some),
            "arrangement_sizes" => self.arrangement_sizes().map(Some),
            "views" => self.views().map(Some),
            "hydration" => self.hydration().map(Some),
            SOURCE_ERRORS_NAME => Ok(Some(Arc::new(source_errors_relation(relation_oid(
                SOURCE_ERRORS_NAME,
            ))))),
            LATE_EVENTS_NAME => Ok(Some(Arc::new(late_events_relation(relation_oid(
                LATE_EVENTS_NAME,
            ))))),
            _ => Ok(None),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        relations().iter().any(|(n, _)| *n == name)
    }
}
