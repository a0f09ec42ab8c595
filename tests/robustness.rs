//! Bad input of any kind gets an error (with its SQLSTATE) or is handled; the server never
//! panics or hangs, and one client's trouble does not affect another.

mod support;

use std::time::Duration;

use support::TestServer;
use tokio_postgres::error::SqlState;

async fn code_of(client: &tokio_postgres::Client, sql: &str) -> SqlState {
    let error = client.batch_execute(sql).await.expect_err(sql);
    error
        .code()
        .cloned()
        .unwrap_or_else(|| panic!("{sql}: error without SQLSTATE: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_wrong_statements_get_their_sqlstate() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id INT PRIMARY KEY, name TEXT NOT NULL)")
        .await
        .expect("create");
    let cases = [
        ("SELEC 1", SqlState::SYNTAX_ERROR),
        ("SELECT * FROM", SqlState::SYNTAX_ERROR),
        ("SELECT (((", SqlState::SYNTAX_ERROR),
        ("SELECT * FROM missing", SqlState::UNDEFINED_TABLE),
        ("SELECT nope FROM t", SqlState::UNDEFINED_COLUMN),
        ("SELECT 1/0", SqlState::DIVISION_BY_ZERO),
        (
            "INSERT INTO t VALUES ('abc', 'x')",
            SqlState::INVALID_TEXT_REPRESENTATION,
        ),
        (
            "INSERT INTO t VALUES (1, NULL)",
            SqlState::NOT_NULL_VIOLATION,
        ),
        ("CREATE TABLE t (a INT)", SqlState::DUPLICATE_TABLE),
        ("SELECT no_such_function(1)", SqlState::UNDEFINED_FUNCTION),
        (
            "CREATE TABLE u (a no_such_type)",
            SqlState::UNDEFINED_OBJECT,
        ),
        ("DROP VIEW t", SqlState::WRONG_OBJECT_TYPE),
    ];
    for (sql, expected) in cases {
        assert_eq!(code_of(&client, sql).await, expected, "{sql}");
    }
    client
        .batch_execute("INSERT INTO t VALUES (1, 'a')")
        .await
        .expect("insert");
    assert_eq!(
        code_of(&client, "INSERT INTO t VALUES (1, 'b')").await,
        SqlState::UNIQUE_VIOLATION
    );
    // The session is still healthy.
    let row = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect("count");
    assert_eq!(row.get::<_, i64>(0), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_string_round_trips() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE blobs (id INT PRIMARY KEY, body TEXT)")
        .await
        .expect("create");
    let body = "x".repeat(10 * 1024 * 1024);
    client
        .execute("INSERT INTO blobs VALUES (1, $1)", &[&body])
        .await
        .expect("insert a 10 MB string");
    let row = client
        .query_one("SELECT length(body) FROM blobs WHERE id = 1", &[])
        .await
        .expect("length");
    assert_eq!(row.get::<_, i32>(0) as usize, body.len());
    // And as a literal in a simple query.
    let literal = format!("SELECT length('{}')", "y".repeat(10 * 1024 * 1024));
    let rows = client
        .simple_query(&literal)
        .await
        .expect("a 10 MB literal");
    assert!(rows
        .iter()
        .any(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_query_does_not_disturb_others() {
    let server = TestServer::start();
    let setup = server.connect().await;
    setup
        .batch_execute("CREATE TABLE n (v BIGINT); INSERT INTO n SELECT value FROM generate_series(1, 2000) AS s(value)")
        .await
        .expect("setup");
    for _ in 0..5 {
        let client = server.connect().await;
        let query = tokio::spawn(async move {
            // A large cross join, abandoned long before it completes.
            let _ = client
                .simple_query("SELECT count(*) FROM n a, n b, n c WHERE a.v + b.v + c.v < 0")
                .await;
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        query.abort();
    }
    let other = server.connect().await;
    let row = tokio::time::timeout(
        Duration::from_secs(60),
        other.query_one("SELECT count(*) FROM n", &[]),
    )
    .await
    .expect("the server still answers")
    .expect("count");
    assert_eq!(row.get::<_, i64>(0), 2000);
}

/// A three-way join over 3,000 numbers that finds no match: it would compute for minutes.
const ENDLESS_JOIN: &str = "SELECT count(*) FROM n a, n b, n c WHERE a.v + b.v + c.v < 0";

/// A session on `server` with the table `n` that [`ENDLESS_JOIN`] reads.
async fn session_with_numbers(server: &TestServer) -> tokio_postgres::Client {
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE n (v BIGINT); INSERT INTO n SELECT value FROM generate_series(1, 3000) AS s(value)")
        .await
        .expect("setup");
    client
}

/// Sends a CancelRequest for whatever `client` runs 300 ms from now.
fn cancel_soon(
    client: &tokio_postgres::Client,
) -> tokio::task::JoinHandle<Result<(), tokio_postgres::Error>> {
    let token = client.cancel_token();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(tokio_postgres::NoTls).await
    })
}

/// CancelRequest stops a running query over either protocol, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_query_and_keeps_the_connection() {
    let server = TestServer::start();
    let client = session_with_numbers(&server).await;
    let canceller = cancel_soon(&client);
    let simple = client
        .simple_query(ENDLESS_JOIN)
        .await
        .expect_err("the query is cancelled");
    assert_eq!(simple.code(), Some(&SqlState::QUERY_CANCELED));
    canceller.await.expect("join").expect("cancel request sent");
    let canceller = cancel_soon(&client);
    let extended = client
        .query(ENDLESS_JOIN, &[])
        .await
        .expect_err("the prepared query is cancelled");
    assert_eq!(extended.code(), Some(&SqlState::QUERY_CANCELED));
    canceller.await.expect("join").expect("cancel request sent");
    let row = client
        .query_one("SELECT count(*) FROM n", &[])
        .await
        .expect("still usable");
    assert_eq!(row.get::<_, i64>(0), 3000);
}

/// `statement_timeout` cancels a query that runs longer (57014), over both protocols, shows
/// as PostgreSQL shows it, and refuses a value that is not a duration (22023); the server
/// goes on serving while the cancelled joins compute to their next yield.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_cancels_a_long_query() {
    let server = TestServer::start();
    let client = session_with_numbers(&server).await;
    client
        .batch_execute("SET statement_timeout = 300")
        .await
        .expect("set");
    let shown = client
        .query_one("SHOW statement_timeout", &[])
        .await
        .expect("show");
    assert_eq!(shown.get::<_, String>(0), "300ms");
    let started = std::time::Instant::now();
    let simple = client
        .simple_query(ENDLESS_JOIN)
        .await
        .expect_err("timed out");
    assert_eq!(simple.code(), Some(&SqlState::QUERY_CANCELED));
    let message = simple.as_db_error().map(|e| e.message().to_string());
    assert_eq!(
        message.as_deref(),
        Some("canceling statement due to statement timeout")
    );
    let again = client
        .simple_query(ENDLESS_JOIN)
        .await
        .expect_err("timed out");
    assert_eq!(again.code(), Some(&SqlState::QUERY_CANCELED));
    let extended = client
        .query(ENDLESS_JOIN, &[])
        .await
        .expect_err("timed out");
    assert_eq!(extended.code(), Some(&SqlState::QUERY_CANCELED));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "each stopped at the limit, not at the end of the query ({:?})",
        started.elapsed()
    );
    // The timed-out joins compute on until DataFusion's next yield, each on a thread of its
    // own; the session and the server answer meanwhile.
    let other = server.connect().await;
    other
        .batch_execute(
            "CREATE TABLE k (id BIGINT PRIMARY KEY, v TEXT); INSERT INTO k VALUES (1, 'a')",
        )
        .await
        .expect("another session writes");
    let point = other
        .query_one("SELECT v FROM k WHERE id = 1", &[])
        .await
        .expect("a point read");
    assert_eq!(point.get::<_, String>(0), "a");
    let refused = client
        .batch_execute("SET statement_timeout = 'soon'")
        .await
        .expect_err("not a duration");
    assert_eq!(refused.code(), Some(&SqlState::INVALID_PARAMETER_VALUE));
    client
        .batch_execute("SET statement_timeout = 0")
        .await
        .expect("off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_down_cleanly() {
    let mut server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (a INT)")
        .await
        .expect("create");
    assert!(
        server.terminate(),
        "the server exits with status 0 on SIGTERM"
    );
}

/// Identifiers longer than 63 bytes are cut, as PostgreSQL cuts them, with a NOTICE (42622):
/// a table created with a 70-character name is found by its first 63 characters and by the
/// whole name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_identifiers_are_truncated_with_a_notice() {
    let server = TestServer::start();
    let (client, mut notices) = server.connect_with_notices().await;
    let long = "t".repeat(70);
    let cut = "t".repeat(63);
    client
        .batch_execute(&format!("CREATE TABLE {long} (id INT)"))
        .await
        .expect("create a table with a long name");
    let (code, message, _) = notices.recv().await.expect("a notice");
    assert_eq!(code, SqlState::NAME_TOO_LONG);
    assert_eq!(
        message,
        format!("identifier \"{long}\" will be truncated to \"{cut}\"")
    );
    client
        .batch_execute(&format!("INSERT INTO {cut} VALUES (1)"))
        .await
        .expect("the table is found by its cut name");
    let rows = client
        .query(&format!("SELECT id FROM \"{long}\""), &[])
        .await
        .expect("and by its whole name, quoted, over the extended protocol");
    assert_eq!(rows.len(), 1);
    let names = client
        .query(
            "SELECT relname FROM pg_class WHERE relname LIKE 'ttt%'",
            &[],
        )
        .await
        .expect("pg_class");
    let names: Vec<String> = names.iter().map(|r| r.get(0)).collect();
    assert_eq!(names, [cut]);
}

/// A Bind that supplies fewer or more values than the statement has parameters is a protocol
/// violation (08P01), as in PostgreSQL, not a NULL filled in; the connection stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bind_with_the_wrong_number_of_values_is_08p01() {
    use support::wire::{bind_body, execute_body, parse_body, RawConnection};
    let server = TestServer::start();
    let mut connection = RawConnection::connect(server.port());
    for values in [&["1"][..], &["1", "2", "3"][..]] {
        connection.send(b'P', &parse_body("SELECT $1::int + $2::int"));
        connection.send(b'B', &bind_body(values));
        connection.send(b'E', &execute_body());
        connection.send(b'S', &[]);
        let messages = connection.read_until_ready();
        let codes: Vec<String> = messages.iter().filter_map(|m| m.error_code()).collect();
        assert_eq!(codes, ["08P01"], "{} values", values.len());
    }
    connection.send(b'P', &parse_body("SELECT $1::int + $2::int"));
    connection.send(b'B', &bind_body(&["1", "2"]));
    connection.send(b'E', &execute_body());
    connection.send(b'S', &[]);
    let messages = connection.read_until_ready();
    let row = messages
        .iter()
        .find(|m| m.kind == b'D')
        .expect("a data row");
    assert_eq!(&row.body[row.body.len() - 1..], b"3");
}

/// Replies to Parse, Bind, Describe and Execute wait for Sync or Flush, as in PostgreSQL: a
/// pipelining client gets them in one write, not one write per message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_query_replies_wait_for_sync_or_flush() {
    use support::wire::{bind_body, execute_body, parse_body, RawConnection};
    let server = TestServer::start();
    let mut connection = RawConnection::connect(server.port());
    connection.send(b'P', &parse_body("SELECT $1::int + 1"));
    connection.send(b'D', b"S\0");
    connection.send(b'B', &bind_body(&["41"]));
    connection.send(b'E', &execute_body());
    assert!(
        !connection.receives_within(Duration::from_millis(300)),
        "a reply came before Sync or Flush"
    );
    connection.send(b'H', &[]);
    let kinds: Vec<u8> = (0..6).map(|_| connection.read_message().kind).collect();
    assert_eq!(kinds, b"1tT2DC");
    assert!(!connection.receives_within(Duration::from_millis(100)));
    connection.send(b'S', &[]);
    let messages = connection.read_until_ready();
    assert_eq!(messages.len(), 1, "only ReadyForQuery follows Sync");
}

