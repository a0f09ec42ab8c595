"""psycopg 3 against the demo schema: binary results and parameters, prepared
statements, transactions, COPY FROM STDIN, a server-side cursor and errors.

psycopg 3 always binds parameters on the server (extended protocol); with
binary=True it asks for binary result columns and sends binary parameters.
Rows this program writes go to `customers` under names starting with
`psycopg3_` and are deleted again before it exits.
"""

import datetime
from decimal import Decimal

import psycopg
from psycopg import pq

from compat_check import (
    check,
    check_contains,
    check_true,
    check_type,
    connection_settings,
    expect_error,
    run,
)

UTC = datetime.timezone.utc
ORDER_COLUMNS = "id, customer, amount, created_at, tags, attrs"
EXPECTED_ORDERS = [
    (1, "ann", Decimal("10.50"), datetime.datetime(2026, 1, 1, 10, 0, tzinfo=UTC), ["a", "b"], {"k": 1}),
    (2, "bob", Decimal("250.00"), datetime.datetime(2026, 1, 2, 11, 30, tzinfo=UTC), [], {"k": 2}),
    (3, "ann", Decimal("120.25"), datetime.datetime(2026, 1, 3, 12, 45, tzinfo=UTC), None, None),
]
# Built-in type OIDs: int8, text, numeric, timestamptz, _text, jsonb.
ORDER_TYPE_OIDS = [20, 25, 1700, 1184, 1009, 3802]
SCRATCH_NAMES = ["psycopg3_param", "psycopg3_tx", "psycopg3_rb", "psycopg3_copy"]


def connect(**kwargs):
    return psycopg.connect(**connection_settings(), **kwargs)


def delete_scratch_rows():
    with connect(autocommit=True) as conn:
        placeholders = ", ".join(["%s"] * len(SCRATCH_NAMES))
        conn.execute(f"DELETE FROM customers WHERE name IN ({placeholders})", SCRATCH_NAMES)


def customer_row(name):
    """(region, vip) of a customer as seen by a fresh connection, or None."""
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT region, vip FROM customers WHERE name = %s", [name]).fetchone()


