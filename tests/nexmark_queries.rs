//! Every Nexmark query Fluxion runs (`benches/nexmark/q*.sql`), as a materialized view over
//! the `nexmark` sources, equals PostgreSQL 15's answer to the same SQL over the same events.
//!
//! Fluxion generates the events (one shared sequence, the person, auction and bid sources each
//! keeping their own kind) and maintains every query's view incrementally while the events
//! arrive. Pass-through views hand the events to a throwaway PostgreSQL through `COPY`; there
//! the same query files run as a batch computation. Numbers are compared to 12 significant
//! digits (PostgreSQL's `avg` of integers is a numeric, Fluxion's a double); everything else
//! as text.

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
        ddl.push_str(&table.create_source(EVENTS));
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
    let (postgres, connection) =
        tokio_postgres::connect(&postgres_server.connection_string(), tokio_postgres::NoTls)
            .await
            .expect("connect to PostgreSQL");
    tokio::spawn(connection);
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