/// Statements that nest deeper than the server walks are refused with 54001, as PostgreSQL
/// refuses them, however deep they go; those within the bounds run, in reads and in views.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_statements_are_54001_and_the_server_stays_up() {
    let server = TestServer::start();
    let client = server.connect().await;
    let chain = |term: &str, operator: &str, terms: usize| vec![term; terms].join(operator);
    for sql in [
        format!("SELECT {}", chain("1", "+", 1001)),
        format!("SELECT {}", chain("1", "+", 200_000)),
        format!("SELECT 1 WHERE {}", chain("1 = 1", " OR ", 5000)),
        format!("SELECT {}", chain("'a'", " || ", 5000)),
        chain("SELECT 1", " UNION ALL ", 1002),
        format!("SELECT {}1{}", "(".repeat(200), ")".repeat(200)),
        // sqlparser's time doubles with each call nested in another's arguments: 40 deep
        // would parse for weeks.
        format!("SELECT {}1{}", "abs(".repeat(40), ")".repeat(40)),
        format!(
            "CREATE MATERIALIZED VIEW too_deep AS SELECT {}",
            chain("1", "+", 5000)
        ),
        format!("SUBSCRIBE TO (SELECT {})", chain("1", "+", 5000)),
    ] {
        assert_eq!(
            code_of(&client, &sql).await,
            SqlState::STATEMENT_TOO_COMPLEX,
            "{}",
            &sql[..60]
        );
    }
    let sum: i32 = client
        .query_one(&format!("SELECT {}", chain("1", "+", 999)), &[])
        .await
        .expect("a 999-term sum")
        .get(0);
    assert_eq!(sum, 999);
    let nested: i32 = client
        .query_one(
            &format!("SELECT {}-1{}", "abs(".repeat(12), ")".repeat(12)),
            &[],
        )
        .await
        .expect("12 nested calls")
        .get(0);
    assert_eq!(nested, 1);
    let unions = client
        .query(&chain("SELECT 1", " UNION ALL ", 1001), &[])
        .await
        .expect("a union of 1001 selects");
    assert_eq!(unions.len(), 1001);
    client
        .batch_execute(&format!(
            "CREATE TABLE terms (a int); INSERT INTO terms VALUES (1);
             CREATE MATERIALIZED VIEW deep AS SELECT {} AS s FROM terms;
             INSERT INTO terms VALUES (2)",
            chain("a", " + ", 900)
        ))
        .await
        .expect("a view of a 900-term sum");
    let sums: Vec<i32> = client
        .query("SELECT s FROM deep ORDER BY s", &[])
        .await
        .expect("the view")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(sums, [900, 1800]);
}

