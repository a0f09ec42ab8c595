//! Memory budgets of materialized views: a view whose dataflow needs more memory than its
//! budget is stopped (visible in `fluxion_catalog.views`, 55000 when read), the server and
//! every other view go on, it can be dropped, and a restart does not build it again.

mod support;

use std::time::{Duration, Instant};

use support::query::{error_code, row, rows, wait_for};
use support::TestServer;

const STATUS: &str = "SELECT status FROM fluxion_catalog.views WHERE view_name = ";

/// Every materialized view as `name|status`, by name.
async fn statuses(client: &tokio_postgres::Client) -> Vec<String> {
    rows(
        client,
        "SELECT view_name, status FROM fluxion_catalog.views ORDER BY 1",
    )
    .await
}

/// Waits until view `name` is `stopped` (or fails after `timeout`).
async fn wait_stopped(client: &tokio_postgres::Client, name: &str, timeout: Duration) {
    wait_for(client, &format!("{STATUS}'{name}'"), "stopped", timeout).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_over_its_budget_is_stopped_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_with_args(dir.path(), &["--max-view-memory", "64"]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (a INT, b TEXT);
             INSERT INTO t SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g;
             CREATE TABLE other (a INT);
             CREATE MATERIALIZED VIEW counts WITH (memory_budget = '16MB') AS
                 SELECT a % 10 AS k, count(*) AS n FROM t GROUP BY 1;
             CREATE MATERIALIZED VIEW copied WITH (memory_budget = '1MB') AS SELECT a, b FROM t;
             CREATE VIEW over_copied AS SELECT count(*) FROM copied;",
        )
        .await
        .expect("setup");

    // 20,000 rows of over 100 bytes do not fit in 1 MB: the copy stops, the counts run.
    wait_stopped(&client, "copied", Duration::from_secs(30)).await;
    let shown = row(
        &client,
        "SELECT status, memory_bytes IS NULL, memory_budget IS NULL, stopped_reason \
         FROM fluxion_catalog.views WHERE view_name = 'copied'",
    )
    .await;
    assert_eq!(
        shown[..3],
        [Some("stopped".into()), Some("t".into()), Some("t".into())]
    );
    let reason = shown[3].clone().expect("a reason");
    assert!(
        reason.starts_with("materialized view \"copied\" is stopped: its dataflow held")
            && reason.ends_with("more than its memory budget of 1 MB"),
        "{reason}"
    );
    // Meters are read at most ten times a second: the last reading may predate the build.
    wait_for(
        &client,
        "SELECT memory_bytes > 0 FROM fluxion_catalog.views WHERE view_name = 'counts'",
        "t",
        Duration::from_secs(10),
    )
    .await;
    let running = row(
        &client,
        "SELECT status, memory_bytes > 0, memory_budget FROM fluxion_catalog.views \
         WHERE view_name = 'counts'",
    )
    .await;
    assert_eq!(
        running,
        [
            Some("running".into()),
            Some("t".into()),
            Some((16 << 20).to_string())
        ]
    );
    for read in ["SELECT * FROM copied", "SELECT * FROM over_copied"] {
        assert_eq!(error_code(&client, read).await, format!("55000 {reason}"));
    }
    // Nothing can be built on a stopped view: it would never move.
    for create in [
        "CREATE MATERIALIZED VIEW on_copied AS SELECT count(*) FROM copied",
        "CREATE INDEX copied_a ON copied (a)",
    ] {
        assert_eq!(error_code(&client, create).await, format!("55000 {reason}"));
    }
    assert_eq!(
        statuses(&client).await,
        ["copied|stopped", "counts|running"],
        "the refused views left nothing behind"
    );

    // A cross join whose output outgrows the default budget (3,000 × 3,000 pairs) is stopped
    // while it is built; writes and reads of everything else go on meanwhile.
    client
        .batch_execute(
            "CREATE TABLE big (a INT);
             INSERT INTO big SELECT g FROM generate_series(1, 3000) g;
             CREATE MATERIALIZED VIEW pairs AS SELECT x.a, y.a AS b FROM big x, big y;",
        )
        .await
        .expect("the cross join view");
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for i in 0..5 {
        let write = Instant::now();
        client
            .batch_execute(&format!("INSERT INTO other VALUES ({i})"))
            .await
            .expect("a write while the view is built");
        slowest = slowest.max(write.elapsed());
    }
    wait_stopped(&client, "pairs", Duration::from_secs(120)).await;
    assert!(
        slowest < Duration::from_secs(5),
        "a write took {slowest:?} while the cross join was built ({:?} in all)",
        started.elapsed()
    );
    let reason = row(
        &client,
        "SELECT stopped_reason FROM fluxion_catalog.views WHERE view_name = 'pairs'",
    )
    .await[0]
        .clone()
        .expect("a reason");
    assert!(
        reason.ends_with("more than its memory budget of 64 MB"),
        "{reason}"
    );
    client
        .batch_execute("INSERT INTO t VALUES (5, 'y')")
        .await
        .expect("a write after the stop");
    assert_eq!(
        rows(&client, "SELECT n FROM counts WHERE k = 5").await,
        ["2001"],
        "the other views are maintained"
    );
    assert_eq!(
        rows(&client, "SELECT count(*) FROM other").await,
        ["5"],
        "the writes made while the view was built"
    );

    // A restart keeps both stopped, builds the rest, and a stopped view can be dropped.
    server.kill();
    let mut server = TestServer::start_with_args(dir.path(), &["--max-view-memory", "64"]);
    let client = server.connect().await;
    assert_eq!(
        statuses(&client).await,
        ["copied|stopped", "counts|running", "pairs|stopped"]
    );
    assert!(error_code(&client, "SELECT * FROM pairs")
        .await
        .starts_with("55000 "));
    assert_eq!(
        rows(&client, "SELECT n FROM counts WHERE k = 5").await,
        ["2001"]
    );
    client
        .batch_execute("DROP VIEW over_copied; DROP MATERIALIZED VIEW copied, pairs")
        .await
        .expect("stopped views drop");
    assert_eq!(statuses(&client).await, ["counts|running"]);

    // A view that no longer fits after a restart with a smaller budget is stopped while the
    // server recovers; the server starts, and the view starts stopped the time after.
    client
        .batch_execute("CREATE MATERIALIZED VIEW copy_all AS SELECT a, b FROM t")
        .await
        .expect("a copy within the budget");
    assert_eq!(
        rows(&client, &format!("{STATUS}'copy_all'")).await,
        ["running"]
    );
    server.kill();
    let mut server = TestServer::start_with_args(dir.path(), &["--max-view-memory", "1"]);
    let client = server.connect().await;
    wait_stopped(&client, "copy_all", Duration::from_secs(30)).await;
    assert_eq!(
        rows(&client, "SELECT n FROM counts WHERE k = 5").await,
        ["2001"]
    );
    server.kill();
    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    assert_eq!(
        statuses(&client).await,
        ["copy_all|stopped", "counts|running"]
    );
}

