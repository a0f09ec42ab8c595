//! `fluxion_catalog.frontiers`: every arrangement with the frontier compute reports for it.

mod support;

use std::time::{Duration, Instant};

use support::query::rows;
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
    while rows(&client, caught_up).await != ["4"] {
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
    assert_eq!(left, ["orders", "source_errors", "totals"]);
}
