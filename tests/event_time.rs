//! Event time through the real server: a source's watermark trails its event times, rows
//! behind it are counted and kept in `fluxion_catalog.late_events` and the source's
//! `late_table` (and still corrected into views), the watermark and the late rows survive a
//! SIGKILL with nothing counted twice, an idle Kafka partition stops holding the watermark
//! back, an `EMIT ON WINDOW CLOSE` view shows each window once, bad declarations are
//! refused, joins in time (versioned, interval and lookup joins) hold what they promise, and
//! a table's watermark survives a SIGKILL as a source's does.

mod support;

#[path = "../crates/connectors/tests/support/tansu.rs"]
mod tansu;

use std::collections::BTreeMap;
use std::time::Duration;

use rskafka::chrono::Utc;
use rskafka::record::Record;
use support::http::post;
use support::query::{error_code, row, rows, wait_for};
use support::TestServer;
use tansu::Broker;

const SECRET: [(&str, &str); 1] = [("X-Webhook-Secret", "s")];

/// Posts clicks `(id, second of 2026-01-01 00:00)` to the webhook source `clicks`, as one
/// batch.
fn post_clicks(port: u16, clicks: &[(u64, u64)]) {
    let body: String = clicks
        .iter()
        .map(|(id, second)| {
            format!(
                "{{\"id\": {id}, \"ts\": \"2026-01-01T00:{:02}:{:02}\"}}\n",
                second / 60,
                second % 60
            )
        })
        .collect();
    let (status, answer) = post(port, "/webhook/public/clicks", &SECRET, body.as_bytes());
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_rows_are_kept_counted_and_corrected_and_survive_a_restart() {
    let data = tempfile::tempdir().expect("a temporary directory");
    // A checkpoint after every commit: the watermark must survive in checkpoints too.
    let args = ["--checkpoint-after-rows", "1"];
    let mut server = TestServer::start_with_args(data.path(), &args);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE late_clicks (source text NOT NULL, row text NOT NULL,
                 event_time timestamp NOT NULL, watermark timestamp NOT NULL,
                 received_at timestamptz NOT NULL);
             CREATE SOURCE clicks (id bigint NOT NULL, ts timestamp NOT NULL,
                 WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
               WITH (connector = 'webhook', secret = 's', late_table = 'late_clicks');
             CREATE MATERIALIZED VIEW per_window AS
               SELECT window_start, count(*) AS n
               FROM TUMBLE(clicks, ts, INTERVAL '10' SECOND) GROUP BY window_start;",
        )
        .await
        .expect("source and view");
    let port = server.http_port();
    let stats = "SELECT watermark, late_rows FROM fluxion_catalog.source_stats \
                 WHERE source_name = 'clicks'";
    assert_eq!(row(&client, stats).await, [None, Some("0".into())]);

    // Out of order but nothing late yet: the watermark is the largest time seen minus 5 s.
    post_clicks(port, &[(1, 12), (2, 3), (3, 20)]);
    assert_eq!(
        row(&client, stats).await,
        [Some("2026-01-01 00:00:15".into()), Some("0".into())]
    );
    // A view's watermark is its source's.
    assert_eq!(
        row(
            &client,
            "SELECT watermark FROM fluxion_catalog.frontiers WHERE object_name = 'per_window'"
        )
        .await,
        [Some("2026-01-01 00:00:15".into())]
    );

    // 14 s and 9 s are behind the 15 s watermark: late. 16 s is not.
    post_clicks(port, &[(4, 14), (5, 16), (6, 9)]);
    assert_eq!(
        row(&client, stats).await,
        [Some("2026-01-01 00:00:15".into()), Some("2".into())]
    );
    let late = "SELECT source, event_time, watermark, row \
                FROM fluxion_catalog.late_events ORDER BY event_time";
    let expected_late = [
        r#"clicks|2026-01-01 00:00:09|2026-01-01 00:00:15|{"id":6,"ts":"2026-01-01T00:00:09"}"#,
        r#"clicks|2026-01-01 00:00:14|2026-01-01 00:00:15|{"id":4,"ts":"2026-01-01T00:00:14"}"#,
    ];
    assert_eq!(rows(&client, late).await, expected_late);
    // The source's own late_table holds them too.
    let own = late.replace("fluxion_catalog.late_events", "late_clicks");
    assert_eq!(rows(&client, &own).await, expected_late);
    // Late rows can be taken in again with plain SQL, reading their JSON.
    client
        .batch_execute(
            "CREATE TABLE retaken (id bigint, ts timestamp);
             INSERT INTO retaken SELECT (row::json->>'id')::bigint, (row::json->>'ts')::timestamp
               FROM fluxion_catalog.late_events WHERE source = 'clicks';",
        )
        .await
        .expect("late rows taken in again");
    assert_eq!(
        rows(&client, "SELECT id, ts FROM retaken ORDER BY id").await,
        ["4|2026-01-01 00:00:14", "6|2026-01-01 00:00:09"]
    );
    // Late rows are also corrections: the view counts them in their windows.
    let windows = "SELECT window_start, n FROM per_window ORDER BY window_start";
    let corrected = [
        "2026-01-01 00:00:00|2",
        "2026-01-01 00:00:10|3",
        "2026-01-01 00:00:20|1",
    ];
    assert_eq!(rows(&client, windows).await, corrected);
    tokio::time::sleep(Duration::from_millis(500)).await;

    server.kill();
    let server = TestServer::start_with_args(data.path(), &args);
    let client = server.connect().await;
    assert_eq!(
        row(&client, stats).await[0],
        Some("2026-01-01 00:00:15".into()),
        "the watermark survived SIGKILL"
    );
    let count = "SELECT count(*) FROM fluxion_catalog.late_events";
    assert_eq!(row(&client, count).await, [Some("2".into())], "none twice");
    let own_count = "SELECT count(*) FROM late_clicks";
    assert_eq!(
        row(&client, own_count).await,
        [Some("2".into())],
        "none twice"
    );
    assert_eq!(rows(&client, windows).await, corrected);
    // Lateness after the restart is measured against the recovered watermark.
    post_clicks(server.http_port(), &[(7, 11), (8, 40)]);
    assert_eq!(row(&client, count).await, [Some("3".into())]);
    assert_eq!(row(&client, own_count).await, [Some("3".into())]);
    assert_eq!(
        row(&client, stats).await,
        [Some("2026-01-01 00:00:35".into()), Some("1".into())]
    );
}

/// A table's watermark and late rows, written by `INSERT`, across a SIGKILL: with a
/// checkpoint after every commit (`checkpoints`) or with the log alone.
async fn a_tables_watermark_survives_a_restart(checkpoints: bool) {
    let data = tempfile::tempdir().expect("a temporary directory");
    let args: &[&str] = match checkpoints {
        true => &["--checkpoint-after-rows", "1"],
        false => &[],
    };
    let mut server = TestServer::start_with_args(data.path(), args);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE clicks (id int, ts timestamp,
                 WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);
             CREATE MATERIALIZED VIEW per_window AS
               SELECT window_start, count(*) AS n
               FROM TUMBLE(clicks, ts, INTERVAL '10' SECOND) GROUP BY window_start;
             INSERT INTO clicks VALUES (1, '2026-01-01 00:00:12'), (2, '2026-01-01 00:00:20');
             INSERT INTO clicks VALUES (3, '2026-01-01 00:00:09');",
        )
        .await
        .expect("a table with a watermark, a view and rows");
    let watermark = "SELECT watermark FROM fluxion_catalog.frontiers \
                     WHERE object_name IN ('clicks', 'per_window') ORDER BY object_name";
    let at_15 = ["2026-01-01 00:00:15", "2026-01-01 00:00:15"];
    assert_eq!(rows(&client, watermark).await, at_15);
    let count = "SELECT count(*) FROM fluxion_catalog.late_events WHERE source = 'clicks'";
    assert_eq!(row(&client, count).await, [Some("1".into())]);
    tokio::time::sleep(Duration::from_millis(300)).await;

    server.kill();
    let server = TestServer::start_with_args(data.path(), args);
    let client = server.connect().await;
    assert_eq!(
        rows(&client, watermark).await,
        at_15,
        "the watermark survived"
    );
    assert_eq!(row(&client, count).await, [Some("1".into())], "none twice");
    // Lateness after the restart is measured against the recovered watermark.
    client
        .batch_execute("INSERT INTO clicks VALUES (4, '2026-01-01 00:00:11')")
        .await
        .expect("a late row");
    assert_eq!(row(&client, count).await, [Some("2".into())]);
    assert_eq!(
        rows(&client, "SELECT window_start, n FROM per_window ORDER BY 1").await,
        [
            "2026-01-01 00:00:00|1",
            "2026-01-01 00:00:10|2",
            "2026-01-01 00:00:20|1"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tables_watermark_survives_a_restart_from_the_log() {
    a_tables_watermark_survives_a_restart(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tables_watermark_survives_a_restart_from_a_checkpoint() {
    a_tables_watermark_survives_a_restart(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watermark_declarations_are_checked() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE late_rows (source text NOT NULL, row text NOT NULL,
                 event_time timestamp NOT NULL, watermark timestamp NOT NULL,
                 received_at timestamptz NOT NULL);
             CREATE TABLE not_late_rows (source text NOT NULL, row text NOT NULL);",
        )
        .await
        .expect("tables for late rows");
    let create = |columns: &str, options: &str| {
        format!("CREATE SOURCE s ({columns}) WITH (connector = 'webhook'{options})")
    };
    for (sql, code) in [
        (
            create(
                "ts timestamp, WATERMARK FOR ts AS ts - INTERVAL '1' MONTH",
                "",
            ),
            "0A000",
        ),
        (
            create(
                "ts timestamp, WATERMARK FOR ts AS ts + INTERVAL '1' SECOND",
                "",
            ),
            "0A000",
        ),
        (create("n bigint, WATERMARK FOR n AS n", ""), "42804"),
        (
            create("ts timestamp, WATERMARK FOR nope AS nope", ""),
            "42703",
        ),
        (
            create("ts timestamp", ", watermark.idle_timeout = '1s'"),
            "22023",
        ),
        (
            create("ts timestamp", ", late_table = 'late_rows'"),
            "22023",
        ),
        (
            create(
                "ts timestamp, WATERMARK FOR ts AS ts",
                ", late_table = 'not_late_rows'",
            ),
            "22023",
        ),
        (
            create(
                "ts timestamp, WATERMARK FOR ts AS ts",
                ", watermark.idle_timeout = 'soon'",
            ),
            "22023",
        ),
    ] {
        let failure = error_code(&client, &sql).await;
        assert!(failure.starts_with(code), "{sql}: {failure}");
    }
    client
        .batch_execute(&create(
            "ts timestamptz, WATERMARK FOR ts AS ts - INTERVAL '1 minute 30 seconds'",
            ", watermark.idle_timeout = '2s'",
        ))
        .await
        .expect("a timestamptz watermark with an idle timeout");
}

fn event(second: u64) -> Record {
    let value = format!(
        "{{\"ts\": \"2026-01-01T00:{:02}:{:02}\"}}",
        second / 60,
        second % 60
    );
    Record {
        key: None,
        value: Some(value.into_bytes()),
        headers: BTreeMap::new(),
        timestamp: Utc::now(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_partition_stops_holding_the_watermark_back() {
    let broker = Broker::start();
    broker.create_topic("events", 2);
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE events (ts timestamp NOT NULL, WATERMARK FOR ts AS ts)
               WITH (connector = 'kafka', topic = 'events',
                     properties.bootstrap.server = '{}', watermark.idle_timeout = '3s')
               FORMAT PLAIN ENCODE JSON;",
            broker.address
        ))
        .await
        .expect("source");
    let stats = "SELECT rows, watermark, late_rows FROM fluxion_catalog.source_stats";
    let wait = Duration::from_secs(30);
    broker.produce("events", 0, vec![event(100)]);
    broker.produce("events", 1, vec![event(10)]);
    wait_for(
        &client,
        "SELECT rows FROM fluxion_catalog.source_stats",
        "2",
        wait,
    )
    .await;
    // The slower partition holds the watermark at its time.
    assert_eq!(
        row(&client, stats).await[1],
        Some("2026-01-01 00:00:10".into())
    );
    broker.produce("events", 0, vec![event(200)]);
    // Partition 1 sends nothing more: after the idle timeout, partition 0 alone sets it.
    wait_for(
        &client,
        "SELECT watermark FROM fluxion_catalog.source_stats",
        "2026-01-01 00:03:20",
        wait,
    )
    .await;
    // Back from idleness with an old row: it is late, and the watermark does not go back.
    broker.produce("events", 1, vec![event(50)]);
    wait_for(
        &client,
        "SELECT late_rows FROM fluxion_catalog.source_stats",
        "1",
        wait,
    )
    .await;
    assert_eq!(
        row(&client, stats).await,
        [
            Some("4".into()),
            Some("2026-01-01 00:03:20".into()),
            Some("1".into())
        ]
    );
}

/// The changes a file sink wrote to `dir`, as `window_start|n|diff`.
fn sink_lines(dir: &std::path::Path) -> Vec<String> {
    support::sink_files::file_lines(dir)
        .iter()
        .map(|line| {
            let change: serde_json::Value = serde_json::from_slice(line).expect("JSON");
            format!(
                "{}|{}|{}",
                change["window_start"].as_str().unwrap_or("?"),
                change["n"],
                change["_diff"]
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emit_on_window_close_view_shows_each_window_once_when_it_closes() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let out = tempfile::tempdir().expect("an output directory");
    let mut server = TestServer::start_in(data.path());
    let client = server.connect().await;
    let query = "SELECT window_start, count(*) AS n \
                 FROM TUMBLE(clicks, ts, INTERVAL '10' SECOND) GROUP BY window_start";
    client
        .batch_execute(&format!(
            "CREATE SOURCE clicks (id bigint NOT NULL, ts timestamp NOT NULL,
                 WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
               WITH (connector = 'webhook', secret = 's');
             CREATE MATERIALIZED VIEW live AS {query};
             CREATE MATERIALIZED VIEW closed AS {query} EMIT ON WINDOW CLOSE;
             CREATE SINK out FROM closed WITH (connector = 'file', path = '{}',
                 rotate.interval = '200ms');",
            out.path().display()
        ))
        .await
        .expect("a source, its views and a sink");
    let port = server.http_port();
    let closed = "SELECT window_start, n FROM closed ORDER BY window_start";
    let live = "SELECT window_start, n FROM live ORDER BY window_start";
    let watcher = server.connect().await;
    watcher
        .batch_execute("BEGIN; DECLARE c CURSOR FOR SUBSCRIBE closed;")
        .await
        .expect("a subscription to the view");

    // Out of order; the watermark reaches 15 s: [0 s, 10 s) has closed, [10 s, 20 s) has not.
    post_clicks(port, &[(1, 12), (2, 3), (3, 20)]);
    assert_eq!(rows(&client, closed).await, ["2026-01-01 00:00:00|1"]);

    // 14 s is late but its window is open: it counts. 9 s is late for a window that has
    // closed: the live view corrects it, the closed one never changes. 26 s moves the
    // watermark to 21 s, which closes [10 s, 20 s).
    post_clicks(port, &[(4, 14), (5, 9), (6, 26)]);
    let before_restart = ["2026-01-01 00:00:00|1", "2026-01-01 00:00:10|2"];
    assert_eq!(rows(&client, closed).await, before_restart);
    assert_eq!(
        rows(&client, live).await,
        [
            "2026-01-01 00:00:00|2",
            "2026-01-01 00:00:10|2",
            "2026-01-01 00:00:20|2"
        ]
    );
    wait_for(
        &client,
        "SELECT rows_delivered FROM fluxion_catalog.sink_stats WHERE sink_name = 'out'",
        "2",
        Duration::from_secs(30),
    )
    .await;
    // SUBSCRIBE saw each closed window once, as an insert, and nothing else.
    let changes: Vec<String> = watcher
        .simple_query("FETCH ALL c WITH (timeout = '1s')")
        .await
        .expect("FETCH")
        .iter()
        .filter_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(format!(
                "{}|{}|{}",
                row.get("window_start").unwrap_or_default(),
                row.get("n").unwrap_or_default(),
                row.get("_diff").unwrap_or_default()
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        ["2026-01-01 00:00:00|1|1", "2026-01-01 00:00:10|2|1"]
    );

    // After a SIGKILL the view is rebuilt from the source's history as it happened: the row
    // that came after its window closed stays out.
    server.kill();
    drop(client);
    let server = TestServer::start_in(data.path());
    let client = server.connect().await;
    assert_eq!(rows(&client, closed).await, before_restart);
    post_clicks(server.http_port(), &[(7, 40)]);
    assert_eq!(
        rows(&client, closed).await,
        [
            "2026-01-01 00:00:00|1",
            "2026-01-01 00:00:10|2",
            "2026-01-01 00:00:20|2"
        ]
    );
    // The sink wrote each window once, as an insert, across the crash.
    let expected = [
        "2026-01-01T00:00:00|1|1",
        "2026-01-01T00:00:10|2|1",
        "2026-01-01T00:00:20|2|1",
    ];
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while sink_lines(out.path()).len() < expected.len() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink_lines(out.path()), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emit_on_window_close_needs_a_window_a_watermark_closes() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SOURCE clicks (id bigint NOT NULL, ts timestamp NOT NULL,
                 WATERMARK FOR ts AS ts)
               WITH (connector = 'webhook', secret = 's');
             CREATE SOURCE plain (id bigint NOT NULL, ts timestamp NOT NULL)
               WITH (connector = 'webhook', secret = 's');",
        )
        .await
        .expect("sources");
    for (sql, code) in [
        (
            "CREATE MATERIALIZED VIEW v AS SELECT id, count(*) FROM clicks GROUP BY id \
             EMIT ON WINDOW CLOSE",
            "42000",
        ),
        (
            "CREATE MATERIALIZED VIEW v AS SELECT window_start, count(*) \
             FROM TUMBLE(plain, ts, INTERVAL '1' SECOND) GROUP BY window_start \
             EMIT ON WINDOW CLOSE",
            "42000",
        ),
        (
            "CREATE VIEW v AS SELECT * FROM clicks EMIT ON WINDOW CLOSE",
            "0A000",
        ),
    ] {
        let failure = error_code(&client, sql).await;
        assert!(failure.starts_with(code), "{sql}: {failure}");
    }
    // HOP and CUMULATE windows close too, on either bound, and a view may end in a FROM.
    client
        .batch_execute(
            "CREATE MATERIALIZED VIEW hops AS SELECT window_end, count(*) AS n \
               FROM HOP(clicks, ts, INTERVAL '1' SECOND, INTERVAL '4' SECOND) \
               GROUP BY window_end EMIT ON WINDOW CLOSE;
             CREATE MATERIALIZED VIEW days AS SELECT window_start, window_end, count(*) AS n \
               FROM CUMULATE(clicks, ts, INTERVAL '1' HOUR, INTERVAL '1' DAY) \
               GROUP BY window_start, window_end EMIT ON WINDOW CLOSE;
             CREATE MATERIALIZED VIEW everything AS SELECT * FROM TUMBLE(clicks, ts, \
               INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;",
        )
        .await
        .expect("windowed views that emit on close");
    let shown = row(&client, "SHOW CREATE VIEW hops").await;
    let definition = shown[1].clone().unwrap_or_default();
    assert!(definition.ends_with("EMIT ON WINDOW CLOSE"), "{definition}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_windows_emit_each_session_once_it_has_closed() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SOURCE clicks (id bigint NOT NULL, ts timestamp NOT NULL,
                 WATERMARK FOR ts AS ts)
               WITH (connector = 'webhook', secret = 's');
             CREATE MATERIALIZED VIEW sessions AS
               SELECT id, window_start, window_end, count(*) AS n
               FROM SESSION(clicks, ts, INTERVAL '10' SECOND, id)
               GROUP BY id, window_start, window_end EMIT ON WINDOW CLOSE;",
        )
        .await
        .expect("a source and a session view");
    let port = server.http_port();
    let sessions = "SELECT id, window_start, window_end, n FROM sessions ORDER BY 2, 1";
    post_clicks(port, &[(1, 0), (1, 5), (2, 3)]);
    assert!(rows(&client, sessions).await.is_empty(), "nothing closed");
    // The watermark reaches 30 s: both first sessions have ended (15 s and 13 s).
    post_clicks(port, &[(1, 30)]);
    let first = [
        "1|2026-01-01 00:00:00|2026-01-01 00:00:15|2",
        "2|2026-01-01 00:00:03|2026-01-01 00:00:13|1",
    ];
    assert_eq!(rows(&client, sessions).await, first);
    // 38 s extends the session that began at 30 s, past the watermark of 45 s.
    post_clicks(port, &[(1, 38), (2, 45)]);
    assert_eq!(rows(&client, sessions).await, first);
    post_clicks(port, &[(1, 60)]);
    let mut all = first.to_vec();
    all.extend([
        "1|2026-01-01 00:00:30|2026-01-01 00:00:48|2",
        "2|2026-01-01 00:00:45|2026-01-01 00:00:55|1",
    ]);
    assert_eq!(rows(&client, sessions).await, all);
}

/// Posts rates `(currency, rate, time of 2026-01-01)` to the webhook source `rates`.
fn post_rates(port: u16, rates: &[(&str, i64, &str)]) {
    let body: String = rates
        .iter()
        .map(|(currency, rate, time)| {
            format!("{{\"currency\": \"{currency}\", \"rate\": {rate}, \"ts\": \"2026-01-01T{time}:00\"}}\n")
        })
        .collect();
    let (status, answer) = post(port, "/webhook/public/rates", &SECRET, body.as_bytes());
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_for_system_time_as_of_prices_each_order_at_the_rate_of_its_time() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(data.path());
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SOURCE rates (currency text NOT NULL, rate int NOT NULL, ts timestamp NOT NULL,
                 WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
               WITH (connector = 'webhook', secret = 's');
             CREATE TABLE orders (id int, currency text, ts timestamp, amount int);
             CREATE MATERIALIZED VIEW priced AS
               SELECT o.id, o.amount * r.rate AS price
               FROM orders o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
                 ON o.currency = r.currency;",
        )
        .await
        .expect("a versioned source, a table and a view joining them");
    let port = server.http_port();
    post_rates(
        port,
        &[
            ("EUR", 110, "10:00"),
            ("EUR", 112, "10:05"),
            ("USD", 100, "09:00"),
        ],
    );
    client
        .batch_execute(
            "INSERT INTO orders VALUES (1, 'EUR', '2026-01-01 10:01', 2),
               (2, 'EUR', '2026-01-01 10:06', 2), (3, 'EUR', '2026-01-01 09:00', 1),
               (4, 'USD', '2026-01-01 12:00', 3), (5, 'GBP', '2026-01-01 12:00', 3)",
        )
        .await
        .expect("orders");
    let priced = "SELECT id, price FROM priced ORDER BY id";
    // Each order at the latest rate of its currency at or before its time; none before 10:00
    // for order 3, none at all for GBP.
    assert_eq!(
        rows(&client, priced).await,
        ["1|220", "2|224", "3|NULL", "4|300", "5|NULL"]
    );

    // A new version applies from its time on: USD 90 from 11:00 reprices order 4 (12:00);
    // EUR 120 from 10:30 comes after every EUR order, which keep their rates.
    post_rates(port, &[("USD", 90, "11:00"), ("EUR", 120, "10:30")]);
    assert_eq!(
        rows(&client, priced).await,
        ["1|220", "2|224", "3|NULL", "4|270", "5|NULL"]
    );
    // A version behind the watermark (10:59) is late: counted, kept, and still applied, so
    // order 3 (09:00) gets the rate of 08:00.
    post_rates(port, &[("EUR", 105, "08:00")]);
    assert_eq!(
        rows(&client, priced).await,
        ["1|220", "2|224", "3|105", "4|270", "5|NULL"]
    );
    assert_eq!(
        row(
            &client,
            "SELECT late_rows FROM fluxion_catalog.source_stats WHERE source_name = 'rates'"
        )
        .await,
        [Some("1".to_string())]
    );
    // The inner join, run once, drops the orders without a rate.
    assert_eq!(
        rows(
            &client,
            "SELECT o.id, o.amount * r.rate FROM orders o
               JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.currency = r.currency ORDER BY 1"
        )
        .await,
        ["1|220", "2|224", "3|105", "4|270"]
    );
    let definition = row(&client, "SELECT pg_get_viewdef('priced'::regclass)").await;
    let definition = definition[0].clone().unwrap_or_default();
    assert!(
        definition.contains("LEFT JOIN public.rates FOR SYSTEM_TIME AS OF o.ts AS r ON"),
        "{definition}"
    );

    // After a SIGKILL the view is planned again from its stored definition, with its rows.
    server.kill();
    drop(client);
    let server = TestServer::start_in(data.path());
    let client = server.connect().await;
    assert_eq!(
        rows(&client, priced).await,
        ["1|220", "2|224", "3|105", "4|270", "5|NULL"]
    );

    // The versioned side needs an event time, and the ON condition only the keys.
    for refused in [
        "SELECT * FROM orders o JOIN orders FOR SYSTEM_TIME AS OF o.ts p ON o.id = p.id",
        "SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r
           ON o.currency = r.currency AND o.ts >= r.ts",
    ] {
        let error = error_code(&client, refused).await;
        assert!(error.starts_with("0A000"), "{refused}: {error}");
    }
}

/// Posts JSON lines to the webhook source `source`.
fn post_lines(port: u16, source: &str, lines: &[&str]) {
    let body: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let path = format!("/webhook/public/{source}");
    let (status, answer) = post(port, &path, &SECRET, body.as_bytes());
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interval_join_emits_each_search_once_clicked_or_not_when_its_interval_closes() {
    let server = TestServer::start();
    let client = server.connect().await;
    let join = "SELECT s.id, s.ts, c.ts AS clicked FROM searches s LEFT JOIN clicks c
                  ON s.session = c.session
                  AND c.ts BETWEEN s.ts AND s.ts + INTERVAL '10' SECOND";
    client
        .batch_execute(&format!(
            "CREATE SOURCE searches (id bigint NOT NULL, session bigint NOT NULL,
                 ts timestamp NOT NULL, WATERMARK FOR ts AS ts)
               WITH (connector = 'webhook', secret = 's');
             CREATE SOURCE clicks (session bigint NOT NULL, ts timestamp NOT NULL,
                 WATERMARK FOR ts AS ts)
               WITH (connector = 'webhook', secret = 's');
             CREATE MATERIALIZED VIEW outcomes AS {join} EMIT ON WINDOW CLOSE;
             CREATE MATERIALIZED VIEW live AS {join};"
        ))
        .await
        .expect("two sources and an interval join of them");
    let port = server.http_port();
    let outcomes = "SELECT id, ts, clicked FROM outcomes ORDER BY id";
    let live = "SELECT id, ts, clicked FROM live ORDER BY id";
    post_lines(
        port,
        "searches",
        &[
            r#"{"id": 1, "session": 1, "ts": "2026-01-01T00:00:00"}"#,
            r#"{"id": 2, "session": 2, "ts": "2026-01-01T00:00:05"}"#,
        ],
    );
    post_lines(
        port,
        "clicks",
        &[r#"{"session": 1, "ts": "2026-01-01T00:00:03"}"#],
    );
    // The ordinary view pads search 2 at once; the other waits: a click may still come for
    // both (the clicks' watermark, 3 s, is before either's 10 seconds end).
    assert_eq!(
        rows(&client, live).await,
        [
            "1|2026-01-01 00:00:00|2026-01-01 00:00:03",
            "2|2026-01-01 00:00:05|NULL"
        ]
    );
    assert!(rows(&client, outcomes).await.is_empty());
    // Clicks reach 30 s: search 1's interval has passed (the searches' watermark, 5 s, is
    // past it too), so it is out with its click; search 2 (5 s) is not yet behind the
    // searches' watermark.
    post_lines(
        port,
        "clicks",
        &[r#"{"session": 9, "ts": "2026-01-01T00:00:30"}"#],
    );
    assert_eq!(
        rows(&client, outcomes).await,
        ["1|2026-01-01 00:00:00|2026-01-01 00:00:03"]
    );
    // Searches reach 40 s: search 2 closes without a click, and is out as unclicked.
    post_lines(
        port,
        "searches",
        &[r#"{"id": 3, "session": 3, "ts": "2026-01-01T00:00:40"}"#],
    );
    assert_eq!(
        rows(&client, outcomes).await,
        [
            "1|2026-01-01 00:00:00|2026-01-01 00:00:03",
            "2|2026-01-01 00:00:05|NULL"
        ]
    );
    // A late click for search 2 corrects the ordinary view; the emitted row never changes.
    post_lines(
        port,
        "clicks",
        &[r#"{"session": 2, "ts": "2026-01-01T00:00:07"}"#],
    );
    assert_eq!(
        rows(&client, live).await,
        [
            "1|2026-01-01 00:00:00|2026-01-01 00:00:03",
            "2|2026-01-01 00:00:05|2026-01-01 00:00:07",
            "3|2026-01-01 00:00:40|NULL"
        ]
    );
    assert_eq!(
        rows(&client, outcomes).await,
        [
            "1|2026-01-01 00:00:00|2026-01-01 00:00:03",
            "2|2026-01-01 00:00:05|NULL"
        ]
    );
    let plan = rows(
        &client,
        &format!("EXPLAIN CREATE MATERIALIZED VIEW x AS {join} EMIT ON WINDOW CLOSE"),
    )
    .await;
    assert_eq!(
        plan.iter()
            .filter(|line| line.contains("ForgetClosed"))
            .count(),
        2,
        "both inputs forget what has closed: {plan:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_for_system_time_as_of_proctime_keeps_the_version_each_row_arrived_to() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE customers (id int PRIMARY KEY, name text);
             CREATE SOURCE orders (id bigint NOT NULL, cid int, amount int)
               WITH (connector = 'webhook', secret = 's');
             CREATE MATERIALIZED VIEW enriched AS
               SELECT o.id, o.amount, c.name FROM orders o
                 LEFT JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() c ON o.cid = c.id;
             CREATE MATERIALIZED VIEW known AS
               SELECT o.id, c.name FROM orders o
                 JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() AS c ON o.cid = c.id;
             CREATE MATERIALIZED VIEW served AS
               SELECT o.id FROM orders o
                 JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() AS c ON o.cid = c.id;
             INSERT INTO customers VALUES (1, 'ann'), (2, 'bob');",
        )
        .await
        .expect("a table, a source and lookup joins of them");
    let port = server.http_port();
    let orders = |lines: &[&str]| post_lines(port, "orders", lines);
    orders(&[
        r#"{"id": 1, "cid": 1, "amount": 10}"#,
        r#"{"id": 2, "cid": 2, "amount": 20}"#,
        r#"{"id": 3, "cid": 3, "amount": 30}"#,
        r#"{"id": 4, "cid": null, "amount": 40}"#,
    ]);
    let enriched = "SELECT id, name FROM enriched ORDER BY id";
    let known = "SELECT id, name FROM known ORDER BY id";
    assert_eq!(
        rows(&client, enriched).await,
        ["1|ann", "2|bob", "3|NULL", "4|NULL"]
    );
    // Changes of the table reach only orders that arrive after them.
    client
        .batch_execute(
            "UPDATE customers SET name = 'ANN' WHERE id = 1;
             INSERT INTO customers VALUES (3, 'cat');
             DELETE FROM customers WHERE id = 2;",
        )
        .await
        .expect("customers change");
    assert_eq!(
        rows(&client, enriched).await,
        ["1|ann", "2|bob", "3|NULL", "4|NULL"]
    );
    orders(&[
        r#"{"id": 5, "cid": 1, "amount": 50}"#,
        r#"{"id": 6, "cid": 3, "amount": 60}"#,
        r#"{"id": 7, "cid": 2, "amount": 70}"#,
    ]);
    assert_eq!(
        rows(&client, enriched).await,
        ["1|ann", "2|bob", "3|NULL", "4|NULL", "5|ANN", "6|cat", "7|NULL"]
    );
    assert_eq!(
        rows(&client, known).await,
        ["1|ann", "2|bob", "5|ANN", "6|cat"]
    );
    // Run once, the join reads the table as it is now.
    assert_eq!(
        rows(
            &client,
            "SELECT o.id, c.name FROM orders o
               JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() c ON o.cid = c.id ORDER BY 1"
        )
        .await,
        ["1|ANN", "3|cat", "5|ANN", "6|cat"]
    );
    // Orders whose customer existed when they arrived (no column of the table read: a semi
    // join).
    assert_eq!(
        rows(&client, "SELECT id FROM served ORDER BY id").await,
        ["1", "2", "5", "6"]
    );
    let plan = rows(
        &client,
        "EXPLAIN CREATE MATERIALIZED VIEW x AS SELECT o.id FROM orders o
           JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() c ON o.cid = c.id",
    )
    .await;
    assert!(
        plan.iter().any(|line| line.contains("LookupJoin LeftSemi")),
        "{plan:?}"
    );
    // A lookup is by key.
    for refused in [
        "SELECT * FROM orders o JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() c
           ON o.cid = c.id AND o.amount > c.id",
        "SELECT * FROM orders o RIGHT JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() c
           ON o.cid = c.id",
        // A view stamps rows with proctime() only where no row is retracted.
        "CREATE MATERIALIZED VIEW stamped AS SELECT id, proctime() FROM customers",
    ] {
        let error = error_code(&client, refused).await;
        assert!(error.starts_with("0A000"), "{refused}: {error}");
    }
}
