#!/usr/bin/env bash
# Usage: validate_against_pg.sh [WORK_DIR] [PORT]
#
# Runs every client program against a throwaway PostgreSQL 15 (the reference
# behaviour) and records into captured/ the distinct SQL each one sent
# (NAME.sql) and its wire-protocol trace through wire_trace.py (NAME.wire.txt,
# on PORT+1).
# Starts the cluster in WORK_DIR (default /tmp/fluxion-clients-pg) on PORT
# (default 5440) with log_statement=all, loads demo_schema.sql, refreshes the
# materialized view (Fluxion's are always fresh), runs the programs, stops it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${1:-/tmp/fluxion-clients-pg}
port=${2:-5440}
proxy_port=$((port + 1))
pgbin=/usr/lib/postgresql/15/bin
data="$work/data"
log="$work/server.log"

as_postgres() {
    if [[ $(id -u) -eq 0 ]]; then
        su postgres -c "$*"
    else
        bash -c "$*"
    fi
}

stop_cluster() {
    as_postgres "$pgbin/pg_ctl -D '$data' -m fast stop" >/dev/null || true
}

start_cluster() {
    rm -rf "$data" "$log"
    mkdir -p "$work"
    if [[ $(id -u) -eq 0 ]]; then chown postgres "$work"; fi
    as_postgres "$pgbin/initdb -D '$data' -U postgres --auth=trust --locale=C.UTF-8 -E UTF8" >"$work/initdb.log"
    as_postgres "$pgbin/pg_ctl -D '$data' -l '$log' -w start -o \"-p $port -k '$work' -c listen_addresses=127.0.0.1 \
        -c log_statement=all -c lc_messages=C -c log_line_prefix='%m [%p] '\"" >/dev/null
    trap stop_cluster EXIT
}

load_schema() {
    psql -q -X -v ON_ERROR_STOP=1 -f "$here/demo_schema.sql"
    psql -q -X -v ON_ERROR_STOP=1 -c "REFRESH MATERIALIZED VIEW analytics.customer_totals"
}

# run_captured NAME COMMAND...: run one program through wire_trace.py, then
# save the SQL it sent (from the server log) and its protocol trace.
run_captured() {
    local name=$1
    shift
    local offset proxy_pid status=0
    offset=$(stat -c %s "$log")
    python3 "$here/wire_trace.py" "$proxy_port" "$port" "$here/captured/$name.wire.txt" &
    proxy_pid=$!
    sleep 0.5
    echo "=== $name"
    PGPORT=$proxy_port "$@" >"$work/$name.out" 2>&1 || status=$?
    sleep 0.5
    kill "$proxy_pid"
    wait "$proxy_pid" 2>/dev/null || true
    if [[ $status -ne 0 ]]; then
        cat "$work/$name.out"
        echo "FAILED: $name"
        exit 1
    fi
    tail -n 1 "$work/$name.out"
    python3 "$here/capture_statements.py" "$log" "$offset" "$here/captured/$name.sql" "$name"
}

start_cluster
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
load_schema

"$here/setup_python.sh" "$work/venv-sqla2" sqla2
"$here/setup_python.sh" "$work/venv-sqla14" sqla14
"$here/setup_java.sh"
javac -d "$work/jdbc-classes" -cp /usr/share/java/postgresql.jar "$here/jdbc/JdbcCompat.java"

mkdir -p "$here/captured"
run_captured sqlalchemy_compat_sqla2 "$work/venv-sqla2/bin/python" "$here/sqlalchemy_compat.py"
run_captured sqlalchemy_compat_sqla14 "$work/venv-sqla14/bin/python" "$here/sqlalchemy_compat.py"
run_captured psycopg3_compat "$work/venv-sqla2/bin/python" "$here/psycopg3_compat.py"
run_captured jdbc_compat java -cp "/usr/share/java/postgresql.jar:$work/jdbc-classes" JdbcCompat
echo "all client programs passed against PostgreSQL 15"
