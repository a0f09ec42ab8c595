//! `EMIT ON WINDOW CLOSE` against an oracle: random batches of out-of-order events, some late,
//! posted to two webhook sources with watermarks, through a tumbling-window count and sum and
//! a hopping-window min and max over one, a window join of both (which closes a window
//! only once both watermarks have passed it), and an interval left join of both (an event
//! with the other source's events of its key up to 1 s after it, or with NULLs), all
//! emitting on window close, with a SIGKILL in the middle. The oracle computes, from the same batches, which windows have closed and which
//! rows each holds (a row counts unless its window had closed before its batch arrived), and
//! the views must equal it exactly, before and after the restart.

mod support;

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::http::post;
use support::query::rows;
use support::TestServer;

/// How far the watermark trails the largest event time, in seconds.
const DELAY: i64 = 3;
/// The tumbling window's size.
const TUMBLE: i64 = 5;
/// The hopping window's slide.
const SLIDE: i64 = 2;
/// The hopping window's size.
const HOP: i64 = 6;
/// How long after an event the interval join takes the other source's events.
const SPAN: i64 = 1;

/// One event: its id, key and event time (seconds after 2026-01-01 00:00).
#[derive(Debug, Clone, Copy)]
struct Event {
    id: i64,
    k: i64,
    ts: i64,
}

/// What the views should hold after some batches.
#[derive(Default)]
struct Oracle {
    /// The watermark (seconds), once there is one.
    watermark: Option<i64>,
    /// `(window start, k)` → `(count, sum of ids)` of the rows the tumbling windows hold.
    tumbling: BTreeMap<(i64, i64), (i64, i64)>,
    /// Window end → `(max id, min id)` of the rows the hopping windows hold.
    hopping: BTreeMap<i64, (i64, i64)>,
    /// Rows that arrived after their tumbling window had closed.
    too_late: usize,
    /// The second source's watermark.
    other_watermark: Option<i64>,
    /// `(window start, k)` → rows of each source the window join holds.
    joined: [BTreeMap<(i64, i64), i64>; 2],
    /// The events and the other source's events the interval join took in (those that came
    /// before their rows had closed).
    interval: [Vec<Event>; 2],
    /// The interval join's rows emitted so far, `id|other id` (`NULL` when none matched).
    matched: Vec<(i64, Option<i64>)>,
    /// Events whose interval join rows have been emitted.
    matched_ids: std::collections::BTreeSet<i64>,
}

impl Oracle {
    /// Takes in one batch: its rows count in the windows that were open before it, then the
    /// watermark moves to the largest event time seen minus the delay.
    fn apply(&mut self, batch: &[Event]) {
        let watermark = self.watermark;
        let open = |end: i64| watermark.is_none_or(|w| end > w);
        let mut tumbling = Vec::new();
        let mut hopping = Vec::new();
        for event in batch {
            let start = event.ts.div_euclid(TUMBLE) * TUMBLE;
            if open(start + TUMBLE) {
                tumbling.push(((start, event.k), event.id));
            } else {
                self.too_late += 1;
            }
            let last = event.ts.div_euclid(SLIDE) * SLIDE;
            for start in (last - HOP + SLIDE..=last).step_by(SLIDE as usize) {
                if open(start + HOP) {
                    hopping.push((start + HOP, event.id));
                }
            }
        }
        for (window, id) in tumbling {
            let entry = self.tumbling.entry(window).or_default();
            *entry = (entry.0 + 1, entry.1 + id);
        }
        for (end, id) in hopping {
            let entry = self.hopping.entry(end).or_insert((id, id));
            *entry = (entry.0.max(id), entry.1.min(id));
        }
        self.join(0, batch);
        let largest = batch.iter().map(|e| e.ts - DELAY).max();
        self.interval_take(0, batch);
        self.watermark = self.watermark.max(largest);
        self.interval_close();
    }

    /// Takes in one batch of the second source.
    fn apply_other(&mut self, batch: &[Event]) {
        self.join(1, batch);
        self.interval_take(1, batch);
        let largest = batch.iter().map(|e| e.ts - DELAY).max();
        self.other_watermark = self.other_watermark.max(largest);
        self.interval_close();
    }

    /// The interval join's rows close (and its inputs' rows are forgotten) below this: no
    /// other event still to come can fall in an event's span once the other source's
    /// watermark has passed its end.
    fn interval_bound(&self) -> Option<i64> {
        Some(self.watermark?.min(self.other_watermark? - SPAN))
    }

