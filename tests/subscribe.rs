//! SUBSCRIBE through real clients: rows streamed over the simple and the extended protocol,
//! COPY (SUBSCRIBE …) TO STDOUT, cursors with FETCH timeouts, progress rows, AS OF to resume
//! exactly where a subscriber left off, and cancellation that leaves the connection usable.

mod support;

use std::time::Duration;

use futures::{pin_mut, StreamExt, TryStreamExt};
use support::query::error_code;
use support::TestServer;
use tokio_postgres::{NoTls, SimpleQueryMessage};

/// A change as a subscriber sees it: `(_timestamp, _diff, columns…)` as text.
type Change = (u64, i64, Vec<String>);

/// The data rows of simple-query messages as changes (`_timestamp`, `_diff`, then columns).
fn change_of(message: &SimpleQueryMessage) -> Option<Change> {
    let SimpleQueryMessage::Row(row) = message else {
        return None;
    };
    let time = row.get(0)?.parse().ok()?;
    let diff = row.get(1)?.parse().ok()?;
    let columns = (2..row.len())
        .map(|i| row.get(i).unwrap_or("NULL").to_string())
        .collect();
    Some((time, diff, columns))
}

async fn next_changes(
    stream: &mut (impl futures::Stream<Item = Result<SimpleQueryMessage, tokio_postgres::Error>>
              + Unpin),
    count: usize,
) -> Vec<Change> {
    let mut changes = Vec::new();
    while changes.len() < count {
        let message = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("a change within 20 s")
            .expect("the subscription goes on")
            .expect("no error");
        changes.extend(change_of(&message));
    }
    changes
}

/// The next row of an extended-protocol result stream.
async fn next_row(
    rows: &mut (impl futures::Stream<Item = Result<tokio_postgres::Row, tokio_postgres::Error>> + Unpin),
) -> tokio_postgres::Row {
    tokio::time::timeout(Duration::from_secs(20), rows.try_next())
        .await
        .expect("rows keep coming")
        .expect("no error")
        .expect("not the end")
}

