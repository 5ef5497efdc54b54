#!/usr/bin/env bash
# What PostgreSQL allows for tvbo's writes on this machine, without tvbo: pgbench runs
# one suggest/observe round's statements (scripts.py) per round trip, pipelined, and
# batched across ten sessions (in multi-row statements, or as they are under
# savepoints), on a fresh database migrated by tvbo, with 50 sessions cloned from one
# that tvbo created. docs/performance.md, "What bounds PostgreSQL".
#
#   bash benches/postgres_ceiling/run.sh [seconds per run, default 12] [pairs, default 2]
#
# Needs target/release/tvbo, pgbench and psql, and PostgreSQL on 127.0.0.1:5432 (user
# postgres, trust); creates and drops the database tvbo_ceiling. Prints rounds per second.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-12}
pairs=${2:-2}
db=tvbo_ceiling
pg=(-h 127.0.0.1 -U postgres)
work=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"; psql "${pg[@]}" -qc "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT

psql "${pg[@]}" -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db"
target/release/tvbo migrate >/dev/null
key=$(target/release/tvbo keys create --name ceiling | tail -1)
target/release/tvbo serve --bind 127.0.0.1:18765 >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do
    curl -sf -o /dev/null http://127.0.0.1:18765/healthz && break
    sleep 0.2
done
curl -sf -o /dev/null -H "Authorization: Bearer $key" -H 'content-type: application/json' \
    -d '{"name":"ceiling","parameters":[{"name":"x","low":0,"high":1}],"algorithm":{"name":"random"}}' \
    http://127.0.0.1:18765/v1/sessions
kill "$server"; wait "$server" 2>/dev/null || true
psql "${pg[@]}" -d "$db" -q <<'SQL'
CREATE TEMP TABLE one AS SELECT * FROM sessions LIMIT 1;
DO $$ BEGIN FOR k IN 0..49 LOOP
  UPDATE one SET id = 'pgb-' || k; INSERT INTO sessions SELECT * FROM one;
END LOOP; END $$;
SQL
python3 benches/postgres_ceiling/scripts.py "$work"

run() { # name clients rounds-per-transaction
    local tps
    tps=$(pgbench "${pg[@]}" -M prepared -n -c "$2" -j 2 -T "$seconds" -f "$work/$1" "$db" 2>&1 |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    printf '%-22s %8.0f rounds/s\n' "$1" "$(echo "$tps * $3" | bc -l)"
}
for _ in $(seq "$pairs"); do
    run round.sql 50 1
    run round-pipelined.sql 50 1
    run batch.sql 5 10
    run batch-savepoints.sql 5 10
done