/// A select list is bounded as in PostgreSQL (1,664 entries, 54011), so a Parse of
/// `SELECT $1, …, $70000` is refused at once instead of planning for minutes while it holds
/// up other sessions; the widest allowed list runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wide_select_lists_are_54011_at_once() {
    let server = TestServer::start();
    let client = server.connect().await;
    let parameters: Vec<String> = (1..=70_000).map(|n| format!("${n}")).collect();
    let started = std::time::Instant::now();
    let error = client
        .prepare(&format!("SELECT {}", parameters.join(", ")))
        .await
        .expect_err("too wide");
    assert_eq!(error.code(), Some(&SqlState::TOO_MANY_COLUMNS), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused after {:?}",
        started.elapsed()
    );
    let ones = vec!["1"; 1665].join(", ");
    assert_eq!(
        code_of(&client, &format!("SELECT {ones}")).await,
        SqlState::TOO_MANY_COLUMNS
    );
    let widest = client
        .simple_query(&format!("SELECT {}", vec!["1"; 1664].join(", ")))
        .await
        .expect("1,664 columns");
    let columns = widest.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.len()),
        _ => None,
    });
    assert_eq!(columns, Some(1664));
}

/// A query's rows stream to the client as they are computed, instead of being built whole:
/// a 9-million-row cross join, far more than a query may hold (`--max-query-memory 32`),
/// sends its first rows at once over both protocols, and a portal read a part at a time goes
/// on where it stopped; a client that goes away stops its query. A cancel or the statement's
/// timeout ends the rows (or a `COPY`'s data) with 57014 (a cancel fails the block they are
/// in). What a query must hold past the limit (an aggregate's state, the rows a cursor
/// keeps) is still 53200, and the server and another session go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_stream_and_what_a_query_holds_is_bounded() {
    use futures::{pin_mut, StreamExt};
    use tokio_postgres::SimpleQueryMessage;

    const CROSS_JOIN: &str = "SELECT x.k, y.k, x.s FROM a AS x, a AS y";
    let temp = tempfile::tempdir().expect("temp dir");
    let server = TestServer::start_with_args(temp.path(), &["--max-query-memory", "32"]);
    let mut client = server.connect().await;
    let other = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE a (k BIGINT, s TEXT); \
             INSERT INTO a SELECT value, repeat('x', 40) FROM generate_series(1, 3000) AS g(value)",
        )
        .await
        .expect("setup");

    // The extended protocol: a portal read 20,000 rows at a time.
    let block = client.transaction().await.expect("begin");
    let portal = block.bind(CROSS_JOIN, &[]).await.expect("bind");
    let mut pairs = std::collections::HashSet::new();
    for _ in 0..3 {
        let rows = block.query_portal(&portal, 20_000).await.expect("rows");
        assert_eq!(rows.len(), 20_000);
        pairs.extend(
            rows.iter()
                .map(|row| (row.get::<_, i64>(0), row.get::<_, i64>(1))),
        );
    }
    assert_eq!(
        pairs.len(),
        60_000,
        "each part goes on where the last stopped"
    );
    block.commit().await.expect("commit");

    // The simple protocol, by a client that leaves after its first rows.
    let mut leaving = support::wire::RawConnection::connect(server.port());
    leaving.send(b'Q', format!("{CROSS_JOIN}\0").as_bytes());
    let mut rows = 0;
    while rows < 1000 {
        let message = leaving.read_message();
        assert_ne!(message.kind, b'E', "{:?}", message.error_code());
        rows += usize::from(message.kind == b'D');
    }
    drop(leaving);
    let active = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'";
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let running: i64 = other.query_one(active, &[]).await.expect("activity").get(0);
        if running == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{running} queries still run"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A cancel in a transaction block, after the first rows.
    client.batch_execute("BEGIN").await.expect("begin");
    let rows = client
        .query_raw(CROSS_JOIN, std::iter::empty::<i64>())
        .await
        .expect("query");
    pin_mut!(rows);
    for _ in 0..1000 {
        rows.next().await.expect("a row").expect("no error");
    }
    client
        .cancel_token()
        .cancel_query(tokio_postgres::NoTls)
        .await
        .expect("cancel");
    let error = loop {
        match rows.next().await.expect("the rows end with an error") {
            Ok(_) => continue,
            Err(error) => break error,
        }
    };
    assert_eq!(error.code(), Some(&SqlState::QUERY_CANCELED), "{error}");
    assert_eq!(
        code_of(&client, "SELECT 1").await,
        SqlState::IN_FAILED_SQL_TRANSACTION
    );
    client.batch_execute("ROLLBACK").await.expect("rollback");

    // The statement's timeout, after the first rows.
    client
        .batch_execute("SET statement_timeout = '1s'")
        .await
        .expect("set");
    let messages = client.simple_query_raw(CROSS_JOIN).await.expect("query");
    pin_mut!(messages);
    let mut rows = 0;
    let error = loop {
        match messages.next().await.expect("the rows end with an error") {
            Ok(SimpleQueryMessage::Row(_)) => rows += 1,
            Ok(_) => continue,
            Err(error) => break error,
        }
    };
    assert_eq!(error.code(), Some(&SqlState::QUERY_CANCELED), "{error}");
    assert!(rows > 0, "no rows came before the timeout");
    // COPY data streams too, and an error after some of it is one the client reads.
    let data = client
        .copy_out(&format!("COPY ({CROSS_JOIN}) TO STDOUT"))
        .await
        .expect("copy");
    pin_mut!(data);
    let mut chunks = 0;
    let error = loop {
        match data.next().await.expect("the data ends with an error") {
            Ok(_) => chunks += 1,
            Err(error) => break error,
        }
    };
    assert_eq!(error.code(), Some(&SqlState::QUERY_CANCELED), "{error}");
    assert!(chunks > 0, "no data came before the timeout");
    client
        .batch_execute("SET statement_timeout = 0")
        .await
        .expect("set");

    for sql in [
        "SELECT length(string_agg(repeat('x', 1000), ',')) FROM generate_series(1, 100000)",
        "BEGIN; DECLARE c CURSOR FOR SELECT * FROM a AS x, a AS y",
    ] {
        let error = client.batch_execute(sql).await.expect_err(sql);
        assert_eq!(
            error.code(),
            Some(&SqlState::OUT_OF_MEMORY),
            "{sql}: {error}"
        );
        let message = error.as_db_error().map(|e| e.message().to_string());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.starts_with("out of memory")),
            "{message:?}"
        );
        client.batch_execute("ROLLBACK").await.expect("rollback");
    }
    let pairs: i64 = client
        .query_one("SELECT count(*) FROM a AS x, a AS y", &[])
        .await
        .expect("a count streams through the same rows")
        .get(0);
    assert_eq!(pairs, 9_000_000);
    let rows: i64 = other
        .query_one("SELECT count(*) FROM a", &[])
        .await
        .expect("another session goes on")
        .get(0);
    assert_eq!(rows, 3000);
}