/// Waits until the subscription has started (its row description arrived): writes after this
/// are after its start.
async fn started(
    stream: &mut (impl futures::Stream<Item = Result<SimpleQueryMessage, tokio_postgres::Error>>
              + Unpin),
) {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("the subscription starts within 20 s")
            .expect("the subscription goes on")
            .expect("no error");
        if matches!(message, SimpleQueryMessage::RowDescription(_)) {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_stream_over_the_simple_protocol_until_cancelled() {
    let server = TestServer::start();
    let writer = server.connect().await;
    writer
        .batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY, name TEXT);
             INSERT INTO t VALUES (1, 'a'), (2, 'b');
             CREATE MATERIALIZED VIEW names AS SELECT count(*) AS n FROM t;",
        )
        .await
        .expect("a table and a view");
    let subscriber = server.connect().await;
    let stream = subscriber
        .simple_query_raw("SUBSCRIBE t")
        .await
        .expect("SUBSCRIBE starts");
    pin_mut!(stream);
    let mut snapshot = next_changes(&mut stream, 2).await;
    snapshot.sort_by(|a, b| a.2.cmp(&b.2));
    assert_eq!(snapshot[0].0, snapshot[1].0, "the snapshot is at one time");
    assert_eq!(
        snapshot
            .iter()
            .map(|c| (c.1, c.2.clone()))
            .collect::<Vec<_>>(),
        vec![
            (1, vec!["1".to_string(), "a".to_string()]),
            (1, vec!["2".to_string(), "b".to_string()])
        ]
    );
    writer
        .batch_execute("UPDATE t SET name = 'B' WHERE id = 2")
        .await
        .expect("an update");
    let mut update = next_changes(&mut stream, 2).await;
    update.sort_by_key(|c| c.1);
    assert_eq!(update[0].0, update[1].0, "an update is one time");
    assert!(update[0].0 > snapshot[0].0, "after the snapshot");
    assert_eq!(update[0].1, -1);
    assert_eq!(update[0].2[1], "b");
    assert_eq!(update[1].1, 1);
    assert_eq!(update[1].2[1], "B");

    subscriber
        .cancel_token()
        .cancel_query(NoTls)
        .await
        .expect("cancel");
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match stream.next().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => return e,
                None => panic!("the subscription ended without an error"),
            }
        }
    })
    .await
    .expect("the cancel ends the subscription");
    assert_eq!(
        ended.as_db_error().map(|e| e.code().code()),
        Some("57014"),
        "{ended}"
    );
    let rows = subscriber
        .simple_query("SELECT n FROM names")
        .await
        .expect("the connection is usable after the cancel");
    assert!(matches!(&rows[1], SimpleQueryMessage::Row(r) if r.get(0) == Some("2")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_streams_over_the_extended_protocol_with_progress() {
    let server = TestServer::start();
    let writer = server.connect().await;
    writer
        .batch_execute(
            "CREATE TABLE orders (id INT PRIMARY KEY, customer TEXT, amount BIGINT);
             INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 5), (3, 'ann', 7);",
        )
        .await
        .expect("a table");
    let subscriber = server.connect().await;
    let rows = subscriber
        .query_raw(
            "SUBSCRIBE (SELECT customer, sum(amount)::bigint AS total FROM orders \
             GROUP BY customer) WITH (PROGRESS)",
            std::iter::empty::<i32>(),
        )
        .await
        .expect("SUBSCRIBE starts");
    pin_mut!(rows);
    let mut snapshot = Vec::new();
    while snapshot.len() < 2 {
        let row = next_row(&mut rows).await;
        let names: Vec<&str> = row.columns().iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            ["_timestamp", "_progressed", "_diff", "customer", "total"]
        );
        let types: Vec<&str> = row.columns().iter().map(|c| c.type_().name()).collect();
        assert_eq!(types[..3], ["numeric", "bool", "int8"]);
        if row.get::<_, bool>("_progressed") {
            continue;
        }
        let customer: String = row.get("customer");
        snapshot.push((
            customer,
            row.get::<_, i64>("_diff"),
            row.get::<_, i64>("total"),
        ));
    }
    snapshot.sort();
    assert_eq!(
        snapshot,
        vec![("ann".to_string(), 1, 17), ("bob".to_string(), 1, 5)]
    );
    // While nothing changes, progress rows still come (the timeline ticks when idle).
    let idle_progress = next_row(&mut rows).await;
    assert!(idle_progress.get::<_, bool>("_progressed"));
    assert!(idle_progress.get::<_, Option<i64>>("_diff").is_none());
    writer
        .batch_execute("INSERT INTO orders VALUES (4, 'ann', 100)")
        .await
        .expect("an insert");
    let mut ann_totals = Vec::new();
    while ann_totals.len() < 2 {
        let row = next_row(&mut rows).await;
        if row.get::<_, bool>("_progressed") {
            continue;
        }
        if row.get::<_, Option<String>>("customer").as_deref() == Some("ann") {
            ann_totals.push((row.get::<_, i64>("_diff"), row.get::<_, i64>("total")));
        }
    }
    ann_totals.sort();
    assert_eq!(ann_totals, vec![(-1, 17), (1, 117)], "{ann_totals:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_subscribe_streams_and_a_cancel_keeps_the_connection() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id INT, v TEXT); INSERT INTO t VALUES (1, 'x');")
        .await
        .expect("a table");
    let copy = client
        .copy_out("COPY (SUBSCRIBE t) TO STDOUT")
        .await
        .expect("COPY starts");
    pin_mut!(copy);
    let line = tokio::time::timeout(Duration::from_secs(20), copy.next())
        .await
        .expect("the snapshot line")
        .expect("data")
        .expect("no error");
    let text = String::from_utf8_lossy(&line);
    let fields: Vec<&str> = text.trim_end().split('\t').collect();
    assert_eq!(fields[1..], ["1", "1", "x"], "{text}");
    let writer = server.connect().await;
    writer
        .batch_execute("INSERT INTO t VALUES (2, 'y')")
        .await
        .expect("an insert");
    let line = tokio::time::timeout(Duration::from_secs(20), copy.next())
        .await
        .expect("the insert's line")
        .expect("data")
        .expect("no error");
    assert!(String::from_utf8_lossy(&line).ends_with("\t1\t2\ty\n"));
    client
        .cancel_token()
        .cancel_query(NoTls)
        .await
        .expect("cancel");
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match copy.next().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Some(e),
                None => return None,
            }
        }
    })
    .await
    .expect("the cancel ends the COPY");
    let ended = ended.expect("an error, not a clean end");
    assert_eq!(ended.as_db_error().map(|e| e.code().code()), Some("57014"));
    let count = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect("the connection is usable");
    assert_eq!(count.get::<_, i64>(0), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_shows_copy_subscribe_rows_as_they_happen() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id INT); INSERT INTO t VALUES (1);")
        .await
        .expect("a table");
    // psql writes COPY data through stdio: line-buffer it, as on a terminal.
    let mut psql = tokio::process::Command::new("stdbuf")
        .args([
            "-oL",
            "psql",
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &server.port().to_string(),
        ])
        .args([
            "-U",
            "fluxion",
            "-d",
            "fluxion",
            "-c",
            "COPY (SUBSCRIBE t) TO STDOUT",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("psql runs");
    let stdout = psql.stdout.take().expect("psql's output");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("psql prints the snapshot")
        .expect("a line")
        .expect("a line");
    assert!(first.ends_with("\t1\t1"), "{first}");
    client
        .batch_execute("INSERT INTO t VALUES (2)")
        .await
        .expect("an insert");
    let second = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("psql prints the insert as it happens")
        .expect("a line")
        .expect("a line");
    assert!(second.ends_with("\t1\t2"), "{second}");
    // Ctrl-C: psql sends a cancel request and reports the cancelled statement.
    let pid = psql.id().expect("psql's pid") as i32;
    // SAFETY: kill(2) with a pid we own and a valid signal number has no memory effects.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let output = tokio::time::timeout(Duration::from_secs(20), psql.wait_with_output())
        .await
        .expect("psql exits after Ctrl-C")
        .expect("psql's status");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("canceling statement"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_fetches_what_arrived_waiting_at_most_its_timeout() {
    let server = TestServer::start();
    let writer = server.connect().await;
    writer
        .batch_execute("CREATE TABLE t (id INT); INSERT INTO t VALUES (1), (2);")
        .await
        .expect("a table");
    let client = server.connect().await;
    client
        .batch_execute("BEGIN; DECLARE c CURSOR FOR SUBSCRIBE t;")
        .await
        .expect("a cursor over a subscription");
    let fetch = |sql: &'static str| {
        let client = &client;
        async move {
            client
                .simple_query(sql)
                .await
                .expect(sql)
                .iter()
                .filter_map(change_of)
                .collect::<Vec<_>>()
        }
    };
    let snapshot = fetch("FETCH ALL c WITH (timeout = '10s')").await;
    assert_eq!(snapshot.len(), 2, "{snapshot:?}");
    let started = std::time::Instant::now();
    let nothing = fetch("FETCH ALL c WITH (timeout = '300ms')").await;
    assert!(nothing.is_empty(), "{nothing:?}");
    assert!(started.elapsed() >= Duration::from_millis(250), "it waited");
    writer
        .batch_execute("INSERT INTO t VALUES (3)")
        .await
        .expect("an insert");
    // Over the extended protocol, and with a count.
    let rows = client
        .query("FETCH 5 c WITH (timeout = '10s')", &[])
        .await
        .expect("FETCH over the extended protocol");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i64>("_diff"), 1);
    assert_eq!(rows[0].get::<_, Option<i32>>("id"), Some(3));
    client.batch_execute("COMMIT").await.expect("commit");
    let gone = error_code(&client, "FETCH ALL c").await;
    assert!(
        gone.starts_with("34000") || gone.starts_with("42"),
        "{gone}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_of_resumes_exactly_after_the_last_seen_timestamp() {
    let server = TestServer::start();
    let writer = server.connect().await;
    writer
        .batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY);
             INSERT INTO t VALUES (1);",
        )
        .await
        .expect("a table");
    let seen = {
        let first = server.connect().await;
        let stream = first
            .simple_query_raw("SUBSCRIBE t WITH (SNAPSHOT = false)")
            .await
            .expect("SUBSCRIBE");
        pin_mut!(stream);
        started(&mut stream).await;
        for id in 2..=4 {
            writer
                .batch_execute(&format!("INSERT INTO t VALUES ({id})"))
                .await
                .expect("an insert");
        }
        next_changes(&mut stream, 3).await
        // The subscriber goes away (its connection closes here); it counts as having seen
        // only id 2, and a new one resumes right after that.
    };
    let ids: Vec<&str> = seen.iter().map(|c| c.2[0].as_str()).collect();
    assert_eq!(
        ids,
        ["2", "3", "4"],
        "no snapshot, then each insert in order"
    );
    writer
        .batch_execute("INSERT INTO t VALUES (5)")
        .await
        .expect("an insert while disconnected");
    let resumed = server.connect().await;
    let stream = resumed
        .simple_query_raw(&format!(
            "SUBSCRIBE t WITH (SNAPSHOT = false) AS OF {}",
            seen[0].0 + 1
        ))
        .await
        .expect("SUBSCRIBE AS OF");
    pin_mut!(stream);
    let again = next_changes(&mut stream, 3).await;
    let ids: Vec<&str> = again.iter().map(|c| c.2[0].as_str()).collect();
    assert_eq!(
        ids,
        ["3", "4", "5"],
        "every change after the last seen, once"
    );
    assert_eq!(again[0].0, seen[1].0, "with the same timestamps");
    let too_old = error_code(&writer, "SUBSCRIBE t AS OF 1").await;
    assert!(too_old.starts_with("55000"), "{too_old}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_over_a_stream_is_watched_as_it_changes() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SOURCE seq (id BIGINT NOT NULL) WITH (connector = 'datagen', \
               datagen.rows.per.second = '200', fields.id.kind = 'sequence', \
               fields.id.start = '1', fields.id.end = '400');
             CREATE MATERIALIZED VIEW seq_count AS SELECT count(*) AS n FROM seq;",
        )
        .await
        .expect("a source and a view");
    let subscriber = server.connect().await;
    let stream = subscriber
        .simple_query_raw("SUBSCRIBE (SELECT n FROM seq_count)")
        .await
        .expect("SUBSCRIBE");
    pin_mut!(stream);
    // The count only grows: each change retracts the old count and inserts the new one, and
    // the running total of the diffs is always one row.
    let mut current: Option<i64> = None;
    while current != Some(400) {
        let changes = next_changes(&mut stream, 1).await;
        for (_, diff, columns) in changes {
            let n: i64 = columns[0].parse().expect("a count");
            match diff {
                1 => {
                    assert!(current.is_none_or(|c| c < n), "{current:?} then {n}");
                    current = Some(n);
                }
                -1 => assert_eq!(current, Some(n), "retracts what it inserted"),
                other => panic!("diff {other}"),
            }
        }
    }
    // A subscription directly on the stream itself: its history, then nothing more.
    let direct = server.connect().await;
    let stream = direct
        .simple_query_raw("SUBSCRIBE seq")
        .await
        .expect("SUBSCRIBE to a stream");
    pin_mut!(stream);
    let history = next_changes(&mut stream, 400).await;
    let sum: i64 = history
        .iter()
        .map(|c| c.1 * c.2[0].parse::<i64>().expect("an id"))
        .sum();
    assert_eq!(sum, 400 * 401 / 2);
}

