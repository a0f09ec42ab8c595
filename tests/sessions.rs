//! Sessions as PostgreSQL manages them: `pg_stat_activity` lists every session with its
//! statement and state; `pg_cancel_backend` and `pg_terminate_backend` reach other sessions;
//! `max_connections` refuses the client past it (53300); idle sessions are ended by their
//! timeouts (25P03, 57P05); a client that connects while the server recovers is told so
//! (57P03); a CancelRequest with the wrong secret key cancels nothing; a statement that waits
//! for the sequencer past its `lock_timeout` is cancelled (55P03).

mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use support::TestServer;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// A query that computes for minutes unless it is cancelled.
const ENDLESS_JOIN: &str = "SELECT count(*) FROM n a, n b, n c WHERE a.v + b.v + c.v < 0";

/// A client and the task running its connection, whose result tells how the connection
/// ended (the error the server closed it with).
struct Connected {
    client: Client,
    ended: tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
}

async fn connect(server: &TestServer, options: &str) -> Result<Connected, tokio_postgres::Error> {
    let config = format!("{} {options}", server.connection_string());
    let (client, connection) = tokio_postgres::connect(&config, NoTls).await?;
    Ok(Connected {
        client,
        ended: tokio::spawn(connection),
    })
}

impl Connected {
    async fn pid(&self) -> i32 {
        self.client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .expect("pid")
            .get(0)
    }

    /// The SQLSTATE the server ended the connection with, waiting up to `wait` for it.
    async fn ending_code(self, wait: Duration) -> Option<SqlState> {
        let ended = tokio::time::timeout(wait, self.ended)
            .await
            .expect("the server ends the connection")
            .expect("join");
        ended.err().and_then(|e| e.code().cloned())
    }
}

