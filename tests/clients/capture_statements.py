"""Extract the distinct SQL a client sent from a PostgreSQL server log.

Usage: capture_statements.py LOG_FILE START_OFFSET OUT_FILE PROGRAM

The server must log with log_statement=all and log_line_prefix='%m [%p] '.
Only the part of LOG_FILE after byte START_OFFSET is read. Each distinct
statement becomes one entry, in first-seen order, entries separated by a line
`-- next`. Comment lines above each statement say how it was sent (simple
query, or extended protocol with the prepared statement's name), how often,
the parameters of its first execution and the error it raised, if any.
"""

import re
import sys

RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[(\d+)\] ([A-Z]+):  (.*)$")
EXECUTE = re.compile(r"^execute (fetch from )?([^:]*): (.*)$", re.S)


def records(text):
    """(pid, level, message) for every log record; continuation lines join the message."""
    current = None
    for line in text.splitlines():
        match = RECORD.match(line)
        if match:
            if current:
                yield current
            current = [match.group(1), match.group(2), match.group(3)]
        elif current:
            current[2] += "\n" + line
    if current:
        yield current


class Entry:
    def __init__(self, sql, protocol):
        self.sql = sql
        self.protocols = [protocol]
        self.count = 0
        self.parameters = None
        self.errors = []

    def render(self):
        lines = [f"-- sent {self.count}x via {', '.join(self.protocols)}"]
        if self.parameters:
            lines.append("-- first " + self.parameters.replace("\n", " "))
        lines += [f"-- error: {e}" for e in self.errors]
        return "\n".join(lines) + "\n" + self.sql.strip() + "\n"


def statement_of(message):
    """(sql, protocol) of a statement record, or None for other LOG records."""
    if message.startswith("statement: "):
        return message[len("statement: "):], "simple query"
    match = EXECUTE.match(message)
    if not match:
        return None
    fetch, name, sql = match.groups()
    name = name.split("/")[0]
    kind = "unnamed statement" if name == "<unnamed>" else "named statement"
    protocol = f"extended protocol ({kind}{', portal fetch' if fetch else ''})"
    return sql, protocol


class Capture:
    def __init__(self):
        self.entries = {}
        self.last_by_pid = {}
        self.pending_error = {}

    def entry(self, sql, protocol):
        key = sql.strip()
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = Entry(sql, protocol)
        elif protocol not in entry.protocols:
            entry.protocols.append(protocol)
        return entry

    def add(self, pid, level, message):
        if level == "LOG":
            found = statement_of(message)
            if found:
                entry = self.entry(*found)
                entry.count += 1
                self.last_by_pid[pid] = entry
        elif level == "DETAIL" and message.startswith("parameters: "):
            entry = self.last_by_pid.get(pid)
            if entry and entry.parameters is None:
                entry.parameters = message
        elif level == "ERROR":
            self.pending_error[pid] = message
        elif level == "STATEMENT" and pid in self.pending_error:
            error = self.pending_error.pop(pid)
            entry = self.entries.get(message.strip())
            if entry is None:
                entry = self.entry(message, "extended protocol (failed in Parse, never executed)")
                entry.count += 1
            if error not in entry.errors:
                entry.errors.append(error)


def main():
    log_file, offset, out_file, program = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    with open(log_file, encoding="utf-8", errors="replace") as f:
        f.seek(offset)
        text = f.read()
    capture = Capture()
    for pid, level, message in records(text):
        capture.add(pid, level, message)
    header = (
        f"-- Distinct SQL sent by {program} to PostgreSQL 15 (log_statement=all),\n"
        "-- in first-seen order; regenerate with tests/clients/validate_against_pg.sh.\n"
    )
    with open(out_file, "w", encoding="utf-8") as f:
        f.write(header)
        f.write("-- next\n".join(e.render() for e in capture.entries.values()))
    print(f"captured {len(capture.entries)} distinct statements into {out_file}")


if __name__ == "__main__":
    main()
