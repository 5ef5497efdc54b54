#!/usr/bin/env bash
# End-to-end smoke test of the container deployment (docs/deploy.md), without Docker Hub:
# Debian base image by debootstrap, tvbo's runtime image from the host's release binary,
# PostgreSQL, HAProxy and Prometheus images built from Debian packages; then the compose
# stack of docker/compose.yaml, driven through its load balancer.
#
#   sudo docker/smoke.sh            # from the repository; needs root (apt, dockerd)
#
# Not run by `cargo test` or .ci/run. Environment:
#   TVBO_SMOKE_DIR   work directory (rootfs, state)       default /tmp/tvbo-smoke
#   TVBO_SMOKE_PORT  the load balancer's published port   default 18080
#   TVBO_SMOKE_KEEP  1: leave the stack running at the end
#   TVBO_SMOKE_SKIP_BUILD  1: use the existing target/release/tvbo, no cargo build
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
missing=()
command -v docker >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
  missing+=(docker-compose)
fi
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
echo "compose: ${COMPOSE[*]} ($("${COMPOSE[@]}" version --short 2>/dev/null || true))"

say "docker daemon"
if ! docker info >/dev/null 2>&1; then
  echo "no daemon answers; starting dockerd (log: $WORK/dockerd.log)"
  nohup dockerd >"$WORK/dockerd.log" 2>&1 &
  echo $! >"$WORK/dockerd.pid"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  if ! docker info >/dev/null 2>&1; then
    echo "FAIL: Docker cannot run here: dockerd did not come up. Its last words:" >&2
    tail -n 20 "$WORK/dockerd.log" >&2
    exit 2
  fi
fi
docker version --format 'server {{.Server.Version}}'

say "base image local/debian:bookworm (debootstrap, offline from Docker Hub)"
if ! docker image inspect local/debian:bookworm >/dev/null 2>&1; then
  ROOTFS="$WORK/rootfs"
  rm -rf "$ROOTFS"
  nice -n 19 debootstrap --variant=minbase bookworm "$ROOTFS" http://deb.debian.org/debian >"$WORK/debootstrap.log"
  # Slim like debian:bookworm-slim: no package caches, lists, docs, man pages, locales.
  rm -rf "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb \
    "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* \
    "$ROOTFS"/usr/share/info/*
  find "$ROOTFS"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
    >"$ROOTFS"/etc/dpkg/dpkg.cfg.d/slim
  # As Debian's images: apt keeps no downloaded packages or caches in a layer.
  printf '%s\n' \
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' \
    >"$ROOTFS"/etc/apt/apt.conf.d/docker-clean
  nice -n 19 tar -C "$ROOTFS" -c . | docker import - local/debian:bookworm >/dev/null
  rm -rf "$ROOTFS"
fi
echo "local/debian:bookworm $(docker image inspect -f '{{.Size}}' local/debian:bookworm) bytes"

say "tvbo release binary"
if [ "${TVBO_SMOKE_SKIP_BUILD:-0}" = 1 ] && [ -x target/release/tvbo ]; then
  echo "TVBO_SMOKE_SKIP_BUILD=1: the existing target/release/tvbo"
else
  nice -n 19 cargo build --release --bin tvbo --quiet
fi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

say "images"
for name in postgres haproxy prometheus; do
  nice -n 19 docker build -q -f "docker/local/$name.Dockerfile" -t "local/$name:smoke" docker/local >/dev/null
  echo "local/$name:smoke"
done
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
export POSTGRES_PASSWORD
POSTGRES_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
export TVBO_IMAGE=$IMAGE POSTGRES_IMAGE=local/postgres:smoke HAPROXY_IMAGE=local/haproxy:smoke \
  PROMETHEUS_IMAGE=local/prometheus:smoke TVBO_PORT=$PORT PROMETHEUS_PORT=$((PORT + 1))
C=("${COMPOSE[@]}" -f docker/compose.yaml -p "$PROJECT" --profile monitoring)
"${C[@]}" down -v --remove-orphans >/dev/null 2>&1 || true   # a clean start
BASE="http://127.0.0.1:$PORT"
wait_ready() {
  for _ in $(seq 120); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/readyz")" = 200 ] && return 0
    sleep 1
  done
  "${C[@]}" ps; "${C[@]}" logs --tail 30; echo "FAIL: $BASE/readyz never answered 200" >&2; exit 1
}
started=$(date +%s)
"${C[@]}" up -d
wait_ready
note "stack up and ready through the load balancer in $(($(date +%s) - started)) s (postgres, tvbo-1, tvbo-2, lb, prometheus)"

say "first key"
KEY=$("${C[@]}" exec -T tvbo-1 tvbo keys create --name smoke --admin 2>/dev/null | tail -n 1)
[ -n "$KEY" ] || { echo "FAIL: no key" >&2; exit 1; }
note "admin key made with: compose exec tvbo-1 tvbo keys create --name smoke --admin"

say "50 rounds through the load balancer; tvbo-1 killed at round 20, started at round 35"
KILL="docker kill \$(${C[*]} ps -q tvbo-1)"
START="docker start \$(${C[*]} ps -a -q tvbo-1)"
python3 docker/smoke_client.py rounds "$BASE" "$KEY" "$WORK/state.json" 50 20 35 "$KILL" "$START" \
  | tee "$WORK/rounds.log"
note "$(tail -n 1 "$WORK/rounds.log")"
python3 docker/smoke_client.py check "$BASE" "$KEY" "$WORK/state.json" | tee "$WORK/check.log"
note "$(tail -n 1 "$WORK/check.log")"
wait_ready
v1_requests() {
  "${C[@]}" exec -T "$1" curl -s localhost:8080/metrics \
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
for r in tvbo-1 tvbo-2; do
  note "$r answered $(v1_requests "$r") /v1 requests since its last start"
done

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
METRICS=$(curl -s "$BASE/metrics")
for m in tvbo_http_requests_total tvbo_model_work_seconds_count tvbo_store_operation_seconds_count tvbo_store_pool_connections; do
  grep -q "^$m" <<<"$METRICS" || { echo "FAIL: /metrics lacks $m" >&2; exit 1; }
done
note "/metrics through the load balancer: $(grep -c '^tvbo_' <<<"$METRICS") tvbo_ samples"
up=""
for _ in $(seq 30); do
  up=$(curl -s "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/query?query=up%7Bjob%3D%22tvbo%22%7D" \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(sum(int(x["value"][1]) for x in r))' 2>/dev/null || true)
  [ "$up" = 2 ] && break
  sleep 2
done
[ "$up" = 2 ] || { echo "FAIL: Prometheus sees ${up:-no} tvbo targets up, not 2" >&2; exit 1; }
note "Prometheus (monitoring profile) scrapes both replicas: up{job=\"tvbo\"} = 2"

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

if [ "${TVBO_SMOKE_KEEP:-0}" = 1 ]; then
  echo "stack left running: ${C[*]} down -v"
else
  "${C[@]}" down -v >/dev/null
fi

say "SUMMARY ($(date -u +%FT%TZ))"
printf '   %s\n' "${SUMMARY[@]}"
echo "PASS"
