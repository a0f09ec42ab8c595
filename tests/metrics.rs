//! Prometheus metrics at `GET /metrics` on the HTTP port: read by a Prometheus text-format
//! parser, they show a source's rows, a view's memory, budget and state, the arrangements'
//! sizes, frontiers, the connected clients, how statements ended, group commit's group sizes
//! and waits, and the process's memory, as `fluxion_catalog` shows them.

mod support;

use std::time::Duration;

use prometheus_parse::{HistogramCount, Scrape, Value};
use support::query::{row, wait_for};
use support::TestServer;

/// The value of the sample of `metric` whose labels include `labels`, if there is one.
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|sample| {
            sample.metric == metric
                && labels
                    .iter()
                    .all(|(name, value)| sample.labels.get(name) == Some(*value))
        })
        .and_then(|sample| match sample.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
            _ => None,
        })
}

/// The cumulative buckets of histogram `metric`.
fn buckets<'a>(scrape: &'a Scrape, metric: &str) -> &'a [HistogramCount] {
    scrape
        .samples
        .iter()
        .find_map(|sample| match &sample.value {
            Value::Histogram(buckets) if sample.metric == metric => Some(buckets.as_slice()),
            _ => None,
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_scraped_as_prometheus_reads_them() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SOURCE seq (id BIGINT NOT NULL) WITH (connector = 'datagen', \
               datagen.rows.per.second = '0', fields.id.kind = 'sequence', \
               fields.id.start = '1', fields.id.end = '1000');
             CREATE TABLE t (a INT);
             INSERT INTO t SELECT g FROM generate_series(1, 100) g;
             CREATE MATERIALIZED VIEW counted WITH (memory_budget = '64MB') AS
               SELECT count(*) AS n FROM seq;",
        )
        .await
        .expect("setup");
    wait_for(
        &client,
        "SELECT n FROM counted",
        "1000",
        Duration::from_secs(30),
    )
    .await;
    wait_for(
        &client,
        "SELECT memory_bytes > 0 FROM fluxion_catalog.views WHERE view_name = 'counted'",
        "t",
        Duration::from_secs(10),
    )
    .await;

    let error = client.batch_execute("SELECT 1/0").await.expect_err("fails");
    assert_eq!(
        error.code(),
        Some(&tokio_postgres::error::SqlState::DIVISION_BY_ZERO)
    );

    let (status, body) = support::http::get(server.http_port(), "/metrics");
    assert_eq!(status, 200, "{body}");
    let scrape = Scrape::parse(body.lines().map(|line| Ok(line.to_string()))).expect("parsed");
    let seq = [("schema", "public"), ("name", "seq")];
    let counted = [("schema", "public"), ("name", "counted")];
    assert_eq!(
        value(&scrape, "fluxion_source_rows_total", &seq),
        Some(1000.0),
        "{body}"
    );
    assert_eq!(
        value(&scrape, "fluxion_source_errors_total", &seq),
        Some(0.0)
    );
    assert_eq!(
        value(&scrape, "fluxion_view_memory_budget_bytes", &counted),
        Some(64.0 * 1024.0 * 1024.0)
    );
    assert!(value(&scrape, "fluxion_view_memory_bytes", &counted).is_some_and(|b| b > 0.0));
    assert_eq!(value(&scrape, "fluxion_view_stopped", &counted), Some(0.0));
    let records = row(
        &client,
        "SELECT records FROM fluxion_catalog.arrangement_sizes WHERE object_name = 't'",
    )
    .await;
    assert_eq!(
        value(
            &scrape,
            "fluxion_arrangement_records",
            &[("name", "t"), ("type", "table")]
        )
        .map(|r| r.to_string()),
        records[0].clone(),
        "the catalog's figure"
    );
    assert!(
        value(&scrape, "fluxion_frontier_lag_seconds", &counted).is_some(),
        "{body}"
    );
    assert!(value(&scrape, "fluxion_connections", &[]).is_some_and(|n| n >= 1.0));
    let statements =
        |outcome: &str| value(&scrape, "fluxion_statements_total", &[("outcome", outcome)]);
    assert!(statements("succeeded").is_some_and(|n| n >= 4.0), "{body}");
    assert!(statements("failed").is_some_and(|n| n >= 1.0), "{body}");
    assert_eq!(statements("canceled"), Some(0.0));
    assert!(value(&scrape, "process_resident_memory_bytes", &[]).is_some_and(|b| b > 1e6));

    // Every commit made durable is counted once in its group and once with its wait.
    let groups = buckets(&scrape, "fluxion_commit_group_records");
    let waits = buckets(&scrape, "fluxion_commit_durable_seconds");
    let total = |buckets: &[HistogramCount]| buckets.last().map(|b| (b.less_than, b.count));
    let groups_total = total(groups).expect("group sizes");
    let waits_total = total(waits).expect("waits");
    assert_eq!(
        (groups_total.0, waits_total.0),
        (f64::INFINITY, f64::INFINITY)
    );
    assert!(groups_total.1 >= 1.0, "the INSERT was logged: {body}");
    let commits = value(&scrape, "fluxion_commit_group_records_sum", &[]);
    assert_eq!(commits, Some(waits_total.1), "{body}");
    assert_eq!(
        value(&scrape, "fluxion_commit_durable_seconds_count", &[]),
        Some(waits_total.1)
    );
    assert!(
        groups.windows(2).all(|pair| pair[0].count <= pair[1].count),
        "cumulative: {groups:?}"
    );
}
