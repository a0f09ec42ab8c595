//! COPY … FROM STDIN in text and csv formats, through tokio-postgres and through psql's
//! `\copy`, feeding tables that materialized views maintain.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use bytes::Bytes;
use futures::SinkExt;
use support::TestServer;

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect(sql).get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_text_and_csv_rows_reach_tables_and_views() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE people (id BIGINT PRIMARY KEY, name TEXT NOT NULL, score NUMERIC(6,2), note TEXT);
             CREATE MATERIALIZED VIEW stats AS SELECT count(*) AS n, sum(score) AS total FROM people;",
        )
        .await
        .expect("schema");

    let sink = client
        .copy_in("COPY people FROM STDIN")
        .await
        .expect("copy in text");
    let mut sink = Box::pin(sink);
    sink.send(Bytes::from_static(
        b"1\tann\t10.50\t\\N\n2\tbob\t2.25\ttab\\there\n",
    ))
    .await
    .expect("send");
    sink.send(Bytes::from_static(b"3\tcy\t\\N\tline\\nbreak\n"))
        .await
        .expect("send");
    assert_eq!(sink.as_mut().finish().await.expect("finish"), 3);

    let sink = client
        .copy_in("COPY people (id, name, score) FROM STDIN (FORMAT csv, HEADER true)")
        .await
        .expect("copy in csv");
    let mut sink = Box::pin(sink);
    sink.send(Bytes::from_static(
        b"id,name,score\n4,\"dee, jr\",1.00\n5,\"say \"\"hi\"\"\",\n",
    ))
    .await
    .expect("send");
    assert_eq!(sink.as_mut().finish().await.expect("finish"), 2);

    assert_eq!(count(&client, "SELECT n FROM stats").await, 5);
    let total: String = client
        .query_one("SELECT CAST(total AS TEXT) FROM stats", &[])
        .await
        .expect("total")
        .get(0);
    assert_eq!(total, "13.75");
    let row = client
        .query_one("SELECT name, note FROM people WHERE id = 2", &[])
        .await
        .expect("row 2");
    assert_eq!(row.get::<_, String>(1), "tab\there");
    let row = client
        .query_one("SELECT name FROM people WHERE id = 5", &[])
        .await
        .expect("row 5");
    assert_eq!(row.get::<_, String>(0), "say \"hi\"");
    let null_score = count(&client, "SELECT count(*) FROM people WHERE score IS NULL").await;
    assert_eq!(null_score, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_copy_data_is_an_error_and_changes_nothing() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        .await
        .expect("schema");
    let sink = client.copy_in("COPY t FROM STDIN").await.expect("copy");
    let mut sink = Box::pin(sink);
    sink.send(Bytes::from_static(b"1\t2\n2\tnot-a-number\n"))
        .await
        .expect("send");
    let error = sink.as_mut().finish().await.expect_err("bad value");
    assert_eq!(
        error.code(),
        Some(&tokio_postgres::error::SqlState::INVALID_TEXT_REPRESENTATION)
    );
    let sink = client.copy_in("COPY t FROM STDIN").await.expect("copy");
    let mut sink = Box::pin(sink);
    sink.send(Bytes::from_static(b"1\t2\n1\t3\n"))
        .await
        .expect("send");
    let error = sink.as_mut().finish().await.expect_err("duplicate key");
    assert_eq!(
        error.code(),
        Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
    );
    assert_eq!(count(&client, "SELECT count(*) FROM t").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_backslash_copy_loads_a_csv_file() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE points (x INT, y INT); CREATE MATERIALIZED VIEW s AS SELECT sum(x * y) AS dot FROM points")
        .await
        .expect("schema");
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for i in 1..=1000 {
        writeln!(file, "{i},{}", i % 7).expect("write csv");
    }
    let output = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port().to_string(),
            "-U",
            "fluxion",
            "-v",
            "ON_ERROR_STOP=1",
        ])
        .arg("-c")
        .arg(format!(
            "\\copy points FROM '{}' WITH (FORMAT csv)",
            file.path().display()
        ))
        .stdin(Stdio::null())
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "COPY 1000");
    let expected: i64 = (1..=1000i64).map(|i| i * (i % 7)).sum();
    assert_eq!(count(&client, "SELECT dot FROM s").await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copied_times_without_an_offset_are_local_times_of_the_session() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE visits (id INT PRIMARY KEY, at TIMESTAMPTZ);
             SET TIME ZONE 'Europe/Berlin'",
        )
        .await
        .expect("schema");
    let sink = client
        .copy_in("COPY visits FROM STDIN")
        .await
        .expect("copy in");
    let mut sink = Box::pin(sink);
    sink.send(Bytes::from_static(
        b"1\t2024-01-15 12:00:00\n2\t2024-07-15 12:00:00\n3\t2024-01-15 12:00:00+00\n",
    ))
    .await
    .expect("send");
    sink.as_mut().finish().await.expect("finish");
    // Berlin is UTC+1 in January and UTC+2 in July; an explicit offset is kept.
    let utc = "SELECT count(*) FROM visits WHERE \
               (id = 1 AND at = TIMESTAMPTZ '2024-01-15 11:00:00+00') OR \
               (id = 2 AND at = TIMESTAMPTZ '2024-07-15 10:00:00+00') OR \
               (id = 3 AND at = TIMESTAMPTZ '2024-01-15 12:00:00+00')";
    assert_eq!(count(&client, utc).await, 3);
}
