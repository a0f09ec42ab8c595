//! Min and max over append-only sources, and DISTINCT count and sum, are accumulated (O(1) per
//! row) rather than recomputed from every value of the group; a top-k over an append-only
//! source keeps only the rows that can still be selected. Views over a followed file source,
//! fed random rows (NULLs and FILTERs included) in rounds, must equal after every round the
//! same results computed from scratch, here in the test, over every row written so far.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::query::{converge, rows, sorted_rows, wait_for};
use support::TestServer;

/// One generated row of `events (g, i, t, n, ts)`.
struct Event {
    g: i64,
    i: Option<i64>,
    t: Option<String>,
    /// `n`, a numeric(10,2), in hundredths.
    cents: i64,
    /// `ts`, seconds after 2026-01-01 00:00:00.
    seconds: i64,
}

impl Event {
    fn random(rng: &mut StdRng) -> Self {
        let word_len = rng.random_range(1..6);
        Event {
            g: rng.random_range(0..12),
            i: rng
                .random_bool(0.8)
                .then(|| rng.random_range(-1_000_000..1_000_000)),
            t: rng.random_bool(0.85).then(|| {
                (0..word_len)
                    .map(|_| char::from(rng.random_range(b'a'..=b'z')))
                    .collect()
            }),
            cents: rng.random_range(0..10_000_000),
            seconds: rng.random_range(0..86_400 * 365),
        }
    }

    fn json(&self) -> String {
        let i = self.i.map_or("null".to_string(), |i| i.to_string());
        let t = self
            .t
            .as_ref()
            .map_or("null".to_string(), |t| format!("\"{t}\""));
        format!(
            "{{\"g\": {}, \"i\": {i}, \"t\": {t}, \"n\": {}, \"ts\": \"{}\"}}",
            self.g,
            numeric(self.cents),
            timestamp(self.seconds)
        )
    }
}

