//! tokio-postgres against Fluxion: prepared statements with a parameter and a result column of
//! every type clients bind, all in binary, round-tripped through a table; parameter types
//! inferred from the columns they meet (of one relation or of several); a statement prepared
//! once and run many times, and prepared point statements (run on generic plans) kept right
//! across writes, catalog changes and search path changes.

mod support;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use support::TestServer;
use tokio_postgres::types::{ToSql, Type};
use uuid::Uuid;

const CREATE: &str = "CREATE TABLE every_type (
    id BIGINT PRIMARY KEY, small SMALLINT, whole INTEGER, big BIGINT, single REAL,
    double DOUBLE PRECISION, exact NUMERIC(12,3), flag BOOLEAN, words TEXT, short VARCHAR(10),
    bytes BYTEA, day DATE, at TIMESTAMP, at_tz TIMESTAMPTZ, id2 UUID, doc JSON, docb JSONB,
    tags TEXT[], numbers BIGINT[])";

struct Values {
    small: i16,
    whole: i32,
    big: i64,
    single: f32,
    double: f64,
    exact: Decimal,
    flag: bool,
    words: String,
    short: String,
    bytes: Vec<u8>,
    day: NaiveDate,
    at: NaiveDateTime,
    at_tz: DateTime<Utc>,
    id2: Uuid,
    doc: serde_json::Value,
    docb: serde_json::Value,
    tags: Vec<Option<String>>,
    numbers: Vec<i64>,
}

fn sample() -> Values {
    Values {
        small: -12,
        whole: 1_234_567,
        big: 9_000_000_000,
        single: 1.5,
        double: -2.25e10,
        exact: Decimal::new(123_456_789, 3),
        flag: true,
        words: "héllo, \"world\"".into(),
        short: "short".into(),
        bytes: vec![0, 1, 254, 255],
        day: NaiveDate::from_ymd_opt(2026, 12, 1).unwrap(),
        at: NaiveDate::from_ymd_opt(1999, 12, 31)
            .unwrap()
            .and_hms_micro_opt(23, 59, 58, 123_456)
            .unwrap(),
        at_tz: DateTime::parse_from_rfc3339("2026-01-02T03:04:05.678901Z")
            .unwrap()
            .with_timezone(&Utc),
        id2: Uuid::parse_str("0f8fad5b-d9cb-469f-a165-70867728950e").unwrap(),
        doc: serde_json::json!({"a": [1, 2, {"b": null}]}),
        docb: serde_json::json!({"k": "v", "n": 1.5}),
        tags: vec![Some("a".into()), None, Some("b c".into())],
        numbers: vec![1, -2, 3],
    }
}

#[tokio::test]
async fn every_type_round_trips_as_binary_parameters_and_results() {
    let server = TestServer::start();
    let client = server.connect().await;
    client.batch_execute(CREATE).await.expect("create");
    let insert = client
        .prepare("INSERT INTO every_type VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)")
        .await
        .expect("prepare the insert");
    let expected_types = [
        Type::INT8,
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::NUMERIC,
        Type::BOOL,
        Type::TEXT,
        Type::VARCHAR,
        Type::BYTEA,
        Type::DATE,
        Type::TIMESTAMP,
        Type::TIMESTAMPTZ,
        Type::UUID,
        Type::JSON,
        Type::JSONB,
        Type::TEXT_ARRAY,
        Type::INT8_ARRAY,
    ];
    assert_eq!(insert.params(), &expected_types, "inferred parameter types");
    let v = sample();
    let params: [&(dyn ToSql + Sync); 19] = [
        &1i64, &v.small, &v.whole, &v.big, &v.single, &v.double, &v.exact, &v.flag, &v.words,
        &v.short, &v.bytes, &v.day, &v.at, &v.at_tz, &v.id2, &v.doc, &v.docb, &v.tags, &v.numbers,
    ];
    assert_eq!(client.execute(&insert, &params).await.expect("insert"), 1);

    let select = client
        .prepare("SELECT * FROM every_type WHERE id = $1")
        .await
        .expect("prepare the select");
    assert_eq!(select.params(), &[Type::INT8]);
    let result_types: Vec<Type> = select.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(result_types, expected_types, "result column types");
    let row = client.query_one(&select, &[&1i64]).await.expect("select");
    assert_eq!(row.get::<_, i16>("small"), v.small);
    assert_eq!(row.get::<_, i32>("whole"), v.whole);
    assert_eq!(row.get::<_, i64>("big"), v.big);
    assert_eq!(row.get::<_, f32>("single"), v.single);
    assert_eq!(row.get::<_, f64>("double"), v.double);
    assert_eq!(row.get::<_, Decimal>("exact"), v.exact);
    assert_eq!(row.get::<_, bool>("flag"), v.flag);
    assert_eq!(row.get::<_, String>("words"), v.words);
    assert_eq!(row.get::<_, String>("short"), v.short);
    assert_eq!(row.get::<_, Vec<u8>>("bytes"), v.bytes);
    assert_eq!(row.get::<_, NaiveDate>("day"), v.day);
    assert_eq!(row.get::<_, NaiveDateTime>("at"), v.at);
    assert_eq!(row.get::<_, DateTime<Utc>>("at_tz"), v.at_tz);
    assert_eq!(row.get::<_, Uuid>("id2"), v.id2);
    assert_eq!(row.get::<_, serde_json::Value>("doc"), v.doc);
    assert_eq!(row.get::<_, serde_json::Value>("docb"), v.docb);
    assert_eq!(row.get::<_, Vec<Option<String>>>("tags"), v.tags);
    assert_eq!(row.get::<_, Vec<i64>>("numbers"), v.numbers);
}

