"""Shared helpers for the Python client-compatibility programs.

Every check prints one line. The first wrong value raises CheckFailed; `run`
turns that, or any other exception (protocol error, catalog error, ...), into a
clear message and exit status 1.
"""

import os
import sys
import traceback


class CheckFailed(Exception):
    pass


def check(what, actual, expected):
    """Require actual == expected."""
    if actual != expected:
        raise CheckFailed(f"{what}: expected {expected!r}, got {actual!r}")
    print(f"ok   {what}: {actual!r}")


def check_true(what, condition, detail):
    """Require a condition; detail describes the value that was looked at."""
    if not condition:
        raise CheckFailed(f"{what}: condition failed for {detail!r}")
    print(f"ok   {what}: {detail!r}")


def check_contains(what, collection, item):
    if item not in collection:
        raise CheckFailed(f"{what}: {item!r} missing from {collection!r}")
    print(f"ok   {what}: {item!r} in {collection!r}")


def check_type(what, value, cls):
    """Require type(value) to be exactly cls (not merely a subclass)."""
    if type(value) is not cls:
        raise CheckFailed(
            f"{what}: expected an instance of exactly {cls.__module__}.{cls.__qualname__}, "
            f"got {type(value).__module__}.{type(value).__qualname__} ({value!r})"
        )
    print(f"ok   {what}: {value!r}")


def check_instance(what, value, cls):
    """Require isinstance(value, cls): used where only the type class is fixed."""
    if not isinstance(value, cls):
        raise CheckFailed(
            f"{what}: expected an instance of {cls.__module__}.{cls.__qualname__}, "
            f"got {type(value).__module__}.{type(value).__qualname__} ({value!r})"
        )
    print(f"ok   {what}: {value!r}")


def expect_error(what, action, error_cls):
    """Run action() and require it to raise error_cls; return the exception."""
    try:
        action()
    except error_cls as exc:
        print(f"ok   {what}: raised {type(exc).__name__}")
        return exc
    raise CheckFailed(f"{what}: expected {error_cls.__name__}, nothing was raised")


def connection_settings():
    """Connection info from the standard libpq environment variables."""
    return {
        "host": os.environ.get("PGHOST", "127.0.0.1"),
        "port": int(os.environ.get("PGPORT", "5432")),
        "user": os.environ.get("PGUSER", "fluxion"),
        "dbname": os.environ.get("PGDATABASE", "fluxion"),
    }


def run(program, main):
    """Run main(); exit 0 on success, 1 with a message on the first failure."""
    try:
        main()
    except CheckFailed as exc:
        print(f"FAIL {program}: {exc}", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:
        traceback.print_exc()
        print(f"FAIL {program}: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
    print(f"PASS {program}")
