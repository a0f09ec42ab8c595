"""pgcli 4.7 against the server that PGHOST, PGPORT, PGUSER and PGDATABASE name, driven in a
terminal (tmux) as a person uses it: it starts (reading the server's settings and loading
the catalog for completion in the background), lists tables, views, materialized views and
indexes (`\\dt`, `\\dv`, `\\dm`, `\\di`, pgspecial's catalog queries), describes a table
(`\\d orders`), completes a table name and a column name typed in part (from the catalog the
refresher loaded), and runs a query. The demo schema of
demo_schema.sql must be loaded. Every answer checked here is PostgreSQL 15's; pgcli's log
must hold no error (a failed catalog query of the completion refresher is logged there, not
shown). Exits non-zero on the first missing answer.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compat_check import CheckFailed, check_true, run

PGCLI = Path(sys.executable).parent / "pgcli"
SESSION = f"pgcli-check-{os.getpid()}"
TIMEOUT_S = 30

PGCLIRC = """\
[main]
log_file = {log}
log_level = INFO
enable_pager = False
row_limit = 0
less_chatty = True
multi_line = False
smart_completion = True
use_local_timezone = False
history_file = {history}
"""


def tmux(*args):
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def screen():
    """The pane's text, its scrollback included."""
    return tmux("capture-pane", "-p", "-J", "-S", "-3000", "-t", SESSION)


def wait_for(what, predicate):
    """Waits until the screen satisfies `predicate`; returns the screen."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        text = screen()
        if predicate(text):
            return text
        if time.monotonic() > deadline:
            raise CheckFailed(f"{what}: not on the screen within {TIMEOUT_S} s:\n{text}")
        time.sleep(0.2)


def clear():
    """Clears the screen (Ctrl-L) and the scrollback, so the next answer stands alone."""
    tmux("send-keys", "-t", SESSION, "C-l")
    time.sleep(0.2)
    tmux("clear-history", "-t", SESSION)


def command(text, prompt, expected):
    """Types `text` and Enter on a clear screen, then waits for the next prompt after it with
    every string of `expected` in between."""
    clear()
    tmux("send-keys", "-t", SESSION, "-l", text)
    tmux("send-keys", "-t", SESSION, "Enter")

    def answered(screen_text):
        _, typed, after = screen_text.rpartition(f"{prompt} {text}")
        answer, next_prompt, _ = after.partition(prompt)
        return typed and next_prompt and all(e in answer for e in expected)

    wait_for(text, answered)
    check_true(text, True, expected)


def completes(partial, completed):
    """Types `partial`, presses Tab until the line reads `completed` (the completion
    refresher loads the catalog in the background), then clears the line."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        clear()
        tmux("send-keys", "-t", SESSION, "-l", partial)
        time.sleep(0.3)
        tmux("send-keys", "-t", SESSION, "Tab")
        time.sleep(0.5)
        line = next(l for l in screen().splitlines() if partial[:6] in l)
        tmux("send-keys", "-t", SESSION, "Escape")
        tmux("send-keys", "-t", SESSION, "C-u")
        if line.rstrip().endswith(completed):
            check_true(f"completion of {partial!r}", True, line.strip())
            return
        if time.monotonic() > deadline:
            raise CheckFailed(f"completion of {partial!r}: the line reads {line!r}")
        time.sleep(0.5)


def main():
    if shutil.which("tmux") is None:
        raise CheckFailed("tmux is not installed")
    env = os.environ
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        log = work / "pgcli.log"
        rc = work / "pgclirc"
        rc.write_text(PGCLIRC.format(log=log, history=work / "history"))
        argv = [
            str(PGCLI),
            "--pgclirc", str(rc),
            "-h", env["PGHOST"],
            "-p", env["PGPORT"],
            "-U", env["PGUSER"],
            "-w",
            env["PGDATABASE"],
        ]
        tmux(
            "new-session", "-d", "-s", SESSION, "-x", "200", "-y", "50",
            "env", f"HOME={work}", "TERM=xterm", *argv,
        )
        try:
            prompt = f"{env['PGUSER']}@{env['PGHOST']}:{env['PGDATABASE']}>"
            wait_for("pgcli's prompt", lambda text: prompt in text)
            check_true("pgcli starts", True, prompt)
            command("\\dt", prompt, ["customers", "orders", "table"])
            command("\\dv", prompt, ["big_orders", "view"])
            command("\\dm analytics.*", prompt, ["customer_totals", "materialized view"])
            command("\\di", prompt, ["orders_customer_idx", "orders_pkey", "customers_pkey", "index"])
            command("\\d orders", prompt, ["customer", "numeric(12,2)", "orders_customer_idx"])
            completes("SELECT name FROM custo", "SELECT name FROM customers")
            completes("SELECT id FROM orders WHERE custo", "WHERE customer")
            command("SELECT count(*) AS n FROM orders WHERE amount > 100", prompt, ["2", "SELECT 1"])
            tmux("send-keys", "-t", SESSION, "-l", "\\q")
            tmux("send-keys", "-t", SESSION, "Enter")
        finally:
            subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
        errors = [l for l in log.read_text().splitlines() if " ERROR " in l] if log.exists() else []
        if errors:
            raise CheckFailed("pgcli logged errors:\n" + "\n".join(errors))
        check_true("pgcli's log holds no error", True, str(log))


if __name__ == "__main__":
    run("pgcli_check.py", main)
