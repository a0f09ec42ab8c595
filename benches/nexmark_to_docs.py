#!/usr/bin/env python3
"""Writes the Nexmark table of docs/benchmarks.md from the runner's JSON results.

    ./target/release/nexmark --query q0,q1,q2 --events 10000000 --json out.json
    python3 benches/nexmark_to_docs.py out.json --commit "$(git rev-parse --short HEAD)"

Each line of the JSON file is one run of one query (the runner's `--json`). Runs of the same
query, event count and worker count are combined: every column is the median of the runs, and
the table says how many there were. The table replaces whatever stands between the markers
`<!-- nexmark-results: begin -->` and `<!-- nexmark-results: end -->` in the docs file.
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

BEGIN = "<!-- nexmark-results: begin -->"
END = "<!-- nexmark-results: end -->"

# Feldera's DBSP with its own Nexmark benchmark on this machine (10M events, one worker), in
# events per CPU-second, as issue 13 reports it: the per-CPU-second goal, not a run of ours.
DBSP_EVENTS_PER_CPU_SECOND = {
    **dict.fromkeys(["q0", "q2", "q3", "q5", "q8", "q14", "q21"], "1.0-1.1M"),
    **dict.fromkeys(
        ["q1", "q4", "q6", "q7", "q13", "q15", "q17", "q18", "q19", "q20"], "0.45-0.8M"
    ),
    **dict.fromkeys(["q9", "q16"], "0.25M"),
}


def query_order(query):
    """q0 < q1 < … < q22 < groupby."""
    match = re.fullmatch(r"q(\d+)", query)
    return (0, int(match.group(1))) if match else (1, query)


def grouped_runs(lines):
    """The runs by (query, events, workers), in query order."""
    runs = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
            key = (run["query"], run["events"], run["workers"])
        except (json.JSONDecodeError, KeyError) as error:
            sys.exit(f"line {number}: not a result of the nexmark runner ({error})")
        runs.setdefault(key, []).append(run)
    return sorted(runs.items(), key=lambda item: (query_order(item[0][0]), item[0][1:]))


def median(runs, field):
    values = [run[field] for run in runs if run.get(field) is not None]
    return statistics.median(values) if values else None


def number(value, digits=0):
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def events(count):
    return f"{count // 1_000_000}M" if count % 1_000_000 == 0 else f"{count:,}"


def table(grouped, commit):
    rows = [
        f"Commit {commit}; columns are medians over the runs listed.",
        "",
        "| query | events | workers | runs | seconds | events/s | CPU-s "
        "| **events per CPU-second** | DBSP (issue 13) | peak RSS | arrangement records "
        "| view rows |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (query, count, workers), runs in grouped:
        per_cpu = median(runs, "events_per_cpu_second")
        rows.append(
            f"| {query} | {events(count)} | {workers} | {len(runs)} "
            f"| {number(median(runs, 'seconds'), 1)} "
            f"| {number(median(runs, 'events_per_second'))} "
            f"| {number(median(runs, 'cpu_seconds'), 1)} "
            f"| **{number(per_cpu)}** "
            f"| {DBSP_EVENTS_PER_CPU_SECOND.get(query, '—')} "
            f"| {number(median(runs, 'peak_resident_mib'))} MiB "
            f"| {number(median(runs, 'arrangement_records'))} "
            f"| {number(median(runs, 'view_rows'))} |"
        )
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the runner's --json file")
    parser.add_argument("--commit", required=True, help="the commit the server was built from")
    parser.add_argument("--docs", type=Path, default=Path("docs/benchmarks.md"))
    args = parser.parse_args()

    grouped = grouped_runs(args.results.read_text().splitlines())
    if not grouped:
        sys.exit(f"{args.results}: no results")
    docs = args.docs.read_text()
    begin, end = docs.find(BEGIN), docs.find(END)
    if begin < 0 or end < begin:
        sys.exit(f"{args.docs}: no {BEGIN} … {END} section")
    updated = docs[: begin + len(BEGIN)] + "\n" + table(grouped, args.commit) + "\n" + docs[end:]
    args.docs.write_text(updated)
    print(f"{args.docs}: {len(grouped)} rows from {args.results}")


if __name__ == "__main__":
    main()
