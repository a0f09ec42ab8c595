#!/usr/bin/env bash
# Make sure psqlODBC (Debian's odbc-postgresql) and unixODBC are installed, with the driver
# registered as "PostgreSQL Unicode". Needs root; does nothing if the driver is there.
set -euo pipefail

if odbcinst -q -d 2>/dev/null | grep -qx '\[PostgreSQL Unicode\]'; then
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q odbc-postgresql unixodbc; then
    apt-get update -q
    apt-get install -y -q odbc-postgresql unixodbc
fi
odbcinst -q -d | grep -qx '\[PostgreSQL Unicode\]' \
    || { echo "setup_odbc.sh: the PostgreSQL Unicode driver is still missing" >&2; exit 1; }
