"""psqlODBC (Debian's odbc-postgresql, through unixODBC and pyodbc) against the server that
PGHOST, PGPORT, PGUSER and PGDATABASE name, as an ODBC tool (Excel, Power BI, Tableau's ODBC
path) browses a schema: SQLTables, SQLColumns, SQLPrimaryKeys, SQLForeignKeys (both
directions; psqlODBC's query numbers key columns with a `generate_series` in its select list),
SQLStatistics, and a query's typed rows. The demo schema of demo_schema.sql must be loaded.
Every expected value is PostgreSQL 15's; exits non-zero on the first difference.
"""

import datetime
import os
from decimal import Decimal

import pyodbc

from compat_check import check, run


def main():
    env = os.environ
    conn = pyodbc.connect(
        "DRIVER={PostgreSQL Unicode};"
        f"SERVER={env['PGHOST']};PORT={env['PGPORT']};"
        f"DATABASE={env['PGDATABASE']};UID={env['PGUSER']};PWD=",
        autocommit=True,
    )
    cur = conn.cursor()
    tables = [(r.table_name, r.table_type) for r in cur.tables(schema="public").fetchall()]
    check(
        "SQLTables public",
        sorted(tables),
        [("big_orders", "VIEW"), ("customers", "TABLE"), ("orders", "TABLE")],
    )
    columns = [
        (r.column_name, r.type_name, r.nullable)
        for r in cur.columns(table="orders", schema="public").fetchall()
    ]
    check(
        "SQLColumns orders",
        columns,
        [
            ("id", "int8", 0),
            ("customer", "text", 0),
            ("amount", "numeric", 1),
            ("created_at", "timestamptz", 1),
            ("tags", "_text", 1),
            ("attrs", "jsonb", 1),
        ],
    )
    amount = [r for r in cur.columns(table="orders", schema="public").fetchall()][2]
    check("SQLColumns orders.amount precision, scale", (amount.column_size, amount.decimal_digits), (12, 2))
    keys = [
        (r.column_name, r.key_seq, r.pk_name)
        for r in cur.primaryKeys(table="orders", schema="public").fetchall()
    ]
    check("SQLPrimaryKeys orders", keys, [("id", 1, "orders_pkey")])
    check(
        "SQLForeignKeys referencing orders",
        cur.foreignKeys(table="orders", schema="public").fetchall(),
        [],
    )
    check(
        "SQLForeignKeys of orders",
        cur.foreignKeys(foreignTable="orders", foreignSchema="public").fetchall(),
        [],
    )
    indexes = [
        (r.index_name, r.column_name, r.non_unique)
        for r in cur.statistics(table="orders", schema="public").fetchall()
        if r.index_name is not None
    ]
    check(
        "SQLStatistics orders",
        sorted(indexes),
        [("orders_customer_idx", "customer", 1), ("orders_pkey", "id", 0)],
    )
    rows = cur.execute("SELECT id, amount, created_at, tags FROM orders ORDER BY id").fetchall()
    check(
        "typed rows",
        [tuple(r) for r in rows],
        [
            (1, Decimal("10.50"), datetime.datetime(2026, 1, 1, 10, 0), "{a,b}"),
            (2, Decimal("250.00"), datetime.datetime(2026, 1, 2, 11, 30), "{}"),
            (3, Decimal("120.25"), datetime.datetime(2026, 1, 3, 12, 45), None),
        ],
    )
    conn.close()


if __name__ == "__main__":
    run("odbc_check.py", main)
