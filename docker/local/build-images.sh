#!/usr/bin/env bash
# The base images docker/compose.yaml needs, built where Docker Hub is out of reach
# (docs/deploy.md, "First start"; docker/smoke.sh runs it too):
#
#   local/debian:bookworm     Debian bookworm by debootstrap --variant=minbase, trimmed
#                             like debian:bookworm-slim; the base of the images below and
#                             of tvbo's (--build-arg RUNTIME_IMAGE=local/debian:bookworm)
#   local/postgres:bookworm   PostgreSQL 15, HAProxy 2.6, Prometheus 2 from Debian's
#   local/haproxy:bookworm    packages (docker/local/*.Dockerfile), taking the official
#   local/prometheus:bookworm images' settings, paths and user ids
#
#   sudo docker/local/build-images.sh                # builds, prints the .env lines
#   sudo docker/local/build-images.sh docker/.env    # and sets them in that file
#
# Idempotent: the base is made only when the image is missing (TVBO_LOCAL_REBUILD=1
# makes it again); the three others are `docker build`s, from the cache when nothing
# changed. Needs root (debootstrap), a running Docker daemon, debootstrap (Debian's
# package) and Debian's mirror (TVBO_DEBIAN_MIRROR, default http://deb.debian.org/debian).
# Progress goes to standard error; standard output holds only the three .env lines.
#   TVBO_LOCAL_WORK   scratch directory for the root file system (default /tmp/tvbo-local-images)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
env_file=${1:-}
work=${TVBO_LOCAL_WORK:-/tmp/tvbo-local-images}
mirror=${TVBO_DEBIAN_MIRROR:-http://deb.debian.org/debian}
base=local/debian:bookworm
log() { printf 'build-images: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

command -v docker >/dev/null || die "no docker: apt-get install docker.io"
docker info >/dev/null 2>&1 || die "no Docker daemon answers: start it (systemctl start docker, or dockerd &)"

if [ "${TVBO_LOCAL_REBUILD:-0}" = 1 ] || ! docker image inspect "$base" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || die "no debootstrap: apt-get install debootstrap"
  [ "$(id -u)" = 0 ] || die "debootstrap needs root"
  mkdir -p "$work"
  rootfs="$work/rootfs"
  rm -rf "$rootfs"
  log "$base: debootstrap --variant=minbase bookworm (a few minutes; log: $work/debootstrap.log)"
  nice -n 19 debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  # Slim like debian:bookworm-slim: no package caches, lists, docs, man pages, locales.
  rm -rf "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
    "$rootfs"/usr/share/info/*
  find "$rootfs"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
    >"$rootfs"/etc/dpkg/dpkg.cfg.d/slim
  # As Debian's images: apt keeps no downloaded packages or caches in a layer.
  printf '%s\n' \
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' \
    >"$rootfs"/etc/apt/apt.conf.d/docker-clean
  nice -n 19 tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
  rm -rf "$rootfs"
fi
log "$base ($(docker image inspect -f '{{.Size}}' "$base") bytes)"

lines=()
for name in postgres haproxy prometheus; do
  image="local/$name:bookworm"
  log "$image: docker build -f docker/local/$name.Dockerfile"
  nice -n 19 docker build -q --build-arg BASE_IMAGE="$base" -f "$here/$name.Dockerfile" \
    -t "$image" "$here" >/dev/null
  upper=$(tr '[:lower:]' '[:upper:]' <<<"$name")
  lines+=("${upper}_IMAGE=$image")
done

if [ -n "$env_file" ]; then
  touch "$env_file"
  for line in "${lines[@]}"; do
    key=${line%%=*}
    if grep -q "^$key=" "$env_file"; then
      sed -i "s|^$key=.*|$line|" "$env_file"
    else
      printf '%s\n' "$line" >>"$env_file"
    fi
  done
  log "set in $env_file:"
else
  log "for docker/.env (or: $0 docker/.env):"
fi
printf '%s\n' "${lines[@]}"
log "and build tvbo's image with --build-arg RUNTIME_IMAGE=$base"
