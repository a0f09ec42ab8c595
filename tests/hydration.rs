//! Progress of a dataflow being built: while a materialized view over a large source is fed
//! the source's history, `fluxion_catalog.hydration` shows how far it has got, the client
//! that created it hears of it in NOTICEs before its CREATE ends, and writes to other tables
//! go on; once it is built, it is no longer listed. A CREATE cancelled while it is fed
//! leaves nothing behind.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::query::wait_for;
use support::TestServer;
use tokio_postgres::error::SqlState;

const ROWS: i64 = 5_000_000;

/// One sample of the view's row in `hydration`.
#[derive(Debug)]
struct Sample {
    phase: String,
    rows_done: i64,
    rows_total: Option<i64>,
    progress: Option<f64>,
    remaining_ms: Option<i64>,
}

/// The row of view `name` in `hydration`, if it has one.
async fn sample(client: &tokio_postgres::Client, name: &str) -> Option<Sample> {
    let rows = client
        .query(
            "SELECT phase, rows_done, rows_total, progress, remaining_ms \
             FROM fluxion_catalog.hydration WHERE object_name = $1",
            &[&name],
        )
        .await
        .expect("read hydration");
    rows.first().map(|row| Sample {
        phase: row.get(0),
        rows_done: row.get(1),
        rows_total: row.get(2),
        progress: row.get(3),
        remaining_ms: row.get(4),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn building_a_view_shows_how_far_it_has_got() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE big (id BIGINT NOT NULL, k BIGINT NOT NULL) \
             WITH (connector = 'datagen', datagen.rows.per.second = '0', \
               fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '{ROWS}', \
               fields.k.min = '1', fields.k.max = '1000')"
        ))
        .await
        .expect("create the source");
    wait_for(
        &client,
        "SELECT rows FROM fluxion_catalog.source_stats WHERE source_name = 'big'",
        &ROWS.to_string(),
        Duration::from_secs(180),
    )
    .await;

    client
        .batch_execute("CREATE TABLE other (n INT)")
        .await
        .expect("create another table");
    let watcher = server.connect().await;
    let watching = Arc::new(AtomicBool::new(true));
    // Samples the view's progress, and writes to the other table between two samples.
    let sampler = tokio::spawn({
        let watching = watching.clone();
        async move {
            let mut samples = Vec::new();
            let mut writes_while_fed = 0;
            for n in 0.. {
                if !watching.load(Ordering::Relaxed) {
                    break;
                }
                let before = sample(&watcher, "per_k").await;
                watcher
                    .execute("INSERT INTO other VALUES ($1)", &[&n])
                    .await
                    .expect("write to another table");
                let after = sample(&watcher, "per_k").await;
                let feeding = |s: &Option<Sample>| s.as_ref().is_some_and(|s| s.phase == "feeding");
                if feeding(&before) && feeding(&after) {
                    writes_while_fed += 1;
                }
                samples.extend(before.into_iter().chain(after));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (samples, writes_while_fed)
        }
    });

    let (creator, mut notices) = server.connect_with_notices().await;
    creator
        .batch_execute(
            "CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n FROM big GROUP BY k",
        )
        .await
        .expect("create the view");
    let created = Instant::now();
    let (code, message, arrived) = notices.try_recv().expect("a progress notice");
    assert_eq!(code, SqlState::SUCCESSFUL_COMPLETION, "{message}");
    assert!(
        message.starts_with("materialized view \"per_k\" is being built: ")
            && message.contains(" rows fed"),
        "{message}"
    );
    assert!(arrived < created, "the notice came while CREATE ran");

    let total: i64 = creator
        .query_one("SELECT sum(n)::bigint FROM per_k", &[])
        .await
        .expect("read the view")
        .get(0);
    assert_eq!(total, ROWS);
    wait_for(
        &client,
        "SELECT count(*) FROM fluxion_catalog.hydration",
        "0",
        Duration::from_secs(10),
    )
    .await;
    watching.store(false, Ordering::Relaxed);
    let (samples, writes_while_fed) = sampler.await.expect("sampler");
    assert!(
        writes_while_fed > 0,
        "a write to another table committed while the view was fed: {samples:?}"
    );

    let feeding: Vec<&Sample> = samples.iter().filter(|s| s.phase == "feeding").collect();
    assert!(
        feeding
            .iter()
            .any(|s| s.rows_done > 0 && s.rows_done < ROWS && s.remaining_ms.is_some()),
        "the view was seen part fed: {samples:?}"
    );
    assert!(
        feeding
            .iter()
            .all(|s| s.progress.is_some_and(|p| (0.0..=1.0).contains(&p)) && s.rows_total.is_none()),
        "{samples:?}"
    );
    assert!(
        samples.windows(2).all(|w| w[0].rows_done <= w[1].rows_done),
        "rows fed only grow: {samples:?}"
    );
    assert!(
        samples
            .iter()
            .filter(|s| s.phase == "computing")
            .all(|s| s.rows_done == ROWS && s.rows_total == Some(ROWS)),
        "{samples:?}"
    );

    a_cancelled_create_leaves_nothing_behind(&client, creator).await;
}

/// Cancels a CREATE MATERIALIZED VIEW over `big` while it is fed, then checks that the view
/// is gone and that its name can be used again for a view that is whole.
async fn a_cancelled_create_leaves_nothing_behind(
    client: &tokio_postgres::Client,
    creator: tokio_postgres::Client,
) {
    let cancel = creator.cancel_token();
    let creating = tokio::spawn(async move {
        creator
            .batch_execute(
                "CREATE MATERIALIZED VIEW halfway AS SELECT k, count(*) AS n FROM big GROUP BY k",
            )
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sample(client, "halfway")
        .await
        .is_some_and(|s| s.phase == "feeding" && s.rows_done > 0)
    {
        assert!(
            Instant::now() < deadline,
            "the view was never seen being fed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel
        .cancel_query(tokio_postgres::NoTls)
        .await
        .expect("send the cancel request");
    let error = creating
        .await
        .expect("creator")
        .expect_err("the CREATE was cancelled");
    assert_eq!(error.code(), Some(&SqlState::QUERY_CANCELED), "{error}");

    wait_for(
        client,
        "SELECT count(*) FROM pg_matviews WHERE matviewname = 'halfway'",
        "0",
        Duration::from_secs(10),
    )
    .await;
    wait_for(
        client,
        "SELECT count(*) FROM fluxion_catalog.hydration",
        "0",
        Duration::from_secs(10),
    )
    .await;
    client
        .batch_execute("CREATE MATERIALIZED VIEW halfway AS SELECT count(*) AS n FROM big")
        .await
        .expect("the name is free again");
    let total: i64 = client
        .query_one("SELECT n FROM halfway", &[])
        .await
        .expect("read the view built again")
        .get(0);
    assert_eq!(total, ROWS);
}