fn numeric(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn timestamp(seconds: i64) -> String {
    let start = chrono::NaiveDate::from_ymd_opt(2026, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .expect("a date");
    (start + chrono::Duration::seconds(seconds))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

fn text(value: Option<impl ToString>) -> String {
    value.map_or("NULL".to_string(), |v| v.to_string())
}

/// `per_group` computed from scratch over `events`, as the view prints it.
fn expected_per_group(events: &[Event]) -> Vec<String> {
    let mut groups: BTreeMap<i64, Vec<&Event>> = BTreeMap::new();
    for event in events {
        groups.entry(event.g).or_default().push(event);
    }
    groups
        .iter()
        .map(|(g, rows)| {
            let ints = || rows.iter().filter_map(|r| r.i);
            let texts = || rows.iter().filter_map(|r| r.t.as_deref());
            let positive_max = ints().filter(|i| *i > 0).max();
            [
                g.to_string(),
                rows.len().to_string(),
                text(ints().min()),
                text(ints().max()),
                text(texts().min()),
                text(texts().max()),
                text(rows.iter().map(|r| r.cents).max().map(numeric)),
                text(rows.iter().map(|r| r.seconds).min().map(timestamp)),
                text(positive_max),
                text(ints().reduce(|a, b| a + b)),
                texts()
                    .map(str::len)
                    .collect::<BTreeSet<_>>()
                    .len()
                    .to_string(),
                text(
                    ints()
                        .filter(|i| *i > 0)
                        .map(|i| i % 10)
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .reduce(|a, b| a + b),
                ),
            ]
            .join("|")
        })
        .collect()
}

/// `overall` computed from scratch over `events`.
fn expected_overall(events: &[Event]) -> Vec<String> {
    let doubled = events
        .iter()
        .filter_map(|e| e.i)
        .flat_map(|i| [i, 2 * i])
        .min();
    vec![[
        events.len().to_string(),
        text(events.iter().filter_map(|e| e.t.as_deref()).max()),
        text(doubled),
    ]
    .join("|")]
}

fn append(path: &Path, events: &[Event]) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the file");
    let text: String = events.iter().map(|e| e.json() + "\n").collect();
    file.write_all(text.as_bytes()).expect("append");
}

/// Appends fewer than `most` random events to the file and to `written`.
fn append_more(rng: &mut StdRng, path: &Path, written: &mut Vec<Event>, most: usize) {
    let more: Vec<Event> = (0..rng.random_range(1..most))
        .map(|_| Event::random(rng))
        .collect();
    append(path, &more);
    written.extend(more);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accumulated_aggregates_over_an_append_only_source_equal_a_from_scratch_computation() {
    let mut rng = StdRng::seed_from_u64(7);
    let files = tempfile::tempdir().expect("a temporary directory");
    let path = files.path().join("events.jsonl");
    let mut written: Vec<Event> = (0..300).map(|_| Event::random(&mut rng)).collect();
    append(&path, &written);
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE events (g bigint, i bigint, t text, n numeric(10,2), ts timestamp)
               WITH (connector = 'file', path = '{}', follow = 'true');
             CREATE MATERIALIZED VIEW per_group AS
               SELECT g, count(*) AS rows, min(i) AS min_i, max(i) AS max_i, min(t) AS min_t,
                      max(t) AS max_t, max(n) AS max_n, min(ts) AS first_ts,
                      max(i) FILTER (WHERE i > 0) AS max_positive, sum(i) AS sum_i,
                      count(DISTINCT length(t)) AS lengths,
                      sum(DISTINCT i % 10) FILTER (WHERE i > 0) AS positive_digits
               FROM events GROUP BY g;
             CREATE MATERIALIZED VIEW overall AS
               SELECT count(*) AS rows, max(t) AS max_t,
                      (SELECT min(v) FROM (SELECT i AS v FROM events
                                           UNION ALL SELECT 2 * i FROM events) AS u) AS min_doubled
               FROM events;",
            path.display()
        ))
        .await
        .expect("source and views");
    for round in 0..6 {
        if round > 0 {
            append_more(&mut rng, &path, &mut written, 400);
        }
        wait_for(
            &client,
            "SELECT rows FROM overall",
            &written.len().to_string(),
            Duration::from_secs(60),
        )
        .await;
        converge(
            &format!("per_group after round {round}"),
            &expected_per_group(&written),
            Duration::from_secs(10),
            || rows(&client, "SELECT * FROM per_group ORDER BY g"),
        )
        .await;
        converge(
            &format!("overall after round {round}"),
            &expected_overall(&written),
            Duration::from_secs(10),
            || rows(&client, "SELECT * FROM overall"),
        )
        .await;
    }
}

/// `best3`: per group, the three rows with the largest `i` (NULLs last), ties by `t`.
fn expected_best3(events: &[Event]) -> Vec<String> {
    let mut groups: BTreeMap<i64, Vec<&Event>> = BTreeMap::new();
    for event in events {
        groups.entry(event.g).or_default().push(event);
    }
    let mut expected = Vec::new();
    for (g, mut rows) in groups {
        // i DESC NULLS LAST, then t ASC NULLS LAST.
        rows.sort_by_key(|r| {
            (
                r.i.is_none(),
                std::cmp::Reverse(r.i),
                r.t.is_none(),
                r.t.clone(),
            )
        });
        for r in rows.iter().take(3) {
            expected.push(format!("{g}|{}|{}", text(r.i), text(r.t.as_deref())));
        }
    }
    expected.sort();
    expected
}

/// `lowest5`: the five smallest `n` of all rows.
fn expected_lowest5(events: &[Event]) -> Vec<String> {
    let mut cents: Vec<i64> = events.iter().map(|e| e.cents).collect();
    cents.sort();
    cents.into_iter().take(5).map(numeric).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_k_over_an_append_only_source_equals_a_from_scratch_computation() {
    let mut rng = StdRng::seed_from_u64(11);
    let files = tempfile::tempdir().expect("a temporary directory");
    let path = files.path().join("events.jsonl");
    let mut written: Vec<Event> = (0..200).map(|_| Event::random(&mut rng)).collect();
    append(&path, &written);
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE SOURCE events (g bigint, i bigint, t text, n numeric(10,2), ts timestamp)
               WITH (connector = 'file', path = '{}', follow = 'true');
             CREATE MATERIALIZED VIEW best3 AS
               SELECT g, i, t FROM (
                 SELECT g, i, t, row_number() OVER (
                   PARTITION BY g ORDER BY i DESC NULLS LAST, t ASC NULLS LAST) AS rn
                 FROM events) AS ranked
               WHERE rn <= 3;
             CREATE MATERIALIZED VIEW lowest5 AS SELECT n FROM events ORDER BY n LIMIT 5;
             CREATE MATERIALIZED VIEW seen AS SELECT count(*) AS rows FROM events;",
            path.display()
        ))
        .await
        .expect("source and views");
    for round in 0..6 {
        if round > 0 {
            append_more(&mut rng, &path, &mut written, 300);
        }
        wait_for(
            &client,
            "SELECT rows FROM seen",
            &written.len().to_string(),
            Duration::from_secs(60),
        )
        .await;
        converge(
            &format!("best3 after round {round}"),
            &expected_best3(&written),
            Duration::from_secs(10),
            || sorted_rows(&client, "SELECT * FROM best3"),
        )
        .await;
        converge(
            &format!("lowest5 after round {round}"),
            &expected_lowest5(&written),
            Duration::from_secs(10),
            || rows(&client, "SELECT * FROM lowest5 ORDER BY n"),
        )
        .await;
    }
}
