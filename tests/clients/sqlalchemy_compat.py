"""SQLAlchemy (1.4 or 2.0) + psycopg2 against the demo schema.

Reflection goes through the PostgreSQL dialect's catalog queries (pg_class,
pg_attribute, pg_index, pg_description, ...), so this exercises the server's
pg_catalog as SQLAlchemy sees it. The pandas check runs only where pandas is
importable.
"""

import datetime
from decimal import Decimal

import sqlalchemy
from sqlalchemy import MetaData, Table, create_engine, inspect, select, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import URL

from compat_check import (
    check,
    check_contains,
    check_instance,
    check_true,
    check_type,
    connection_settings,
    run,
)

SQLALCHEMY_2 = int(sqlalchemy.__version__.split(".")[0]) >= 2

UTC = datetime.timezone.utc
ORDER_COLUMNS = ["id", "customer", "amount", "created_at", "tags", "attrs"]
EXPECTED_ORDERS = [
    (1, "ann", Decimal("10.50"), datetime.datetime(2026, 1, 1, 10, 0, tzinfo=UTC), ["a", "b"], {"k": 1}),
    (2, "bob", Decimal("250.00"), datetime.datetime(2026, 1, 2, 11, 30, tzinfo=UTC), [], {"k": 2}),
    (3, "ann", Decimal("120.25"), datetime.datetime(2026, 1, 3, 12, 45, tzinfo=UTC), None, None),
]


def make_engine():
    settings = connection_settings()
    url = URL.create(
        "postgresql+psycopg2",
        username=settings["user"],
        host=settings["host"],
        port=settings["port"],
        database=settings["dbname"],
    )
    print(f"SQLAlchemy {sqlalchemy.__version__}, connecting to {url}")
    return create_engine(url)


def check_select_one(engine):
    with engine.connect() as conn:
        check("SELECT 1", conn.execute(text("SELECT 1")).scalar(), 1)


def check_relation_names(insp):
    schemas = insp.get_schema_names()
    check_contains("get_schema_names", schemas, "public")
    check_contains("get_schema_names", schemas, "analytics")
    check("get_table_names()", sorted(insp.get_table_names()), ["customers", "orders"])
    check("get_table_names(schema='analytics')", insp.get_table_names(schema="analytics"), [])
    if SQLALCHEMY_2:
        check("get_view_names()", insp.get_view_names(), ["big_orders"])
        check("get_materialized_view_names()", insp.get_materialized_view_names(), [])
        check(
            "get_materialized_view_names(schema='analytics')",
            insp.get_materialized_view_names(schema="analytics"),
            ["customer_totals"],
        )
    else:
        check("get_view_names(include=('plain',))", insp.get_view_names(include=("plain",)), ["big_orders"])
        check(
            "get_view_names(schema='analytics', include=('materialized',))",
            insp.get_view_names(schema="analytics", include=("materialized",)),
            ["customer_totals"],
        )
        check("get_view_names() (plain and materialized)", insp.get_view_names(), ["big_orders"])


def columns_by_name(insp, relation, schema=None):
    columns = insp.get_columns(relation, schema=schema)
    return [c["name"] for c in columns], {c["name"]: c for c in columns}


def check_numeric(what, type_, precision, scale):
    check_type(what, type_, postgresql.NUMERIC)
    check(f"{what} precision", type_.precision, precision)
    check(f"{what} scale", type_.scale, scale)


def check_orders_columns(insp):
    names, cols = columns_by_name(insp, "orders")
    check("orders column names", names, ORDER_COLUMNS)
    check_type("orders.id type", cols["id"]["type"], postgresql.BIGINT)
    check_type("orders.customer type", cols["customer"]["type"], postgresql.TEXT)
    check_numeric("orders.amount type", cols["amount"]["type"], 12, 2)
    check_type("orders.created_at type", cols["created_at"]["type"], postgresql.TIMESTAMP)
    check("orders.created_at timezone", cols["created_at"]["type"].timezone, True)
    check_type("orders.tags type", cols["tags"]["type"], postgresql.ARRAY)
    check_type("orders.tags item type", cols["tags"]["type"].item_type, postgresql.TEXT)
    check_type("orders.attrs type", cols["attrs"]["type"], postgresql.JSONB)
    nullable = {name: cols[name]["nullable"] for name in names}
    check(
        "orders nullable",
        nullable,
        {"id": False, "customer": False, "amount": True, "created_at": True, "tags": True, "attrs": True},
    )
    check("orders.amount comment", cols["amount"]["comment"], "Order total in EUR")
    check("orders.customer comment", cols["customer"]["comment"], None)
    check("orders.id default", cols["id"]["default"], None)


def check_customers_columns(insp):
    names, cols = columns_by_name(insp, "customers")
    check("customers column names", names, ["name", "region", "vip"])
    check_type("customers.region type", cols["region"]["type"], postgresql.VARCHAR)
    check("customers.region length", cols["region"]["type"].length, 20)
    check_type("customers.vip type", cols["vip"]["type"], postgresql.BOOLEAN)
    check("customers.vip nullable", cols["vip"]["nullable"], False)
    check("customers.vip default", cols["vip"]["default"], "false")
    check("customers.name default", cols["name"]["default"], None)


def check_view_columns(insp):
    names, cols = columns_by_name(insp, "big_orders")
    check("big_orders column names", names, ["id", "customer", "amount"])
    check_type("big_orders.id type", cols["id"]["type"], postgresql.BIGINT)
    check_type("big_orders.customer type", cols["customer"]["type"], postgresql.TEXT)
    check_instance("big_orders.amount type class", cols["amount"]["type"], sqlalchemy.Numeric)
    check("big_orders nullable", [cols[n]["nullable"] for n in names], [True, True, True])


