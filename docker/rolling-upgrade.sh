#!/usr/bin/env bash
# Rolling upgrade of the tvbo replicas of docker/compose.yaml (docs/deploy.md,
# "Upgrades"): one replica at a time, the next only once the new one answers and is back
# in the load balancer's rotation, so that one replica serves throughout.
#
#   TVBO_IMAGE=tvbo:0.2.0 docker/rolling-upgrade.sh
#
# Build or pull the new image first (the script does not), and back up (docs/deploy.md).
# Once every replica runs it, the image is kept as TVBO_IMAGE in the .env beside the
# compose file, so that a later plain `up -d` recreates nothing onto the old one.
# Each old replica gets SIGTERM from `up --force-recreate`: it drains (TVBO_DRAIN_PERIOD),
# finishes its requests in flight and exits within stop_grace_period. Environment:
#   TVBO_IMAGE       the new image (required)
#   COMPOSE_FILE     default: docker/compose.yaml beside this script
#   TVBO_REPLICAS    default: "tvbo-1 tvbo-2"
#   TVBO_READY_WAIT  seconds to wait for a new replica to answer /readyz (default 300:
#                    migrations of a large database run before it answers)
#   TVBO_KEEP_IMAGE  1 (default): keep the image in the .env beside the compose file;
#                    0: leave that file alone (docker/smoke.sh's throwaway upgrade)
# Other compose settings (COMPOSE_PROJECT_NAME, ...) are read as compose reads them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${TVBO_IMAGE:?set TVBO_IMAGE to the new image, e.g. TVBO_IMAGE=tvbo:0.2.0}"
export TVBO_IMAGE COMPOSE_FILE=${COMPOSE_FILE:-$here/compose.yaml}
if docker compose version >/dev/null 2>&1; then C=(docker compose); else C=(docker-compose); fi
docker image inspect "$TVBO_IMAGE" >/dev/null 2>&1 \
  || { echo "rolling-upgrade: no image $TVBO_IMAGE here: build or pull it first" >&2; exit 1; }

for replica in ${TVBO_REPLICAS:-tvbo-1 tvbo-2}; do
  started=$SECONDS
  echo "rolling-upgrade: $replica: draining and replacing with $TVBO_IMAGE"
  "${C[@]}" up -d --no-deps --force-recreate "$replica"
  ready=""
  for _ in $(seq "${TVBO_READY_WAIT:-300}"); do
    if "${C[@]}" exec -T "$replica" curl -fsS -o /dev/null http://127.0.0.1:8080/readyz 2>/dev/null; then
      ready=1
      break
    fi
    sleep 1
  done
  if [ -z "$ready" ]; then
    echo "rolling-upgrade: $replica does not answer /readyz: stopping here, the other replicas serve on the old image" >&2
    "${C[@]}" logs --tail 30 "$replica" >&2
    exit 1
  fi
  # HAProxy takes it back after two passed checks 1 s apart.
  sleep 3
  echo "rolling-upgrade: $replica ready on $TVBO_IMAGE in $((SECONDS - started)) s"
done
if [ "${TVBO_KEEP_IMAGE:-1}" != 1 ]; then
  echo "rolling-upgrade: done"
  exit 0
fi
# Keep the new image for the next `up -d` (compose reads .env beside its file).
env_file="$(dirname "$COMPOSE_FILE")/.env"
touch "$env_file"
if grep -q '^TVBO_IMAGE=' "$env_file"; then
  sed -i "s|^TVBO_IMAGE=.*|TVBO_IMAGE=$TVBO_IMAGE|" "$env_file"
else
  echo "TVBO_IMAGE=$TVBO_IMAGE" >>"$env_file"
fi
echo "rolling-upgrade: done; TVBO_IMAGE=$TVBO_IMAGE kept in $env_file for the next up -d"