/// The data rows of a SUBSCRIBE until `count` changes have come.
async fn subscribe_changes(server: &TestServer, sql: &str, count: usize) -> Vec<Change> {
    let client = server.connect().await;
    let stream = client.simple_query_raw(sql).await.expect(sql);
    pin_mut!(stream);
    next_changes(&mut stream, count).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_subscription_resumes_across_a_crash_exactly_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY);
             INSERT INTO t VALUES (1), (2);
             CREATE SUBSCRIPTION sub FROM t WITH (retention = '1 hour');",
        )
        .await
        .expect("a table and a durable subscription");
    let subscriber = server.connect().await;
    let stream = subscriber
        .simple_query_raw("SUBSCRIBE sub")
        .await
        .expect("SUBSCRIBE to a durable subscription");
    pin_mut!(stream);
    let snapshot = next_changes(&mut stream, 2).await;
    assert_eq!(snapshot.iter().map(|c| c.1).sum::<i64>(), 2, "{snapshot:?}");
    for id in 3..=4 {
        client
            .batch_execute(&format!("INSERT INTO t VALUES ({id})"))
            .await
            .expect("an insert");
    }
    let seen = next_changes(&mut stream, 2).await;
    assert_eq!(
        seen.iter().map(|c| c.2[0].as_str()).collect::<Vec<_>>(),
        ["3", "4"]
    );
    let last_seen = seen[1].0;
    let status = support::query::row(
        &client,
        "SELECT subscription_name, from_name, retention_ms, position > 0, subscribers >= 1 \
         FROM fluxion_catalog.subscriptions",
    )
    .await;
    assert_eq!(
        status,
        ["sub", "t", "3600000", "t", "t"].map(|v| Some(v.to_string()))
    );
    // A change the subscriber never saw, then the server dies.
    client
        .batch_execute("INSERT INTO t VALUES (5); DELETE FROM t WHERE id = 1;")
        .await
        .expect("changes before the crash");
    server.kill();
    drop((stream, subscriber, client));

    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    client
        .batch_execute("INSERT INTO t VALUES (6)")
        .await
        .expect("an insert after the restart");
    let resumed = subscribe_changes(
        &server,
        &format!(
            "SUBSCRIBE sub WITH (SNAPSHOT = false) AS OF {}",
            last_seen + 1
        ),
        3,
    )
    .await;
    let mut net: Vec<(String, i64)> = resumed.iter().map(|c| (c.2[0].clone(), c.1)).collect();
    net.sort();
    assert_eq!(
        net,
        vec![("1".into(), -1), ("5".into(), 1), ("6".into(), 1)],
        "every change after the last seen, once: {resumed:?}"
    );
    assert!(resumed.iter().all(|c| c.0 > last_seen));
    let too_old = error_code(&client, "SUBSCRIBE sub AS OF 1").await;
    assert!(too_old.starts_with("55000"), "{too_old}");
    // A new subscriber's snapshot is the table as it is.
    let mut now = subscribe_changes(&server, "SUBSCRIBE sub", 5).await;
    now.sort_by(|a, b| a.2.cmp(&b.2));
    assert_eq!(
        now.iter()
            .map(|c| (c.1, c.2[0].as_str()))
            .collect::<Vec<_>>(),
        [(1, "2"), (1, "3"), (1, "4"), (1, "5"), (1, "6")]
    );
    client
        .batch_execute("DROP SUBSCRIPTION sub")
        .await
        .expect("drop the subscription");
    let gone = error_code(&client, "SUBSCRIBE sub").await;
    assert!(gone.starts_with("42P01"), "{gone}");
    let logs = std::fs::read_dir(dir.path().join("subscriptions"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(logs, 0, "the subscription's log is deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_older_than_the_retention_is_folded() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY);
             CREATE SUBSCRIPTION brief FROM t WITH (retention = '1s');
             INSERT INTO t VALUES (1);
             INSERT INTO t VALUES (2);
             DELETE FROM t WHERE id = 1;",
        )
        .await
        .expect("a table, a subscription and some history");
    support::query::wait_for(
        &client,
        "SELECT earliest > 0 FROM fluxion_catalog.subscriptions",
        "t",
        Duration::from_secs(30),
    )
    .await;
    let created: u64 = support::query::row(
        &client,
        "SELECT earliest FROM fluxion_catalog.subscriptions",
    )
    .await[0]
        .as_deref()
        .expect("a subscription")
        .parse()
        .expect("a time");
    support::query::wait_for(
        &client,
        &format!("SELECT earliest > {created} FROM fluxion_catalog.subscriptions"),
        "t",
        Duration::from_secs(30),
    )
    .await;
    let folded = error_code(&client, &format!("SUBSCRIBE brief AS OF {created}")).await;
    assert!(folded.starts_with("55000"), "{folded}");
    let snapshot = subscribe_changes(&server, "SUBSCRIBE brief", 1).await;
    assert_eq!(
        snapshot
            .iter()
            .map(|c| (c.1, c.2[0].as_str()))
            .collect::<Vec<_>>(),
        [(1, "2")],
        "the folded history still adds up to the table"
    );
}
