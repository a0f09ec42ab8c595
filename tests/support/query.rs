//! Small helpers for asking a server questions in tests: a row as text, waiting for a value,
//! the SQLSTATE of a failure.

use std::time::{Duration, Instant};

/// The first row of `sql` as text.
pub async fn row(client: &tokio_postgres::Client, sql: &str) -> Vec<Option<String>> {
    let messages = client.simple_query(sql).await.expect(sql);
    messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_string))
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no row from {sql}"))
}

/// Polls `sql` until its rows (as [`rows`] gives them) are `expected`, for at most 15 s;
/// returns how long that took.
pub async fn eventually(client: &tokio_postgres::Client, sql: &str, expected: &[&str]) -> Duration {
    let started = Instant::now();
    loop {
        let got = rows(client, sql).await;
        if got == expected {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{sql} returned {got:?}, not {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the first column of `sql` is `expected` (or fails after `timeout`).
pub async fn wait_for(
    client: &tokio_postgres::Client,
    sql: &str,
    expected: &str,
    timeout: Duration,
) {
    let deadline = Instant::now() + timeout;
    loop {
        let value = row(client, sql).await[0].clone();
        if value.as_deref() == Some(expected) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{sql} is {value:?}, not {expected}, after {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The SQLSTATE `sql` fails with.
pub async fn error_code(client: &tokio_postgres::Client, sql: &str) -> String {
    let error = client
        .simple_query(sql)
        .await
        .expect_err(&format!("{sql} should fail"));
    let db = error
        .as_db_error()
        .unwrap_or_else(|| panic!("{sql}: {error}"));
    format!("{} {}", db.code().code(), db.message())
}

/// Every row of `sql`, its columns' text (`NULL` for NULL) joined by `|`, in the order sent.
pub async fn rows(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    client
        .simple_query(sql)
        .await
        .expect(sql)
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

/// [`rows`], sorted.
pub async fn sorted_rows(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    let mut rows = rows(client, sql).await;
    rows.sort();
    rows
}

/// Waits until `current` gives `expected` (or fails after `timeout`, naming `what`).
pub async fn converge<F, Fut>(what: &str, expected: &[String], timeout: Duration, mut current: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let got = current().await;
        if got == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what} holds {got:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
