"""The Flink side of benches/peers/flink.sh, and the summary of a side-by-side run.

    python run_flink.py run --query q1 --events 1000000     # one Flink run: one JSON line out
    python run_flink.py summary RESULTS.jsonl --json out.json  # medians and ratios

`run` starts PyFlink's JVM (a local mini-cluster, streaming mode, parallelism 1, mini-batch
on), times a trivial job (1 generated row into a blackhole) twice: the first loads and
compiles the planner, the second is the fixed cost of a job (planning, starting the
mini-cluster, finishing), reported as its startup. Then it runs the query: a bounded `datagen`
source shaped like the rows Fluxion's generator makes for the same number of events, a view
`bid` (or `bids`) that derives the columns the query reads, and the query into a `blackhole`
sink. It prints one JSON object: wall seconds from submitting the job until it has finished,
and the CPU seconds the JVM spent meanwhile (user + system time of the whole JVM from
/proc/PID/stat: the source, the operators, GC and JIT threads; not this Python process,
which only waits).
"""

import argparse
import json
import os
import statistics
import sys
import time

# Fluxion's Nexmark generator (crates/connectors/src/generator/nexmark/): event n is a bid
# when n mod 50 >= 4, ids start at 1000, an unpaced source is timed at 10,000 events a second
# of event time from 2015-07-15 00:00:00 UTC.
FIRST_ID = 1000
BASE_TIME_MS = 1_436_918_400_000
GROUPBY_AUCTIONS = 100_000


def bid_rows(events):
    """The bids among events 0 .. events-1 (46 of every 50, from the 5th of each 50)."""
    return events // 50 * 46 + min(max(events % 50 - 4, 0), 46)


