"""docker/smoke.sh's client: suggest/observe rounds through the load balancer, with a
replica killed midway and restarted; then checks every acknowledged observation is
stored exactly once. Standard library only.

  smoke_client.py rounds BASE KEY STATE_FILE ROUNDS KILL_AT RESTART_AT KILL_CMD START_CMD
  smoke_client.py check  BASE KEY STATE_FILE
"""

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid


def call(base, key, method, path, body=None, idem=None, tries=30):
    """One request, retried (same Idempotency-Key) on a refused connection or a 5xx:
    what a client does when the replica under it dies."""
    data = None if body is None else json.dumps(body).encode()
    last = None
    for attempt in range(tries):
        req = urllib.request.Request(base + path, data=data, method=method)
        req.add_header("authorization", "Bearer " + key)
        if data is not None:
            req.add_header("content-type", "application/json")
        if idem:
            req.add_header("idempotency-key", idem)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null"), attempt
        except urllib.error.HTTPError as e:
            if e.code < 500:
                raise SystemExit(f"{method} {path}: {e.code} {e.read()[:300]!r}")
            last = f"{e.code}"
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            last = repr(e)
        time.sleep(0.5)
    raise SystemExit(f"{method} {path}: gave up after {tries} tries ({last})")


def rounds(base, key, state_file, n, kill_at, restart_at, kill_cmd, start_cmd):
    _, session, _ = call(base, key, "POST", "/v1/sessions", {
        "name": "docker-smoke",
        "parameters": [{"name": "x", "low": 0, "high": 10}],
        "model": {"warmup": 3},
    }, idem=str(uuid.uuid4()))
    sid = session["id"]
    acked, retried = [], 0
    for i in range(1, n + 1):
        if i == kill_at:
            print(f"round {i}: {kill_cmd}", flush=True)
            subprocess.run(kill_cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
        if i == restart_at:
            print(f"round {i}: {start_cmd}", flush=True)
            subprocess.run(start_cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
        _, s, a = call(base, key, "POST", f"/v1/sessions/{sid}/suggestions", {},
                       idem=str(uuid.uuid4()))
        retried += a
        sug = s["suggestions"][0]
        x = sug["params"]["x"]
        status, _, a = call(base, key, "POST", f"/v1/sessions/{sid}/observations",
                            {"suggestion_id": sug["id"], "value": -(x - 3) ** 2},
                            idem=str(uuid.uuid4()))
        retried += a
        if status in (200, 201):
            acked.append(sug["id"])
    json.dump({"session": sid, "acked": acked}, open(state_file, "w"))
    print(f"session {sid}: {n} rounds, {len(acked)} observations acknowledged, "
          f"{retried} requests retried", flush=True)


def check(base, key, state_file):
    state = json.load(open(state_file))
    sid, acked = state["session"], state["acked"]
    stored, after = [], 0
    while True:
        _, page, _ = call(base, key, "GET", f"/v1/sessions/{sid}/observations"
                          f"?after={after}&limit=1000&include_pruned=true")
        stored += page["observations"]
        if page.get("next_after") is None or not page["observations"]:
            break
        after = page["next_after"]
    ids = [o["suggestion_id"] for o in stored]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    missing = sorted(set(acked) - set(ids))
    extra = sorted(set(ids) - set(acked))
    print(f"session {sid}: {len(stored)} observations stored, {len(acked)} acknowledged, "
          f"{len(dupes)} duplicated, {len(missing)} missing, {len(extra)} unacknowledged")
    if dupes or missing or extra or len(stored) != len(acked):
        raise SystemExit("FAIL: stored observations differ from the acknowledged ones")


if __name__ == "__main__":
    mode, base, key, state_file = sys.argv[1:5]
    if mode == "rounds":
        n, kill_at, restart_at = map(int, sys.argv[5:8])
        rounds(base, key, state_file, n, kill_at, restart_at, sys.argv[8], sys.argv[9])
    else:
        check(base, key, state_file)
