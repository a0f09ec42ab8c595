//! Concurrent writers share fsyncs (group commit) without losing or doubling a change: a
//! write that reads before it writes sees every commit ordered before it, even one that is
//! not yet visible to plain reads, and a write that read without the sequencer runs again
//! when a concurrent commit changed what it read.

mod support;

use std::collections::BTreeMap;

use support::query::rows;
use support::TestServer;

const ACCOUNTS: i64 = 3;
const CLIENTS: i64 = 8;
const UPDATES_PER_CLIENT: i64 = 60;

/// The account client `client` increments in its `step`th update.
fn account(client: i64, step: i64) -> i64 {
    (client * 7 + step * 3) % ACCOUNTS
}

/// A connection to `server` after creating `accounts` (`ACCOUNTS` rows of balance 1000) and
/// running `view`.
async fn create_accounts(server: &TestServer, view: &str) -> tokio_postgres::Client {
    let setup = server.connect().await;
    setup
        .batch_execute(&format!(
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL);
             INSERT INTO accounts SELECT value, 1000 FROM generate_series(0, {}) AS t(value);
             {view};",
            ACCOUNTS - 1
        ))
        .await
        .unwrap();
    setup
}

/// Asserts that `accounts` holds exactly the `expected` balances, by id.
async fn assert_balances(client: &tokio_postgres::Client, expected: &BTreeMap<i64, i64>) {
    let expected_rows: Vec<String> = expected
        .iter()
        .map(|(id, balance)| format!("{id}|{balance}"))
        .collect();
    assert_eq!(
        rows(client, "SELECT id, balance FROM accounts ORDER BY id").await,
        expected_rows
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_read_modify_writes_lose_and_double_nothing() {
    let server = TestServer::start();
    let setup = create_accounts(
        &server,
        "CREATE MATERIALIZED VIEW totals AS
             SELECT count(*) AS accounts, sum(balance) AS balance FROM accounts",
    )
    .await;

    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let connection = server.connect().await;
        clients.push(tokio::spawn(async move {
            let update = connection
                .prepare("UPDATE accounts SET balance = balance + 1 WHERE id = $1")
                .await
                .unwrap();
            for step in 0..UPDATES_PER_CLIENT {
                let changed = connection
                    .execute(&update, &[&account(client, step)])
                    .await
                    .unwrap();
                assert_eq!(changed, 1, "client {client} step {step}");
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }

    let mut expected: BTreeMap<i64, i64> = (0..ACCOUNTS).map(|id| (id, 1000)).collect();
    for client in 0..CLIENTS {
        for step in 0..UPDATES_PER_CLIENT {
            *expected.get_mut(&account(client, step)).unwrap() += 1;
        }
    }
    assert_balances(&setup, &expected).await;
    let total: i64 = expected.values().sum();
    assert_eq!(
        rows(&setup, "SELECT accounts, balance FROM totals").await,
        vec![format!("{ACCOUNTS}|{total}")]
    );
}

/// Runs `insert` from [`CLIENTS`] connections at once, each executing it with the parameter
/// rows `rows(client)` gives, and counts the inserts that won. Every other must fail with
/// 23505 (another client's row holds the key).
async fn claims_won(
    server: &TestServer,
    insert: &'static str,
    rows: impl Fn(i64) -> Vec<Vec<i64>>,
) -> i64 {
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let connection = server.connect().await;
        let attempts = rows(client);
        clients.push(tokio::spawn(async move {
            let insert = connection.prepare(insert).await.unwrap();
            let mut won = 0;
            for params in attempts {
                let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
                    .collect();
                match connection.execute(&insert, &params).await {
                    Ok(1) => won += 1,
                    Ok(other) => panic!("INSERT reported {other} rows"),
                    Err(e) => assert_eq!(
                        e.code(),
                        Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION),
                        "{e}"
                    ),
                }
            }
            won
        }));
    }
    let mut won = 0;
    for client in clients {
        won += client.await.unwrap();
    }
    won
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_of_one_key_succeed_exactly_once() {
    let server = TestServer::start();
    let setup = server.connect().await;
    setup
        .batch_execute("CREATE TABLE claims (id BIGINT PRIMARY KEY, client BIGINT NOT NULL)")
        .await
        .unwrap();

    const KEYS: i64 = 40;
    let won = claims_won(&server, "INSERT INTO claims VALUES ($1, $2)", |client| {
        (0..KEYS).map(|id| vec![id, client]).collect()
    })
    .await;
    assert_eq!(won, KEYS, "every key was claimed exactly once");
    assert_eq!(
        rows(&setup, "SELECT count(*), count(DISTINCT id) FROM claims").await,
        vec![format!("{KEYS}|{KEYS}")]
    );
}

/// Concurrent inserts of one UNIQUE value under different primary keys: exactly one wins,
/// the others fail with 23505, however their optimistic reads interleave; and the constraint
/// is still enforced after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_of_one_unique_value_succeed_exactly_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let setup = server.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE handles (id BIGINT PRIMARY KEY, handle BIGINT UNIQUE, client BIGINT)",
        )
        .await
        .unwrap();

    const HANDLES: i64 = 30;
    let won = claims_won(
        &server,
        "INSERT INTO handles VALUES ($1, $2, $3)",
        |client| {
            (0..HANDLES)
                .map(|handle| vec![handle * 100 + client, handle, client])
                .collect()
        },
    )
    .await;
    assert_eq!(won, HANDLES, "every handle was claimed exactly once");
    assert_eq!(
        rows(
            &setup,
            "SELECT count(*), count(DISTINCT handle) FROM handles"
        )
        .await,
        vec![format!("{HANDLES}|{HANDLES}")]
    );

    drop(setup);
    server.kill();
    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    let error = client
        .batch_execute("INSERT INTO handles VALUES (-1, 0, -1)")
        .await
        .expect_err("the unique index is rebuilt at restart");
    assert_eq!(
        error.code(),
        Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
    );
}

/// How a client of [`concurrent_writes_of_every_read_shape_stay_serializable`] writes.
#[derive(Clone, Copy)]
enum WriteShape {
    /// `… WHERE id = $1`: reads one key.
    PointIncrement,
    /// `… WHERE id = $1 OR id = $2`: reads the whole table.
    TransferByScan,
    /// `… WHERE id IN (SELECT id FROM a view …)`: reads a view, whose changes are not
    /// recorded as writes.
    TransferThroughView,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_of_every_read_shape_stay_serializable() {
    let server = TestServer::start();
    let setup = create_accounts(
        &server,
        "CREATE MATERIALIZED VIEW account_ids AS SELECT id FROM accounts",
    )
    .await;

    const SHAPES: [WriteShape; 3] = [
        WriteShape::PointIncrement,
        WriteShape::TransferByScan,
        WriteShape::TransferThroughView,
    ];
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let connection = server.connect().await;
        let shape = SHAPES[client as usize % SHAPES.len()];
        clients.push(tokio::spawn(async move {
            let sql = match shape {
                WriteShape::PointIncrement => {
                    "UPDATE accounts SET balance = balance + 1 WHERE id = $1 AND $2 >= 0"
                }
                WriteShape::TransferByScan => {
                    "UPDATE accounts SET balance = balance + CASE WHEN id = $1 THEN -1 ELSE 1 END
                     WHERE id = $1 OR id = $2"
                }
                WriteShape::TransferThroughView => {
                    "UPDATE accounts SET balance = balance + CASE WHEN id = $1 THEN -1 ELSE 1 END
                     WHERE id IN (SELECT id FROM account_ids WHERE id = $1 OR id = $2)"
                }
            };
            let statement = connection.prepare(sql).await.unwrap();
            for step in 0..UPDATES_PER_CLIENT {
                let from = account(client, step);
                let to = (from + 1) % ACCOUNTS;
                let changed = connection.execute(&statement, &[&from, &to]).await.unwrap();
                let expected = match shape {
                    WriteShape::PointIncrement => 1,
                    _ => 2,
                };
                assert_eq!(changed, expected, "client {client} step {step}");
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }

    let mut expected: BTreeMap<i64, i64> = (0..ACCOUNTS).map(|id| (id, 1000)).collect();
    for client in 0..CLIENTS {
        for step in 0..UPDATES_PER_CLIENT {
            let from = account(client, step);
            match SHAPES[client as usize % SHAPES.len()] {
                WriteShape::PointIncrement => *expected.get_mut(&from).unwrap() += 1,
                _ => {
                    *expected.get_mut(&from).unwrap() -= 1;
                    *expected.get_mut(&((from + 1) % ACCOUNTS)).unwrap() += 1;
                }
            }
        }
    }
    assert_balances(&setup, &expected).await;
}