/// Invalid UTF-8 in a query is refused with 22021 as PostgreSQL refuses it, over both
/// protocols, instead of being read with the bad bytes replaced; the connection goes on, and
/// a transaction block the statement was in is failed as any error fails it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_is_22021_and_the_connection_goes_on() {
    use support::wire::{bind_body, execute_body, RawConnection};
    let server = TestServer::start();
    let mut raw = RawConnection::connect(server.port());
    let status = |messages: &[support::wire::Message]| {
        messages.last().map(|m| m.body.clone()).unwrap_or_default()
    };
    raw.send(b'Q', b"CREATE TABLE t (s TEXT)\0");
    raw.read_until_ready();
    raw.send(b'Q', b"INSERT INTO t VALUES ('caf\xc3(')\0");
    let answered = raw.read_until_ready();
    assert_eq!(answered[0].error_code().as_deref(), Some("22021"));
    let message = String::from_utf8_lossy(&answered[0].body).into_owned();
    assert!(
        message.contains("invalid byte sequence for encoding \"UTF8\": 0xc3 0x28"),
        "{message}"
    );
    assert_eq!(status(&answered), b"I");

    // In a block, the error fails the block.
    raw.send(b'Q', b"BEGIN\0");
    raw.read_until_ready();
    raw.send(b'Q', b"SELECT '\xff'\0");
    let answered = raw.read_until_ready();
    assert_eq!(answered[0].error_code().as_deref(), Some("22021"));
    assert_eq!(status(&answered), b"E");
    raw.send(b'Q', b"SELECT 1\0");
    let answered = raw.read_until_ready();
    assert_eq!(answered[0].error_code().as_deref(), Some("25P02"));
    raw.send(b'Q', b"ROLLBACK\0");
    raw.read_until_ready();

    // Over the extended protocol the rest of the batch is skipped until Sync.
    let mut parse = b"\0INSERT INTO t VALUES ('\xe2\x82')\0".to_vec();
    parse.extend([0, 0]);
    raw.send(b'P', &parse);
    raw.send(b'B', &bind_body(&[]));
    raw.send(b'E', &execute_body());
    raw.send(b'S', b"");
    let answered = raw.read_until_ready();
    let kinds: Vec<u8> = answered.iter().map(|m| m.kind).collect();
    assert_eq!(kinds, b"EZ");
    assert_eq!(answered[0].error_code().as_deref(), Some("22021"));

    raw.send(
        b'Q',
        b"INSERT INTO t VALUES ('caf\xc3\xa9'); SELECT s FROM t\0",
    );
    let answered = raw.read_until_ready();
    assert!(answered.iter().all(|m| m.kind != b'E'));
    let rows: Vec<&[u8]> = answered
        .iter()
        .filter(|m| m.kind == b'D')
        .map(|m| &m.body[6..])
        .collect();
    assert_eq!(rows, [&b"caf\xc3\xa9"[..]]);
}