#[tokio::test]
async fn a_prepared_statement_runs_many_times_with_parameters_inferred_from_columns() {
    let server = TestServer::start();
    let client = server.connect().await;
    client.batch_execute(CREATE).await.expect("create");
    let insert = client
        .prepare("INSERT INTO every_type (id, words, at_tz, exact) VALUES ($1, $2, $3, $4)")
        .await
        .expect("prepare");
    assert_eq!(
        insert.params(),
        &[Type::INT8, Type::TEXT, Type::TIMESTAMPTZ, Type::NUMERIC]
    );
    let at = sample().at_tz;
    for id in 0..50i64 {
        let words = format!("row {id}");
        let exact = Decimal::new(id * 1000 + 5, 3);
        client
            .execute(&insert, &[&id, &words, &at, &exact])
            .await
            .expect("insert");
    }
    let by_range = client
        .prepare("SELECT count(*), sum(exact) FROM every_type WHERE id >= $1 AND words <> $2")
        .await
        .expect("prepare");
    assert_eq!(by_range.params(), &[Type::INT8, Type::TEXT]);
    let row = client
        .query_one(&by_range, &[&40i64, &"row 45"])
        .await
        .expect("aggregate");
    assert_eq!(row.get::<_, i64>(0), 9);
    assert_eq!(
        row.get::<_, Decimal>(1).normalize(),
        Decimal::new(
            40_005 + 41_005 + 42_005 + 43_005 + 44_005 + 46_005 + 47_005 + 48_005 + 49_005,
            3
        )
        .normalize()
    );
}

#[tokio::test]
async fn a_parameter_meeting_columns_of_two_relations_has_their_type() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL);
             INSERT INTO accounts VALUES (1, 10), (2, 20), (3, 30);
             CREATE MATERIALIZED VIEW rich AS SELECT id FROM accounts WHERE balance >= 20;",
        )
        .await
        .expect("setup");
    // `$1` meets `accounts.id` and `rich.id`: equal types from different relations.
    let select = client
        .prepare("SELECT balance FROM accounts WHERE id = $1 AND id IN (SELECT id FROM rich WHERE id = $1)")
        .await
        .expect("prepare select");
    assert_eq!(select.params(), &[Type::INT8]);
    let rows = client.query(&select, &[&2i64]).await.expect("select");
    assert_eq!(
        rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<_>>(),
        [20]
    );
    assert!(client
        .query(&select, &[&1i64])
        .await
        .expect("select")
        .is_empty());
    let update = client
        .prepare("UPDATE accounts SET balance = balance + 1 WHERE id = $1 AND id IN (SELECT id FROM rich WHERE id = $1)")
        .await
        .expect("prepare update");
    assert_eq!(update.params(), &[Type::INT8]);
    assert_eq!(client.execute(&update, &[&3i64]).await.expect("update"), 1);
    assert_eq!(client.execute(&update, &[&1i64]).await.expect("update"), 0);
}

