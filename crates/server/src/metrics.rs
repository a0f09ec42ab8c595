//! Prometheus metrics (`GET /metrics`, in the OpenMetrics text format Prometheus scrapes): what
//! `fluxion_catalog` shows of sources, sinks, views, arrangements and frontiers, the clients
//! connected, how their statements ended, and the process's memory. The catalog's figures are
//! read through the same relations a SQL client reads, by a session of the bootstrap
//! superuser, so the two always agree; statements are counted by the server as they end, and
//! group commit's group sizes and waits by the write-ahead log's writer.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use coord::{Coordinator, ExecuteResponse, Session, BOOTSTRAP_ROLE};
use futures::TryStreamExt;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::backends::BackendRegistry;

/// Whether a metric only grows (a counter, exposed with `_total`) or goes up and down.
#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
}

/// One metric family, and the query whose rows are its samples: first a text column per
/// label, then the value (a number).
struct Metric {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    query: &'static str,
}

/// Labels of an object of a schema.
const OBJECT: &[&str] = &["schema", "name"];
/// Labels of an object of a schema, with its kind.
const TYPED_OBJECT: &[&str] = &["schema", "name", "type"];

const METRICS: &[Metric] = &[
    Metric {
        name: "fluxion_source_rows",
        help: "Rows a source has made durable",
        kind: Kind::Counter,
        labels: OBJECT,
        query: "SELECT schema_name, source_name, rows::float8 FROM fluxion_catalog.source_stats",
    },
    Metric {
        name: "fluxion_source_bytes",
        help: "Bytes of records a source has made durable",
        kind: Kind::Counter,
        labels: OBJECT,
        query: "SELECT schema_name, source_name, bytes::float8 FROM fluxion_catalog.source_stats",
    },
    Metric {
        name: "fluxion_source_errors",
        help: "Records of a source that could not become rows (kept in source_errors)",
        kind: Kind::Counter,
        labels: OBJECT,
        query: "SELECT schema_name, source_name, errors::float8 FROM fluxion_catalog.source_stats",
    },
    Metric {
        name: "fluxion_source_late_rows",
        help: "Rows of a source that arrived below its watermark (kept in late_events)",
        kind: Kind::Counter,
        labels: OBJECT,
        query: "SELECT schema_name, source_name, late_rows::float8 \
                FROM fluxion_catalog.source_stats",
    },
    Metric {
        name: "fluxion_source_lag",
        help: "How far a source trails its upstream, in the upstream's units (records, offsets)",
        kind: Kind::Gauge,
        labels: OBJECT,
        query: "SELECT schema_name, source_name, lag::float8 FROM fluxion_catalog.source_stats \
                WHERE lag IS NOT NULL",
    },
    Metric {
        name: "fluxion_sink_rows_delivered",
        help: "Rows a sink has delivered",
        kind: Kind::Counter,
        labels: OBJECT,
        query: "SELECT schema_name, sink_name, rows_delivered::float8 \
                FROM fluxion_catalog.sink_stats",
    },
    Metric {
        name: "fluxion_sink_lag_seconds",
        help: "How far a sink's deliveries trail the view it reads",
        kind: Kind::Gauge,
        labels: OBJECT,
        query:
            "SELECT schema_name, sink_name, lag_ms::float8 / 1000 FROM fluxion_catalog.sink_stats",
    },
    Metric {
        name: "fluxion_view_memory_bytes",
        help: "Bytes a running materialized view's dataflow holds",
        kind: Kind::Gauge,
        labels: OBJECT,
        query: "SELECT schema_name, view_name, memory_bytes::float8 FROM fluxion_catalog.views \
                WHERE memory_bytes IS NOT NULL",
    },
    Metric {
        name: "fluxion_view_memory_budget_bytes",
        help: "The memory budget of a running materialized view",
        kind: Kind::Gauge,
        labels: OBJECT,
        query: "SELECT schema_name, view_name, memory_budget::float8 FROM fluxion_catalog.views \
                WHERE memory_budget IS NOT NULL",
    },
    Metric {
        name: "fluxion_view_stopped",
        help: "1 for a materialized view stopped for needing more memory than its budget",
        kind: Kind::Gauge,
        labels: OBJECT,
        query: "SELECT schema_name, view_name, \
                CASE WHEN status = 'stopped' THEN 1 ELSE 0 END FROM fluxion_catalog.views",
    },
    Metric {
        name: "fluxion_arrangement_records",
        help: "Updates the arrangement of a table, view or index holds",
        kind: Kind::Gauge,
        labels: TYPED_OBJECT,
        query: "SELECT schema_name, object_name, object_type, records::float8 \
                FROM fluxion_catalog.arrangement_sizes",
    },
    Metric {
        name: "fluxion_arrangement_bytes",
        help: "Bytes the arrangement of a table, view or index holds",
        kind: Kind::Gauge,
        labels: TYPED_OBJECT,
        query: "SELECT schema_name, object_name, object_type, bytes::float8 \
                FROM fluxion_catalog.arrangement_sizes",
    },
    Metric {
        name: "fluxion_frontier_lag_seconds",
        help: "How far an object's frontier trails the clock",
        kind: Kind::Gauge,
        labels: TYPED_OBJECT,
        query: "SELECT schema_name, object_name, object_type, lag_ms::float8 / 1000 \
                FROM fluxion_catalog.frontiers WHERE lag_ms IS NOT NULL",
    },
    Metric {
        name: "fluxion_connections",
        help: "Clients connected over the Postgres protocol",
        kind: Kind::Gauge,
        labels: &[],
        query: "SELECT count(*)::float8 FROM pg_stat_activity",
    },
];