/// An Execute's row limit of 0 or less means every row, as in PostgreSQL, and a huge one
/// reserves nothing; a binary array parameter that claims more elements than it holds is an
/// error. Neither drops the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_row_limits_and_array_lengths_are_handled() {
    use support::wire::{parse_body, RawConnection};
    let server = TestServer::start();
    let mut connection = RawConnection::connect(server.port());
    for max_rows in [-1i32, 0, i32::MAX] {
        connection.send(b'P', &parse_body("SELECT 7"));
        connection.send(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]);
        let mut execute = vec![0];
        execute.extend(max_rows.to_be_bytes());
        connection.send(b'E', &execute);
        connection.send(b'S', &[]);
        let messages = connection.read_until_ready();
        let kinds: Vec<u8> = messages.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, b"12DCZ", "max_rows {max_rows}");
    }
    let mut parse = vec![0];
    parse.extend(b"SELECT $1::int[]\0");
    parse.extend(1i16.to_be_bytes());
    parse.extend(1007u32.to_be_bytes());
    connection.send(b'P', &parse);
    let mut array = Vec::new();
    for field in [1i32, 0, 23, i32::MAX, 1] {
        array.extend(field.to_be_bytes());
    }
    let mut bind = vec![0, 0];
    bind.extend(1i16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    bind.extend((array.len() as i32).to_be_bytes());
    bind.extend(&array);
    bind.extend(0i16.to_be_bytes());
    connection.send(b'B', &bind);
    connection.send(b'E', &[0, 0, 0, 0, 0]);
    connection.send(b'S', &[]);
    let codes: Vec<String> = connection
        .read_until_ready()
        .iter()
        .filter_map(|m| m.error_code())
        .collect();
    assert_eq!(codes, ["22P02"]);
    connection.send(b'Q', b"SELECT 1\0");
    assert!(connection.read_until_ready().iter().any(|m| m.kind == b'D'));
}