#[tokio::test]
async fn null_parameters_and_results_of_every_type_are_null() {
    let server = TestServer::start();
    let client = server.connect().await;
    client.batch_execute(CREATE).await.expect("create");
    client
        .execute(
            "INSERT INTO every_type (id, small, exact, at_tz, tags, docb) VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &7i64,
                &None::<i16>,
                &None::<Decimal>,
                &None::<DateTime<Utc>>,
                &None::<Vec<String>>,
                &None::<serde_json::Value>,
            ],
        )
        .await
        .expect("insert NULLs");
    let row = client
        .query_one(
            "SELECT small, exact, at_tz, tags, docb, words FROM every_type WHERE id = $1",
            &[&7i64],
        )
        .await
        .expect("select");
    assert_eq!(row.get::<_, Option<i16>>(0), None);
    assert_eq!(row.get::<_, Option<Decimal>>(1), None);
    assert_eq!(row.get::<_, Option<DateTime<Utc>>>(2), None);
    assert_eq!(row.get::<_, Option<Vec<String>>>(3), None);
    assert_eq!(row.get::<_, Option<serde_json::Value>>(4), None);
    assert_eq!(row.get::<_, Option<String>>(5), None);
}

/// `SHOW` names its column as PostgreSQL does (pgcli and JDBC read `TimeZone` by name), and a
/// setting is read back under the name it was set by.
#[tokio::test]
async fn show_names_its_column_as_postgres_does() {
    let server = TestServer::start();
    let client = server.connect().await;
    for (statement, column, value) in [
        ("SHOW timezone", "TimeZone", "UTC"),
        ("SHOW TIME ZONE", "TimeZone", "UTC"),
        ("SHOW datestyle", "DateStyle", "ISO, MDY"),
        (
            "SHOW TRANSACTION ISOLATION LEVEL",
            "transaction_isolation",
            "serializable",
        ),
        ("SHOW work_mem", "work_mem", "64MB"),
    ] {
        if column == "work_mem" {
            client
                .batch_execute("SET work_mem = '64MB'")
                .await
                .expect("set");
        }
        let messages = client.simple_query(statement).await.expect(statement);
        let row = messages
            .iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(row),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{statement}: no row"));
        assert_eq!(row.columns()[0].name(), column, "{statement}");
        assert_eq!(row.get(0), Some(value), "{statement}");
    }
}

/// Prepared statements that read or change one key (which run on a generic plan, made once)
/// answer as if planned afresh each time: with each execution's values, inside and outside a
/// transaction block, after the table is replaced, after an index is added and after the
/// search path changes.
#[tokio::test]
async fn prepared_point_statements_follow_writes_catalog_changes_and_the_search_path() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE kv (id BIGINT PRIMARY KEY, v TEXT NOT NULL, n INTEGER NOT NULL);
             INSERT INTO kv VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30);
             CREATE SCHEMA other;
             CREATE TABLE other.kv (id BIGINT PRIMARY KEY, v TEXT NOT NULL, n INTEGER NOT NULL);
             INSERT INTO other.kv VALUES (1, 'other one', 0);",
        )
        .await
        .expect("create");
    let read = client
        .prepare("SELECT v, n + $2 FROM kv WHERE id = $1")
        .await
        .expect("prepare read");
    let update = client
        .prepare("UPDATE kv SET v = v || $2, n = n + 1 WHERE id = $1")
        .await
        .expect("prepare update");
    let delete = client
        .prepare("DELETE FROM kv WHERE id = $1")
        .await
        .expect("prepare delete");
    let read_as = |id: Option<i64>| {
        let read = &read;
        let client = &client;
        async move {
            client
                .query_opt(read, &[&id, &1i32])
                .await
                .expect("read")
                .map(|row| (row.get::<_, String>(0), row.get::<_, i32>(1)))
        }
    };
    let v = |text: &str, n: i32| Some((text.to_string(), n));

    assert_eq!(read_as(Some(1)).await, v("one", 11));
    assert_eq!(read_as(Some(2)).await, v("two", 21));
    assert_eq!(read_as(Some(4)).await, None);
    assert_eq!(read_as(None).await, None, "a NULL key matches nothing");
    assert_eq!(
        client
            .execute(&update, &[&2i64, &"!"])
            .await
            .expect("update"),
        1
    );
    assert_eq!(
        client
            .execute(&update, &[&9i64, &"?"])
            .await
            .expect("update"),
        0
    );
    assert_eq!(read_as(Some(2)).await, v("two!", 22));

    client.batch_execute("BEGIN").await.expect("begin");
    assert_eq!(client.execute(&delete, &[&3i64]).await.expect("delete"), 1);
    assert_eq!(
        read_as(Some(3)).await,
        None,
        "the block reads its own delete"
    );
    client
        .execute(&update, &[&1i64, &"+"])
        .await
        .expect("update");
    assert_eq!(read_as(Some(1)).await, v("one+", 12));
    client.batch_execute("ROLLBACK").await.expect("rollback");
    assert_eq!(read_as(Some(3)).await, v("three", 31));
    assert_eq!(read_as(Some(1)).await, v("one", 11));

    client
        .batch_execute(
            "DROP TABLE kv;
             CREATE TABLE kv (id BIGINT PRIMARY KEY, n INTEGER NOT NULL, v TEXT NOT NULL);
             INSERT INTO kv VALUES (1, 100, 'new one');
             CREATE INDEX kv_by_v ON kv (v);",
        )
        .await
        .expect("replace the table");
    assert_eq!(read_as(Some(1)).await, v("new one", 101));
    assert_eq!(read_as(Some(2)).await, None);
    client
        .execute(&update, &[&1i64, &"!"])
        .await
        .expect("update");
    assert_eq!(read_as(Some(1)).await, v("new one!", 102));

    client
        .batch_execute("SET search_path = other, public")
        .await
        .expect("set");
    assert_eq!(read_as(Some(1)).await, v("other one", 1));
    assert_eq!(client.execute(&delete, &[&1i64]).await.expect("delete"), 1);
    assert_eq!(read_as(Some(1)).await, None);
    client
        .batch_execute("SET search_path = public")
        .await
        .expect("set");
    assert_eq!(read_as(Some(1)).await, v("new one!", 102));
}

