//! Every Nexmark query Fluxion runs (`benches/nexmark/q*.sql`), as a materialized view over
//! the `nexmark` sources, equals PostgreSQL 15's answer to the same SQL over the same events.
//!
//! Fluxion generates the events (one shared sequence, the person, auction and bid sources each
//! keeping their own kind) and maintains every query's view incrementally while the events
//! arrive. Pass-through views hand the events to a throwaway PostgreSQL through `COPY`; there
//! the same query files run as a batch computation. Numbers are compared to 12 significant
//! digits (PostgreSQL's `avg` of integers is a numeric, Fluxion's a double); everything else
//! as text. The `EMIT ON WINDOW CLOSE` forms of q5 and q7 are checked the same way, against
//! the windows their watermark has closed.

mod support;

use std::time::{Duration, Instant};

use fluxion_benches::nexmark_tables::NEXMARK_TABLES;
use futures::{SinkExt, StreamExt};
use support::postgres::TestPostgres;
use support::query::{row, sorted_rows};
use support::TestServer;

/// How many events the sources generate.
const EVENTS: u64 = 20_000;

/// The queries compared with PostgreSQL. q12 counts bids in processing-time windows, which
/// no batch computation repeats: it is checked on its own (see [`Q12`]).
const QUERIES: [(&str, &str); 22] = [
    ("q0", include_str!("../benches/nexmark/q0.sql")),
    ("q1", include_str!("../benches/nexmark/q1.sql")),
    ("q2", include_str!("../benches/nexmark/q2.sql")),
    ("q3", include_str!("../benches/nexmark/q3.sql")),
    ("q4", include_str!("../benches/nexmark/q4.sql")),
    ("q5", include_str!("../benches/nexmark/q5.sql")),
    ("q6", include_str!("../benches/nexmark/q6.sql")),
    ("q7", include_str!("../benches/nexmark/q7.sql")),
    ("q8", include_str!("../benches/nexmark/q8.sql")),
    ("q9", include_str!("../benches/nexmark/q9.sql")),
    ("q10", include_str!("../benches/nexmark/q10.sql")),
    ("q11", include_str!("../benches/nexmark/q11.sql")),
    ("q13", include_str!("../benches/nexmark/q13.sql")),
    ("q14", include_str!("../benches/nexmark/q14.sql")),
    ("q15", include_str!("../benches/nexmark/q15.sql")),
    ("q16", include_str!("../benches/nexmark/q16.sql")),
    ("q17", include_str!("../benches/nexmark/q17.sql")),
    ("q18", include_str!("../benches/nexmark/q18.sql")),
    ("q19", include_str!("../benches/nexmark/q19.sql")),
    ("q20", include_str!("../benches/nexmark/q20.sql")),
    ("q21", include_str!("../benches/nexmark/q21.sql")),
    ("q22", include_str!("../benches/nexmark/q22.sql")),
];

/// q12: bids per bidder per 10 seconds of processing time.
const Q12: &str = include_str!("../benches/nexmark/q12.sql");

/// Rows of `side_input` (q13's lookup table), in both databases.
fn side_input_rows() -> String {
    let values: Vec<String> = (0..10_000)
        .step_by(7)
        .map(|key| format!("({key}, 'side-{key}')"))
        .collect();
    format!("INSERT INTO side_input VALUES {};", values.join(", "))
}

/// `cell` as compared: numbers to 12 significant digits.
fn normalized(cell: &str) -> String {
    match cell.parse::<f64>() {
        Ok(number) => format!("{number:.11e}"),
        Err(_) => cell.to_string(),
    }
}

/// The rows of `sql`, each cell normalized, sorted.
async fn normalized_rows(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    let mut rows: Vec<String> = sorted_rows(client, sql)
        .await
        .iter()
        .map(|row| row.split('|').map(normalized).collect::<Vec<_>>().join("|"))
        .collect();
    rows.sort();
    rows
}

