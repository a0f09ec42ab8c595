#!/usr/bin/env bash
# Fluxion and Apache Flink 2.3 side by side on the same queries over the same number of rows.
#
#   FLUXION=target/release/fluxion NEXMARK=target/release/nexmark benches/peers/flink.sh
#   EVENTS=1000000 ROUNDS=1 QUERIES="groupby q0 q1" benches/peers/flink.sh --json flink.json
#   EVENTS=1000000 QUERIES=q7 Q7_JOIN=interval benches/peers/flink.sh
#   EOWC=1 QUERIES="q5 q7" Q7_JOIN=interval benches/peers/flink.sh
#
# Installs `apache-flink==2.3.0` from PyPI into a venv at FLINK_VENV (reused if present; needs
# Java 17). Then, ROUNDS times, for each query of QUERIES, runs Fluxion and Flink one after the
# other (Fluxion first in odd rounds, Flink first in even ones):
#
# - Fluxion: `nexmark --query Q --events EVENTS` (benches/src/bin/nexmark.rs) on a fresh server
#   with WORKERS workers: its `nexmark` (or, for groupby, `datagen`) sources and the query's
#   materialized view, timed until the view has caught up; CPU is user + system time of the
#   whole server process (generator, stream log and dataflow included).
# - Flink: flink/run_flink.py in a fresh Python process. PyFlink starts a JVM (a child of
#   that process) running a local mini-cluster in streaming mode, parallelism 1, mini-batch on
#   (allow-latency ALLOW_LATENCY, size MINI_BATCH_SIZE), no checkpointing, heap state. The
#   job is a bounded `datagen` source → the query → a `blackhole` sink; seconds are wall time
#   from submitting it (planning included) until it has finished, CPU is user + system time
#   of the whole JVM over that time (/proc/PID/stat: source, operators, GC and JIT threads;
#   the Python process only waits on py4j and is not counted). Before the query the same JVM
#   runs a trivial job (one row into a blackhole) twice; the second one's time is reported as
#   Flink's per-job startup (planning, starting the mini-cluster, finishing), which the
#   query's time also contains; the summary also gives Flink's events/s without it. The
#   JVM's own start and the first job (class loading, JIT: ~7 s here) are in neither.
#
# The same data? Flink reads as many rows as Fluxion's source delivers: EVENTS rows for
# groupby (auction uniform in 0..99,999, price uniform in 1..1,000,000: the runner's source
# exactly), and the 92% of EVENTS that are bids for the Nexmark queries, whose rates are per
# event for both systems (as the runner reports them). The Nexmark bid columns are made from
# datagen fields (only those of the columns the query reads, unless COLUMNS=all) to match
# Fluxion's generator in distribution and shape, not row for row:
#   auction, bidder  KEYS=skewed: Fluxion's rules, from the bid's position (a datagen
#                    `sequence` field, which Flink fills into a deque of all values up front):
#                    half the bids go to the hot auction and 3/4 come from the hot bidder, both
#                    moving with the event number, the rest uniform among the recent ids.
#                    KEYS=uniform: uniform over all the ids the generator names (the same
#                    number of distinct keys, no locality). KEYS=auto (default): skewed for
#                    q15-q17, whose state is keyed by them (uniform keys made Flink's q17 3×
#                    slower at 10M), and for q5 and q7, which make the sequence anyway (for
#                    date_time), uniform for the stateless queries, where the sequence only
#                    costs Flink's source (q0 at 10M: 287k events/s skewed, 378k uniform).
#   price            log-uniform 100..10^8 like Fluxion's (10^(6U)·100, computed per row).
#   date_time        a uniform millisecond of the same span (event n is at 2015-07-15 + n/10
#                    ms), so the same day and hour, but not in order. For q5 and q7 (event-time
#                    windows) exactly Fluxion's time instead, from the bid's position (bid i is
#                    event n = i/46·50 + 4 + i mod 46, at 2015-07-15 + floor(n/10) ms), so in
#                    order and over the same span, hence the same windows (EVENTS/100,000 of 10
#                    s): a computed column of the datagen table, its rowtime attribute, with
#                    `WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND` (Flink's
#                    Nexmark DDL; the end of the bounded source closes the last windows).
#   extra            68 random hex digits per row; Fluxion's are 54-81 letters sliced from a
#                    fixed random text (cheaper to make).
#   channel          as Fluxion's: half one of 4 hot channels, half channel-0 … channel-9999.
#   url              https://www.nexmark.com/<4 hex>/<4 hex>/<4 hex>/item.htm?query=1, with
#                    &channel_id=<digits> for 90% of the cold channels; Fluxion's path parts are
#                    3-4 of [a-z_] and its url is fixed per channel (made once, not per row).
# So Flink's source does more random-string work per row than Fluxion's, but by default it
# makes only the columns the query reads, where Fluxion's makes whole bids (COLUMNS=all makes
# every column: q2 at 10M went from 1.8M to 352k events/s). Fluxion keeps each view's result
# (pass-through queries keep every bid) and writes its sources to a durable log; Flink's
# blackhole keeps nothing and Flink checkpoints nothing. q10 writes to a blackhole here
# (Flink's Nexmark q10 writes files); q14 counts 'c's with REPLACE instead of the reference
# UDF; q15/q16 run without Flink's split-distinct rewrite.
# q5 and q7 are Flink's Nexmark text (windowing TVFs HOP and TUMBLE on date_time), but the two
# systems do different work for them. Fluxion's runner declares no watermark and makes
# ordinary views: it keeps every window's state and updates the results as bids come in.
# Flink emits each window once, when the watermark passes its end, and then drops it: q5 is
# window aggregates and a window join, whose state holds only the open windows. Flink plans
# q7's join on window_end (not a time attribute) as a regular join that keeps every bid in its
# state, as Fluxion's q7 keeps every bid arranged; Q7_JOIN=interval runs it instead as an
# interval join on window_time (the same bids matched), which drops them once their window
# has closed. EOWC=1 runs Fluxion's q5 and q7 as Flink runs them: `nexmark
# --emit-on-window-close` declares Flink's watermark (date_time - 4 s) on the sources and makes
# the views EMIT ON WINDOW CLOSE (benches/nexmark/eowc/), which emit each window once and keep
# only the open windows' state (with Q7_JOIN=interval, both systems run q7 as an interval join). Both make the same windows, the HOP windows that start before the first bid or
# end after the last one included (14 for 200,000 events). Flink's datagen is not seeded, so
# its q5 and q7 rows differ from run to run (and from Fluxion's), though not in number: about
# one per window (the top auction, the highest bid), more on a tie.
# Not run: q3, q4, q9, q20 (joins between person, auction and bid, whose matches independent
# datagen tables cannot reproduce), q13 (Fluxion's runner joins an empty side table), q6, q8,
# q11, q12 (windows, not written for Flink here; q6 and q8 also join two of the tables),
# q18, q19 (top-N per group with ROW_NUMBER: Fluxion runs them, not written for Flink here yet).
#
# Prints one line per run, then per query the medians and the ratios Fluxion / Flink of
# events/s and of events per CPU-second (with --json FILE or JSON=FILE also as JSON: the
# settings, every run and the medians).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
FLUXION=${FLUXION:-target/release/fluxion}
NEXMARK=${NEXMARK:-target/release/nexmark}
EVENTS=${EVENTS:-10000000}
ROUNDS=${ROUNDS:-3}
QUERIES=${QUERIES:-"groupby q0 q1 q2 q5 q7 q10 q14 q15 q16 q17 q21 q22"}
WORKERS=${WORKERS:-1}
KEYS=${KEYS:-auto}
COLUMNS=${COLUMNS:-query}
Q7_JOIN=${Q7_JOIN:-regular}
EOWC=${EOWC:-}
ALLOW_LATENCY=${ALLOW_LATENCY:-"1 s"}
MINI_BATCH_SIZE=${MINI_BATCH_SIZE:-5000}
FLINK_VENV=${FLINK_VENV:-$HOME/.cache/fluxion/flink-venv}
JSON=${JSON:-}
while [ $# -gt 0 ]; do
    case $1 in
        --json) JSON=$2; shift 2 ;;
        *) echo "usage: $0 [--json FILE]" >&2; exit 2 ;;
    esac