    /// Takes in one batch of one side of the interval join: the rows not already closed.
    fn interval_take(&mut self, side: usize, batch: &[Event]) {
        let bound = self.interval_bound();
        self.interval[side].extend(batch.iter().filter(|e| bound.is_none_or(|b| e.ts >= b)));
    }

    /// Emits the interval join's rows of the events that have closed.
    fn interval_close(&mut self) {
        let Some(bound) = self.interval_bound() else {
            return;
        };
        let [events, others] = &self.interval;
        for event in events.iter().filter(|e| e.ts < bound) {
            if !self.matched_ids.insert(event.id) {
                continue;
            }
            let matches: Vec<i64> = others
                .iter()
                .filter(|o| o.k == event.k && o.ts >= event.ts && o.ts <= event.ts + SPAN)
                .map(|o| o.id)
                .collect();
            if matches.is_empty() {
                self.matched.push((event.id, None));
            }
            self.matched
                .extend(matches.into_iter().map(|other| (event.id, Some(other))));
        }
    }

    /// The interval join's rows emitted, as the view's rows.
    fn closed_matched(&self) -> Vec<String> {
        let mut matched = self.matched.clone();
        matched.sort();
        matched
            .into_iter()
            .map(|(id, other)| match other {
                Some(other) => format!("{id}|{other}"),
                None => format!("{id}|NULL"),
            })
            .collect()
    }

    /// The window join closes a window once both watermarks have passed it.
    fn joint_watermark(&self) -> Option<i64> {
        Some(self.watermark?.min(self.other_watermark?))
    }

    /// Adds a batch of one side of the window join: its rows count in the windows open
    /// before it.
    fn join(&mut self, side: usize, batch: &[Event]) {
        let joint = self.joint_watermark();
        for event in batch {
            let start = event.ts.div_euclid(TUMBLE) * TUMBLE;
            if joint.is_none_or(|w| start + TUMBLE > w) {
                *self.joined[side].entry((start, event.k)).or_default() += 1;
            }
        }
    }

    /// The closed windows of the join, as the view's rows.
    fn closed_joined(&self) -> Vec<String> {
        let joint = self.joint_watermark().unwrap_or(i64::MIN);
        let mut pairs: BTreeMap<i64, i64> = BTreeMap::new();
        for ((start, k), left) in &self.joined[0] {
            if let Some(right) = self.joined[1].get(&(*start, *k)) {
                *pairs.entry(*start).or_default() += left * right;
            }
        }
        pairs
            .into_iter()
            .filter(|(start, _)| start + TUMBLE <= joint)
            .map(|(start, n)| format!("{}|{n}", time(start)))
            .collect()
    }

    /// The closed tumbling windows, as the view's rows.
    fn closed_tumbling(&self) -> Vec<String> {
        let watermark = self.watermark.unwrap_or(i64::MIN);
        self.tumbling
            .iter()
            .filter(|((start, _), _)| start + TUMBLE <= watermark)
            .map(|((start, k), (n, total))| format!("{}|{k}|{n}|{total}", time(*start)))
            .collect()
    }

    /// The closed hopping windows, as the view's rows.
    fn closed_hopping(&self) -> Vec<String> {
        let watermark = self.watermark.unwrap_or(i64::MIN);
        self.hopping
            .iter()
            .filter(|(end, _)| **end <= watermark)
            .map(|(end, (top, bottom))| format!("{}|{top}|{bottom}", time(*end)))
            .collect()
    }
}