def check_session(conn):
    info = conn.info
    check("transaction status after connect", info.transaction_status, pq.TransactionStatus.IDLE)
    check_true("server_version is 15.x", 150000 <= info.server_version < 160000, info.server_version)
    for name, expected in [
        ("client_encoding", "UTF8"),
        ("server_encoding", "UTF8"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
    ]:
        check(f"parameter status {name}", info.parameter_status(name), expected)
    datestyle = info.parameter_status("DateStyle") or ""
    check_true("parameter status DateStyle starts with ISO", datestyle.startswith("ISO"), datestyle)
    timezone = info.parameter_status("TimeZone")
    check_true("parameter status TimeZone is reported", bool(timezone), timezone)
    check_true("backend pid is positive", info.backend_pid > 0, info.backend_pid)


def check_order_rows(what, cur):
    check(f"{what} column names", [d.name for d in cur.description], ORDER_COLUMNS.split(", "))
    check(f"{what} column type oids", [d.type_code for d in cur.description], ORDER_TYPE_OIDS)
    rows = cur.fetchall()
    check(f"{what} rows", rows, EXPECTED_ORDERS)
    python_types = [int, str, Decimal, datetime.datetime, list, dict]
    for column, value, cls in zip(ORDER_COLUMNS.split(", "), rows[0], python_types):
        check_type(f"{what} {column} python type", value, cls)
    check_true(f"{what} created_at is timezone-aware", rows[0][3].tzinfo is not None, rows[0][3])


def result_formats(cur):
    return [cur.pgresult.fformat(i) for i in range(cur.pgresult.nfields)]


def check_fetch_all_types(conn):
    query = f"SELECT {ORDER_COLUMNS} FROM orders ORDER BY id"
    with conn.cursor() as cur:
        cur.execute(query)
        check("text cursor result formats", result_formats(cur), [0] * 6)
        check_order_rows("text cursor", cur)
    with conn.cursor(binary=True) as cur:
        cur.execute(query)
        check("binary cursor result formats", result_formats(cur), [1] * 6)
        check_order_rows("binary cursor", cur)
    cur = conn.execute(query, binary=True)
    check("conn.execute(binary=True) result formats", result_formats(cur), [1] * 6)
    check_order_rows("conn.execute(binary=True)", cur)
    conn.commit()


def check_parameter_round_trip(conn):
    created = datetime.datetime(2026, 1, 2, 11, 30, tzinfo=UTC)
    params = [7, 5_000_000_000, "héllo", Decimal("-12.345"), created, True, ["x", "y z", None], None]
    for binary in (False, True):
        # psycopg sends str (and so list[str]) as type "unknown" in text mode: cast the list.
        row = conn.execute("SELECT %s, %s, %s, %s, %s, %s, %s::text[], %s::text", params, binary=binary).fetchone()
        check(f"parameter round trip (binary={binary})", list(row), params)
    conn.commit()


def ids(conn, where, params, binary=True):
    rows = conn.execute(f"SELECT id FROM orders WHERE {where} ORDER BY id", params, binary=binary).fetchall()
    return [r[0] for r in rows]


def check_typed_parameters(conn):
    for binary in (False, True):
        suffix = f"(binary={binary})"
        check(f"int parameter {suffix}", ids(conn, "id = %s", [2], binary), [2])
        check(f"str parameter {suffix}", ids(conn, "customer = %s", ["ann"], binary), [1, 3])
        check(f"Decimal parameter {suffix}", ids(conn, "amount > %s", [Decimal("100.00")], binary), [2, 3])
        check(
            f"datetime parameter {suffix}",
            ids(conn, "created_at >= %s", [datetime.datetime(2026, 1, 2, tzinfo=UTC)], binary),
            [2, 3],
        )
        check(f"list[str] parameter {suffix}", ids(conn, "tags = %s", [["a", "b"]], binary), [1])
        vip = conn.execute("SELECT name FROM customers WHERE vip = %s ORDER BY name", [True], binary=binary)
        check(f"bool parameter {suffix}", vip.fetchall(), [("ann",)])
    conn.execute("INSERT INTO customers VALUES (%s, %s, %s)", ["psycopg3_param", None, False])
    conn.commit()
    check("row inserted with a None parameter", customer_row("psycopg3_param"), (None, False))


def check_prepared(conn):
    query = "SELECT customer, amount FROM orders WHERE id = %s"
    expected = {1: ("ann", Decimal("10.50")), 2: ("bob", Decimal("250.00")), 3: ("ann", Decimal("120.25"))}
    with conn.cursor(binary=True) as cur:
        for run_number in range(6):
            order_id = run_number % 3 + 1
            cur.execute(query, [order_id], prepare=True)
            check(f"prepared run {run_number + 1} (id={order_id})", cur.fetchone(), expected[order_id])
    conn.prepare_threshold = 0
    for order_id in (3, 2, 1):
        row = conn.execute("SELECT count(*) FROM orders WHERE id <= %s", [order_id]).fetchone()
        check(f"prepare_threshold=0, id <= {order_id}", row, (order_id,))
    conn.prepare_threshold = 5
    conn.commit()


def check_transactions(conn):
    conn.execute("INSERT INTO customers VALUES ('psycopg3_tx', 'east', false)")
    check("transaction status inside transaction", conn.info.transaction_status, pq.TransactionStatus.INTRANS)
    check("uncommitted row invisible to another connection", customer_row("psycopg3_tx"), None)
    conn.commit()
    check("committed row visible to another connection", customer_row("psycopg3_tx"), ("east", False))

    conn.execute("INSERT INTO customers VALUES ('psycopg3_rb', 'east', true)")
    own = conn.execute("SELECT count(*) FROM customers WHERE name = 'psycopg3_rb'").fetchone()
    check("own uncommitted row visible", own, (1,))
    conn.rollback()
    check("rolled-back row is gone", customer_row("psycopg3_rb"), None)

    with conn.transaction():
        conn.execute("UPDATE customers SET region = 'west' WHERE name = 'psycopg3_tx'")
    check("conn.transaction() block committed", customer_row("psycopg3_tx"), ("west", False))


def check_copy(conn):
    with conn.cursor() as cur:
        with cur.copy("COPY customers FROM STDIN") as copy:
            copy.write_row(("psycopg3_copy", "copy region", True))
        check("COPY rowcount", cur.rowcount, 1)
    conn.commit()
    check("row written by COPY", customer_row("psycopg3_copy"), ("copy region", True))


def check_server_cursor(conn):
    with conn.cursor(name="c1") as cur:
        cur.itersize = 1
        cur.execute("SELECT id, customer FROM orders ORDER BY id")
        status = conn.info.transaction_status
        check("transaction status while named cursor is open", status, pq.TransactionStatus.INTRANS)
        check("rows from named cursor c1", list(cur), [(1, "ann"), (2, "bob"), (3, "ann")])
    with conn.cursor(name="c2", binary=True) as cur:
        cur.execute("SELECT amount FROM orders ORDER BY id")
        check("binary named cursor fetchmany(2)", cur.fetchmany(2), [(Decimal("10.50"),), (Decimal("250.00"),)])
        check("binary named cursor fetchall()", cur.fetchall(), [(Decimal("120.25"),)])
    conn.commit()


def check_errors(conn):
    exc = expect_error(
        "SELECT from an unknown table",
        lambda: conn.execute("SELECT * FROM no_such_table"),
        psycopg.errors.UndefinedTable,
    )
    check("SQLSTATE", exc.sqlstate, "42P01")
    check_contains("error message", exc.diag.message_primary or "", "no_such_table")
    check("transaction status after error", conn.info.transaction_status, pq.TransactionStatus.INERROR)
    expect_error(
        "statement in a failed transaction",
        lambda: conn.execute("SELECT 1"),
        psycopg.errors.InFailedSqlTransaction,
    )
    conn.rollback()
    check("SELECT 1 after rollback", conn.execute("SELECT 1").fetchone(), (1,))
    exc = expect_error(
        "parameterized SELECT from an unknown table",
        lambda: conn.execute("SELECT * FROM no_such_table WHERE x = %s", [1]),
        psycopg.errors.UndefinedTable,
    )
    check("SQLSTATE (extended protocol)", exc.sqlstate, "42P01")
    conn.rollback()
    check("parameterized query after rollback", ids(conn, "id = %s", [3]), [3])
    conn.commit()


def main():
    print(f"psycopg {psycopg.__version__} (libpq {pq.version()}, implementation {pq.__impl__})")
    delete_scratch_rows()
    try:
        with connect() as conn:
            check_session(conn)
            check_fetch_all_types(conn)
            check_parameter_round_trip(conn)
            check_typed_parameters(conn)
            check_prepared(conn)
            check_transactions(conn)
            check_copy(conn)
            check_server_cursor(conn)
            check_errors(conn)
    finally:
        delete_scratch_rows()
    check("scratch rows removed", customer_row("psycopg3_tx"), None)


if __name__ == "__main__":
    run("psycopg3_compat", main)
