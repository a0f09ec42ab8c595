"""psycopg 3 (libpq) over TLS with SCRAM password authentication.

The server named by PGHOST (`localhost`), PGPORT, PGDATABASE is expected to
accept PGUSER only over TLS (`hostssl ... scram-sha-256`), with a certificate
signed by the CA in PGSSLROOTCERT whose SAN covers the host name. Checks, in
order:

- sslmode=verify-full with sslrootcert=$PGSSLROOTCERT and
  channel_binding=require (SCRAM-SHA-256-PLUS) connects: TLS in use, protocol
  TLSv1.2 or TLSv1.3 (PQsslAttribute), a password was asked for,
  `current_user` is PGUSER and a parameterized `SELECT %s::int + 1` works;
- the same with a wrong password fails with `password authentication failed
  for user "<PGUSER>"` (libpq puts the SQLSTATE 28P01 of a startup failure
  only in the message text, so the text is checked);
- sslmode=disable fails with `no pg_hba.conf entry for host ..., no
  encryption` (28000);
- sslmode=verify-full with an empty root certificate file fails: nothing can
  be verified without a trusted root.

GSSAPI encryption is disabled on every attempt so that TLS (or nothing) is
what gets negotiated, whatever Kerberos credentials the machine may hold.
"""

import ctypes
import os
import tempfile

import psycopg
from psycopg import pq

from compat_check import (
    CheckFailed,
    check,
    check_contains,
    check_true,
    connection_settings,
    expect_error,
    run,
)

TLS_PROTOCOLS = ("TLSv1.2", "TLSv1.3")


def required_env(name):
    value = os.environ.get(name)
    if not value:
        raise CheckFailed(f"environment variable {name} must be set")
    return value


def connect(**kwargs):
    params = {**connection_settings(), "gssencmode": "disable", **kwargs}
    return psycopg.connect(**params)


def libpq_library():
    """The libpq shared library psycopg is using, opened with ctypes.

    psycopg's PGconn has no ssl_attribute(); PQsslAttribute is called directly
    on the PGconn pointer, in the very libpq that created it (psycopg-binary
    bundles its own copy, found among the process's mapped files).
    """
    paths = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and "/libpq" in fields[-1] and fields[-1] not in paths:
                paths.append(fields[-1])
    if pq.__impl__ == "binary":
        bundled = [p for p in paths if "psycopg_binary" in p]
        paths = bundled or paths
    if len(paths) != 1:
        raise CheckFailed(f"cannot tell which libpq psycopg ({pq.__impl__}) uses: {paths!r}")
    lib = ctypes.CDLL(paths[0])
    lib.PQsslAttribute.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.PQsslAttribute.restype = ctypes.c_char_p
    return lib


def ssl_attribute(conn, name):
    value = libpq_library().PQsslAttribute(conn.pgconn.pgconn_ptr, name.encode())
    return None if value is None else value.decode()


def check_verified_connection(user, password, rootcert):
    with connect(password=password, sslmode="verify-full", sslrootcert=rootcert,
                 channel_binding="require") as conn:
        print("ok   connect with sslmode=verify-full, channel_binding=require")
        check("ssl_in_use", conn.pgconn.ssl_in_use, True)
        protocol = ssl_attribute(conn, "protocol")
        check_true("TLS protocol is TLSv1.2 or TLSv1.3", protocol in TLS_PROTOCOLS, protocol)
        check("password was used", conn.pgconn.used_password, True)
        check("current_user", conn.execute("SELECT current_user").fetchone(), (user,))
        check("SELECT %s::int + 1 with 41", conn.execute("SELECT %s::int + 1", [41]).fetchone(), (42,))


def check_wrong_password(user, password, rootcert):
    exc = expect_error(
        "connect with a wrong password",
        lambda: connect(password=password + "-wrong", sslmode="verify-full", sslrootcert=rootcert,
                        channel_binding="require").close(),
        psycopg.OperationalError,
    )
    check_contains("wrong password message", str(exc), f'password authentication failed for user "{user}"')


def check_no_tls(password):
    exc = expect_error(
        "connect with sslmode=disable",
        lambda: connect(password=password, sslmode="disable").close(),
        psycopg.OperationalError,
    )
    message = str(exc)
    check_contains("sslmode=disable message", message, "no pg_hba.conf entry for host")
    check_contains("sslmode=disable message", message, "no encryption")


def check_untrusted_root(password):
    with tempfile.NamedTemporaryFile(prefix="empty-root-", suffix=".crt") as empty:
        exc = expect_error(
            "connect with sslmode=verify-full and an empty sslrootcert file",
            lambda: connect(password=password, sslmode="verify-full", sslrootcert=empty.name).close(),
            psycopg.OperationalError,
        )
    check_contains("empty sslrootcert message", str(exc), "certificate")


def main():
    print(f"psycopg {psycopg.__version__} (libpq {pq.version()}, implementation {pq.__impl__})")
    user = required_env("PGUSER")
    password = required_env("PGPASSWORD")
    rootcert = required_env("PGSSLROOTCERT")
    check_true("PGSSLROOTCERT is a readable file", os.access(rootcert, os.R_OK), rootcert)
    check_verified_connection(user, password, rootcert)
    check_wrong_password(user, password, rootcert)
    check_no_tls(password)
    check_untrusted_root(password)


if __name__ == "__main__":
    run("tls_check", main)