def datagen_columns(events, keys):
    """Per bid column: the datagen fields it is made from and the expression that makes it.

    With `keys` "skewed", auction and bidder follow Fluxion's rules from the bid's position
    (a datagen sequence): bid i is in epoch e = i / 46 (50 events); with probability 1/2 the
    auction is the hot one, (3e + 2) / 100 * 100, else uniform among the last 100 auctions and
    the next 10; with probability 3/4 the bidder is the hot one, e / 100 * 100 + 1, else uniform
    among the last 1000 people and the next 10. With "uniform" they are uniform over all the
    ids the generator names (same ranges, no locality).
    """
    auctions = events // 50 * 3 + 10  # the last auction id a bid can name, base 0
    people = events // 50 + 10
    unit = {"min": 0, "max": 1}
    seq = ("seq", "BIGINT", {"kind": "sequence", "start": 0, "end": max(bid_rows(events) - 1, 0)})
    if keys == "skewed":
        auction = ([seq, ("auction_hot", "DOUBLE", unit), ("auction_u", "DOUBLE", unit)],
                   f"{FIRST_ID} + CASE WHEN auction_hot < 0.5 THEN (seq / 46 * 3 + 2) / 100 * 100 "
                   "ELSE GREATEST(seq / 46 * 3 + 2 - 100, 0) "
                   "+ CAST(FLOOR(auction_u * (LEAST(seq / 46 * 3 + 2, 100) + 11)) AS BIGINT) END")
        bidder = ([seq, ("bidder_hot", "DOUBLE", unit), ("bidder_u", "DOUBLE", unit)],
                  f"{FIRST_ID} + CASE WHEN bidder_hot < 0.75 THEN seq / 46 / 100 * 100 + 1 "
                  "ELSE seq / 46 + 1 - LEAST(seq / 46 + 1, 1000) "
                  "+ CAST(FLOOR(bidder_u * (LEAST(seq / 46 + 1, 1000) + 10)) AS BIGINT) END")
    else:
        auction = ([("auction", "BIGINT", {"min": FIRST_ID, "max": FIRST_ID + auctions})], "auction")
        bidder = ([("bidder", "BIGINT", {"min": FIRST_ID, "max": FIRST_ID + people})], "bidder")
    return {
        "auction": auction,
        "bidder": bidder,
        # Log-uniform from 100 to 10^8 cents, as round(10^(6U) * 100).
        "price": (
            [("price_u", "DOUBLE", {"min": 0, "max": 1})],
            "CAST(FLOOR(POWER(10.0, 6 * price_u) * 100 + 0.5) AS BIGINT)",
        ),
        # Event n at BASE + n/10 ms: a uniform millisecond of the same span (not in order).
        "date_time": (
            [("dt_ms", "BIGINT", {"min": 0, "max": max(events // 10 - 1, 0)})],
            f"CAST(TO_TIMESTAMP_LTZ({BASE_TIME_MS} + dt_ms, 3) AS TIMESTAMP(3))",
        ),
        # For the windowed queries, Fluxion's exact time from the bid's position: bid i is
        # event n = i / 46 * 50 + 4 + i mod 46, at BASE + n / 10 ms (whole ms), so in order.
        # A computed column of the datagen table, which carries the watermark (source_ddl).
        "date_time_ordered": (
            [seq],
            f"CAST(TO_TIMESTAMP_LTZ({BASE_TIME_MS} + (seq / 46 * 50 + 4 + MOD(seq, 46)) / 10, 3) "
            "AS TIMESTAMP(3))",
        ),
        # 54..81 letters in Fluxion (a slice of one random text); 68 random hex digits here.
        "extra": ([("extra", "VARCHAR", {"length": 68})], "extra"),
        # Half the bids from 4 hot channels, half from channel-0 .. channel-9999.
        "channel": (
            [("ch", "INT", {"min": 0, "max": 19_999})],
            "CASE WHEN ch >= 10000 THEN CONCAT('channel-', CAST(ch - 10000 AS STRING)) "
            "WHEN MOD(ch, 4) = 0 THEN 'Google' WHEN MOD(ch, 4) = 1 THEN 'Facebook' "
            "WHEN MOD(ch, 4) = 2 THEN 'Baidu' ELSE 'Apple' END",
        ),
        # https://www.nexmark.com/<s>/<s>/<s>/item.htm?query=1, for 90% of the cold channels
        # with &channel_id=<digits>; Fluxion's <s> are 3-4 of [a-z_] and its url is fixed per
        # channel, here 4 random hex digits per row.
        "url": (
            [("ch", "INT", {"min": 0, "max": 19_999})]
            + [(f"u{i}", "VARCHAR", {"length": 4}) for i in (1, 2, 3)],
            "CONCAT('https://www.nexmark.com/', u1, '/', u2, '/', u3, '/item.htm?query=1', "
            "CASE WHEN ch >= 10000 AND MOD(ch, 10) <> 0 "
            "THEN CONCAT('&channel_id=', CAST((ch - 10000) * 214731 AS STRING)) ELSE '' END)",
        ),
    }


RANKS = {
    "rank1": "price < 10000",
    "rank2": "price >= 10000 AND price < 1000000",
    "rank3": "price >= 1000000",
}


def distinct_report():
    """The count / count-distinct columns q15 and q16 share."""
    columns = ["count(*) AS total_bids"]
    columns += [f"count(*) FILTER (WHERE {c}) AS {r}_bids" for r, c in RANKS.items()]
    for key, name in (("bidder", "bidders"), ("auction", "auctions")):
        columns.append(f"count(DISTINCT {key}) AS total_{name}")
        columns += [f"count(DISTINCT {key}) FILTER (WHERE {c}) AS {r}_{name}" for r, c in RANKS.items()]
    return ",\n    ".join(columns)


DAY = "DATE_FORMAT(date_time, 'yyyy-MM-dd')"
HOP = "TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND))"

# The queries, as benches/nexmark/*.sql has them, in Flink's dialect, over the view `bid`
# (or `bids` for groupby): (columns read, SELECT).
QUERIES = {
    "groupby": (None, "SELECT auction, count(*) AS bids, max(price) AS max_price FROM bids GROUP BY auction"),
    "q0": (["auction", "bidder", "price", "date_time", "extra"],
           "SELECT auction, bidder, price, date_time, extra FROM bid"),
    "q1": (["auction", "bidder", "price", "date_time", "extra"],
           "SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid"),
    "q2": (["auction", "price"], "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0"),
    # The windowed queries as Flink's nexmark project writes them (windowing TVFs over the
    # rowtime attribute date_time, whose watermark trails it by 4 s; see source_ddl).
    "q5": (["auction", "date_time"],
           "SELECT AuctionBids.auction, AuctionBids.num FROM (\n"
           "    SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime\n"
           f"    FROM {HOP} GROUP BY auction, window_start, window_end\n"
           ") AS AuctionBids JOIN (\n"
           "    SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime FROM (\n"
           "        SELECT count(*) AS num, window_start AS starttime, window_end AS endtime\n"
           f"        FROM {HOP} GROUP BY auction, window_start, window_end\n"
           "    ) AS CountBids GROUP BY CountBids.starttime, CountBids.endtime\n"
           ") AS MaxBids ON AuctionBids.starttime = MaxBids.starttime "
           "AND AuctionBids.endtime = MaxBids.endtime AND AuctionBids.num >= MaxBids.maxn"),
    # window_end is not a time attribute, so Flink plans this B1 join as a regular join (every
    # bid kept in its state, keyed by price, as Fluxion's q7 keeps them); see Q7_INTERVAL.
    "q7": (["auction", "bidder", "price", "date_time", "extra"],
           "SELECT B.auction, B.price, B.bidder, B.date_time, B.extra FROM bid B JOIN (\n"
           "    SELECT max(price) AS maxprice, window_end AS date_time\n"
           "    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))\n"
           "    GROUP BY window_start, window_end\n"
           ") B1 ON B.price = B1.maxprice\n"
           "WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time"),
    "q10": (["auction", "bidder", "price", "date_time", "extra"],
            "SELECT auction, bidder, price, date_time, extra, DATE_FORMAT(date_time, 'yyyy-MM-dd') AS dt, "
            "DATE_FORMAT(date_time, 'HH:mm') AS hm FROM bid"),
    "q14": (["auction", "bidder", "price", "date_time", "extra"],
            "SELECT auction, bidder, 0.908 * price AS price, "
            "CASE WHEN EXTRACT(HOUR FROM date_time) >= 8 AND EXTRACT(HOUR FROM date_time) <= 18 THEN 'dayTime' "
            "WHEN EXTRACT(HOUR FROM date_time) <= 6 OR EXTRACT(HOUR FROM date_time) >= 20 THEN 'nightTime' "
            "ELSE 'otherTime' END AS bid_time_type, date_time, extra, "
            "CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS c_counts "
            "FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000"),
    "q15": (["auction", "bidder", "price", "date_time"],
            f"SELECT {DAY} AS `day`,\n    {distinct_report()}\nFROM bid GROUP BY {DAY}"),
    "q16": (["auction", "bidder", "price", "date_time", "channel"],
            f"SELECT channel, {DAY} AS `day`, max(DATE_FORMAT(date_time, 'HH:mm')) AS `minute`,\n"
            f"    {distinct_report()}\nFROM bid GROUP BY channel, {DAY}"),
    "q17": (["auction", "price", "date_time"],
            f"SELECT auction, {DAY} AS `day`, count(*) AS total_bids, "
            + ", ".join(f"count(*) FILTER (WHERE {c}) AS {r}_bids" for r, c in RANKS.items())
            + ", min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price, "
            f"sum(price) AS sum_price FROM bid GROUP BY auction, {DAY}"),
    "q21": (["auction", "bidder", "price", "channel", "url"],
            "SELECT auction, bidder, price, channel, CASE "
            "WHEN LOWER(channel) = 'apple' THEN '0' WHEN LOWER(channel) = 'google' THEN '1' "
            "WHEN LOWER(channel) = 'facebook' THEN '2' WHEN LOWER(channel) = 'baidu' THEN '3' "
            "ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) END AS channel_id FROM bid "
            "WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL "
            "OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu')"),
    "q22": (["auction", "bidder", "price", "channel", "url"],
            "SELECT auction, bidder, price, channel, SPLIT_INDEX(url, '/', 3) AS dir1, "
            "SPLIT_INDEX(url, '/', 4) AS dir2, SPLIT_INDEX(url, '/', 5) AS dir3 FROM bid"),
}


# q7 with `--q7-join interval`: the same rows (bids from window_start to window_end, both
# included) joined on the window's rowtime window_time = window_end - 1 ms, so Flink plans an
# interval join, which drops each bid from its state once the watermark has passed its window.
Q7_INTERVAL = (
    "SELECT B.auction, B.price, B.bidder, B.date_time, B.extra FROM bid B JOIN (\n"
    "    SELECT max(price) AS maxprice, window_time AS wt\n"
    "    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))\n"
    "    GROUP BY window_start, window_end, window_time\n"
    ") B1 ON B.price = B1.maxprice\n"
    "WHERE B.date_time BETWEEN B1.wt - INTERVAL '9.999' SECOND AND B1.wt + INTERVAL '0.001' SECOND")


def with_clause(rows, fields):
    options = {"connector": "datagen", "number-of-rows": rows, "rows-per-second": 2**63 - 1}
    for name, _, field_options in fields:
        for key, value in {"kind": "random", **field_options}.items():
            options[f"fields.{name}.{key}"] = value
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


BID_COLUMNS = ["auction", "bidder", "price", "channel", "url", "date_time", "extra"]
# The queries whose state is keyed by auction or bidder, where the skew changes the work.
KEYED_ON_BIDS = {"q15", "q16", "q17"}
# The event-time window queries: date_time in order, a rowtime attribute with a watermark.
WINDOWED = {"q5", "q7"}
# The bid watermark of Flink's Nexmark DDL (ddl_gen.sql) and of ../shared/nexmark/00_sources.sql:
# 4 s behind date_time (Fluxion's runner declares none: its views keep every window).
WATERMARK_DELAY = "INTERVAL '4' SECOND"


def source_ddl(query, events, keys, columns_made):
    """The datagen table, the view the query reads, and the number of rows generated.

    `columns_made` "query" generates only the fields of the columns the query reads; "all"
    generates the fields of every bid column, as Fluxion's source makes whole bids (the
    planner still drops the unused expressions, but the datagen source makes every field).
    """
    if query == "groupby":
        # As the runner's source: 100,000 auctions and prices 1..1,000,000, uniform.
        fields = [("auction", "BIGINT", {"min": 0, "max": GROUPBY_AUCTIONS - 1}),
                  ("price", "BIGINT", {"min": 1, "max": 1_000_000})]
        return [f"CREATE TABLE gen (auction BIGINT, price BIGINT) WITH ({with_clause(events, fields)})",
                "CREATE VIEW bids AS SELECT auction, price FROM gen"], events
    columns, _ = QUERIES[query]
    recipes = datagen_columns(events, keys)
    windowed = query in WINDOWED
    if windowed:
        # date_time becomes a computed column of the table, in order, with the watermark.
        recipes["date_time"] = (recipes["date_time_ordered"][0], "date_time")
    fields, seen = [], set()
    for column in BID_COLUMNS if columns_made == "all" else columns:
        for field in recipes[column][0]:
            if field[0] not in seen:
                seen.add(field[0])
                fields.append(field)
    rows = bid_rows(events)
    table = ", ".join(f"{name} {sql_type}" for name, sql_type, _ in fields)
    if windowed:
        table += (f", date_time AS {recipes['date_time_ordered'][1]}, "
                  f"WATERMARK FOR date_time AS date_time - {WATERMARK_DELAY}")
    view = ", ".join(f"{recipes[c][1]} AS {c}" for c in columns)
    return [f"CREATE TABLE gen ({table}) WITH ({with_clause(rows, fields)})",
            f"CREATE VIEW bid AS SELECT {view} FROM gen"], rows


def jvm_cpu_seconds(pid):
    """User + system CPU time of process `pid` so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def jvm_peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed_job(t_env, pid, statements, select):
    """Runs the DDL statements, then the SELECT into a new blackhole table; wall and CPU s."""
    for statement in statements:
        t_env.execute_sql(statement)
    cpu, wall = jvm_cpu_seconds(pid), time.monotonic()
    result = t_env.execute_sql(f"CREATE TABLE sink WITH ('connector' = 'blackhole') AS {select}")
    result.wait()
    return time.monotonic() - wall, jvm_cpu_seconds(pid) - cpu


def run(args):
    from pyflink.java_gateway import get_gateway
    from pyflink.table import EnvironmentSettings, TableEnvironment

    def new_env():
        t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        config = t_env.get_config()
        for key, value in {
            "parallelism.default": "1",
            "table.exec.mini-batch.enabled": "true",
            "table.exec.mini-batch.allow-latency": args.allow_latency,
            "table.exec.mini-batch.size": str(args.mini_batch_size),
            "table.local-time-zone": "UTC",
        }.items():
            config.set(key, value)
        return t_env

    pid = None
    trivial = [f"CREATE TABLE gen (x INT) WITH ({with_clause(1, [])})"]
    startups = []
    for _ in range(2):  # the first job loads and compiles the planner; the second is the cost
        t_env = new_env()
        pid = pid or get_gateway().jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid()
        startups.append(timed_job(t_env, pid, trivial, "SELECT x FROM gen"))
    (first_seconds, first_cpu), (startup_seconds, startup_cpu) = startups
    if args.keys == "auto":
        args.keys = "skewed" if args.query in KEYED_ON_BIDS | WINDOWED else "uniform"
    statements, rows = source_ddl(args.query, args.events, args.keys, args.columns)
    select = Q7_INTERVAL if args.query == "q7" and args.q7_join == "interval" else QUERIES[args.query][1]
    seconds, cpu = timed_job(new_env(), pid, statements, select)
    print(json.dumps({
        "system": "flink", "query": args.query, "events": args.events, "rows": rows,
        "keys": args.keys, "columns": args.columns,
        **({"q7_join": args.q7_join} if args.query == "q7" else {}),
        "seconds": seconds, "cpu_seconds": cpu,
        "startup_seconds": startup_seconds, "startup_cpu_seconds": startup_cpu,
        "first_job_seconds": first_seconds, "first_job_cpu_seconds": first_cpu,
        "peak_resident_mib": jvm_peak_rss_mib(pid),
    }))


def summary(args):
    runs = [json.loads(line) for line in open(args.results) if line.strip()]
    queries = list(dict.fromkeys(r["query"] for r in runs))
    table = []
    print("| query | events | Fluxion events/s | Flink events/s | **ratio** | Fluxion events per CPU-s "
          "| Flink events per CPU-s | **ratio** | Flink job startup s (CPU s) "
          "| Flink events/s without it | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for query in queries:
        row = {"query": query}
        for system in ("fluxion", "flink"):
            mine = [r for r in runs if r["query"] == query and r["system"] == system]
            row[system] = {
                "runs": len(mine),
                "events": mine[0]["events"] if mine else None,
                "events_per_second": median(r["events"] / r["seconds"] for r in mine),
                "events_per_cpu_second": median(r["events"] / r["cpu_seconds"] for r in mine),
                "seconds": median(r["seconds"] for r in mine),
                "cpu_seconds": median(r["cpu_seconds"] for r in mine),
            }
            if system == "flink":
                row[system]["startup_seconds"] = median(r["startup_seconds"] for r in mine)
                row[system]["startup_cpu_seconds"] = median(r["startup_cpu_seconds"] for r in mine)
                row[system]["events_per_second_without_startup"] = median(
                    r["events"] / (r["seconds"] - r["startup_seconds"]) for r in mine)
        for key in ("events_per_second", "events_per_cpu_second"):
            ours, theirs = row["fluxion"][key], row["flink"][key]
            row[f"ratio_{key}"] = ours / theirs if ours and theirs else None
        table.append(row)
        fx, fl = row["fluxion"], row["flink"]
        print(f"| {query} | {fx['events'] or fl['events']:,} | {fmt(fx['events_per_second'])} "
              f"| {fmt(fl['events_per_second'])} | **{fmt(row['ratio_events_per_second'], 2)}** "
              f"| {fmt(fx['events_per_cpu_second'])} | {fmt(fl['events_per_cpu_second'])} "
              f"| **{fmt(row['ratio_events_per_cpu_second'], 2)}** "
              f"| {fmt(fl.get('startup_seconds'), 1)} ({fmt(fl.get('startup_cpu_seconds'), 1)}) "
              f"| {fmt(fl.get('events_per_second_without_startup'))} | {fx['runs']} + {fl['runs']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**json.loads(args.meta or "{}"), "medians": table, "runs": runs}, f, indent=1)
            f.write("\n")


def line(args):
    """One run as a line of text."""
    r = json.loads(args.run)
    text = (f"{args.prefix}: {r['system']:7} {r['query']:7} {r['events']:,} events, {r['seconds']:.1f} s, "
            f"{fmt(r['events'] / r['seconds'])} events/s, {r['cpu_seconds']:.1f} CPU-s, "
            f"{fmt(r['events'] / r['cpu_seconds'])} events per CPU-s, peak RSS {fmt(r['peak_resident_mib'])} MiB")
    if "startup_seconds" in r:
        text += f" (job startup {r['startup_seconds']:.1f} s, {r['startup_cpu_seconds']:.1f} CPU-s)"
    print(text)


def median(values):
    values = list(values)
    return statistics.median(values) if values else None


def fmt(value, digits=0):
    return "—" if value is None else f"{value:,.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("run", help="one Flink run of one query")
    one.add_argument("--query", required=True, choices=sorted(QUERIES))
    one.add_argument("--events", type=int, required=True)
    one.add_argument("--allow-latency", default="1 s")
    one.add_argument("--mini-batch-size", type=int, default=5000)
    one.add_argument("--keys", choices=["auto", "skewed", "uniform"], default="auto")
    one.add_argument("--columns", choices=["query", "all"], default="query")
    one.add_argument("--q7-join", choices=["regular", "interval"], default="regular",
                     help="q7 as Flink's nexmark writes it (a regular join) or as an interval join")
    report = commands.add_parser("summary", help="medians and ratios of a results file")
    report.add_argument("results")
    report.add_argument("--json")
    report.add_argument("--meta", help="a JSON object of facts to put into --json")
    show = commands.add_parser("line", help="one run's JSON as a line of text")
    show.add_argument("run")
    show.add_argument("prefix")
    args = parser.parse_args()
    {"run": run, "summary": summary, "line": line}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
