//! File and webhook sources through the real server: bad records are kept in
//! `fluxion_catalog.source_errors` (and an error table) while every good record reaches the
//! views, a followed file killed mid-stream resumes with nothing lost or repeated, and a
//! webhook answers only once its rows are durable.

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use support::http::{post, post_announcing};
use support::query::{error_code, row, wait_for};
use support::TestServer;

/// Line `i` (1-based) of the test files: every tenth is malformed, in turn not JSON, a value
/// of the wrong type, and a NULL in a NOT NULL column.
fn line(i: u64) -> String {
    match (i % 10, (i / 10) % 3) {
        (0, 0) => format!("{{\"id\": {i}, \"v\": "),
        (0, 1) => format!("{{\"id\": {i}, \"v\": \"seven\"}}"),
        (0, _) => "{\"id\": null, \"v\": 1}".to_string(),
        _ => format!("{{\"id\": {i}, \"v\": {}}}", i % 7),
    }
}

fn append_lines(path: &Path, lines: impl Iterator<Item = u64>) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the file");
    let text: String = lines.map(|i| line(i) + "\n").collect();
    file.write_all(text.as_bytes()).expect("append");
}

/// count, count distinct, sum(id) and sum(v) of the good lines among `1..=n`.
fn expected_totals(n: u64) -> (u64, u64, u64, u64) {
    let good: Vec<u64> = (1..=n).filter(|i| i % 10 != 0).collect();
    let count = good.len() as u64;
    (
        count,
        count,
        good.iter().sum(),
        good.iter().map(|i| i % 7).sum(),
    )
}

async fn totals(client: &tokio_postgres::Client) -> (u64, u64, u64, u64) {
    let values = row(client, "SELECT n, ids, id_sum, v_sum FROM totals").await;
    let number = |i: usize| {
        values[i]
            .as_deref()
            .unwrap_or("0")
            .parse()
            .expect("a number")
    };
    (number(0), number(1), number(2), number(3))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_records_are_kept_and_every_good_one_reaches_the_view() {
    let files = tempfile::tempdir().expect("a temporary directory");
    append_lines(&files.path().join("a.jsonl"), 1..=600);
    append_lines(&files.path().join("b.jsonl"), 601..=1000);
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE bad_events (source text NOT NULL, position text, raw text, \
               error text NOT NULL, received_at timestamptz NOT NULL);
             CREATE SOURCE events (id bigint NOT NULL, v bigint)
               WITH (connector = 'file', path = '{}/*.jsonl', error_table = 'bad_events')
               FORMAT PLAIN ENCODE JSON;
             CREATE MATERIALIZED VIEW totals AS
               SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS id_sum, sum(v) AS v_sum
               FROM events;",
            files.path().display()
        ))
        .await
        .expect("source, error table and view");
    wait_for(
        &client,
        "SELECT status FROM fluxion_catalog.source_stats WHERE source_name = 'events'",
        "ended",
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(totals(&client).await, expected_totals(1000));
    let stats = row(
        &client,
        "SELECT rows, errors FROM fluxion_catalog.source_stats WHERE source_name = 'events'",
    )
    .await;
    assert_eq!(stats, [Some("900".into()), Some("100".into())]);
    let errors = client
        .simple_query(
            "SELECT position, raw, error FROM fluxion_catalog.source_errors \
             WHERE source = 'events' ORDER BY position",
        )
        .await
        .expect("source_errors");
    let errors: Vec<(String, String, String)> = errors
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some((
                r.get(0).unwrap_or_default().to_string(),
                r.get(1).unwrap_or_default().to_string(),
                r.get(2).unwrap_or_default().to_string(),
            )),
            _ => None,
        })
        .collect();
    let mut expected: Vec<(String, String)> = (1..=1000u64)
        .filter(|i| i % 10 == 0)
        .map(|i| {
            let (file, line_number) = if i <= 600 { ("a", i) } else { ("b", i - 600) };
            (
                format!("{}/{file}.jsonl:{line_number}", files.path().display()),
                line(i),
            )
        })
        .collect();
    expected.sort();
    let found: Vec<(String, String)> = errors
        .iter()
        .map(|(p, r, _)| (p.clone(), r.clone()))
        .collect();
    assert_eq!(found, expected, "every bad record, once, with its position");
    assert!(
        errors.iter().all(|(_, _, e)| !e.is_empty()),
        "each has a reason"
    );
    assert!(errors.iter().any(|(_, _, e)| e.contains("\"v\"")));
    assert!(errors.iter().any(|(_, _, e)| e.contains("\"id\"")));
    assert_eq!(
        row(
            &client,
            "SELECT count(*) FROM bad_events WHERE source = 'events'"
        )
        .await,
        [Some("100".into())]
    );
    assert_eq!(
        error_code(&client, "DROP TABLE bad_events").await,
        "2BP01 cannot drop table bad_events because other objects depend on it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_file_killed_mid_stream_resumes_without_loss_or_repeats() {
    follow_a_file_through_kills(&[], 1).await;
}