/// A prepared INSERT of VALUES (which runs on a generic plan) fills defaults, checks NOT NULL
/// and keys, raises PostgreSQL's errors, and follows the table when it is replaced.
#[tokio::test]
async fn prepared_inserts_fill_defaults_check_constraints_and_follow_the_table() {
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE log (id BIGINT PRIMARY KEY, who TEXT NOT NULL, n INT DEFAULT 7, twice INT)",
        )
        .await
        .expect("create");
    let insert = client
        .prepare("INSERT INTO log (id, who, twice) VALUES ($1, $2, $1 * 2)")
        .await
        .expect("prepare insert");
    let quietly = client
        .prepare("INSERT INTO log (id, who) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .await
        .expect("prepare insert … on conflict");
    let rows = |sql: &'static str| {
        let client = &client;
        async move {
            client
                .query(sql, &[])
                .await
                .expect(sql)
                .iter()
                .map(|row| {
                    (
                        row.get::<_, i64>("id"),
                        row.get::<_, String>("who"),
                        row.get::<_, Option<i32>>("n"),
                        row.get::<_, Option<i32>>("twice"),
                    )
                })
                .collect::<Vec<_>>()
        }
    };

    assert_eq!(written(&client, &insert, &[&1i64, &"ann"]).await, Ok(1));
    assert_eq!(written(&client, &insert, &[&2i64, &"bob"]).await, Ok(1));
    assert_eq!(
        written(&client, &insert, &[&1i64, &"again"]).await,
        Err("23505".into())
    );
    assert_eq!(
        written(&client, &insert, &[&3i64, &None::<&str>]).await,
        Err("23502".into())
    );
    assert_eq!(
        written(&client, &insert, &[&3_000_000_000i64, &"big"]).await,
        Err("22003".into()),
        "twice is out of range for an integer"
    );
    assert_eq!(
        written(&client, &quietly, &[&1i64, &"skipped"]).await,
        Ok(0)
    );
    assert_eq!(written(&client, &quietly, &[&5i64, &"eve"]).await, Ok(1));
    assert_eq!(
        rows("SELECT * FROM log ORDER BY id").await,
        vec![
            (1, "ann".into(), Some(7), Some(2)),
            (2, "bob".into(), Some(7), Some(4)),
            (5, "eve".into(), Some(7), None),
        ]
    );

    client
        .batch_execute(
            "DROP TABLE log;
             CREATE TABLE log (twice INT, n INT DEFAULT 9, who TEXT NOT NULL, id BIGINT PRIMARY KEY)",
        )
        .await
        .expect("replace the table");
    assert_eq!(written(&client, &insert, &[&6i64, &"fay"]).await, Ok(1));
    assert_eq!(written(&client, &quietly, &[&6i64, &"gus"]).await, Ok(0));
    assert_eq!(
        rows("SELECT * FROM log").await,
        vec![(6, "fay".into(), Some(9), Some(12))]
    );
}

/// The rows `statement` wrote with `params`, or the SQLSTATE of its error.
async fn written(
    client: &tokio_postgres::Client,
    statement: &tokio_postgres::Statement,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, String> {
    client.execute(statement, params).await.map_err(|e| {
        e.code()
            .map_or_else(|| e.to_string(), |code| code.code().to_string())
    })
}