/// A message whose contents overrun its length (a Parse declaring more parameter types than it
/// holds, a Bind value claiming 1 GiB) or fall short of it (a Sync with a body, a Query with
/// bytes after its text that would read as another message), or that claims more than 1 GiB,
/// gets FATAL 08P01
/// before the connection closes, as in PostgreSQL, not a silent close; other sessions go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_get_08p01_before_the_connection_closes() {
    use support::wire::RawConnection;
    let server = TestServer::start();
    let mut parse = vec![0];
    parse.extend(b"SELECT $1\0");
    parse.extend(1000i16.to_be_bytes());
    let mut bind = vec![0, 0];
    bind.extend(0i16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    bind.extend((1i32 << 30).to_be_bytes());
    bind.extend(b"abc");
    let mut query = b"SELECT 1\0".to_vec();
    query.extend([b'P', 0, 0, 0, 4]);
    for (kind, body) in [(b'P', parse), (b'B', bind), (b'S', vec![0]), (b'Q', query)] {
        let mut connection = RawConnection::connect(server.port());
        connection.send(kind, &body);
        connection.send(b'S', &[]);
        let reply = connection.read_message();
        assert_eq!(
            reply.error_code().as_deref(),
            Some("08P01"),
            "{}",
            kind as char
        );
    }
    // A claimed length of 2 GiB is refused at once, not waited for.
    let mut connection = RawConnection::connect(server.port());
    connection.send_raw(&[b'Q', 0x80, 0, 0, 0]);
    let reply = connection.read_message();
    assert_eq!(
        reply.error_code().as_deref(),
        Some("08P01"),
        "a 2 GiB length"
    );
    let client = server.connect().await;
    let row = client
        .query_one("SELECT 1", &[])
        .await
        .expect("another session");
    assert_eq!(row.get::<_, i32>(0), 1);
}