def check_materialized_view_columns(insp):
    names, cols = columns_by_name(insp, "customer_totals", schema="analytics")
    check("customer_totals column names", names, ["customer", "order_count", "total"])
    check_type("customer_totals.customer type", cols["customer"]["type"], postgresql.TEXT)
    check_type("customer_totals.order_count type", cols["order_count"]["type"], postgresql.BIGINT)
    check_instance("customer_totals.total type class", cols["total"]["type"], sqlalchemy.Numeric)
    check(
        "customer_totals comment",
        insp.get_table_comment("customer_totals", schema="analytics"),
        {"text": "Totals per customer"},
    )


def check_constraints_and_indexes(insp):
    pk = insp.get_pk_constraint("orders")
    check("orders primary key columns", pk["constrained_columns"], ["id"])
    check("orders primary key name", pk["name"], "orders_pkey")
    indexes = {ix["name"]: ix for ix in insp.get_indexes("orders")}
    check_contains("orders index names", indexes, "orders_customer_idx")
    customer_idx = indexes["orders_customer_idx"]
    check("orders_customer_idx columns", customer_idx["column_names"], ["customer"])
    check("orders_customer_idx unique", customer_idx["unique"], False)
    check("customers indexes", insp.get_indexes("customers"), [])
    check("orders unique constraints", insp.get_unique_constraints("orders"), [])
    check("orders foreign keys", insp.get_foreign_keys("orders"), [])
    check("orders table comment", insp.get_table_comment("orders"), {"text": "Customer orders"})
    check("customers table comment", insp.get_table_comment("customers"), {"text": None})


def check_order_row(what, row, expected):
    check(what, tuple(row), expected)
    created_at = row[3]
    check_true(f"{what} created_at is timezone-aware", created_at.tzinfo is not None, created_at)
    check_type(f"{what} amount", row[2], Decimal)


def check_reflected_table(engine):
    orders = Table("orders", MetaData(), autoload_with=engine)
    check("reflected orders columns", [c.name for c in orders.columns], ORDER_COLUMNS)
    check("reflected orders primary key", [c.name for c in orders.primary_key.columns], ["id"])
    check_numeric("reflected orders.amount type", orders.c.amount.type, 12, 2)
    check("reflected orders comment", orders.comment, "Customer orders")
    with engine.connect() as conn:
        rows = conn.execute(select(orders).order_by(orders.c.id)).fetchall()
        check("rows through reflected table", len(rows), 3)
        for row, expected in zip(rows, EXPECTED_ORDERS):
            check_order_row(f"reflected row id={expected[0]}", row, expected)
        big = conn.execute(select(orders.c.id).where(orders.c.amount > Decimal("100")).order_by(orders.c.id))
        check("ids with amount > 100", [r[0] for r in big], [2, 3])


def check_parameterized_text(engine):
    query = text("SELECT customer, amount FROM orders WHERE id = :id")
    with engine.connect() as conn:
        check("text() with :id = 2", tuple(conn.execute(query, {"id": 2}).one()), ("bob", Decimal("250.00")))
        check("text() with :id = 42", conn.execute(query, {"id": 42}).fetchall(), [])
        totals = conn.execute(
            text("SELECT customer, order_count, total FROM analytics.customer_totals ORDER BY customer")
        )
        check(
            "materialized view rows",
            [tuple(r) for r in totals],
            [("ann", 2, Decimal("130.75")), ("bob", 1, Decimal("250.00"))],
        )


def check_pandas(engine):
    try:
        import pandas
    except ImportError:
        print("skip pandas.read_sql: pandas is not installed")
        return
    frame = pandas.read_sql("SELECT * FROM orders ORDER BY id", engine)
    check("read_sql shape", frame.shape, (3, 6))
    check("read_sql columns", list(frame.columns), ORDER_COLUMNS)
    check("read_sql id dtype", str(frame["id"].dtype), "int64")
    customer_dtype = frame["customer"].dtype
    is_string = pandas.api.types.is_string_dtype(customer_dtype)
    check_true("read_sql customer dtype is a string dtype", is_string, str(customer_dtype))
    check_instance("read_sql created_at dtype", frame["created_at"].dtype, pandas.DatetimeTZDtype)
    check("read_sql created_at tz", str(frame["created_at"].dt.tz), "UTC")
    check("read_sql amount dtype (coerce_float turns Decimal into float)", str(frame["amount"].dtype), "float64")
    check("read_sql ids", frame["id"].tolist(), [1, 2, 3])
    check("read_sql customers", frame["customer"].tolist(), ["ann", "bob", "ann"])
    check("read_sql amounts", frame["amount"].tolist(), [10.5, 250.0, 120.25])
    check("read_sql first created_at", frame["created_at"][0], pandas.Timestamp("2026-01-01 10:00:00+00:00"))
    check("read_sql tags", frame["tags"].tolist()[:2], [["a", "b"], []])
    check_true("read_sql tags[2] is null", frame["tags"].isna()[2], frame["tags"][2])
    check("read_sql attrs", frame["attrs"].tolist()[:2], [{"k": 1}, {"k": 2}])


def main():
    engine = make_engine()
    try:
        check_select_one(engine)
        insp = inspect(engine)
        check_relation_names(insp)
        check_orders_columns(insp)
        check_customers_columns(insp)
        check_view_columns(insp)
        check_materialized_view_columns(insp)
        check_constraints_and_indexes(insp)
        check_reflected_table(engine)
        check_parameterized_text(engine)
        check_pandas(engine)
    finally:
        engine.dispose()


if __name__ == "__main__":
    run("sqlalchemy_compat", main)
