//! `fluxion_catalog.frontiers` and `arrangement_sizes`: every arrangement with the frontier and
//! the size compute reports for it; and the row estimates PostgreSQL's catalogs show from it.

mod support;

use std::time::{Duration, Instant};

use support::query::{eventually, rows};
use support::TestServer;

/// The `upper` of `object_name` in `fluxion_catalog.frontiers`.
async fn upper(client: &tokio_postgres::Client, object: &str) -> u64 {
    let rows = rows(
        client,
        &format!("SELECT upper FROM fluxion_catalog.frontiers WHERE object_name = '{object}'"),
    )
    .await;
    assert_eq!(rows.len(), 1, "one frontier row for {object}: {rows:?}");
    rows[0].parse().expect("an open upper")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frontiers_list_every_arrangement_and_advance_with_writes() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE orders (id INT PRIMARY KEY, amount INT);
             INSERT INTO orders VALUES (1, 10), (2, 20);
             CREATE VIEW plain AS SELECT id FROM orders;
             CREATE MATERIALIZED VIEW totals AS SELECT sum(amount) AS total FROM orders;
             CREATE INDEX totals_by_total ON totals (total);",
        )
        .await
        .unwrap();

    let listed = rows(
        &client,
        "SELECT schema_name, object_name, object_type FROM fluxion_catalog.frontiers \
         ORDER BY object_name",
    )
    .await;
    assert_eq!(
        listed,
        [
            "fluxion_catalog|late_events|system relation",
            "public|orders|table",
            "fluxion_catalog|source_errors|system relation",
            "public|totals|materialized view",
            "public|totals_by_total|index",
        ],
        "every arrangement is listed from its creation on; a plain view has none"
    );
    // Once built, each is complete up to about now and readable from its `since` on.
    let caught_up = "SELECT count(*) FROM fluxion_catalog.frontiers \
                     WHERE since <= upper AND lag_ms < 60000";
    let deadline = Instant::now() + Duration::from_secs(10);
    while rows(&client, caught_up).await != ["5"] {
        assert!(Instant::now() < deadline, "the frontiers did not catch up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // After a write, the frontiers of the table and of everything downstream move past the
    // time before it; the table, upstream, is never behind its readers.
    let before = upper(&client, "totals_by_total").await;
    client
        .batch_execute("INSERT INTO orders VALUES (3, 30)")
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while upper(&client, "totals_by_total").await <= before {
        assert!(
            Instant::now() < deadline,
            "the index's frontier did not move"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(upper(&client, "orders").await > before);

    client
        .batch_execute("DROP INDEX totals_by_total")
        .await
        .unwrap();
    let left = rows(
        &client,
        "SELECT object_name FROM fluxion_catalog.frontiers ORDER BY object_name",
    )
    .await;
    assert_eq!(left, ["late_events", "orders", "source_errors", "totals"]);
}

/// The `records` and `batches` of `object` in `fluxion_catalog.arrangement_sizes`, if listed.
async fn arrangement_size(client: &tokio_postgres::Client, object: &str) -> Option<(i64, i64)> {
    let rows = rows(
        client,
        &format!(
            "SELECT records, batches FROM fluxion_catalog.arrangement_sizes \
             WHERE object_name = '{object}'"
        ),
    )
    .await;
    let (records, batches) = rows.first()?.split_once('|')?;
    Some((records.parse().ok()?, batches.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrangement_sizes_count_every_update_a_dataflow_holds() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE readings (id INT PRIMARY KEY, sensor INT);
             INSERT INTO readings SELECT value, value % 10 FROM generate_series(1, 1000) AS s(value);
             CREATE MATERIALIZED VIEW per_sensor AS
                 SELECT sensor, count(*) AS n, max(id) AS latest FROM readings GROUP BY sensor;",
        )
        .await
        .unwrap();

    // The table's arrangement holds its 1,000 inserted rows, one update each.
    let deadline = Instant::now() + Duration::from_secs(10);
    while arrangement_size(&client, "readings")
        .await
        .map(|(records, _)| records)
        != Some(1000)
    {
        assert!(
            Instant::now() < deadline,
            "readings: {:?}",
            arrangement_size(&client, "readings").await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The view recomputes `max`, so its dataflow keeps every row's group input (1,000) as
    // well as its 10 result rows; the table it reads is counted for the table, not again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let size = arrangement_size(&client, "per_sensor").await;
        if let Some((records, batches)) = size {
            if records >= 1010 {
                assert!(
                    records < 2000,
                    "per_sensor holds the table twice: {records}"
                );
                assert!(batches >= 1);
                break;
            }
        }
        assert!(Instant::now() < deadline, "per_sensor: {size:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    client
        .batch_execute("DROP MATERIALIZED VIEW per_sensor")
        .await
        .unwrap();
    assert_eq!(arrangement_size(&client, "per_sensor").await, None);
    assert_eq!(
        rows(
            &client,
            "SELECT object_name, object_type FROM fluxion_catalog.arrangement_sizes \
             ORDER BY object_name"
        )
        .await,
        [
            "late_events|system relation",
            "readings|table",
            "source_errors|system relation"
        ]
    );
}

/// Tools (Metabase, DBeaver, pgAdmin) estimate a table's rows from `pg_class.reltuples` and
/// `pg_stat_user_tables.n_live_tup`: both follow the rows the table holds, and its indexes'
/// `reltuples` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_estimates_follow_the_rows_a_table_holds() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE parts (id INT PRIMARY KEY, kind INT);
             CREATE INDEX parts_kind ON parts (kind);
             CREATE VIEW part_ids AS SELECT id FROM parts;
             INSERT INTO parts SELECT value, value % 7 FROM generate_series(1, 1000) AS s(value);",
        )
        .await
        .unwrap();
    let estimates = "SELECT relname, reltuples FROM pg_class \
                     WHERE relname IN ('parts', 'parts_pkey', 'parts_kind', 'part_ids') ORDER BY 1";
    eventually(
        &client,
        estimates,
        &[
            "part_ids|-1",
            "parts|1000",
            "parts_kind|1000",
            "parts_pkey|1000",
        ],
    )
    .await;
    let live = "SELECT relname, n_live_tup FROM pg_stat_user_tables WHERE relname = 'parts'";
    eventually(&client, live, &["parts|1000"]).await;

    client
        .batch_execute("DELETE FROM parts WHERE id > 400")
        .await
        .unwrap();
    eventually(&client, live, &["parts|400"]).await;
}
