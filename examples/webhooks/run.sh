#!/usr/bin/env bash
# The worked example of docs/events.md, end to end on this machine: tvbo (the binary of
# this checkout), a stub chat service, the relay, and a session whose optimum jumps. The
# stub prints what the relay posts to it, on ports free on this machine. Needs the Python
# client: pip install -e clients/python.
#
#   bash examples/webhooks/run.sh [path/to/tvbo]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
tvbo="${1:-$root/target/release/tvbo}"
work="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT

# Three ports free on this machine (held together while they are chosen, so distinct):
# tvbo's, the relay's and the stub's; nothing else needs to be free.
read -r tvbo_port RELAY_PORT STUB_PORT < <(python3 -c '
import socket
held = [socket.socket() for _ in range(3)]
for s in held:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in held))')
export TVBO_SECRET="whsec_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export CHAT_URL="http://127.0.0.1:$STUB_PORT/" RELAY_PORT STUB_PORT
export PYTHONPATH="$root/clients/python/src${PYTHONPATH:+:$PYTHONPATH}"
export DATABASE_URL="sqlite://$work/tvbo.db"

TVBO_API_KEY="$("$tvbo" keys create --name example)"
export TVBO_API_KEY TVBO_URL="http://127.0.0.1:$tvbo_port"
TVBO_BIND="127.0.0.1:$tvbo_port" TVBO_WEBHOOK_ALLOW="127.0.0.1:$RELAY_PORT" RUST_LOG=warn \
    "$tvbo" serve &
pids+=($!)
python3 "$here/stub_chat.py" &
pids+=($!)
python3 "$here/chat_relay.py" &
pids+=($!)
until curl -sf "$TVBO_URL/readyz" >/dev/null; do sleep 0.2; done
for port in "$RELAY_PORT" "$STUB_PORT"; do
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.1; done
done

python3 "$here/drive.py"
sleep 3  # the last deliveries
