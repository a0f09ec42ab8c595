//! Temporal filters through the real server: a view whose `WHERE` compares the clock with its
//! rows (`ts + INTERVAL '2' SECOND > now()`, `ts <= mz_now()`) gains and loses rows as the
//! clock moves, with no write in between; SELECT and SUBSCRIBE see the rows leave and enter;
//! other uses of the clock in a view are refused.

mod support;

use std::time::Duration;

use support::query::{error_code, eventually, rows};
use support::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_enter_and_leave_a_view_as_the_clock_moves() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE events (id int, ts timestamptz);
             CREATE MATERIALIZED VIEW recent AS
               SELECT id FROM events WHERE ts + INTERVAL '2' SECOND > now();
             CREATE MATERIALIZED VIEW started AS
               SELECT id FROM events WHERE ts <= mz_now() AND id > 0;",
        )
        .await
        .expect("a table and two views over the clock");
    let watcher = server.connect().await;
    watcher
        .batch_execute("BEGIN; DECLARE c CURSOR FOR SUBSCRIBE recent WITH (SNAPSHOT = false);")
        .await
        .expect("a subscription to the view");
    client
        .batch_execute(
            "INSERT INTO events VALUES (1, now()), (2, now() - INTERVAL '1' MINUTE),
               (3, now() + INTERVAL '2' SECOND), (-4, now() - INTERVAL '1' SECOND);",
        )
        .await
        .expect("rows around the clock");
    let recent = "SELECT id FROM recent ORDER BY id";
    let started = "SELECT id FROM started ORDER BY id";
    assert_eq!(rows(&client, recent).await, ["-4", "1", "3"]);
    assert_eq!(rows(&client, started).await, ["1", "2"]);

    // No more writes: -4 leaves `recent` about a second from now, 1 about two seconds from
    // now; 3 enters `started` in about two seconds and stays in `recent` until four.
    let left = eventually(&client, recent, &["3"]).await;
    assert!(left >= Duration::from_millis(1_000), "left after {left:?}");
    eventually(&client, started, &["1", "2", "3"]).await;
    eventually(&client, recent, &[]).await;

    // SUBSCRIBE saw the three rows arrive and then leave, each retraction on its own.
    let changes: Vec<(String, String)> = watcher
        .simple_query("FETCH ALL c WITH (timeout = '2s')")
        .await
        .expect("FETCH")
        .iter()
        .filter_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some((
                row.get("id").unwrap_or_default().to_string(),
                row.get("_diff").unwrap_or_default().to_string(),
            )),
            _ => None,
        })
        .collect();
    let count = |diff: &str| changes.iter().filter(|(_, d)| d == diff).count();
    assert_eq!((count("1"), count("-1")), (3, 3), "{changes:?}");
    assert_eq!(
        changes.last().map(|(id, _)| id.as_str()),
        Some("3"),
        "{changes:?}"
    );

    for sql in [
        "CREATE MATERIALIZED VIEW v AS SELECT id, now() FROM events",
        "CREATE MATERIALIZED VIEW v AS SELECT id FROM events WHERE ts = now()",
        "CREATE MATERIALIZED VIEW v AS SELECT id FROM events WHERE ts > now() OR id = 1",
    ] {
        let code = error_code(&client, sql).await;
        assert!(code.starts_with("0A000"), "{sql}: {code}");
    }
}