/// Seconds after 2026-01-01 00:00 as PostgreSQL prints the timestamp.
fn time(seconds: i64) -> String {
    format!(
        "2026-01-01 {:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

fn post_batch(port: u16, source: &str, batch: &[Event]) {
    let body: String = batch
        .iter()
        .map(|e| {
            let ts = time(e.ts).replace(' ', "T");
            format!("{{\"id\": {}, \"k\": {}, \"ts\": \"{ts}\"}}\n", e.id, e.k)
        })
        .collect();
    let secret = [("X-Webhook-Secret", "s")];
    let path = format!("/webhook/public/{source}");
    let (status, answer) = post(port, &path, &secret, body.as_bytes());
    assert_eq!(status, 200, "{answer}");
}

/// Random batches: a clock that moves up to 2 s a batch, events up to 6 s behind it (some
/// late, some for windows already closed) and 1 s ahead.
fn random_batches(rng: &mut StdRng, batches: usize) -> Vec<Vec<Event>> {
    let mut clock = 100;
    let mut id = 0;
    (0..batches)
        .map(|_| {
            clock += rng.random_range(0..=2);
            (0..rng.random_range(1..=8))
                .map(|_| {
                    id += 1;
                    Event {
                        id,
                        k: rng.random_range(0..3),
                        ts: clock + rng.random_range(-6..=1),
                    }
                })
                .collect()
        })
        .collect()
}

const SETUP: &str = "
    CREATE SOURCE events (id bigint NOT NULL, k bigint NOT NULL, ts timestamp NOT NULL,
        WATERMARK FOR ts AS ts - INTERVAL '3' SECOND)
      WITH (connector = 'webhook', secret = 's');
    CREATE MATERIALIZED VIEW tumbling AS
      SELECT window_start, k, count(*) AS n, sum(id) AS total
      FROM TUMBLE(events, ts, INTERVAL '5' SECOND) GROUP BY window_start, k
      EMIT ON WINDOW CLOSE;
    CREATE SOURCE others (id bigint NOT NULL, k bigint NOT NULL, ts timestamp NOT NULL,
        WATERMARK FOR ts AS ts - INTERVAL '3' SECOND)
      WITH (connector = 'webhook', secret = 's');
    CREATE MATERIALIZED VIEW joined AS
      SELECT a.window_start, count(*) AS n
      FROM TUMBLE(events, ts, INTERVAL '5' SECOND) AS a
        JOIN TUMBLE(others, ts, INTERVAL '5' SECOND) AS b
          ON a.window_start = b.window_start AND a.k = b.k
      GROUP BY a.window_start
      EMIT ON WINDOW CLOSE;
    CREATE MATERIALIZED VIEW hopping AS
      SELECT window_end, max(id) AS top, min(id) AS bottom
      FROM HOP(events, ts, INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY window_end
      EMIT ON WINDOW CLOSE;
    CREATE MATERIALIZED VIEW matched AS
      SELECT a.id, a.ts, b.id AS other
      FROM events a LEFT JOIN others b
        ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' SECOND
      EMIT ON WINDOW CLOSE;";

async fn check(client: &tokio_postgres::Client, oracle: &Oracle, when: &str) {
    let tumbling = rows(
        client,
        "SELECT window_start, k, n, total FROM tumbling ORDER BY 1, 2",
    );
    assert_eq!(tumbling.await, oracle.closed_tumbling(), "tumbling, {when}");
    let hopping = rows(
        client,
        "SELECT window_end, top, bottom FROM hopping ORDER BY 1",
    );
    assert_eq!(hopping.await, oracle.closed_hopping(), "hopping, {when}");
    let joined = rows(client, "SELECT window_start, n FROM joined ORDER BY 1");
    assert_eq!(joined.await, oracle.closed_joined(), "joined, {when}");
    let matched = rows(
        client,
        "SELECT id, other FROM matched ORDER BY 1, 2 NULLS FIRST",
    );
    assert_eq!(matched.await, oracle.closed_matched(), "matched, {when}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_windows_equal_the_oracle_across_a_restart() {
    for seed in [1, 2, 3] {
        let data = tempfile::tempdir().expect("a temporary directory");
        let mut server = TestServer::start_in(data.path());
        let client = server.connect().await;
        client.batch_execute(SETUP).await.expect("source and views");
        let mut rng = StdRng::seed_from_u64(seed);
        let batches = random_batches(&mut rng, 40);
        // The second source's events come half as often, so its watermark lags.
        let others = random_batches(&mut rng, 20);
        let mut oracle = Oracle::default();
        let post_batches = |port: u16, oracle: &mut Oracle, range: std::ops::Range<usize>| {
            for i in range {
                post_batch(port, "events", &batches[i]);
                oracle.apply(&batches[i]);
                if i % 2 == 1 {
                    let other = &others[i / 2];
                    post_batch(port, "others", other);
                    oracle.apply_other(other);
                }
            }
        };
        post_batches(server.http_port(), &mut oracle, 0..20);
        check(
            &client,
            &oracle,
            &format!("seed {seed}, before the restart"),
        )
        .await;

        server.kill();
        drop(client);
        let server = TestServer::start_in(data.path());
        let client = server.connect().await;
        check(&client, &oracle, &format!("seed {seed}, after the restart")).await;
        post_batches(server.http_port(), &mut oracle, 20..40);
        check(&client, &oracle, &format!("seed {seed}, at the end")).await;
        assert!(oracle.closed_tumbling().len() > 10, "windows closed");
        assert!(oracle.too_late > 0, "rows came after their windows closed");
        assert!(oracle.closed_joined().len() > 3, "joined windows closed");
        let matched = oracle.closed_matched();
        assert!(
            matched.iter().any(|row| row.ends_with("|NULL"))
                && matched.iter().any(|row| !row.ends_with("|NULL")),
            "events closed with and without matches: {matched:?}"
        );
    }
}