done

if ! "$FLINK_VENV/bin/python" -c 'import pyflink' 2>/dev/null; then
    echo "installing apache-flink 2.3.0 into $FLINK_VENV" >&2
    python3 -m venv "$FLINK_VENV"
    "$FLINK_VENV/bin/pip" install -q --upgrade pip
    "$FLINK_VENV/bin/pip" install -q apache-flink==2.3.0
fi
flink=("$FLINK_VENV/bin/python" "$here/flink/run_flink.py")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.jsonl
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

run_fluxion() { # query → one JSON line
    rm -f "$work/fluxion.json"
    "$NEXMARK" --binary "$FLUXION" --query "$1" --events "$EVENTS" --workers "$WORKERS" \
        ${EOWC:+--emit-on-window-close} \
        --json "$work/fluxion.json" >"$work/fluxion.out" 2>"$work/fluxion.err" || {
        echo "fluxion $1 failed:" >&2; tail -5 "$work/fluxion.out" "$work/fluxion.err" >&2; return 1; }
    sed 's/^{/{"system":"fluxion",/' "$work/fluxion.json"
}

run_flink() { # query → one JSON line
    "${flink[@]}" run --query "$1" --events "$EVENTS" --allow-latency "$ALLOW_LATENCY" \
        --mini-batch-size "$MINI_BATCH_SIZE" --keys "$KEYS" --columns "$COLUMNS" --q7-join "$Q7_JOIN" \
        2>"$work/flink.err" || {
        echo "flink $1 failed:" >&2; grep -v '^WARNING' "$work/flink.err" | tail -20 >&2; return 1; }
}

for round in $(seq "$ROUNDS"); do
    for query in $QUERIES; do
        systems="fluxion flink"
        [ $((round % 2)) = 0 ] && systems="flink fluxion"
        for system in $systems; do
            if line=$("run_$system" "$query"); then
                echo "$line" >>"$results"
                "${flink[@]}" line "$line" "round $round"
            fi
        done
    done
done

echo
meta=$(printf '{"events": %s, "rounds": %s, "fluxion_workers": %s, "flink": "2.3.0", "flink_parallelism": 1, "mini_batch_allow_latency": "%s", "mini_batch_size": %s, "keys": "%s", "columns": "%s", "q7_join": "%s", "fluxion_emit_on_window_close": "%s", "fluxion_binary": "%s", "checkout": "%s", "date": "%s", "load_average_before": "%s", "load_average_after": "%s", "cpus": %s}' \
    "$EVENTS" "$ROUNDS" "$WORKERS" "$ALLOW_LATENCY" "$MINI_BATCH_SIZE" "$KEYS" "$COLUMNS" "$Q7_JOIN" "${EOWC:-no}" "$FLUXION" \
    "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(date -u +%FT%TZ)" \
    "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)")
echo "load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -s "$results" ] && "${flink[@]}" summary "$results" --meta "$meta" ${JSON:+--json "$JSON"}
