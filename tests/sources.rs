//! Sources through the real server: generators feed views, options and columns are checked,
//! statistics are visible, and a source killed mid-stream resumes with no row lost and none
//! repeated.

mod support;

use std::time::{Duration, Instant};

use support::query::{error_code, row, wait_for};
use support::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_killed_mid_stream_resumes_without_loss_or_repeats() {
    const ROWS: u64 = 40_000;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE seq (id BIGINT NOT NULL, v INT) WITH (connector = 'datagen', \
               datagen.rows.per.second = '4000', fields.id.kind = 'sequence', \
               fields.id.start = '1', fields.id.end = '{ROWS}', fields.v.min = '0', \
               fields.v.max = '9', fields.v.seed = '7');
             CREATE MATERIALIZED VIEW totals AS
               SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS id_sum, sum(v) AS v_sum
               FROM seq;"
        ))
        .await
        .expect("source and view");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n: u64 = row(&client, "SELECT n FROM totals").await[0]
            .as_deref()
            .unwrap_or("0")
            .parse()
            .expect("a count");
        if n > ROWS / 20 {
            assert!(n < ROWS, "the source ended before the kill ({n} rows)");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the source does not advance ({n} rows)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    drop(client);

    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    wait_for(
        &client,
        "SELECT n FROM totals",
        &ROWS.to_string(),
        Duration::from_secs(60),
    )
    .await;
    let totals = row(&client, "SELECT n, ids, id_sum FROM totals").await;
    let expected_sum = ROWS * (ROWS + 1) / 2;
    assert_eq!(
        totals,
        vec![
            Some(ROWS.to_string()),
            Some(ROWS.to_string()),
            Some(expected_sum.to_string())
        ],
        "every row exactly once"
    );
    // An uninterrupted source with the same options generates the same values.
    client
        .batch_execute(&format!(
            "CREATE SOURCE again (id BIGINT NOT NULL, v INT) WITH (connector = 'datagen', \
               datagen.rows.per.second = '0', fields.id.kind = 'sequence', \
               fields.id.start = '1', fields.id.end = '{ROWS}', fields.v.min = '0', \
               fields.v.max = '9', fields.v.seed = '7');
             CREATE MATERIALIZED VIEW again_totals AS SELECT count(*) AS n, sum(v) AS v_sum FROM again;"
        ))
        .await
        .expect("the second source");
    wait_for(
        &client,
        "SELECT n FROM again_totals",
        &ROWS.to_string(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        row(&client, "SELECT v_sum FROM totals").await,
        row(&client, "SELECT v_sum FROM again_totals").await
    );
    wait_for(
        &client,
        "SELECT status FROM fluxion_catalog.source_stats WHERE source_name = 'seq'",
        "ended",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(
        row(
            &client,
            "SELECT position FROM fluxion_catalog.source_stats WHERE source_name = 'seq'"
        )
        .await,
        vec![Some(ROWS.to_string())]
    );
}

/// The `counter` and `nexmark` generators, killed mid-stream, resume right after their last
/// durable batch: exact counts and sums afterwards, equal to an uninterrupted run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generators_killed_mid_stream_resume_without_loss_or_repeats() {
    const TICKS: u64 = 6_000;
    const EVENTS: u64 = 100_000;
    const BIDS: u64 = EVENTS / 50 * 46;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    let bid_options = |rate: u32| {
        format!(
            "connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.rate = '{rate}', \
             nexmark.event.num = '{EVENTS}', nexmark.seed = '5'"
        )
    };
    client
        .batch_execute(&format!(
            "CREATE SOURCE ticks WITH (connector = 'counter', tick = '1ms', max = '{TICKS}');
             CREATE SOURCE bid WITH ({});
             CREATE MATERIALIZED VIEW tick_totals AS
               SELECT count(*) AS n, count(DISTINCT counter) AS d, sum(counter) AS s FROM ticks;
             CREATE MATERIALIZED VIEW bid_totals AS
               SELECT count(*) AS n, sum(price) AS p, sum(auction) AS a, sum(bidder) AS b
               FROM bid;",
            bid_options(10_000)
        ))
        .await
        .expect("the generators and their views");
    let count = |sql: &'static str| {
        let client = &client;
        async move {
            row(client, sql).await[0]
                .as_deref()
                .unwrap_or("0")
                .parse::<u64>()
                .expect("a count")
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ticks, bids) = (
            count("SELECT n FROM tick_totals").await,
            count("SELECT n FROM bid_totals").await,
        );
        // Both mid-stream: a few durable batches in, far from the end (the bids take 10 s
        // at their rate, time enough for a loaded machine's ticks to get going).
        if ticks > TICKS / 100 && bids > BIDS / 100 {
            assert!(ticks < TICKS, "the counter ended before the kill");
            assert!(bids < BIDS, "the bids ended before the kill");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the generators do not advance ({ticks} ticks, {bids} bids)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    drop(client);

    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    wait_for(
        &client,
        "SELECT n FROM tick_totals",
        &TICKS.to_string(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        row(&client, "SELECT d, s FROM tick_totals").await,
        vec![
            Some(TICKS.to_string()),
            Some((TICKS * (TICKS + 1) / 2).to_string())
        ],
        "every tick exactly once"
    );
    wait_for(
        &client,
        "SELECT n FROM bid_totals",
        &BIDS.to_string(),
        Duration::from_secs(60),
    )
    .await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE bid_again WITH ({});
             CREATE MATERIALIZED VIEW bid_again_totals AS
               SELECT count(*) AS n, sum(price) AS p, sum(auction) AS a, sum(bidder) AS b
               FROM bid_again;",
            bid_options(0)
        ))
        .await
        .expect("an uninterrupted copy of the bids");
    wait_for(
        &client,
        "SELECT n FROM bid_again_totals",
        &BIDS.to_string(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        row(&client, "SELECT p, a, b FROM bid_totals").await,
        row(&client, "SELECT p, a, b FROM bid_again_totals").await,
        "the interrupted bids are the uninterrupted ones"
    );
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nexmark_sources_share_one_event_sequence() {
    let server = TestServer::start();
    let client = server.connect().await;
    let options = "nexmark.event.rate = '0', nexmark.event.num = '10000', nexmark.seed = '3'";
    client
        .batch_execute(&format!(
            "CREATE SOURCE person WITH (connector = 'nexmark', nexmark.table.type = 'Person', {options});
             CREATE SOURCE auction WITH (connector = 'nexmark', nexmark.table.type = 'Auction', {options});
             CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP,
                 WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
               WITH (connector = 'nexmark', nexmark.table.type = 'Bid', {options});
             CREATE MATERIALIZED VIEW counts AS
               SELECT (SELECT count(*) FROM person) AS people,
                      (SELECT count(*) FROM auction) AS auctions,
                      (SELECT count(*) FROM bid) AS bids;"
        ))
        .await
        .expect("the nexmark sources");
    wait_for(
        &client,
        "SELECT bids FROM counts",
        "9200",
        Duration::from_secs(60),
    )
    .await;
    wait_for(
        &client,
        "SELECT people FROM counts",
        "200",
        Duration::from_secs(30),
    )
    .await;
    wait_for(
        &client,
        "SELECT auctions FROM counts",
        "600",
        Duration::from_secs(30),
    )
    .await;
    // Every auction's seller is a person of the same sequence.
    let orphans = row(
        &client,
        "SELECT count(*) FROM auction a WHERE NOT EXISTS \
         (SELECT 1 FROM person p WHERE p.id = a.seller)",
    )
    .await;
    let people_ids = row(&client, "SELECT min(id), max(id) FROM person").await;
    assert_eq!(people_ids, vec![Some("1000".into()), Some("1199".into())]);
    let sellers = row(&client, "SELECT min(seller), max(seller) FROM auction").await;
    let max_seller: i64 = sellers[1].as_deref().unwrap().parse().unwrap();
    assert!(
        max_seller <= 1199 + 10,
        "sellers {sellers:?}, orphans {orphans:?}"
    );
    let relkind = row(
        &client,
        "SELECT relkind FROM pg_class WHERE relname = 'bid'",
    )
    .await;
    assert_eq!(relkind, vec![Some("f".into())]);
    let described = std::process::Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-U", "fluxion", "-d", "fluxion", "-c", "\\d bid"])
        .output()
        .expect("psql runs");
    let text = String::from_utf8_lossy(&described.stdout);
    assert!(
        described.status.success(),
        "psql \\d bid: {text} {described:?}"
    );
    assert!(text.contains("Foreign table \"public.bid\""), "{text}");
    assert!(text.contains("Server: fluxion"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_are_checked_listed_and_dropped() {
    let server = TestServer::start();
    let client = server.connect().await;
    for (sql, expected) in [
        (
            "CREATE SOURCE s WITH (connector = 'nope')",
            "unknown connector \"nope\"",
        ),
        ("CREATE SOURCE s WITH (tick = '1s')", "connector"),
        (
            "CREATE SOURCE s WITH (connector = 'counter', tick = 'soon')",
            "invalid value for option \"tick\"",
        ),
        (
            "CREATE SOURCE s WITH (connector = 'counter', tik = '1s')",
            "unknown option \"tik\"",
        ),
        (
            "CREATE SOURCE s (x INT) WITH (connector = 'counter')",
            "no column \"x\"",
        ),
        (
            "CREATE SOURCE s WITH (connector = 'nexmark')",
            "nexmark.table.type",
        ),
        (
            "CREATE SOURCE s WITH (connector = 'counter') FORMAT PLAIN ENCODE JSON",
            "takes no FORMAT",
        ),
        (
            "CREATE SOURCE s (a INT) WITH (connector = 'datagen', fields.a.kind = 'zigzag')",
            "zigzag",
        ),
    ] {
        let error = error_code(&client, sql).await;
        assert!(
            error.starts_with("22023") || error.starts_with("42"),
            "{sql}: {error}"
        );
        assert!(error.contains(expected), "{sql}: {error}");
    }
    client
        .batch_execute(
            "CREATE SOURCE ticks WITH (connector = 'counter', tick = '10ms');
             CREATE MATERIALIZED VIEW tick_count AS SELECT count(*) AS n FROM ticks;",
        )
        .await
        .expect("a counter");
    let deadline = Instant::now() + Duration::from_secs(20);
    while row(&client, "SELECT n FROM tick_count").await[0].as_deref() == Some("0") {
        assert!(Instant::now() < deadline, "the counter does not count");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = row(
        &client,
        "SELECT connector, status, rows > 0, batches > 0, errors FROM fluxion_catalog.source_stats",
    )
    .await;
    assert_eq!(
        stats,
        ["counter", "running", "t", "t", "0"].map(|v| Some(v.to_string()))
    );
    assert_eq!(row(&client, "SHOW SOURCES").await[0], Some("ticks".into()));
    assert_eq!(
        row(
            &client,
            "SELECT schema_name, source_name, connector FROM fluxion_catalog.sources"
        )
        .await,
        ["public", "ticks", "counter"].map(|v| Some(v.to_string()))
    );
    let shown = row(&client, "SHOW CREATE SOURCE ticks").await;
    assert_eq!(
        shown[1].as_deref(),
        Some("CREATE SOURCE public.ticks WITH (connector = 'counter', tick = '10ms')")
    );
    let prepared = client
        .query("SHOW CREATE SOURCE ticks", &[])
        .await
        .expect("SHOW CREATE SOURCE over the extended protocol");
    assert_eq!(prepared.len(), 1);
    let not_a_source = error_code(&client, "SHOW CREATE SOURCE tick_count").await;
    assert!(not_a_source.starts_with("42809"), "{not_a_source}");
    let insert = error_code(&client, "INSERT INTO ticks VALUES (1)").await;
    assert!(insert.starts_with("42809"), "{insert}");
    let dependent = error_code(&client, "DROP SOURCE ticks").await;
    assert!(dependent.starts_with("2BP01"), "{dependent}");
    let wrong_kind = error_code(&client, "DROP TABLE ticks").await;
    assert!(wrong_kind.starts_with("42809"), "{wrong_kind}");
    client
        .batch_execute("DROP SOURCE ticks CASCADE")
        .await
        .expect("drop");
    assert!(client
        .simple_query("SELECT * FROM fluxion_catalog.source_stats")
        .await
        .expect("stats")
        .iter()
        .all(|m| !matches!(m, tokio_postgres::SimpleQueryMessage::Row(_))));
    client
        .batch_execute("DROP SOURCE IF EXISTS ticks")
        .await
        .expect("drop if exists");
}

/// An append-only source is a stream: its rows live in a stream log of their own, not in
/// memory or the WAL's checkpoints. A view made after the rows arrived, an index, a query of
/// the source itself and a restart all see exactly its rows; dropping it deletes its log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_only_source_is_a_stream_kept_in_its_own_log() {
    const ROWS: u64 = 20_000;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE seq (id BIGINT NOT NULL, v INT) WITH (connector = 'datagen', \
               datagen.rows.per.second = '0', fields.id.kind = 'sequence', \
               fields.id.start = '1', fields.id.end = '{ROWS}', fields.v.min = '0', \
               fields.v.max = '9', fields.v.seed = '7');"
        ))
        .await
        .expect("a datagen source");
    wait_for(
        &client,
        "SELECT status FROM fluxion_catalog.source_stats WHERE source_name = 'seq'",
        "ended",
        Duration::from_secs(60),
    )
    .await;
    let expected = vec![
        Some(ROWS.to_string()),
        Some((ROWS * (ROWS + 1) / 2).to_string()),
    ];
    let scanned = "SELECT count(*), sum(id) FROM seq";
    assert_eq!(
        row(&client, scanned).await,
        expected,
        "the source read from its log"
    );
    client
        .batch_execute(
            "CREATE MATERIALIZED VIEW late_totals AS SELECT count(*) AS n, sum(id) AS s FROM seq;
             CREATE INDEX seq_by_id ON seq (id);",
        )
        .await
        .expect("a view and an index over the finished stream");
    let view = "SELECT n, s FROM late_totals";
    assert_eq!(
        row(&client, view).await,
        expected,
        "the view got the history"
    );
    assert_eq!(
        row(
            &client,
            "SELECT id, v BETWEEN 0 AND 9 FROM seq WHERE id = 4321"
        )
        .await,
        vec![Some("4321".into()), Some("t".into())],
        "the index answers a key lookup"
    );
    let logs = |dir: &std::path::Path| -> Vec<u64> {
        std::fs::read_dir(dir.join("streams"))
            .map(|entries| {
                entries
                    .map(|e| e.expect("an entry").metadata().expect("metadata").len())
                    .collect()
            })
            .unwrap_or_default()
    };
    let sizes = logs(dir.path());
    assert_eq!(sizes.len(), 1, "one stream log");
    assert!(sizes[0] > ROWS * 8, "the rows are in it: {sizes:?}");

    server.kill();
    drop(client);
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    assert_eq!(
        row(&client, view).await,
        expected,
        "the view after a restart"
    );
    assert_eq!(
        row(&client, scanned).await,
        expected,
        "the source after a restart"
    );
    client
        .batch_execute("CREATE MATERIALIZED VIEW after_restart AS SELECT count(*) AS n FROM seq")
        .await
        .expect("a view after the restart");
    assert_eq!(
        row(&client, "SELECT n FROM after_restart").await,
        vec![Some(ROWS.to_string())]
    );
    client
        .batch_execute("DROP SOURCE seq CASCADE")
        .await
        .expect("drop the source");
    assert!(logs(dir.path()).is_empty(), "the stream log is deleted");
    server.kill();
}