/// What a top-k, session windows, window functions, DISTINCT aggregates and windows waiting
/// to close keep counts toward a view's memory: over the same 20,000 rows of over 100 bytes,
/// views whose operators keep every row (or value) show over a megabyte once they are built,
/// a count over the rows a kilobyte; with a budget of 1 MB each of them is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_stateful_operators_keep_is_counted() {
    let server = TestServer::start();
    let client = server.connect().await;
    let views = [
        ("smallest", "SELECT a, b FROM t ORDER BY a LIMIT 1"),
        (
            "first_ranked",
            "SELECT a, b FROM (SELECT a, b, rank() OVER (ORDER BY b, a) AS r FROM t) ranked \
             WHERE r = 1",
        ),
        (
            "one_session",
            "SELECT window_start, count(*) AS n FROM SESSION(t, at, INTERVAL '1' HOUR) \
             GROUP BY window_start",
        ),
        (
            "distinct_values",
            "SELECT count(DISTINCT b || a::text) AS n, count(DISTINCT a % 7) AS m FROM t",
        ),
        (
            "waiting_windows",
            "SELECT a, b, window_start FROM TUMBLE(w, at, INTERVAL '1' DAY) \
             EMIT ON WINDOW CLOSE",
        ),
    ];
    client
        .batch_execute(
            "CREATE TABLE t (a INT, b TEXT, at TIMESTAMP);
             INSERT INTO t SELECT g, repeat('x', 100), TIMESTAMP '2026-01-01' + (g || ' minutes')::INTERVAL
                 FROM generate_series(1, 20000) g;
             CREATE TABLE w (a INT, b TEXT, at TIMESTAMP,
                 WATERMARK FOR at AS at - INTERVAL '1000' DAY);
             INSERT INTO w SELECT * FROM t;
             CREATE MATERIALIZED VIEW counted AS SELECT count(*) AS n FROM t;",
        )
        .await
        .expect("setup");
    for (name, query) in views {
        client
            .batch_execute(&format!("CREATE MATERIALIZED VIEW {name} AS {query}"))
            .await
            .expect(name);
    }
    let held = |name: &str| {
        format!(
            "SELECT memory_bytes > 1000000 FROM fluxion_catalog.views WHERE view_name = '{name}'"
        )
    };
    for (name, _) in views {
        wait_for(&client, &held(name), "t", Duration::from_secs(30)).await;
    }
    wait_for(
        &client,
        "SELECT memory_bytes < 100000 FROM fluxion_catalog.views WHERE view_name = 'counted'",
        "t",
        Duration::from_secs(30),
    )
    .await;
    // What they hold is their state, not a passing peak of their build.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (name, _) in views {
        assert_eq!(rows(&client, &held(name)).await, ["t"], "{name}");
    }

    for (name, query) in views {
        client
            .batch_execute(&format!(
                "CREATE MATERIALIZED VIEW {name}_budgeted WITH (memory_budget = '1MB') AS {query}"
            ))
            .await
            .expect(name);
        wait_stopped(
            &client,
            &format!("{name}_budgeted"),
            Duration::from_secs(30),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_that_read_a_stopped_view_stop_with_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (a INT, b TEXT);
             CREATE MATERIALIZED VIEW copied WITH (memory_budget = '2MB') AS SELECT a, b FROM t;
             CREATE MATERIALIZED VIEW reader AS SELECT count(*) FROM copied;
             CREATE INDEX copied_a ON copied (a);",
        )
        .await
        .expect("setup");
    assert_eq!(rows(&client, "SELECT * FROM reader").await, ["0"]);
    let subscription = server.connect().await;
    subscription
        .batch_execute("BEGIN; DECLARE c CURSOR FOR SUBSCRIBE TO reader")
        .await
        .expect("a subscription to the reader");
    client
        .batch_execute("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g")
        .await
        .expect("the rows that do not fit");
    wait_stopped(&client, "copied", Duration::from_secs(30)).await;
    wait_stopped(&client, "reader", Duration::from_secs(5)).await;
    let reason = row(
        &client,
        "SELECT stopped_reason FROM fluxion_catalog.views WHERE view_name = 'reader'",
    )
    .await[0]
        .clone();
    assert_eq!(
        reason.as_deref(),
        Some(
            "materialized view \"reader\" is stopped: it reads materialized view \"copied\", \
             which is stopped"
        )
    );
    // The subscription ends with the reason: what it reads will not move again.
    // The first FETCH may still get the changes from before the stop.
    let fetch = "FETCH ALL c WITH (timeout = '10s')";
    let failed = match subscription.simple_query(fetch).await {
        Ok(_) => subscription.simple_query(fetch).await.err(),
        Err(e) => Some(e),
    };
    let failed = failed.expect("the subscription fails");
    let db = failed.as_db_error().expect("an error from the server");
    assert_eq!(db.code().code(), "55000", "{}", db.message());
    assert!(db.message().contains("is stopped"), "{}", db.message());
    // Dropping the view drops its readers with CASCADE, as any view.
    client
        .batch_execute("DROP MATERIALIZED VIEW copied CASCADE")
        .await
        .expect("drop");
    assert!(rows(&client, "SELECT * FROM fluxion_catalog.views")
        .await
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_budget_options_are_checked() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (a INT)")
        .await
        .expect("table");
    let cases = [
        (
            "CREATE MATERIALIZED VIEW v WITH (memory_budget = 100) AS SELECT * FROM t",
            "22023 invalid value for parameter \"memory_budget\": \"100\"",
        ),
        (
            "CREATE MATERIALIZED VIEW v WITH (memory_budget = '10kB') AS SELECT * FROM t",
            "22023 invalid value for parameter \"memory_budget\": \"10kB\"",
        ),
        (
            "CREATE MATERIALIZED VIEW v WITH (fill_factor = '10MB') AS SELECT * FROM t",
            "22023 unrecognized parameter \"fill_factor\"",
        ),
    ];
    for (sql, expected) in cases {
        let got = error_code(&client, sql).await;
        assert!(got.starts_with(expected), "{sql}: {got}");
    }
    client
        .batch_execute("CREATE MATERIALIZED VIEW v WITH (memory_budget = '1GB') AS SELECT * FROM t")
        .await
        .expect("a budget with a unit");
    assert_eq!(
        rows(&client, "SELECT memory_budget FROM fluxion_catalog.views").await,
        [(1u64 << 30).to_string()]
    );
    // The stored definition keeps the option: a restart gives the view the same budget.
    server.kill();
    let server = TestServer::start_in(dir.path());
    let client = server.connect().await;
    assert_eq!(
        rows(&client, "SELECT memory_budget FROM fluxion_catalog.views").await,
        [(1u64 << 30).to_string()]
    );
}
