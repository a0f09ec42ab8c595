"""A SUBSCRIBE subscriber in psycopg 3 that resumes after a disconnect, exactly once.

The subscriber of docs/subscribe-and-sinks.md: a cursor over SUBSCRIBE, FETCH with a timeout,
and on reconnecting `AS OF <last seen _timestamp + 1> WITH (SNAPSHOT = false)`. It reads the
snapshot and one change, drops its connection, misses two inserts while away, resumes, and
must then see every row exactly once. Connection settings come from libpq's PG* variables.
Exits non-zero on the first wrong answer.
"""

import sys
import time

import psycopg


def changes(last_seen=None):
    """Yields (timestamp, diff, row) of `events`, starting after `last_seen` if given."""
    with psycopg.connect() as conn:
        with conn.transaction(), conn.cursor() as cur:
            as_of = f" WITH (SNAPSHOT = false) AS OF {last_seen + 1}" if last_seen else ""
            cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE events{as_of}")
            while True:
                cur.execute("FETCH ALL c WITH (timeout = '1s')")
                for timestamp, diff, *row in cur.fetchall():
                    yield int(timestamp), diff, row


def read_until(subscription, seen, wanted, deadline_s=30):
    """Reads changes into `seen` (id -> count) until every id in `wanted` is there."""
    last_seen = None
    deadline = time.monotonic() + deadline_s
    for timestamp, diff, (row_id,) in subscription:
        seen[row_id] = seen.get(row_id, 0) + diff
        last_seen = timestamp
        if wanted <= seen.keys():
            return last_seen
        if time.monotonic() > deadline:
            break
    sys.exit(f"FAIL: wanted {sorted(wanted)}, saw {seen}")


def main():
    with psycopg.connect(autocommit=True) as writer:
        writer.execute("CREATE TABLE events (id INT)")
        writer.execute("INSERT INTO events VALUES (1), (2)")
        seen = {}
        first = changes()
        last_seen = read_until(first, seen, {1, 2})
        writer.execute("INSERT INTO events VALUES (3)")
        last_seen = read_until(first, seen, {3})
        first.close()  # the subscriber goes away: its connection closes

        writer.execute("INSERT INTO events VALUES (4)")
        writer.execute("INSERT INTO events VALUES (5)")
        resumed = changes(last_seen)
        read_until(resumed, seen, {4, 5})
        writer.execute("INSERT INTO events VALUES (6)")
        read_until(resumed, seen, {6})
        resumed.close()

    expected = {row_id: 1 for row_id in range(1, 7)}
    if seen != expected:
        sys.exit(f"FAIL: every row once expected, saw {seen}")
    print("subscriber_resume: every change exactly once across a disconnect")


if __name__ == "__main__":
    main()
