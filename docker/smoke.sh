#!/usr/bin/env bash
# End-to-end smoke test of the container deployment (docs/deploy.md), without Docker Hub:
# Debian base image by debootstrap and PostgreSQL, HAProxy and Prometheus images built
# from Debian packages (docker/local/build-images.sh), tvbo's runtime image from the
# host's release binary; then the compose stack of docker/compose.yaml, driven through its
# load balancer: a replica killed between requests; under a load of 4 clients, a `docker
# stop`, a `docker kill`, a rolling upgrade (docker/rolling-upgrade.sh) and the rollback
# drill (a newer release's migration recorded, then the rolling upgrade back to the old
# image), each measured (lost, duplicated, p99, errors).
#
#   sudo docker/smoke.sh            # from the repository; needs root (apt, dockerd)
#
# Not run by `cargo test` or .ci/run. Environment:
#   TVBO_SMOKE_DIR   work directory (rootfs, state)       default /tmp/tvbo-smoke
#   TVBO_SMOKE_PORT  the load balancer's published port   default 18080
#   TVBO_SMOKE_KEEP  1: leave the stack running at the end
#   TVBO_SMOKE_SKIP_BUILD  1: use the existing target/release/tvbo, no cargo build
#   TVBO_SMOKE_LOAD_ONLY   1: skip the checks after the load phases (down/up, backups)
# On failure it prints the stack's logs, takes the stack down and stops a dockerd it
# started.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
WORK=${TVBO_SMOKE_DIR:-/tmp/tvbo-smoke}
PORT=${TVBO_SMOKE_PORT:-18080}
PROJECT=tvbo-smoke
mkdir -p "$WORK"
say() { printf '\n== %s\n' "$*"; }
SUMMARY=()
note() { SUMMARY+=("$*"); printf '   %s\n' "$*"; }

say "tools"
# Another apt (unattended upgrades, a second shell) may hold the lock: wait for it.
apt_install() {
  for _ in $(seq 300); do
    busy=""
    for name in apt apt-get dpkg unattended-upgr; do pgrep -x "$name" >/dev/null && busy=1; done
    [ -n "$busy" ] || break
    sleep 1
  done
  apt-get -o DPkg::Lock::Timeout=300 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null
}
missing=()
# dockerd too: a docker client alone (a static binary, say) cannot run anything here.
{ command -v docker >/dev/null && command -v dockerd >/dev/null; } || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v curl >/dev/null || missing+=(curl)
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
  missing+=(docker-compose)
fi
if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
echo "compose: ${COMPOSE[*]} ($("${COMPOSE[@]}" version --short 2>/dev/null || true))"

