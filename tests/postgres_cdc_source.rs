//! Postgres CDC through the real server, against a real PostgreSQL 15 with
//! `wal_level=logical`: tables fed from upstream tables, upstream transactions that never
//! show half-applied in a view (also across a SIGKILL of Fluxion), exact types, the initial
//! snapshot's progress, and the replication slot dropped on request.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::postgres::TestPostgres;
use support::query::{error_code, row, rows, wait_for};
use support::TestServer;

/// Accounts upstream, and the money they hold together (constant under transfers).
const ACCOUNTS: i32 = 100;
const TOTAL: &str = "100000.00";

fn create_source(pg: &TestPostgres) -> String {
    format!(
        "CREATE SOURCE pg WITH (connector = 'postgres-cdc', hostname = '127.0.0.1', \
           port = '{}', username = 'postgres', database.name = 'postgres', \
           slot.name = 'fluxion_test', publication.name = 'fluxion_test')",
        pg.port()
    )
}

/// Transfers between accounts, in transactions of two updates, plus accounts opened and
/// closed with a zero balance; none changes the total. Runs until `stop`.
async fn transfers(client: tokio_postgres::Client, stop: Arc<AtomicBool>) -> u64 {
    let mut done = 0u64;
    while !stop.load(Ordering::Acquire) {
        let from = (done * 7 % ACCOUNTS as u64) as i32 + 1;
        let to = (done * 13 % ACCOUNTS as u64) as i32 + 1;
        let amount = (done % 50) as f64 + 0.25;
        let extra = 1000 + done as i32;
        client
            .batch_execute(&format!(
                "BEGIN;
                 UPDATE accounts SET balance = balance - {amount} WHERE id = {from};
                 UPDATE accounts SET balance = balance + {amount} WHERE id = {to};
                 INSERT INTO accounts (id, balance, note) VALUES ({extra}, 0, 'opened');
                 COMMIT;
                 BEGIN;
                 DELETE FROM accounts WHERE id = {extra} AND balance = 0;
                 UPDATE accounts SET note = 'touched {done}' WHERE id = {from};
                 COMMIT;"
            ))
            .await
            .expect("a transfer");
        done += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    done
}

/// Polls the view until `until`, asserting each time that it shows whole transactions.
async fn watch_total(client: &tokio_postgres::Client, until: Duration) -> u64 {
    let deadline = Instant::now() + until;
    let mut reads = 0;
    while Instant::now() < deadline {
        let total = row(client, "SELECT total FROM bank").await;
        assert_eq!(
            total,
            [Some(TOTAL.to_string())],
            "a view showed part of an upstream transaction (read {reads})"
        );
        reads += 1;
    }
    reads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_transactions_land_whole_and_survive_a_crash() {
    let pg = TestPostgres::start();
    let writer = pg.connect().await;
    writer
        .batch_execute(&format!(
            "CREATE TABLE accounts (id int PRIMARY KEY, balance numeric(12,2) NOT NULL, note text);
             INSERT INTO accounts SELECT g, 1000, 'initial' FROM generate_series(1, {ACCOUNTS}) g;"
        ))
        .await
        .expect("upstream schema");
    let data = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(data.path());
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "{};
             CREATE TABLE accounts FROM pg TABLE 'public.accounts';
             CREATE MATERIALIZED VIEW bank AS
               SELECT count(*) AS n, sum(balance) AS total FROM accounts;",
            create_source(&pg)
        ))
        .await
        .expect("source, table and view");
    wait_for(
        &client,
        "SELECT n FROM bank",
        &ACCOUNTS.to_string(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        rows(
            &client,
            "SELECT column_name, data_type FROM information_schema.columns \
             WHERE table_name = 'accounts' ORDER BY ordinal_position"
        )
        .await,
        ["id|integer", "balance|numeric", "note|text"],
        "the upstream table's columns"
    );
    assert!(
        error_code(&client, "INSERT INTO accounts VALUES (0, 1, 'x')")
            .await
            .starts_with("42809")
    );

    let stop = Arc::new(AtomicBool::new(false));
    let running = tokio::spawn(transfers(pg.connect().await, stop.clone()));
    let reads_before = watch_total(&client, Duration::from_secs(4)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let server = TestServer::start_in(data.path());
    let client = server.connect().await;
    let reads_after = watch_total(&client, Duration::from_secs(4)).await;
    stop.store(true, Ordering::Release);
    let transactions = running.await.expect("the writer");
    assert!(transactions > 20, "only {transactions} upstream transfers");
    assert!(reads_before > 10 && reads_after > 10);

    let expected = rows(
        &writer,
        "SELECT id, balance, note FROM accounts ORDER BY id",
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mirrored = rows(
            &client,
            "SELECT id, balance, note FROM accounts ORDER BY id",
        )
        .await;
        if mirrored == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Fluxion's accounts never matched upstream: {} rows vs {}",
            mirrored.len(),
            expected.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        row(&client, "SELECT n, total FROM bank").await,
        [Some(ACCOUNTS.to_string()), Some(TOTAL.to_string())]
    );

    client
        .batch_execute("DROP SOURCE pg CASCADE WITH (drop_slot = true)")
        .await
        .expect("drop the source and its slot");
    assert_eq!(
        rows(
            &writer,
            "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'fluxion_test'"
        )
        .await,
        ["0"]
    );
    assert!(error_code(&client, "SELECT * FROM accounts")
        .await
        .starts_with("42P01"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn types_map_exactly_and_a_table_can_join_a_running_source() {
    let pg = TestPostgres::start();
    let writer = pg.connect().await;
    writer
        .batch_execute(
            "CREATE TABLE first (id int PRIMARY KEY);
             INSERT INTO first VALUES (1);
             CREATE TABLE kinds (id int PRIMARY KEY, amount numeric(10,2), at timestamptz,
               day date, doc jsonb, ints int[], words text[], flag boolean, big text, raw bytea);
             ALTER TABLE kinds REPLICA IDENTITY DEFAULT;
             INSERT INTO kinds VALUES
               (1, 12.50, '2024-01-02 03:04:05.123456+02', '2024-02-29', '{\"a\": [1, 2]}',
                '{1,NULL,3}', '{x,\"y z\",NULL}', true, repeat('long', 5000), '\\xdeadbeef'),
               (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);",
        )
        .await
        .expect("upstream schema");
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "{};
             CREATE TABLE first (id int PRIMARY KEY) FROM pg TABLE 'public.first';",
            create_source(&pg)
        ))
        .await
        .expect("source and first table");
    wait_for(
        &client,
        "SELECT count(*) FROM first",
        "1",
        Duration::from_secs(60),
    )
    .await;
    client
        .batch_execute("CREATE TABLE kinds FROM pg TABLE 'public.kinds'")
        .await
        .expect("a table added to the running source");
    writer
        .batch_execute(
            "UPDATE kinds SET amount = 99.99 WHERE id = 1;
             INSERT INTO first VALUES (2);",
        )
        .await
        .expect("upstream changes");
    let columns = "id, amount::text, at, day::text, doc::text, flag::text, \
                   length(big), substr(big, 4995, 12), encode(raw, 'hex'), ints[3], words[2]";
    let query = format!("SELECT {columns} FROM kinds ORDER BY id");
    let expected = rows(&writer, &query).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mirrored = rows(&client, &query).await;
        if mirrored == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kinds differ:\n fluxion  {mirrored:?}\n postgres {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for(
        &client,
        "SELECT count(*) FROM first",
        "2",
        Duration::from_secs(30),
    )
    .await;
    let stats = row(
        &client,
        "SELECT status, position IS NOT NULL FROM fluxion_catalog.source_stats \
         WHERE source_name = 'pg'",
    )
    .await;
    assert_eq!(stats, [Some("running".into()), Some("t".into())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_upstream_table_has_its_watermark_and_the_source_the_least_of_theirs() {
    let pg = TestPostgres::start();
    let writer = pg.connect().await;
    writer
        .batch_execute(
            "CREATE TABLE orders (id int PRIMARY KEY, ts timestamp NOT NULL);
             CREATE TABLE payments (id int PRIMARY KEY, ts timestamp NOT NULL);",
        )
        .await
        .expect("upstream schema");
    let server = TestServer::start();
    let client = server.connect().await;
    let source = create_source(&pg).replace(
        "publication.name = 'fluxion_test'",
        "publication.name = 'fluxion_test', watermark.idle_timeout = '2s'",
    );
    client
        .batch_execute(&format!(
            "{source};
             CREATE TABLE orders (id int PRIMARY KEY, ts timestamp NOT NULL,
               WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) FROM pg TABLE 'public.orders';
             CREATE TABLE payments (WATERMARK FOR ts AS ts) FROM pg TABLE 'public.payments';
             CREATE MATERIALIZED VIEW orders_per_10s AS
               SELECT window_start, count(*) AS n FROM TUMBLE(orders, ts, INTERVAL '10' SECOND)
               GROUP BY window_start EMIT ON WINDOW CLOSE;"
        ))
        .await
        .expect("a source feeding two tables with watermarks, and a view");
    let watermark_of = |table: &str| {
        format!(
            "SELECT watermark::text FROM fluxion_catalog.frontiers WHERE object_name = '{table}'"
        )
    };
    let source_watermark =
        "SELECT watermark::text FROM fluxion_catalog.source_stats WHERE source_name = 'pg'";
    writer
        .batch_execute(
            "INSERT INTO orders VALUES (1, '2026-01-01 00:00:30'), (2, '2026-01-01 00:00:12');
             INSERT INTO payments VALUES (1, '2026-01-01 00:00:20');",
        )
        .await
        .expect("upstream rows");
    let timeout = Duration::from_secs(60);
    wait_for(
        &client,
        &watermark_of("orders"),
        "2026-01-01 00:00:25",
        timeout,
    )
    .await;
    wait_for(
        &client,
        &watermark_of("payments"),
        "2026-01-01 00:00:20",
        timeout,
    )
    .await;
    // Both tables sent rows just now: the slower one sets the source's watermark.
    wait_for(&client, source_watermark, "2026-01-01 00:00:20", timeout).await;
    wait_for(
        &client,
        "SELECT string_agg(window_start::text || '|' || n, ',') FROM orders_per_10s",
        "2026-01-01 00:00:10|1",
        timeout,
    )
    .await;

    // A row behind its table's watermark is late: kept, counted for the source, recorded.
    writer
        .batch_execute("INSERT INTO orders VALUES (3, '2026-01-01 00:00:14')")
        .await
        .expect("a late upstream row");
    wait_for(
        &client,
        "SELECT string_agg(source || ' ' || event_time::text, ',') \
         FROM fluxion_catalog.late_events",
        "orders 2026-01-01 00:00:14",
        timeout,
    )
    .await;
    wait_for(&client, "SELECT count(*) FROM orders", "3", timeout).await;
    let late = row(
        &client,
        "SELECT late_rows FROM fluxion_catalog.source_stats WHERE source_name = 'pg'",
    )
    .await;
    assert_eq!(late, [Some("1".into())]);
    assert_eq!(
        rows(&client, "SELECT window_start, n FROM orders_per_10s").await,
        ["2026-01-01 00:00:10|1"],
        "an emitted window never changes"
    );

    // Once payments has sent nothing for the idle timeout, it stops holding the source back.
    tokio::time::sleep(Duration::from_secs(3)).await;
    writer
        .batch_execute("INSERT INTO orders VALUES (4, '2026-01-01 00:00:45')")
        .await
        .expect("an upstream row");
    wait_for(&client, source_watermark, "2026-01-01 00:00:40", timeout).await;
}

/// While the source reads its initial snapshot, `fluxion_catalog.hydration` shows it with the
/// rows read so far against the upstream's own count; once read, it is no longer listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initial_snapshot_shows_how_far_it_has_got() {
    const ROWS: i64 = 300_000;
    let pg = TestPostgres::start();
    let writer = pg.connect().await;
    writer
        .batch_execute(&format!(
            "CREATE TABLE big (id int PRIMARY KEY, note text);
             INSERT INTO big SELECT g, repeat('n', 20) FROM generate_series(1, {ROWS}) g;"
        ))
        .await
        .expect("upstream table");
    writer
        .batch_execute("VACUUM ANALYZE big")
        .await
        .expect("upstream statistics");
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "{};
             CREATE TABLE big (id int PRIMARY KEY, note text) FROM pg TABLE 'public.big';",
            create_source(&pg)
        ))
        .await
        .expect("source and table");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while row(&client, "SELECT count(*) FROM big").await != [Some(ROWS.to_string())] {
        assert!(
            Instant::now() < deadline,
            "the snapshot was not read: {seen:?}"
        );
        let sample = rows(
            &client,
            "SELECT object_type || ' ' || phase || ' ' || rows_done || ' ' || \
               coalesce(rows_total::text, '?') || ' ' || (progress BETWEEN 0 AND 1)::text \
             FROM fluxion_catalog.hydration WHERE object_name = 'pg'",
        )
        .await;
        seen.extend(sample);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let part_read = |sample: &String| {
        let fields: Vec<&str> = sample.split(' ').collect();
        let done: i64 = fields[2].parse().expect("rows done");
        fields[..2] == ["source", "snapshot"]
            && done > 0
            && done < ROWS
            && fields[3] == ROWS.to_string()
            && fields[4] == "true"
    };
    assert!(
        seen.iter().any(part_read),
        "the snapshot was seen part read: {seen:?}"
    );
    wait_for(
        &client,
        "SELECT count(*) FROM fluxion_catalog.hydration WHERE object_name = 'pg'",
        "0",
        Duration::from_secs(30),
    )
    .await;
}