/// The `pg_stat_activity` row of `pid`: state, query, application name, client port,
/// whether it has a transaction start, whether it started before now.
async fn activity_of(
    client: &Client,
    pid: i32,
) -> Option<(String, String, String, bool, bool, bool)> {
    client
        .query_opt(
            "SELECT state, query, application_name, client_port > 0, \
                    xact_start IS NOT NULL, backend_start <= now() \
             FROM pg_stat_activity WHERE pid = $1",
            &[&pid],
        )
        .await
        .expect("pg_stat_activity")
        .map(|row| {
            (
                row.get(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
                row.get(5),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sessions_are_listed_cancelled_and_terminated() {
    let server = TestServer::start();
    let watcher = connect(&server, "application_name=watcher")
        .await
        .expect("connect");
    watcher
        .client
        .batch_execute(
            "CREATE TABLE n (v BIGINT); \
             INSERT INTO n SELECT value FROM generate_series(1, 3000) AS s(value)",
        )
        .await
        .expect("setup");

    let in_block = connect(&server, "application_name=alpha")
        .await
        .expect("connect");
    let in_block_pid = in_block.pid().await;
    in_block.client.batch_execute("BEGIN").await.expect("begin");
    in_block
        .client
        .simple_query("SELECT 1")
        .await
        .expect("select");

    let busy = connect(&server, "application_name=beta")
        .await
        .expect("connect");
    let busy_pid = busy.pid().await;
    let busy_client = busy.client;
    let running = tokio::spawn(async move {
        let result = busy_client.simple_query(ENDLESS_JOIN).await;
        (busy_client, result)
    });

    let watcher_pid = watcher.pid().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let busy_row = loop {
        let row = activity_of(&watcher.client, busy_pid)
            .await
            .expect("listed");
        if row.0 == "active" || Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        busy_row,
        (
            "active".into(),
            ENDLESS_JOIN.into(),
            "beta".into(),
            true,
            true,
            true
        )
    );
    assert_eq!(
        activity_of(&watcher.client, in_block_pid).await,
        Some((
            "idle in transaction".into(),
            "SELECT 1".into(),
            "alpha".into(),
            true,
            true,
            true
        ))
    );
    let own = activity_of(&watcher.client, watcher_pid)
        .await
        .expect("listed");
    assert_eq!((own.0.as_str(), own.2.as_str()), ("active", "watcher"));
    assert!(own.1.contains("FROM pg_stat_activity"), "{own:?}");
    let addresses = watcher
        .client
        .simple_query("SELECT DISTINCT client_addr FROM pg_stat_activity")
        .await
        .expect("addresses");
    let addresses: Vec<Option<&str>> = addresses
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.get(0)),
            _ => None,
        })
        .collect();
    assert_eq!(addresses, [Some("127.0.0.1")]);

    // pg_cancel_backend stops the busy session's query, which goes on serving.
    let cancelled_at = Instant::now();
    let found: bool = watcher
        .client
        .query_one(&format!("SELECT pg_cancel_backend({busy_pid})"), &[])
        .await
        .expect("cancel")
        .get(0);
    assert!(found);
    let (busy_client, result) = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the query ends soon after the cancel")
        .expect("join");
    let error = result.expect_err("cancelled");
    assert_eq!(error.code(), Some(&SqlState::QUERY_CANCELED));
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(1),
        "{:?}",
        cancelled_at.elapsed()
    );
    let count: i64 = busy_client
        .query_one("SELECT count(*) FROM n", &[])
        .await
        .expect("still usable")
        .get(0);
    assert_eq!(count, 3000);
    let state = activity_of(&watcher.client, busy_pid)
        .await
        .expect("listed");
    assert_eq!((state.0.as_str(), state.4), ("idle", false));

    // pg_terminate_backend ends the session in its block: its client hears 57P01, and it
    // is gone from pg_stat_activity.
    let found: bool = watcher
        .client
        .query_one(&format!("SELECT pg_terminate_backend({in_block_pid})"), &[])
        .await
        .expect("terminate")
        .get(0);
    assert!(found);
    assert_eq!(
        in_block.ending_code(Duration::from_secs(5)).await,
        Some(SqlState::ADMIN_SHUTDOWN)
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while activity_of(&watcher.client, in_block_pid).await.is_some() {
        assert!(
            Instant::now() < deadline,
            "the terminated session is still listed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A pid no backend has: false, as in PostgreSQL.
    let row = watcher
        .client
        .query_one(
            "SELECT pg_cancel_backend(2147483647), pg_terminate_backend(2147483647, 1000)",
            &[],
        )
        .await
        .expect("no such backend");
    assert_eq!(
        (row.get::<_, bool>(0), row.get::<_, bool>(1)),
        (false, false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_past_max_connections_are_refused_with_53300() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = TestServer::start_with_args(temp.path(), &["--max-connections", "3"]);
    let mut connected = Vec::new();
    for _ in 0..3 {
        connected.push(connect(&server, "").await.expect("within the limit"));
    }
    let shown: String = connected[0]
        .client
        .query_one("SHOW max_connections", &[])
        .await
        .expect("show")
        .get(0);
    assert_eq!(shown, "3");
    let refused = connect(&server, "")
        .await
        .err()
        .expect("a fourth is refused");
    assert_eq!(
        refused.code(),
        Some(&SqlState::TOO_MANY_CONNECTIONS),
        "{refused}"
    );
    let message = refused.as_db_error().map(|e| e.message().to_string());
    assert_eq!(message.as_deref(), Some("sorry, too many clients already"));

    // A client that leaves gives its place back.
    drop(connected.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    let again = loop {
        match connect(&server, "").await {
            Ok(again) => break again,
            Err(e) if Instant::now() < deadline => {
                assert_eq!(e.code(), Some(&SqlState::TOO_MANY_CONNECTIONS), "{e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the place was not given back: {e}"),
        }
    };
    again.client.simple_query("SELECT 1").await.expect("serves");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_are_ended_by_their_timeouts() {
    let server = TestServer::start();

    let in_block = connect(&server, "").await.expect("connect");
    in_block
        .client
        .batch_execute("SET idle_in_transaction_session_timeout = '300ms'")
        .await
        .expect("set");
    let shown: String = in_block
        .client
        .query_one("SHOW idle_in_transaction_session_timeout", &[])
        .await
        .expect("show")
        .get(0);
    assert_eq!(shown, "300ms");
    // Outside a block the limit does not apply.
    tokio::time::sleep(Duration::from_millis(600)).await;
    in_block.client.batch_execute("BEGIN").await.expect("begin");
    // Statements in time keep the session.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        in_block
            .client
            .simple_query("SELECT 1")
            .await
            .expect("in time");
    }
    assert_eq!(
        in_block.ending_code(Duration::from_secs(5)).await,
        Some(SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT)
    );

    let idle = connect(&server, "").await.expect("connect");
    idle.client
        .batch_execute("SET idle_session_timeout = 300")
        .await
        .expect("set");
    assert_eq!(
        idle.ending_code(Duration::from_secs(5))
            .await
            .map(|c| c.code().to_string()),
        Some("57P05".to_string())
    );

    let refused = connect(&server, "").await.expect("connect");
    let error = refused
        .client
        .batch_execute("SET idle_session_timeout = 'soon'")
        .await
        .expect_err("not a duration");
    assert_eq!(error.code(), Some(&SqlState::INVALID_PARAMETER_VALUE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_with_the_wrong_key_cancels_nothing() {
    let server = TestServer::start();
    let session = connect(&server, "").await.expect("connect");
    session
        .client
        .batch_execute(
            "CREATE TABLE n (v BIGINT); \
             INSERT INTO n SELECT value FROM generate_series(1, 3000) AS s(value); \
             SET statement_timeout = '3s'",
        )
        .await
        .expect("setup");
    let pid = session.pid().await;
    let port = server.port();
    let started = Instant::now();
    let forger = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let mut request = Vec::new();
        request.extend_from_slice(&16i32.to_be_bytes());
        request.extend_from_slice(&80877102i32.to_be_bytes());
        request.extend_from_slice(&pid.to_be_bytes());
        request.extend_from_slice(&0x5eed_i32.to_be_bytes());
        let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        socket.write_all(&request).expect("send");
    });
    let error = session
        .client
        .simple_query(ENDLESS_JOIN)
        .await
        .expect_err("ended by statement_timeout, not by the forged cancel");
    forger.join().expect("forger");
    let message = error.as_db_error().map(|e| e.message().to_string());
    assert_eq!(
        message.as_deref(),
        Some("canceling statement due to statement timeout"),
        "after {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_connect_while_the_server_recovers_are_told_57p03() {
    let temp = tempfile::tempdir().expect("temp dir");
    let data_dir = temp.path().join("data");
    let args = ["--checkpoint-after-rows", "100000000"];
    {
        let mut server = TestServer::start_with_args(&data_dir, &args);
        let client = server.connect().await;
        client
            .batch_execute(
                "CREATE TABLE big (k BIGINT PRIMARY KEY, v BIGINT); \
                 INSERT INTO big SELECT value, value % 97 FROM generate_series(1, 300000) AS s(value); \
                 CREATE MATERIALIZED VIEW sums AS SELECT v, sum(k) AS total FROM big GROUP BY v",
            )
            .await
            .expect("setup");
        server.kill();
    }
    let server = TestServer::start_listening(&data_dir, &args);
    let mut refusals = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    let client = loop {
        match connect(&server, "").await {
            Ok(connected) => break connected.client,
            Err(e) => {
                assert_eq!(e.code(), Some(&SqlState::CANNOT_CONNECT_NOW), "{e}");
                let message = e.as_db_error().map(|e| e.message().to_string());
                assert_eq!(
                    message.as_deref(),
                    Some("the database system is starting up")
                );
                refusals += 1;
                assert!(Instant::now() < deadline, "still starting after 120 s");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    eprintln!("refused {refusals} times while recovering");
    assert!(refusals > 0, "recovery ended before a client could connect");
    let count: i64 = client
        .query_one("SELECT count(*) FROM big", &[])
        .await
        .expect("recovered")
        .get(0);
    assert_eq!(count, 300_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waiting_past_its_lock_timeout_for_a_definition_is_55p03() {
    let server = TestServer::start();
    let definer = connect(&server, "").await.expect("connect");
    definer
        .client
        .batch_execute(
            "CREATE TABLE n (v BIGINT); \
             INSERT INTO n SELECT value FROM generate_series(1, 2000) AS s(value); \
             CREATE TABLE other (v INT)",
        )
        .await
        .expect("setup");
    // The new table's 2 million rows are written under the sequencer every write also needs.
    let defining = tokio::spawn(async move {
        definer
            .client
            .batch_execute(
                "CREATE TABLE pairs AS SELECT a.v AS x, b.v AS y FROM n a, n b WHERE b.v <= 1000",
            )
            .await
    });
    let writer = connect(&server, "options='-c lock_timeout=200ms'")
        .await
        .expect("connect");
    // Until the definition holds the sequencer (it plans first), writes go through.
    let mut written_before = 0;
    let (error, started) = loop {
        assert!(
            !defining.is_finished(),
            "the table was made before a write waited for it: the test proves nothing"
        );
        let started = Instant::now();
        match writer
            .client
            .batch_execute("INSERT INTO other VALUES (1)")
            .await
        {
            Ok(()) => written_before += 1,
            Err(error) => break (error, started),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let waited = started.elapsed();
    assert!(
        !defining.is_finished(),
        "the table was made before the write gave up: the test proves nothing"
    );
    let error = error.as_db_error().expect("a server error");
    assert_eq!(error.code(), &SqlState::LOCK_NOT_AVAILABLE);
    assert_eq!(error.message(), "canceling statement due to lock timeout");
    assert!(waited < Duration::from_secs(2), "gave up after {waited:?}");
    writer
        .client
        .batch_execute("SET lock_timeout = 0; INSERT INTO other VALUES (2)")
        .await
        .expect("without a lock_timeout the write waits for the definition");
    defining.await.expect("join").expect("the table is made");
    let rows = writer
        .client
        .query_one("SELECT count(*) FROM other", &[])
        .await
        .expect("count");
    assert_eq!(rows.get::<_, i64>(0), written_before + 1);
}
