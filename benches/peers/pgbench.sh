#!/usr/bin/env bash
# Concurrent single-row UPDATEs with pgbench, Fluxion and PostgreSQL 15 alternating.
#
# Both get `items (id BIGINT PRIMARY KEY, category BIGINT, price BIGINT)` with ROWS rows and
# 1,000 `categories`; Fluxion also maintains a materialized view joining them and grouping by
# category (PostgreSQL has nothing to maintain). CLIENTS pgbench clients then run
# `UPDATE items SET price = price + 1 WHERE id = :id` (a random id) for SECONDS seconds, in
# each query mode of MODES, ROUNDS times, Fluxion first. PostgreSQL runs with fsync on, its
# defaults otherwise. Prints one line per run and the median TPS per system and mode.
#
#   FLUXION=target/release/fluxion benches/peers/pgbench.sh
set -euo pipefail

FLUXION=${FLUXION:-target/release/fluxion}
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CLIENTS=${CLIENTS:-8}
ROWS=${ROWS:-100000}
MODES=${MODES:-"prepared simple"}
WORKERS=${WORKERS:-2}

bindir=$(pg_config --bindir)
work=$(mktemp -d)
chmod 755 "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

fluxion_pid=""
cleanup() {
    [ -n "$fluxion_pid" ] && kill "$fluxion_pid" 2>/dev/null || true
    as_postgres "$bindir/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

pg_port=$(free_port)
mkdir "$work/pg" && chown postgres "$work/pg" 2>/dev/null || true
as_postgres "$bindir/initdb" -D "$work/pg" -U postgres >/dev/null
as_postgres "$bindir/pg_ctl" -D "$work/pg" -l "$work/pg/log" -w \
    -o "-p $pg_port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work/pg" start >/dev/null

fluxion_port=$(free_port)
"$FLUXION" --listen "127.0.0.1:$fluxion_port" --http-listen 127.0.0.1:0 --workers "$WORKERS" \
    --data-dir "$work/fluxion" >"$work/fluxion.log" 2>&1 &
fluxion_pid=$!
for _ in $(seq 600); do
    psql -h 127.0.0.1 -p "$fluxion_port" -U fluxion -c 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.1
done

schema="CREATE TABLE categories (id BIGINT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE items (id BIGINT PRIMARY KEY, category BIGINT NOT NULL, price BIGINT NOT NULL);
INSERT INTO categories SELECT value, 'category-' || value FROM generate_series(0, 999) AS t(value);
INSERT INTO items SELECT value, value % 1000, value % 97 FROM generate_series(0, $((ROWS - 1))) AS t(value);"
view="CREATE MATERIALIZED VIEW category_totals AS
SELECT c.name, count(*) AS items, sum(i.price) AS total
FROM items i JOIN categories c ON i.category = c.id GROUP BY c.name;"
psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U postgres -c "$schema" >/dev/null
psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$fluxion_port" -U fluxion -c "$schema" -c "$view" >/dev/null

cat >"$work/update.sql" <<SQL
\set id random(0, $((ROWS - 1)))
UPDATE items SET price = price + 1 WHERE id = :id;
SQL

declare -A results
for round in $(seq "$ROUNDS"); do
    for mode in $MODES; do
        for system in fluxion postgres; do
            if [ "$system" = fluxion ]; then port=$fluxion_port user=fluxion; else port=$pg_port user=postgres; fi
            tps=$(pgbench -n -h 127.0.0.1 -p "$port" -U "$user" -c "$CLIENTS" -j "$CLIENTS" \
                -T "$SECONDS_PER_RUN" -M "$mode" -f "$work/update.sql" postgres 2>&1 |
                awk '/^tps = / { print $3 }')
            latency=$(awk -v tps="$tps" -v c="$CLIENTS" 'BEGIN { if (tps > 0) printf "%.2f", 1000 * c / tps }')
            echo "round $round, $mode, $system: $tps TPS (average latency $latency ms)"
            results["$system $mode"]+="$tps "
        done
    done
done
for key in "${!results[@]}"; do
    median=$(echo "${results[$key]}" | tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    echo "median $key: $median TPS"
done | sort
