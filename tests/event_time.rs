//! Event time through the real server: a source's watermark trails its event times, rows
//! behind it are counted and kept in `fluxion_catalog.late_events` (and still corrected into
//! views), the watermark and the late rows survive a SIGKILL with nothing counted twice, an
//! idle Kafka partition stops holding the watermark back, and bad declarations are refused.

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
            "CREATE SOURCE clicks (id bigint NOT NULL, ts timestamp NOT NULL,
                 WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
               WITH (connector = 'webhook', secret = 's');
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
    assert_eq!(
        rows(&client, late).await,
        [
            r#"clicks|2026-01-01 00:00:09|2026-01-01 00:00:15|{"id":6,"ts":"2026-01-01T00:00:09"}"#,
            r#"clicks|2026-01-01 00:00:14|2026-01-01 00:00:15|{"id":4,"ts":"2026-01-01T00:00:14"}"#,
        ]
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
    assert_eq!(rows(&client, windows).await, corrected);
    // Lateness after the restart is measured against the recovered watermark.
    post_clicks(server.http_port(), &[(7, 11), (8, 40)]);
    assert_eq!(row(&client, count).await, [Some("3".into())]);
    assert_eq!(
        row(&client, stats).await,
        [Some("2026-01-01 00:00:35".into()), Some("1".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watermark_declarations_are_checked() {
    let server = TestServer::start();
    let client = server.connect().await;
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