/// The metrics in the OpenMetrics text format.
pub(crate) async fn render(
    coord: &Coordinator,
    backends: Arc<BackendRegistry>,
) -> Result<String, String> {
    let mut session = coord.new_session(BOOTSTRAP_ROLE, 0, &[], backends.clone());
    let mut registry = Registry::default();
    let mut failure = None;
    for metric in METRICS {
        match samples(coord, &mut session, metric).await {
            Ok(samples) => register(&mut registry, metric, samples),
            Err(e) => {
                failure = Some(format!("{}: {e}", metric.name));
                break;
            }
        }
    }
    coord.end_session(session).await;
    if let Some(failure) = failure {
        return Err(failure);
    }
    let statements = Family::<Vec<(String, String)>, Counter<f64, AtomicU64>>::default();
    for (outcome, count) in backends.statement_outcomes() {
        let labels = vec![("outcome".to_string(), outcome.to_string())];
        statements.get_or_create(&labels).inc_by(count as f64);
    }
    registry.register(
        "fluxion_statements",
        "Statements clients ran, by how they ended (canceled: by the client or a timeout)",
        statements,
    );
    let commits = coord.commit_stats();
    registry.register(
        "fluxion_commit_group_records",
        "Commits each fsync of the write-ahead log made durable (group commit's group size)",
        HistogramSnapshot(commits.group_records),
    );
    registry.register(
        "fluxion_commit_durable_seconds",
        "Seconds a commit waited from being queued for the write-ahead log until it was durable",
        HistogramSnapshot(commits.durable_seconds),
    );
    if let Some(bytes) = resident_memory_bytes() {
        let resident = Gauge::<f64, AtomicU64>::default();
        resident.set(bytes);
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            resident,
        );
    }
    let mut text = String::new();
    encode(&mut text, &registry).map_err(|e| e.to_string())?;
    Ok(text)
}

/// The labels and value of each row `metric`'s query returns.
async fn samples(
    coord: &Coordinator,
    session: &mut Session,
    metric: &Metric,
) -> Result<Vec<(Vec<(String, String)>, f64)>, String> {
    let statement = coord::parse(metric.query)
        .map_err(|e| e.to_string())?
        .pop()
        .ok_or("no statement")?;
    let rows = match coord.execute(session, statement).await {
        Ok(ExecuteResponse::Rows { rows, .. }) => rows,
        Ok(_) => return Err("the query returned no rows".into()),
        Err(e) => return Err(e.to_string()),
    };
    let batches: Vec<RecordBatch> = rows.try_collect().await.map_err(|e| e.to_string())?;
    let mut samples = Vec::new();
    for batch in &batches {
        let labels = metric.labels.len();
        let values = cast(batch.column(labels), &DataType::Float64).map_err(|e| e.to_string())?;
        let values = values.as_primitive::<Float64Type>();
        for row in 0..batch.num_rows() {
            let mut set = Vec::with_capacity(labels);
            for (column, label) in metric.labels.iter().enumerate() {
                let text = batch
                    .column(column)
                    .as_string_opt::<i32>()
                    .ok_or("a label is not text")?;
                set.push((label.to_string(), text.value(row).to_string()));
            }
            samples.push((set, values.value(row)));
        }
    }
    Ok(samples)
}

/// Registers `metric` with `samples` in `registry`: a family of labelled samples, or one
/// sample without labels.
fn register(registry: &mut Registry, metric: &Metric, samples: Vec<(Vec<(String, String)>, f64)>) {
    match (metric.kind, metric.labels.is_empty()) {
        (Kind::Counter, false) => {
            let family = Family::<Vec<(String, String)>, Counter<f64, AtomicU64>>::default();
            for (labels, value) in samples {
                family.get_or_create(&labels).inc_by(value);
            }
            registry.register(metric.name, metric.help, family);
        }
        (Kind::Gauge, false) => {
            let family = Family::<Vec<(String, String)>, Gauge<f64, AtomicU64>>::default();
            for (labels, value) in samples {
                family.get_or_create(&labels).set(value);
            }
            registry.register(metric.name, metric.help, family);
        }
        (Kind::Counter, true) => {
            let counter = Counter::<f64, AtomicU64>::default();
            counter.inc_by(samples.iter().map(|(_, value)| value).sum());
            registry.register(metric.name, metric.help, counter);
        }
        (Kind::Gauge, true) => {
            let gauge = Gauge::<f64, AtomicU64>::default();
            gauge.set(samples.iter().map(|(_, value)| value).sum());
            registry.register(metric.name, metric.help, gauge);
        }
    }
}

/// A histogram measured elsewhere, encoded as Prometheus reads histograms.
#[derive(Debug)]
struct HistogramSnapshot(coord::Histogram);

impl EncodeMetric for HistogramSnapshot {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let histogram = &self.0;
        let buckets: Vec<(f64, u64)> = histogram
            .bounds
            .iter()
            .copied()
            .chain([f64::MAX])
            .zip(histogram.counts.iter().copied())
            .collect();
        encoder.encode_histogram::<NoLabelSet>(histogram.sum, histogram.count(), &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// The process's resident memory (`VmRSS` in `/proc/self/status`), where it can be read.
fn resident_memory_bytes() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}