/// Portals left open each keep a query computing (on a thread of its own); past
/// `--max-running-queries`, the next query fails with 53000, and closing a portal makes room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_portals_are_bounded_and_the_next_query_is_53000() {
    let temp = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_with_args(temp.path(), &["--max-running-queries", "2"]);
    let mut client = server.connect().await;
    let many = "SELECT n FROM generate_series(1, 10000000) AS s(n)";
    let transaction = client.transaction().await.expect("begin");
    let statement = transaction.prepare(many).await.expect("prepare");
    let mut portals = Vec::new();
    for _ in 0..2 {
        let portal = transaction.bind(&statement, &[]).await.expect("bind");
        let rows = transaction
            .query_portal(&portal, 1)
            .await
            .expect("a first row");
        assert_eq!(rows.len(), 1);
        portals.push(portal);
    }
    let third = transaction.bind(&statement, &[]).await.expect("bind");
    let error = transaction
        .query_portal(&third, 1)
        .await
        .expect_err("a third computing query is refused");
    assert_eq!(
        error.code(),
        Some(&SqlState::INSUFFICIENT_RESOURCES),
        "{error}"
    );
    transaction.rollback().await.expect("rollback");
    drop(portals);

    // Once the portals are gone, their threads end and queries run again.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match client
            .query("SELECT n FROM generate_series(1, 1000) AS s(n)", &[])
            .await
        {
            Ok(rows) => {
                assert_eq!(rows.len(), 1000);
                break;
            }
            Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_RESOURCES) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no room came back: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}