/// Copies every row of Fluxion's `all_<table>` into PostgreSQL's `<table>`.
async fn copy_table(
    fluxion: &tokio_postgres::Client,
    postgres: &tokio_postgres::Client,
    table: &str,
) {
    let out = fluxion
        .copy_out(&format!("COPY (SELECT * FROM all_{table}) TO STDOUT"))
        .await
        .expect("COPY out of Fluxion");
    let sink = postgres
        .copy_in::<_, bytes::Bytes>(&format!("COPY {table} FROM STDIN"))
        .await
        .expect("COPY into PostgreSQL");
    futures::pin_mut!(out, sink);
    while let Some(chunk) = out.next().await {
        sink.send(chunk.expect("a COPY chunk")).await.expect("send");
    }
    sink.as_mut().finish().await.expect("finish COPY");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nexmark_views_equal_postgres_over_the_same_events() {
    let server = TestServer::start();
    let fluxion = server.connect().await;
    let mut ddl = String::new();
    for table in &NEXMARK_TABLES {
        ddl.push_str(&table.create_source(EVENTS, 0, None));
        ddl.push_str(&format!(
            "CREATE MATERIALIZED VIEW all_{0} AS SELECT * FROM {0};\n",
            table.name
        ));
    }
    for (name, sql) in QUERIES {
        ddl.push_str(&with_tie_breakers(name, sql));
    }
    ddl.push_str(Q12);
    ddl.push_str(&side_input_rows());
    fluxion
        .batch_execute(&ddl)
        .await
        .expect("sources and views");

    let deadline = Instant::now() + Duration::from_secs(120);
    for table in &NEXMARK_TABLES {
        let sql = format!("SELECT count(*) FROM all_{}", table.name);
        while row(&fluxion, &sql).await[0].as_deref() != Some(&table.rows(EVENTS).to_string()) {
            assert!(
                Instant::now() < deadline,
                "{sql} never reached {}",
                table.rows(EVENTS)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // q12: each bid is in exactly one 10-second window of processing time, so each bidder's
    // counts add up to its bids (read in one snapshot), and every window is 10 s, aligned.
    let differing = "SELECT count(*) FROM (
          (SELECT bidder, sum(bid_count)::bigint FROM nexmark_q12 GROUP BY bidder
           EXCEPT SELECT bidder, count(*) FROM all_bid GROUP BY bidder)
          UNION ALL
          (SELECT bidder, count(*) FROM all_bid GROUP BY bidder
           EXCEPT SELECT bidder, sum(bid_count)::bigint FROM nexmark_q12 GROUP BY bidder)) AS d";
    assert_eq!(row(&fluxion, differing).await, [Some("0".to_string())]);
    let misshapen = "SELECT count(*) FROM nexmark_q12
        WHERE endtime - starttime <> INTERVAL '10' SECOND
           OR extract(epoch FROM starttime)::bigint % 10 <> 0";
    assert_eq!(row(&fluxion, misshapen).await, [Some("0".to_string())]);
    assert_eq!(
        row(&fluxion, "SELECT sum(bid_count)::bigint FROM nexmark_q12").await,
        [Some(NEXMARK_TABLES[2].rows(EVENTS).to_string())]
    );

    let postgres_server = TestPostgres::start();
    let postgres = postgres_server.connect().await;
    for table in &NEXMARK_TABLES {
        postgres
            .batch_execute(&format!("CREATE TABLE {} ({})", table.name, table.columns))
            .await
            .expect("create the table in PostgreSQL");
        copy_table(&fluxion, &postgres, table.name).await;
    }
    for (query, sql) in QUERIES {
        let sql = match query {
            "q11" => Q11_IN_POSTGRES.to_string(),
            _ => with_windows_expanded(&with_tie_breakers(query, sql)),
        };
        postgres.batch_execute(&sql).await.expect(&sql);
    }
    postgres
        .batch_execute(&format!(
            "{} REFRESH MATERIALIZED VIEW nexmark_q13;",
            side_input_rows()
        ))
        .await
        .expect("q13's side input");

    let mut failures = Vec::new();
    for (query, _) in QUERIES {
        let sql = format!("SELECT * FROM nexmark_{query}");
        let expected = normalized_rows(&postgres, &sql).await;
        if expected.is_empty() {
            failures.push(format!(
                "{query} is empty over {EVENTS} events: the comparison shows nothing"
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = normalized_rows(&fluxion, &sql).await;
            if got == expected {
                break;
            }
            if Instant::now() > deadline {
                let missing: Vec<_> = expected
                    .iter()
                    .filter(|r| !got.contains(r))
                    .take(3)
                    .collect();
                let extra: Vec<_> = got
                    .iter()
                    .filter(|r| !expected.contains(r))
                    .take(3)
                    .collect();
                failures.push(format!(
                    "{query}: Fluxion has {} rows, PostgreSQL {}; missing from Fluxion (first 3): \
                     {missing:?}; not in PostgreSQL (first 3): {extra:?}",
                    got.len(),
                    expected.len()
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Events for the `EMIT ON WINDOW CLOSE` check: 30 s of event time (an event every 0.1 ms),
/// so that the watermark closes windows.
const WINDOW_CLOSE_EVENTS: u64 = 300_000;

/// The queries with an `EMIT ON WINDOW CLOSE` form (`benches/nexmark/eowc/`).
const WINDOW_CLOSE_QUERIES: [(&str, &str); 2] = [
    ("q5", include_str!("../benches/nexmark/eowc/q5.sql")),
    ("q7", include_str!("../benches/nexmark/eowc/q7.sql")),
];

/// The `EMIT ON WINDOW CLOSE` forms of q5 and q7, over a bid source with a watermark 4 s
/// behind `date_time`, hold PostgreSQL's answer of every window the watermark has closed,
/// and nothing else: q5 exactly the rows of the windows that end at or before the watermark;
/// q7 only rows of the batch answer, and every one whose bid is more than a window (plus a
/// second) behind the watermark (a bid's row closes once the windows it may join, ending up
/// to 10 s after it, have closed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_close_views_hold_the_batch_answer_of_every_closed_window() {
    let server = TestServer::start();
    let fluxion = server.connect().await;
    let bid = &NEXMARK_TABLES[2];
    let mut ddl = bid.create_source(WINDOW_CLOSE_EVENTS, 0, Some(4));
    ddl.push_str("CREATE MATERIALIZED VIEW all_bid AS SELECT * FROM bid;\n");
    for (_, sql) in WINDOW_CLOSE_QUERIES {
        ddl.push_str(sql);
    }
    fluxion
        .batch_execute(&ddl)
        .await
        .expect("a bid source with a watermark and the views");
    let bids = bid.rows(WINDOW_CLOSE_EVENTS).to_string();
    let deadline = Instant::now() + Duration::from_secs(300);
    while row(&fluxion, "SELECT count(*) FROM all_bid").await[0].as_deref() != Some(&bids) {
        assert!(Instant::now() < deadline, "the bids never all arrived");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let watermark = row(
        &fluxion,
        "SELECT watermark::text FROM fluxion_catalog.source_stats WHERE source_name = 'bid'",
    )
    .await[0]
        .clone()
        .expect("a watermark");

    let postgres_server = TestPostgres::start();
    let postgres = postgres_server.connect().await;
    postgres
        .batch_execute(&format!("CREATE TABLE bid ({})", bid.columns))
        .await
        .expect("the bid table in PostgreSQL");
    copy_table(&fluxion, &postgres, "bid").await;
    for (_, sql) in WINDOW_CLOSE_QUERIES {
        let sql = with_windows_expanded(sql).replace("EMIT ON WINDOW CLOSE", "");
        postgres.batch_execute(&sql).await.expect(&sql);
    }
    let closed_q5 =
        format!("SELECT * FROM nexmark_q5 WHERE starttime + INTERVAL '10' SECOND <= '{watermark}'");
    let expected = normalized_rows(&postgres, &closed_q5).await;
    assert!(
        !expected.is_empty(),
        "no window of q5 closed: nothing compared"
    );
    let got = normalized_rows(&fluxion, "SELECT * FROM nexmark_q5").await;
    assert_eq!(got.len(), expected.len(), "q5's closed windows' rows");
    assert_eq!(got, expected, "q5's closed windows' rows");

    let all_q7 = normalized_rows(&postgres, "SELECT * FROM nexmark_q7").await;
    let got = normalized_rows(&fluxion, "SELECT * FROM nexmark_q7").await;
    let wrong: Vec<_> = got.iter().filter(|r| !all_q7.contains(r)).take(3).collect();
    assert!(
        wrong.is_empty(),
        "q7 rows PostgreSQL does not have: {wrong:?}"
    );
    let closed_q7 =
        format!("SELECT * FROM nexmark_q7 WHERE date_time + INTERVAL '11' SECOND <= '{watermark}'");
    let must_have = normalized_rows(&postgres, &closed_q7).await;
    assert!(
        !must_have.is_empty(),
        "no row of q7 closed: nothing compared"
    );
    let missing: Vec<_> = must_have
        .iter()
        .filter(|r| !got.contains(r))
        .take(3)
        .collect();
    assert!(missing.is_empty(), "closed q7 rows missing: {missing:?}");
}

/// The orders by which the top-N queries number their rows, made total. Their own text leaves
/// ties (two bids of a bidder on an auction in the same millisecond, two bids of one price) to
/// the engine, and PostgreSQL's choice is as right as Fluxion's; with the same tie-breakers
/// added for both, a tie cannot make the answers differ. (`incremental_window_functions.slt`
/// checks numbering with ties against PostgreSQL's rules.)
const TIE_BREAKERS: [(&str, &str, &str); 4] = [
    (
        "q6",
        "ORDER BY B.price DESC)",
        "ORDER BY B.price DESC, B.date_time, B.bidder, B.extra)",
    ),
    (
        "q6",
        "ORDER BY Q.date_time",
        "ORDER BY Q.date_time, Q.final",
    ),
    (
        "q18",
        "ORDER BY date_time DESC)",
        "ORDER BY date_time DESC, extra)",
    ),
    (
        "q19",
        "ORDER BY price DESC)",
        "ORDER BY price DESC, date_time, extra)",
    ),
];

/// `sql` of query `name` with [`TIE_BREAKERS`] added.
fn with_tie_breakers(name: &str, sql: &str) -> String {
    TIE_BREAKERS
        .iter()
        .filter(|(query, _, _)| *query == name)
        .fold(sql.to_string(), |sql, (_, order, total)| {
            assert!(sql.contains(order), "{name} has no `{order}`");
            sql.replace(order, total)
        })
}

/// q11 (bids per bidder per session, a gap of 10 s) for PostgreSQL, which has no session
/// windows: a bid starts a session unless it comes less than 10 s after the bidder's bid
/// before; a session spans its first bid's time to its last one's plus 10 s.
const Q11_IN_POSTGRES: &str = "
    CREATE MATERIALIZED VIEW nexmark_q11 AS
    WITH marked AS (
        SELECT bidder, date_time,
            CASE WHEN date_time - lag(date_time) OVER (PARTITION BY bidder ORDER BY date_time)
                < INTERVAL '10' SECOND THEN 0 ELSE 1 END AS starts
        FROM bid),
    numbered AS (
        SELECT *, sum(starts) OVER (PARTITION BY bidder ORDER BY date_time
            ROWS UNBOUNDED PRECEDING) AS session
        FROM marked)
    SELECT bidder, count(*) AS bid_count, min(date_time) AS starttime,
        max(date_time) + INTERVAL '10' SECOND AS endtime
    FROM numbered GROUP BY bidder, session;";

/// `sql` without its comment lines and with each `TUMBLE(relation, column, size)` and
/// `HOP(relation, column, slide, size)` written out as what it means for PostgreSQL, which
/// has no window table functions: the relation with `window_start` and `window_end`, the
/// bounds of each window (from the Unix epoch) holding `column`.
fn with_windows_expanded(sql: &str) -> String {
    let code: String = sql
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .map(|line| format!("{line}\n"))
        .collect();
    let mut out = String::new();
    let mut rest = code.as_str();
    loop {
        let next = ["TUMBLE(", "HOP("]
            .iter()
            .filter_map(|function| Some((rest.find(function)?, *function)))
            .min();
        let Some((at, function)) = next else { break };
        out.push_str(&rest[..at]);
        let arguments_start = at + function.len();
        let mut depth = 1;
        let mut arguments = vec![String::new()];
        let mut end = arguments_start;
        for (i, c) in rest[arguments_start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 1 => {
                    arguments.push(String::new());
                    continue;
                }
                _ => {}
            }
            if depth == 0 {
                end = arguments_start + i + 1;
                break;
            }
            arguments.last_mut().expect("an argument").push(c);
        }
        let arguments: Vec<&str> = arguments.iter().map(|a| a.trim()).collect();
        let epoch = "TIMESTAMP '1970-01-01'";
        let expanded = match (function, arguments.as_slice()) {
            ("TUMBLE(", [relation, column, size]) => {
                let start = format!("date_bin({size}, {column}, {epoch})");
                format!(
                    "(SELECT *, {start} AS window_start, {start} + {size} AS window_end \
                     FROM {relation}) AS {relation}"
                )
            }
            ("HOP(", [relation, column, slide, size]) => format!(
                "(SELECT *, window_start + {size} AS window_end FROM (SELECT *, \
                 generate_series(date_bin({slide}, {column} - {size}, {epoch}) + {slide}, \
                 date_bin({slide}, {column}, {epoch}), {slide}) AS window_start \
                 FROM {relation}) AS windows) AS {relation}"
            ),
            _ => panic!("{function} with arguments {arguments:?}"),
        };
        out.push_str(&expanded);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