# On any failure: the stack's state and logs, then nothing left running.
STARTED_DOCKERD=""
C=()
LOAD_CLIENT=""
finish() {
  status=$?
  # A load phase's client, when its event failed.
  if [ -n "$LOAD_CLIENT" ]; then kill "$LOAD_CLIENT" 2>/dev/null || true; fi
  if [ "$status" != 0 ] && ((${#C[@]})); then
    echo "== FAILED (exit $status): the stack's state and last logs" >&2
    "${C[@]}" ps >&2 || true
    "${C[@]}" logs --tail 40 >&2 || true
  fi
  if ((${#C[@]})) && { [ "$status" != 0 ] || [ "${TVBO_SMOKE_KEEP:-0}" != 1 ]; }; then
    "${C[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  fi
  docker rm -f tvbo-smoke-sqlite >/dev/null 2>&1 || true
  docker volume rm tvbo-smoke-sqlite >/dev/null 2>&1 || true
  if [ -n "$STARTED_DOCKERD" ] && [ "${TVBO_SMOKE_KEEP:-0}" != 1 ]; then
    echo "stopping the dockerd this script started"
    kill "$STARTED_DOCKERD" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 1; done
  fi
  exit "$status"
}
trap finish EXIT

say "docker daemon"
if ! docker info >/dev/null 2>&1; then
  echo "no daemon answers; starting dockerd (log: $WORK/dockerd.log)"
  nohup dockerd >"$WORK/dockerd.log" 2>&1 &
  STARTED_DOCKERD=$!
  echo "$STARTED_DOCKERD" >"$WORK/dockerd.pid"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  if ! docker info >/dev/null 2>&1; then
    echo "FAIL: Docker cannot run here: dockerd did not come up. Its last words:" >&2
    tail -n 20 "$WORK/dockerd.log" >&2
    exit 2
  fi
fi
docker version --format 'server {{.Server.Version}}'

say "base images (docker/local/build-images.sh: debootstrap and Debian's packages, offline from Docker Hub)"
TVBO_LOCAL_WORK="$WORK/local-images" docker/local/build-images.sh
echo "local/debian:bookworm $(docker image inspect -f '{{.Size}}' local/debian:bookworm) bytes"

say "tvbo release binary"
if [ "${TVBO_SMOKE_SKIP_BUILD:-0}" = 1 ] && [ -x target/release/tvbo ]; then
  echo "TVBO_SMOKE_SKIP_BUILD=1: the existing target/release/tvbo"
else
  nice -n 19 cargo build --release --bin tvbo --quiet
fi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

say "images"
IMAGE=local/tvbo:smoke
nice -n 19 docker build -q -f docker/Dockerfile --target runtime-prebuilt \
  --build-arg RUNTIME_IMAGE=local/debian:bookworm --build-arg VERSION="$VERSION" \
  --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || true)" -t "$IMAGE" . >/dev/null
SIZE=$(docker image ls --format '{{.Size}}' "$IMAGE")
UID_IN=$(docker run --rm "$IMAGE" id -u)
COMPILERS=$(docker run --rm --entrypoint sh "$IMAGE" -c \
  'for c in cc gcc clang rustc cargo ld; do command -v $c; done; true')
note "image $IMAGE: $SIZE, runs as uid $UID_IN, compilers: ${COMPILERS:-none}"
[ "$UID_IN" != 0 ] || { echo "FAIL: the image runs as root" >&2; exit 1; }
[ -z "$COMPILERS" ] || { echo "FAIL: the runtime image holds a compiler" >&2; exit 1; }

say "compose stack ($PROJECT, port $PORT)"
export COMPOSE_PROJECT_NAME=$PROJECT
# The password as docs/deploy.md makes it (base64: it holds / and + at times), with an @,
# a / and a : added so that every run proves tvbo percent-encodes it.
export TVBO_SECRETS_DIR="$WORK/secrets"
mkdir -p "$TVBO_SECRETS_DIR"
printf '%s@/:%%\n' "$(head -c 24 /dev/urandom | base64)" >"$TVBO_SECRETS_DIR/postgres_password"
chmod 644 "$TVBO_SECRETS_DIR/postgres_password"
export TVBO_IMAGE=$IMAGE POSTGRES_IMAGE=local/postgres:bookworm HAPROXY_IMAGE=local/haproxy:bookworm \
  PROMETHEUS_IMAGE=local/prometheus:bookworm TVBO_PORT=$PORT PROMETHEUS_PORT=$((PORT + 1))
C=("${COMPOSE[@]}" -f docker/compose.yaml -p "$PROJECT" --profile monitoring)
"${C[@]}" down -v --remove-orphans >/dev/null 2>&1 || true   # a clean start
BASE="http://127.0.0.1:$PORT"
wait_ready() {
  for _ in $(seq 120); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/readyz")" = 200 ] && return 0
    sleep 1
  done
  echo "FAIL: $BASE/readyz never answered 200" >&2; exit 1
}
# Until `replica` answers /readyz itself (not through the load balancer).
wait_replica() {
  for _ in $(seq 120); do
    "${C[@]}" exec -T "$1" curl -fsS -o /dev/null http://127.0.0.1:8080/readyz 2>/dev/null && return 0
    sleep 1
  done
  echo "FAIL: $1 never answered /readyz" >&2; exit 1
}
started=$(date +%s)
"${C[@]}" up -d
wait_ready
note "stack up and ready through the load balancer in $(($(date +%s) - started)) s (postgres, tvbo-1, tvbo-2, lb, prometheus)"
for service in tvbo-1 postgres lb prometheus; do
  id=$("${C[@]}" ps -q "$service")
  hardening=$(docker inspect -f '{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}} {{.HostConfig.Memory}} {{.HostConfig.LogConfig.Type}} {{index .HostConfig.LogConfig.Config "max-size"}}' "$id")
  case "$hardening" in
    "true [ALL] [no-new-privileges:true] "[1-9]*" json-file 10m") ;;
    *) echo "FAIL: $service runs without the compose file's hardening: $hardening" >&2; exit 1 ;;
  esac
done
note "tvbo, postgres, lb, prometheus: read-only root, cap_drop ALL, no-new-privileges, a memory limit, json-file logs rotated at 10m"
for service in tvbo-1 postgres; do
  if docker inspect "$("${C[@]}" ps -q "$service")" | grep -qF "$(head -c 16 "$TVBO_SECRETS_DIR/postgres_password")"; then
    echo "FAIL: the database password is visible in docker inspect $service" >&2; exit 1
  fi
done
note "the database password (with @ / : %) reaches tvbo and PostgreSQL as a secret file; not in docker inspect"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/metrics")" = 404 ] \
  || { echo "FAIL: /metrics answers through the load balancer" >&2; exit 1; }
note "/metrics is not served through the load balancer (404); it is on each replica's 9091"

say "first key"
KEY=$("${C[@]}" exec -T tvbo-1 tvbo keys create --name smoke --admin 2>/dev/null | tail -n 1)
[ -n "$KEY" ] || { echo "FAIL: no key" >&2; exit 1; }
note "admin key made with: compose exec -T tvbo-1 tvbo keys create --name smoke --admin"

say "the load balancer's own answers"
# Both replicas stopped: HAProxy answers itself (503 problem+json, Retry-After).
"${C[@]}" stop tvbo-1 tvbo-2 >/dev/null 2>&1
down_answer=$(curl -s -D - -o "$WORK/lb-503.json" -m 30 -H "authorization: Bearer $KEY" "$BASE/v1/sessions")
"${C[@]}" start tvbo-1 tvbo-2 >/dev/null 2>&1
grep -qi '^HTTP/1.1 503' <<<"$down_answer" && grep -qi '^content-type: application/problem+json' <<<"$down_answer" \
  && grep -qi '^retry-after: 1' <<<"$down_answer" && grep -qi '^x-request-id: ' <<<"$down_answer" \
  || { echo "FAIL: with no replica up the load balancer answered:"; echo "$down_answer"; cat "$WORK/lb-503.json"; exit 1; } >&2
note "no replica up: HAProxy answers 503 problem+json with Retry-After and X-Request-Id ($(head -c 60 "$WORK/lb-503.json")...)"
wait_ready
sleep 3
rid="smoke-$(date +%s)"
curl -s -o /dev/null -H "x-request-id: $rid" -H "authorization: Bearer $KEY" "$BASE/v1/sessions"
sleep 1
grep -q "\"request_id\":\"$rid\"" <("${C[@]}" logs --no-color lb) \
  && grep -q "\"request_id\":\"$rid\"" <("${C[@]}" logs --no-color tvbo-1 tvbo-2) \
  || { echo "FAIL: request id $rid is not in both the load balancer's and tvbo's logs" >&2; exit 1; }
probe_lines=$("${C[@]}" logs --no-color tvbo-1 tvbo-2 | grep -c '/readyz' || true)
[ "$probe_lines" -lt 5 ] || { echo "FAIL: tvbo logs its health probes ($probe_lines lines)" >&2; exit 1; }
note "a request id is logged by HAProxy and tvbo alike (JSON lines); health probes are not logged ($probe_lines lines of /readyz)"

say "50 rounds through the load balancer; tvbo-1 killed at round 20, started at round 35"
KILL="docker kill \$(${C[*]} ps -q tvbo-1)"
START="docker start \$(${C[*]} ps -a -q tvbo-1)"
python3 docker/smoke_client.py rounds "$BASE" "$KEY" "$WORK/state.json" 50 20 35 "$KILL" "$START" \
  | tee "$WORK/rounds.log"
note "$(tail -n 1 "$WORK/rounds.log")"
python3 docker/smoke_client.py check "$BASE" "$KEY" "$WORK/state.json" | tee "$WORK/check.log"
note "$(tail -n 1 "$WORK/check.log")"
wait_ready
wait_replica tvbo-1
v1_requests() {
  docker exec "$("${C[@]}" ps -q "$1")" curl -s localhost:9091/metrics \
    | awk '/^tvbo_http_requests_total\{.*route="\/v1\// {s += $NF} END {print s + 0}'
}
# The restarted replica is back in the load balancer's rotation: it answers again.
rejoined=""
for _ in $(seq 30); do
  for _ in 1 2 3 4; do curl -s -o /dev/null -H "authorization: Bearer $KEY" "$BASE/v1/sessions"; done
  [ "$(v1_requests tvbo-1)" -gt 0 ] && { rejoined=1; break; }
  sleep 1
done
[ -n "$rejoined" ] || { echo "FAIL: the restarted tvbo-1 answers no request through the load balancer" >&2; exit 1; }
note "the restarted tvbo-1 is back in the load balancer's rotation"

# One phase of load: 4 clients through the load balancer while `event` runs; then every
# acknowledged observation stored once, p99 under 1 s, no error but 503/429 with
# Retry-After.
load_phase() {
  local name=$1 event=$2
  say "load: $name"
  rm -f "$WORK/stop-$name"
  python3 docker/smoke_client.py load "$BASE" "$KEY" "$WORK/load-$name.json" 4 "$WORK/stop-$name" \
    >"$WORK/load-$name.log" 2>&1 &
  local client=$!
  LOAD_CLIENT=$client
  sleep 5
  local t0=$SECONDS since
  since=$(date -u +%FT%T.%NZ)
  echo "   $event"
  bash -c "$event"
  wait_ready
  wait_replica tvbo-1
  wait_replica tvbo-2
  echo "   event over and both replicas ready after $((SECONDS - t0)) s"
  sleep 5
  touch "$WORK/stop-$name"
  wait "$client"
  LOAD_CLIENT=""
  tail -n 25 "$WORK/load-$name.log"
  python3 docker/smoke_client.py check "$BASE" "$KEY" "$WORK/load-$name.json" | tee "$WORK/check-$name.log"
  python3 - "$WORK/load-$name.json" <<'PY' || { echo "FAIL: load: $name" >&2; exit 1; }
import json, sys
s = json.load(open(sys.argv[1]))
bad = []
if s["non_retryable"]: bad.append(f'{s["non_retryable"]} non-retryable errors')
if s["p99_ms"] >= 1000: bad.append(f'p99 {s["p99_ms"]:.0f} ms')
if bad: sys.exit("; ".join(bad))
PY
  note "$name: $(tail -n 1 "$WORK/load-$name.log")"
  note "$name: $(tail -n 1 "$WORK/check-$name.log")"
  # What HAProxy did meanwhile: requests it sent again (to the other replica, `+`), and
  # answers of its own (no replica: <NOSRV>, or a replica that died answering: SH/SD).
  local lb_log retried own
  lb_log=$(docker logs --since "$since" "$("${C[@]}" ps -q lb)" 2>&1)
  retried=$(grep -c '"retries":"+\?[1-9]' <<<"$lb_log" || true)
  own=$(grep -c '"server":"<NOSRV>"\|"termination":"S[HD]' <<<"$lb_log" || true)
  note "$name: HAProxy repeated $retried requests (another connection or replica), answered $own itself"
}
C_TEXT="${C[*]}"
load_phase "docker stop tvbo-1" \
  "docker stop \$($C_TEXT ps -q tvbo-1) >/dev/null; sleep 3; docker start \$($C_TEXT ps -a -q tvbo-1) >/dev/null"
load_phase "docker kill tvbo-2" \
  "docker kill \$($C_TEXT ps -q tvbo-2) >/dev/null; sleep 3; docker start \$($C_TEXT ps -a -q tvbo-2) >/dev/null"
# The upgrade: an image of the same binary with another version label.
NEXT=local/tvbo:smoke-next
nice -n 19 docker build -q -f docker/Dockerfile --target runtime-prebuilt \
  --build-arg RUNTIME_IMAGE=local/debian:bookworm --build-arg VERSION="$VERSION-next" \
  -t "$NEXT" . >/dev/null
load_phase "rolling upgrade" "TVBO_IMAGE=$NEXT TVBO_KEEP_IMAGE=0 TVBO_READY_WAIT=90 COMPOSE_PROJECT_NAME=$PROJECT docker/rolling-upgrade.sh"
for r in tvbo-1 tvbo-2; do
  [ "$(docker inspect -f '{{.Config.Image}}' "$("${C[@]}" ps -q "$r")")" = "$NEXT" ] \
    || { echo "FAIL: $r does not run $NEXT after the rolling upgrade" >&2; exit 1; }
done
note "after the rolling upgrade both replicas run $NEXT"
for r in tvbo-1 tvbo-2; do
  note "$r answered $(v1_requests "$r") /v1 requests since its last start"
done
# The rollback drill (docs/deploy.md, "Upgrades"): the newer release has left a migration
# of its own in the database, as sqlx records one applied; the previous image must start
# on that schema (tolerated, with a warning) while the load runs.
"${C[@]}" exec -T postgres psql --username=tvbo --dbname=tvbo -v ON_ERROR_STOP=1 -q -c \
  "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
   VALUES (9000, 'a newer release', true, '\\x00'::bytea, 0)"
newest=$("${C[@]}" exec -T postgres psql --username=tvbo --dbname=tvbo -At -c \
  "SELECT max(version) FROM _sqlx_migrations WHERE success")
[ "$newest" = 9000 ] || { echo "FAIL: the newer release's migration is not recorded ($newest)" >&2; exit 1; }
note "the newer release's migration recorded: _sqlx_migrations (9000, 'a newer release', success)"
load_phase "rollback" "TVBO_IMAGE=$IMAGE TVBO_KEEP_IMAGE=0 TVBO_READY_WAIT=90 COMPOSE_PROJECT_NAME=$PROJECT docker/rolling-upgrade.sh"
for r in tvbo-1 tvbo-2; do
  id=$("${C[@]}" ps -q "$r")
  [ "$(docker inspect -f '{{.Config.Image}}' "$id")" = "$IMAGE" ] \
    || { echo "FAIL: $r does not run $IMAGE after the rollback" >&2; exit 1; }
  # grep -c, not -q: -q stops reading at the first match and pipefail counts the writer's SIGPIPE.
  warned=$(docker logs "$id" 2>&1 | grep -c 'the database holds migrations of a newer release than this binary' || true)
  [ "$warned" -ge 1 ] || { echo "FAIL: $r does not warn of the newer release's migration" >&2; exit 1; }
done
note "after the rollback both replicas run $IMAGE on the newer schema, each warning: the database holds migrations of a newer release than this binary"
export TVBO_IMAGE=$IMAGE

if [ "${TVBO_SMOKE_LOAD_ONLY:-0}" = 1 ]; then
  say "SUMMARY ($(date -u +%FT%TZ)), TVBO_SMOKE_LOAD_ONLY=1"
  printf '   %s\n' "${SUMMARY[@]}"
  echo "PASS"
  exit 0
fi

say "health and logs"
for r in tvbo-1 tvbo-2; do
  id=$("${C[@]}" ps -q "$r")
  health=""
  for _ in $(seq 60); do
    health=$(docker inspect -f '{{.State.Health.Status}}' "$id")
    [ "$health" = healthy ] && break
    sleep 1
  done
  [ "$health" = healthy ] || { echo "FAIL: $r is $health by the image's HEALTHCHECK" >&2; exit 1; }
  if docker logs "$id" 2>&1 | grep -q $'\e\['; then
    echo "FAIL: $r's logs hold ANSI colour codes" >&2; exit 1
  fi
done
note "tvbo-1, tvbo-2 healthy by the image's HEALTHCHECK (/readyz); docker logs without ANSI colours"

say "metrics"
METRICS=$(docker exec "$("${C[@]}" ps -q tvbo-1)" curl -s localhost:9091/metrics)
for m in tvbo_http_requests_total tvbo_model_work_seconds_count tvbo_store_operation_seconds_count tvbo_store_pool_connections; do
  grep -q "^$m" <<<"$METRICS" || { echo "FAIL: /metrics lacks $m" >&2; exit 1; }
done
note "/metrics on tvbo-1's port 9091: $(grep -c '^tvbo_' <<<"$METRICS") tvbo_ samples"
up=""
for _ in $(seq 30); do
  up=$(curl -s "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/query?query=up%7Bjob%3D%22tvbo%22%7D" \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(sum(int(x["value"][1]) for x in r))' 2>/dev/null || true)
  [ "$up" = 2 ] && break
  sleep 2
done
[ "$up" = 2 ] || { echo "FAIL: Prometheus sees ${up:-no} tvbo targets up, not 2" >&2; exit 1; }
note "Prometheus (monitoring profile) scrapes both replicas: up{job=\"tvbo\"} = 2"
rules=$(curl -s "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/rules" \
  | python3 -c 'import json,sys; print(sum(len(g["rules"]) for g in json.load(sys.stdin)["data"]["groups"]))')
[ "$rules" -ge 7 ] || { echo "FAIL: Prometheus loaded $rules alert rules, not docker/alerts.yml's" >&2; exit 1; }
docker run --rm --entrypoint promtool -v "$REPO/docker/alerts.yml:/alerts.yml:ro" local/prometheus:bookworm \
  check rules /alerts.yml >/dev/null
note "Prometheus loaded docker/alerts.yml ($rules rules); promtool check rules passes"

say "TLS at the load balancer (docker/compose.tls.yaml)"
export TVBO_TLS_DIR="$WORK/tls" TVBO_TLS_PORT=$((PORT + 2))
mkdir -p "$TVBO_TLS_DIR"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -keyout "$TVBO_TLS_DIR/key.pem" -out "$TVBO_TLS_DIR/cert.pem" 2>/dev/null
cat "$TVBO_TLS_DIR/cert.pem" "$TVBO_TLS_DIR/key.pem" >"$TVBO_TLS_DIR/tvbo.pem"
chmod 644 "$TVBO_TLS_DIR/tvbo.pem"
CT=("${COMPOSE[@]}" -f docker/compose.yaml -f docker/compose.tls.yaml -p "$PROJECT")
"${CT[@]}" up -d --no-deps lb
TLS="https://localhost:$TVBO_TLS_PORT"
for _ in $(seq 30); do curl -ksf -o /dev/null "$TLS/readyz" && break; sleep 1; done
tls_status=$(curl -ks -o /dev/null -w '%{http_code}' -H "authorization: Bearer $KEY" "$TLS/v1/sessions")
redirect=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -X POST "http://localhost:$PORT/v1/sessions")
[ "$tls_status" = 200 ] && [ "$redirect" = "308 https://localhost:$TVBO_TLS_PORT/v1/sessions" ] \
  || { echo "FAIL: TLS: GET over HTTPS answered $tls_status; a plain POST answered $redirect" >&2; exit 1; }
note "TLS override: HTTPS answers on $TVBO_TLS_PORT; a plain POST gets 308 to $TLS/v1/sessions"
"${C[@]}" up -d --no-deps lb
wait_ready

say "down, up: the data outlives the containers"
"${C[@]}" down
"${C[@]}" up -d
wait_ready
python3 docker/smoke_client.py check "$BASE" "$KEY" "$WORK/state.json" | tee "$WORK/check2.log"
note "after down/up: $(tail -n 1 "$WORK/check2.log")"

say "backup and restore (docs/deploy.md's commands)"
"${C[@]}" exec -T postgres pg_dump --username=tvbo --format=custom tvbo >"$WORK/tvbo.dump"
"${C[@]}" stop tvbo-1 tvbo-2
"${C[@]}" exec -T postgres pg_restore --username=tvbo --dbname=tvbo --clean --if-exists <"$WORK/tvbo.dump"
"${C[@]}" start tvbo-1 tvbo-2
wait_ready
python3 docker/smoke_client.py check "$BASE" "$KEY" "$WORK/state.json" | tee "$WORK/check3.log"
note "pg_dump ($(stat -c %s "$WORK/tvbo.dump") bytes), replicas stopped, pg_restore --clean, started: $(tail -n 1 "$WORK/check3.log")"
# SQLite in one container with the image's defaults: /data volume, tvbo backup, docker cp.
docker rm -f tvbo-smoke-sqlite >/dev/null 2>&1 || true
docker volume rm tvbo-smoke-sqlite >/dev/null 2>&1 || true
docker run -d --name tvbo-smoke-sqlite -v tvbo-smoke-sqlite:/data "$IMAGE" >/dev/null
for _ in $(seq 30); do
  docker exec tvbo-smoke-sqlite curl -fs -o /dev/null localhost:8080/readyz && break
  sleep 1
done
docker exec tvbo-smoke-sqlite tvbo keys create --name ops --admin >/dev/null 2>&1
docker exec tvbo-smoke-sqlite tvbo backup /data/backup.db
rm -f "$WORK/sqlite-backup.db"
docker cp tvbo-smoke-sqlite:/data/backup.db "$WORK/sqlite-backup.db"
keys=$(docker run --rm -v "$WORK:/backup" -e DATABASE_URL=sqlite:///backup/sqlite-backup.db \
  --user 0 "$IMAGE" tvbo keys list 2>/dev/null | tail -n +2 | wc -l)
docker rm -f tvbo-smoke-sqlite >/dev/null
docker volume rm tvbo-smoke-sqlite >/dev/null
[ "$keys" = 1 ] || { echo "FAIL: the SQLite backup holds $keys keys, not 1" >&2; exit 1; }
note "SQLite container (image defaults, /data volume): tvbo backup + docker cp; the copy opens and holds its key"

# The stack is taken down on exit (`finish`), unless TVBO_SMOKE_KEEP=1.
[ "${TVBO_SMOKE_KEEP:-0}" != 1 ] || echo "stack left running: ${C[*]} down -v"

say "SUMMARY ($(date -u +%FT%TZ))"
printf '   %s\n' "${SUMMARY[@]}"
echo "PASS"
