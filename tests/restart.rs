//! Durability across crashes: every acknowledged write survives `kill -9`, every view is
//! rebuilt from the log and keeps updating, and nothing is counted twice.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::TestServer;

async fn scalar_i64(client: &tokio_postgres::Client, sql: &str) -> i64 {
    let rows = client.simple_query(sql).await.expect(sql);
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => {
                row.get(0).map(|v| v.parse::<i64>().expect("an integer"))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no row from {sql}"))
}

async fn rows_text(client: &tokio_postgres::Client, sql: &str) -> Vec<Vec<String>> {
    client
        .simple_query(sql)
        .await
        .expect(sql)
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).unwrap_or("NULL").to_string())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

const SCHEMA: &str = "
    CREATE TABLE accounts (id BIGINT PRIMARY KEY, region TEXT NOT NULL, balance BIGINT NOT NULL);
    CREATE TABLE regions (name TEXT PRIMARY KEY, manager TEXT);
    CREATE MATERIALIZED VIEW balance_by_manager AS
        SELECT r.manager, count(*) AS accounts, sum(a.balance) AS total, max(a.balance) AS top
        FROM accounts a JOIN regions r ON a.region = r.name GROUP BY r.manager;
    CREATE MATERIALIZED VIEW account_count AS SELECT count(*) AS n, sum(balance) AS total FROM accounts;
    CREATE VIEW rich AS SELECT id FROM accounts WHERE balance > 500;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_and_views_survive_kill_9() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    client.batch_execute(SCHEMA).await.expect("schema");
    client
        .batch_execute(
            "INSERT INTO regions VALUES ('north', 'ann'), ('south', 'bob'), ('east', 'ann')",
        )
        .await
        .expect("regions");
    let mut model: BTreeMap<i64, (String, i64)> = BTreeMap::new();
    let regions = ["north", "south", "east"];
    for batch in 0..20i64 {
        let mut sql = String::from("BEGIN;");
        for i in 0..10 {
            let id = batch * 10 + i;
            let region = regions[(id % 3) as usize];
            let balance = (id * 37) % 1000;
            sql.push_str(&format!(
                "INSERT INTO accounts VALUES ({id}, '{region}', {balance});"
            ));
            model.insert(id, (region.to_string(), balance));
        }
        sql.push_str("COMMIT;");
        client.batch_execute(&sql).await.expect("insert batch");
    }
    client
        .batch_execute("UPDATE accounts SET balance = balance + 1000 WHERE id < 10; DELETE FROM accounts WHERE id >= 190")
        .await
        .expect("updates");
    for id in 0..10 {
        if let Some(entry) = model.get_mut(&id) {
            entry.1 += 1000;
        }
    }
    model.retain(|id, _| *id < 190);
    let before = rows_text(&client, "SELECT * FROM balance_by_manager ORDER BY manager").await;

    server.kill();
    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;

    let expected_total: i64 = model.values().map(|(_, b)| b).sum();
    assert_eq!(
        scalar_i64(&client, "SELECT count(*) FROM accounts").await,
        model.len() as i64
    );
    assert_eq!(
        scalar_i64(&client, "SELECT sum(balance) FROM accounts").await,
        expected_total
    );
    assert_eq!(
        scalar_i64(&client, "SELECT n FROM account_count").await,
        model.len() as i64
    );
    assert_eq!(
        scalar_i64(&client, "SELECT total FROM account_count").await,
        expected_total
    );
    let after = rows_text(&client, "SELECT * FROM balance_by_manager ORDER BY manager").await;
    assert_eq!(
        before, after,
        "the rebuilt view equals the view before the crash"
    );
    let rich = scalar_i64(&client, "SELECT count(*) FROM rich").await;
    assert_eq!(
        rich,
        model.values().filter(|(_, b)| *b > 500).count() as i64
    );

    // The rebuilt views keep updating, and the restored tables still enforce their keys.
    client
        .batch_execute("INSERT INTO accounts VALUES (1000, 'south', 5)")
        .await
        .expect("insert after restart");
    assert_eq!(
        scalar_i64(&client, "SELECT n FROM account_count").await,
        model.len() as i64 + 1
    );
    let duplicate = client
        .batch_execute("INSERT INTO accounts VALUES (1, 'south', 5)")
        .await;
    let code = duplicate.expect_err("a duplicate key").code().cloned();
    assert_eq!(
        code,
        Some(tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_during_concurrent_writes_loses_no_acknowledged_row() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let setup = server.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE events (id BIGINT PRIMARY KEY, writer INT NOT NULL);
             CREATE MATERIALIZED VIEW per_writer AS SELECT writer, count(*) AS n FROM events GROUP BY writer;",
        )
        .await
        .expect("schema");
    let acknowledged: Arc<Vec<AtomicU64>> = Arc::new((0..3).map(|_| AtomicU64::new(0)).collect());
    let mut writers = Vec::new();
    for writer in 0..3u64 {
        let client = server.connect().await;
        let acknowledged = acknowledged.clone();
        writers.push(tokio::spawn(async move {
            for n in 1..u64::MAX {
                let id = writer * 1_000_000 + n;
                let sql = format!("INSERT INTO events VALUES ({id}, {writer})");
                if client.batch_execute(&sql).await.is_err() {
                    return;
                }
                acknowledged[writer as usize].store(n, Ordering::SeqCst);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.kill();
    for writer in writers {
        let _ = writer.await;
    }
    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    for writer in 0..3u64 {
        let acked = acknowledged[writer as usize].load(Ordering::SeqCst) as i64;
        assert!(
            acked > 0,
            "writer {writer} got some inserts acknowledged before the crash"
        );
        let stored = scalar_i64(
            &client,
            &format!("SELECT count(*) FROM events WHERE writer = {writer}"),
        )
        .await;
        // Every acknowledged insert is there; at most the one in flight at the crash is extra.
        assert!(
            stored == acked || stored == acked + 1,
            "writer {writer}: {acked} acknowledged, {stored} stored"
        );
        let max_id = scalar_i64(
            &client,
            &format!("SELECT max(id) FROM events WHERE writer = {writer}"),
        )
        .await;
        assert_eq!(
            max_id - (writer as i64) * 1_000_000,
            stored,
            "no gaps: rows 1..={stored} are all present"
        );
        let in_view = scalar_i64(
            &client,
            &format!("SELECT n FROM per_writer WHERE writer = {writer}"),
        )
        .await;
        assert_eq!(
            in_view, stored,
            "the view counts each stored row exactly once"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_compact_the_log_and_lose_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_with_args(dir.path(), &["--checkpoint-after-rows", "200"]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT NOT NULL);
             CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(v) AS s FROM kv;",
        )
        .await
        .expect("schema");
    let mut model: BTreeMap<i64, i64> = BTreeMap::new();
    for round in 0..30i64 {
        let mut sql = String::from("BEGIN;");
        for i in 0..40 {
            let k = (round * 17 + i * 13) % 500;
            let v = round * 100 + i;
            if model.insert(k, v).is_some() {
                sql.push_str(&format!("UPDATE kv SET v = {v} WHERE k = {k};"));
            } else {
                sql.push_str(&format!("INSERT INTO kv VALUES ({k}, {v});"));
            }
        }
        if round % 5 == 4 {
            let victim = *model.keys().next().expect("rows exist");
            model.remove(&victim);
            sql.push_str(&format!("DELETE FROM kv WHERE k = {victim};"));
        }
        sql.push_str("COMMIT;");
        client.batch_execute(&sql).await.expect("round");
    }
    // Let the background checkpoint finish, then crash.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let snapshots = std::fs::read_dir(dir.path().join("wal"))
        .expect("the log directory")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("snapshot-"))
        .count();
    assert!(snapshots >= 1, "a checkpoint wrote a snapshot");
    server.kill();

    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    let expected_sum: i64 = model.values().sum();
    assert_eq!(
        scalar_i64(&client, "SELECT count(*) FROM kv").await,
        model.len() as i64
    );
    assert_eq!(
        scalar_i64(&client, "SELECT sum(v) FROM kv").await,
        expected_sum
    );
    assert_eq!(
        scalar_i64(&client, "SELECT n FROM total").await,
        model.len() as i64
    );
    assert_eq!(
        scalar_i64(&client, "SELECT s FROM total").await,
        expected_sum
    );
    for (k, v) in model.iter().take(20) {
        assert_eq!(
            scalar_i64(&client, &format!("SELECT v FROM kv WHERE k = {k}")).await,
            *v
        );
    }
}

/// Whether a query fails because its relation does not exist (42P01).
async fn is_missing(client: &tokio_postgres::Client, sql: &str) -> bool {
    match client.simple_query(sql).await {
        Ok(_) => false,
        Err(e) => e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definitions_of_a_block_left_open_are_undone_by_disconnect_and_by_crash() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_with_args(dir.path(), &["--checkpoint-after-rows", "100"]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE kept (k BIGINT PRIMARY KEY, v BIGINT NOT NULL);
             INSERT INTO kept SELECT g, g * 2 FROM generate_series(1, 300) g;
             CREATE MATERIALIZED VIEW kept_total AS SELECT count(*) AS n, sum(v) AS s FROM kept;
             CREATE TABLE other (k BIGINT PRIMARY KEY);",
        )
        .await
        .expect("schema");

    // A connection that ends inside a block takes its definitions with it.
    let leaving = server.connect().await;
    leaving
        .batch_execute("BEGIN; CREATE TABLE orphan (a INT); INSERT INTO orphan VALUES (1);")
        .await
        .expect("a block that is never ended");
    drop(leaving);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !is_missing(&client, "SELECT * FROM orphan").await {
        assert!(
            std::time::Instant::now() < deadline,
            "the table of a disconnected block is still there"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A block that drops a table, makes another under its name and a new one, and is open
    // when the process dies, while a checkpoint runs.
    let open = server.connect().await;
    open.batch_execute(
        "BEGIN;
         DROP TABLE kept CASCADE;
         CREATE TABLE kept (x TEXT);
         CREATE TABLE fresh (a INT);
         INSERT INTO fresh VALUES (1);",
    )
    .await
    .expect("the open block");
    for chunk in 0..3 {
        let first = chunk * 100 + 1;
        client
            .batch_execute(&format!(
                "INSERT INTO other SELECT g FROM generate_series({first}, {}) g",
                first + 99
            ))
            .await
            .expect("writes beside the block");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.kill();

    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    assert_eq!(scalar_i64(&client, "SELECT count(*) FROM kept").await, 300);
    assert_eq!(scalar_i64(&client, "SELECT sum(v) FROM kept").await, 90_300);
    assert_eq!(scalar_i64(&client, "SELECT n FROM kept_total").await, 300);
    assert_eq!(scalar_i64(&client, "SELECT count(*) FROM other").await, 300);
    assert!(is_missing(&client, "SELECT * FROM fresh").await);
    assert!(is_missing(&client, "SELECT * FROM orphan").await);
    client
        .batch_execute("INSERT INTO kept VALUES (301, 1)")
        .await
        .expect("the table takes writes again");
    assert_eq!(scalar_i64(&client, "SELECT n FROM kept_total").await, 301);
}