/// The batches of a stream commit in its log, with their positions and bad records, and
/// checkpoints record how far: killed between checkpoints, again and again, the source
/// resumes after its last batch, and each bad record is in `source_errors` and the error
/// table once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_file_killed_between_checkpoints_keeps_each_batch_once() {
    follow_a_file_through_kills(&["--checkpoint-after-rows", "20"], 3).await;
}

/// Follows a file that grows while the server, started with `args`, is killed `kills`
/// times; checks the view and the bad records at the end.
async fn follow_a_file_through_kills(args: &[&str], kills: usize) {
    const LINES: u64 = 30_000;
    let files = tempfile::tempdir().expect("a temporary directory");
    let data = tempfile::tempdir().expect("a temporary directory");
    let first = files.path().join("part-1.jsonl");
    append_lines(&first, 1..=5_000);
    let mut server = TestServer::start_with_args(data.path(), args);
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE bad_events (source text NOT NULL, position text, raw text, \
               error text NOT NULL, received_at timestamptz NOT NULL);
             CREATE SOURCE events (id bigint NOT NULL, v bigint)
               WITH (connector = 'file', path = '{}', follow = 'true', error_table = 'bad_events');
             CREATE MATERIALIZED VIEW totals AS
               SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS id_sum, sum(v) AS v_sum
               FROM events;",
            files.path().display()
        ))
        .await
        .expect("source and view");
    let writer_dir = files.path().to_path_buf();
    let writer = std::thread::spawn(move || {
        // Appends in small steps, to the first file and then to a new one.
        let mut next = 5_001;
        while next <= LINES {
            let path = if next <= 15_000 {
                writer_dir.join("part-1.jsonl")
            } else {
                writer_dir.join("part-2.jsonl")
            };
            let end = (next + 499).min(LINES);
            append_lines(&path, next..=end);
            next = end + 1;
            std::thread::sleep(Duration::from_millis(40));
        }
    });
    let mut client = client;
    for kill in 0..kills {
        let deadline = Instant::now() + Duration::from_secs(60);
        let reached = 4_000 * (kill as u64 + 1);
        while totals(&client).await.0 < reached {
            assert!(
                Instant::now() < deadline,
                "the source did not reach {reached} rows"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The writer keeps appending while the server is down.
        server.kill();
        server = TestServer::start_with_args(data.path(), args);
        client = server.connect().await;
    }
    writer.join().expect("the writer");
    let (expected_count, _, _, _) = expected_totals(LINES);
    wait_for(
        &client,
        "SELECT n FROM totals",
        &expected_count.to_string(),
        Duration::from_secs(120),
    )
    .await;
    assert_eq!(totals(&client).await, expected_totals(LINES));
    for errors in [
        "SELECT count(DISTINCT position), count(*) FROM fluxion_catalog.source_errors \
         WHERE source = 'events'",
        "SELECT count(DISTINCT position), count(*) FROM bad_events",
    ] {
        let bad = (LINES / 10).to_string();
        assert_eq!(
            row(&client, errors).await,
            [Some(bad.clone()), Some(bad)],
            "each bad line kept once across the restarts: {errors}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_answers_once_its_rows_are_durable() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(data.path());
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SOURCE hooks (id bigint NOT NULL, note text)
               WITH (connector = 'webhook', secret = 's3cret');
             CREATE MATERIALIZED VIEW hook_totals AS
               SELECT count(*) AS n, sum(id) AS id_sum FROM hooks;",
        )
        .await
        .expect("source and view");
    let port = server.http_port();
    let secret = [("X-Webhook-Secret", "s3cret")];
    assert_eq!(
        post(port, "/webhook/public/hooks", &[], b"{\"id\": 1}").0,
        401
    );
    assert_eq!(
        post(
            port,
            "/webhook/public/hooks",
            &[("X-Webhook-Secret", "nope")],
            b"{}"
        )
        .0,
        401
    );
    assert_eq!(post(port, "/webhook/public/nothing", &secret, b"{}").0, 404);
    let (status, answer) = post(
        port,
        "/webhook/public/hooks",
        &secret,
        b"{\n  \"id\": 1,\n  \"note\": \"pretty-printed\"\n}",
    );
    assert_eq!((status, answer.trim()), (200, "{\"rows\":1,\"errors\":0}"));
    // Read-your-writes: the row is visible as soon as the request is answered.
    assert_eq!(
        row(&client, "SELECT n, id_sum FROM hook_totals").await,
        [Some("1".into()), Some("1".into())]
    );
    let mut acknowledged_ids = 1;
    let mut acknowledged_rows = 1;
    for request in 0..50u64 {
        let ids: Vec<u64> = (0..20).map(|k| 1000 + request * 20 + k).collect();
        let mut body: String = ids
            .iter()
            .map(|id| format!("{{\"id\": {id}, \"note\": \"n{id}\"}}\n"))
            .collect();
        body.push_str("{\"id\": \"not a number\"}\n");
        let (status, answer) = post(port, "/webhook/public/hooks", &secret, body.as_bytes());
        assert_eq!(
            (status, answer.trim()),
            (200, "{\"rows\":20,\"errors\":1}"),
            "request {request}"
        );
        acknowledged_ids += ids.iter().sum::<u64>();
        acknowledged_rows += ids.len() as u64;
    }
    server.kill();
    let server = TestServer::start_in(data.path());
    let client = server.connect().await;
    assert_eq!(
        row(&client, "SELECT n, id_sum FROM hook_totals").await,
        [
            Some(acknowledged_rows.to_string()),
            Some(acknowledged_ids.to_string())
        ],
        "every acknowledged row survived SIGKILL, none twice"
    );
    assert_eq!(
        row(
            &client,
            "SELECT count(*), min(position) FROM fluxion_catalog.source_errors \
             WHERE source = 'hooks'"
        )
        .await,
        [Some("50".into()), Some("request 10, record 21".into())]
    );
    let (status, _) = post(
        server.http_port(),
        "/webhook/public/hooks",
        &secret,
        b"{\"id\": 7}",
    );
    assert_eq!(status, 200, "the webhook is back after the restart");
}

/// A webhook request whose body never fully arrives is answered `408` once the body timeout
/// passes (10 s), and a connection whose headers never end is closed, while other requests
/// are served meanwhile; a body over the limit (2 MiB) is
/// answered `413`; neither adds a row.
#[tokio::test]
async fn a_webhook_refuses_stalled_and_oversized_bodies() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SOURCE hooks (id bigint NOT NULL) WITH (connector = 'webhook');
             CREATE MATERIALIZED VIEW hook_count AS SELECT count(*) AS n FROM hooks;",
        )
        .await
        .expect("source and view");
    let port = server.http_port();
    let started = Instant::now();
    let stalled = std::thread::spawn(move || {
        post_announcing(port, "/webhook/public/hooks", &[], 1000, b"{\"id\": 1}")
    });
    let half_headers = std::thread::spawn(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("set a read timeout");
        stream
            .write_all(b"POST /webhook/public/hooks HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .expect("send half the headers");
        let mut answer = Vec::new();
        let closed = stream.read_to_end(&mut answer).is_ok();
        (closed, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        post(port, "/webhook/public/hooks", &[], b"{\"id\": 2}").0,
        200,
        "a stalled request does not hold up another"
    );
    let (status, answer) = stalled.join().expect("the stalled request's thread");
    let waited = started.elapsed();
    assert_eq!(status, 408, "{answer}");
    assert!(
        (Duration::from_secs(9)..Duration::from_secs(60)).contains(&waited),
        "answered after {waited:?}"
    );
    let (closed, waited) = half_headers.join().expect("the half-headers thread");
    assert!(
        closed && waited < Duration::from_secs(60),
        "a connection that never finishes its headers is closed (after {waited:?})"
    );
    let oversized = vec![b' '; 2 * 1024 * 1024 + 1];
    let (status, answer) = post(port, "/webhook/public/hooks", &[], &oversized);
    assert_eq!(status, 413, "{answer}");
    assert_eq!(
        row(&client, "SELECT n FROM hook_count").await,
        [Some("1".into())],
        "only the complete request added a row"
    );
}
