"""docker/smoke.sh's client: drives tvbo through the load balancer while replicas are
killed, stopped or upgraded, and checks that every acknowledged observation is stored
exactly once. Standard library only (Python 3.11).

  smoke_client.py rounds BASE KEY STATE_FILE ROUNDS KILL_AT RESTART_AT KILL_CMD START_CMD
      One session, ROUNDS suggest/observe rounds, each request retried (same
      Idempotency-Key) on a refused connection or a 5xx; KILL_CMD runs before round
      KILL_AT, START_CMD before round RESTART_AT.
      STATE_FILE: {"session": id, "acked": [suggestion ids]}.

  smoke_client.py load BASE KEY STATE_FILE CLIENTS STOP_FILE
      CLIENTS threads, each with its own session and one kept-alive http.client
      connection, suggest then observe until STOP_FILE exists (an operation under way
      then still finishes, retrying for up to 60 s). Every HTTP attempt is timed and
      classified: ok (2xx), retryable (503/429 with Retry-After and a JSON body: waits
      min(Retry-After, 1 s), retries), non_retryable (anything else, connection errors
      included: counted, then retried after 0.5 s). A request on a kept-alive connection
      that fails before any byte of its answer is retried once at once on a fresh
      connection, as urllib3 and httpx do: a "stale connection retry", not an error
      (a replica killed with the request in flight on a kept-alive connection looks
      the same to a client, so it counts as one too).
      STATE_FILE: {"sessions": {id: [acked suggestion ids]}, "abandoned": {id: [ids of
      observes never acknowledged]}, "acknowledged", "requests" (= "attempts"), "ok",
      "retryable", "non_retryable", "stale_retries", "p50_ms", "p99_ms", "max_ms" (of
      attempts), "op_p50_ms", "op_p99_ms", "op_max_ms" (of suggest/observe operations,
      first attempt to 2xx, waits included), "status_counts", "connections_opened",
      "server_closes", "non_retryable_attempts", "slowest", "crashed_clients", ...}.
      Prints the non-retryable attempts, the 10 slowest attempts, then one summary
      line, last. Exit code 0 always: the caller judges, e.g.
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1]));
                    sys.exit(s["non_retryable"] > 0 or s["p99_ms"] >= 1000)' STATE_FILE

  smoke_client.py check BASE KEY STATE_FILE
      For each session of STATE_FILE (either format), the stored observations equal the
      acknowledged ones exactly: none duplicated, missing or unacknowledged. One line
      per session, then (several sessions) a total line; exit code 1 on any difference.
"""

import http.client
import json
import math
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone


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


def session_body(name):
    return {
        "name": name,
        "parameters": [{"name": "x", "low": 0, "high": 10}],
        "model": {"warmup": 3},
    }


def objective(x):
    return -(x - 3) ** 2


# ---------------------------------------------------------------------------- rounds

def rounds(base, key, state_file, n, kill_at, restart_at, kill_cmd, start_cmd):
    _, session, _ = call(base, key, "POST", "/v1/sessions", session_body("docker-smoke"),
                         idem=str(uuid.uuid4()))
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
        status, _, a = call(base, key, "POST", f"/v1/sessions/{sid}/observations",
                            {"suggestion_id": sug["id"],
                             "value": objective(sug["params"]["x"])},
                            idem=str(uuid.uuid4()))
        retried += a
        if status in (200, 201):
            acked.append(sug["id"])
    with open(state_file, "w") as f:
        json.dump({"session": sid, "acked": acked}, f)
    print(f"session {sid}: {n} rounds, {len(acked)} observations acknowledged, "
          f"{retried} requests retried", flush=True)


# ------------------------------------------------------------------------------ load

TIMEOUT = 30.0          # seconds an attempt may take before it is a timeout
FINISH_WITHIN = 60.0    # seconds an operation under way at the stop keeps retrying
GIVE_UP_AFTER_4XX = 5   # consecutive 4xx answers (429 aside) that abandon an operation
OK, RETRYABLE, NON_RETRYABLE = "ok", "retryable", "non_retryable"
JSON_TYPES = ("application/json", "application/problem+json")
# Errors of a kept-alive connection the server closed while it was idle (http.client's
# RemoteDisconnected is a ConnectionResetError).
STALE_ERRORS = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


@dataclass
class Attempt:
    """One HTTP request as the client saw it (a stale-connection retry included in it)."""
    client: int
    op: str                   # create, suggest, observe
    method: str
    path: str
    t: float                  # start, seconds since the run's start (monotonic clock)
    wall: float               # start, time.time()
    dur: float = 0.0          # seconds from sending to the whole answer (or the error)
    status: int | None = None  # None: no answer (connection error, timeout)
    retry_after: str | None = None
    ctype: str = ""
    kind: str = ""            # ok, retryable, non_retryable
    stale: bool = False       # a stale kept-alive connection was retried first
    error: str = ""           # the exception, or why a 2xx is not usable
    body: bytes = b""         # first 200 bytes of an answer that is not ok

    def as_json(self):
        return {"client": self.client, "op": self.op, "method": self.method,
                "path": self.path, "t_s": round(self.t, 3), "wall": iso(self.wall),
                "ms": round(self.dur * 1000, 1), "status": self.status,
                "retry_after": self.retry_after, "content_type": self.ctype,
                "kind": self.kind, "stale_retry": self.stale, "error": self.error,
                "body": self.body.decode("utf-8", "replace")}

    def describe(self):
        answer = (f"{self.status} {self.ctype or '-'}"
                  + (f" retry-after {self.retry_after}" if self.retry_after else "")
                  if self.status is not None else self.error)
        line = (f"t={self.t:7.3f} s  {iso(self.wall)}  client {self.client}  "
                f"{self.method} {self.path}  {self.dur * 1000:7.1f} ms  -> {answer}")
        if self.stale:
            line += "  (on a fresh connection after a stale-connection retry)"
        if self.body:
            line += f"  {self.body!r}"
        elif self.status is not None and self.error:
            line += f"  ({self.error})"
        return line


class _Early(Exception):
    """The request failed before any byte of its answer was read."""


def iso(wall):
    return datetime.fromtimestamp(wall, timezone.utc).isoformat(timespec="milliseconds")


def classify(status, retry_after, ctype):
    if 200 <= status < 300:
        return OK
    is_json = ctype.split(";")[0].strip().lower() in JSON_TYPES
    if status in (429, 503) and retry_after is not None and is_json:
        return RETRYABLE
    return NON_RETRYABLE


def wait_after(a):
    if a.kind == RETRYABLE:
        try:
            return max(0.0, min(float(a.retry_after), 1.0))
        except ValueError:  # an HTTP date: not what tvbo sends
            return 1.0
    return 0.5


class StopFlag:
    """Set once STOP_FILE exists."""

    def __init__(self, path):
        self.path, self.seen = path, False

    def is_set(self):
        self.seen = self.seen or os.path.exists(self.path)
        return self.seen


class Client:
    """One load thread's client: its session, its kept-alive connection, its records."""

    def __init__(self, n, base, key, stop, t0):
        url = urllib.parse.urlsplit(base)
        self.n, self.key, self.stop, self.t0 = n, key, stop, t0
        self.https = url.scheme == "https"
        self.host, self.port = url.hostname, url.port
        self.prefix = url.path.rstrip("/")
        self.conn = None
        self.sid = None
        self.attempts, self.ops = [], []      # ops: (op, seconds first attempt to 2xx)
        self.acked, self.abandoned = [], []   # suggestion ids of observes
        self.stale_retries = self.connections = self.server_closes = 0
        self.crash = None

    # -- one attempt ---------------------------------------------------------------

    def _connect(self):
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        self.conn = cls(self.host, self.port, timeout=TIMEOUT)
        self.connections += 1

    def _close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _exchange(self, method, path, data, headers):
        if self.conn is None:
            self._connect()
        try:
            self.conn.request(method, self.prefix + path, body=data, headers=headers)
            r = self.conn.getresponse()
        except STALE_ERRORS as e:
            raise _Early() from e
        return r, r.read()

    def attempt(self, op, method, path, data, headers):
        """One request: (Attempt, the 2xx answer's JSON or None)."""
        a = Attempt(self.n, op, method, path, time.monotonic() - self.t0, time.time())
        start = time.monotonic()
        fresh = self.conn is None
        try:
            try:
                r, body = self._exchange(method, path, data, headers)
            except _Early:
                if fresh:
                    raise
                self._close()
                self.stale_retries += 1
                a.stale = True
                r, body = self._exchange(method, path, data, headers)
        except (_Early, OSError, http.client.HTTPException) as e:
            self._close()
            e = e.__cause__ if isinstance(e, _Early) else e
            a.dur, a.kind = time.monotonic() - start, NON_RETRYABLE
            a.error = f"{type(e).__name__}: {e}"
            return a, None
        a.dur = time.monotonic() - start
        if r.will_close:  # Connection: close (or HTTP/1.0): the next request reconnects
            self._close()
            self.server_closes += 1
        a.status, a.retry_after = r.status, r.getheader("retry-after")
        a.ctype = r.getheader("content-type", "")
        a.kind = classify(a.status, a.retry_after, a.ctype)
        if a.kind != OK:
            a.body = body[:200]
            return a, None
        try:
            return a, json.loads(body or b"null")
        except ValueError:
            a.kind, a.error, a.body = NON_RETRYABLE, "a 2xx whose body is not JSON", body[:200]
            return a, None

    # -- one operation -------------------------------------------------------------

    def operation(self, op, path, body):
        """POST until a 2xx, every attempt with the same fresh Idempotency-Key: the
        answer's JSON, or None when abandoned (persistent 4xx, or still failing 60 s
        after the stop)."""
        headers = {"authorization": "Bearer " + self.key,
                   "content-type": "application/json",
                   "idempotency-key": str(uuid.uuid4())}
        data = json.dumps(body).encode()
        start, deadline, client_errors = time.monotonic(), None, 0
        while True:
            a, answer = self.attempt(op, "POST", path, data, headers)
            self.attempts.append(a)
            if a.kind == OK:
                self.ops.append((op, time.monotonic() - start))
                return answer
            is_4xx = a.status is not None and 400 <= a.status < 500 and a.status != 429
            client_errors = client_errors + 1 if is_4xx else 0
            if deadline is None and self.stop.is_set():
                deadline = time.monotonic() + FINISH_WITHIN
            if client_errors >= GIVE_UP_AFTER_4XX or (
                    deadline is not None and time.monotonic() > deadline):
                print(f"client {self.n}: {op} abandoned after {a.describe()}", flush=True)
                return None
            time.sleep(wait_after(a))

    # -- the thread ----------------------------------------------------------------

    def run(self, name):
        try:
            self._run(name)
        except Exception as e:  # a malformed answer: report it, keep the others going
            self.crash = f"{type(e).__name__}: {e}"
            print(f"client {self.n} stopped: {self.crash}", flush=True)
        finally:
            self._close()

    def _run(self, name):
        session = self.operation("create", "/v1/sessions", session_body(name))
        if session is None:
            return
        self.sid = session["id"]
        while not self.stop.is_set():
            s = self.operation("suggest", f"/v1/sessions/{self.sid}/suggestions", {})
            if s is None:
                continue
            sug = s["suggestions"][0]
            o = self.operation("observe", f"/v1/sessions/{self.sid}/observations",
                               {"suggestion_id": sug["id"],
                                "value": objective(sug["params"]["x"])})
            (self.acked if o is not None else self.abandoned).append(sug["id"])


def percentile(values, p):
    """Nearest-rank percentile of `values` (0 when empty)."""
    if not values:
        return 0.0
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def ms(seconds):
    return round(seconds * 1000, 1)


def summarise(clients, seconds):
    attempts = sorted((a for c in clients for a in c.attempts), key=lambda a: a.t)
    kinds = Counter(a.kind for a in attempts)
    durs = [a.dur for a in attempts]
    op_durs = [d for c in clients for op, d in c.ops if op in ("suggest", "observe")]
    non = [a for a in attempts if a.kind == NON_RETRYABLE]
    return {
        "clients": len(clients),
        "seconds": round(seconds, 1),
        "sessions": {c.sid: c.acked for c in clients if c.sid},
        "abandoned": {c.sid: c.abandoned for c in clients if c.sid and c.abandoned},
        "acknowledged": sum(len(c.acked) for c in clients),
        "attempts": len(attempts),
        "requests": len(attempts),
        "ok": kinds[OK],
        "retryable": kinds[RETRYABLE],
        "non_retryable": kinds[NON_RETRYABLE],
        "stale_retries": sum(c.stale_retries for c in clients),
        "connections_opened": sum(c.connections for c in clients),
        "server_closes": sum(c.server_closes for c in clients),
        "status_counts": dict(Counter(str(a.status or a.error.split(":")[0])
                                      for a in attempts)),
        "p50_ms": ms(percentile(durs, 50)),
        "p99_ms": ms(percentile(durs, 99)),
        "max_ms": ms(max(durs, default=0.0)),
        "op_p50_ms": ms(percentile(op_durs, 50)),
        "op_p99_ms": ms(percentile(op_durs, 99)),
        "op_max_ms": ms(max(op_durs, default=0.0)),
        "crashed_clients": {str(c.n): c.crash for c in clients if c.crash},
        "non_retryable_attempts": [a.as_json() for a in non],
        "slowest": [a.as_json() for a in sorted(attempts, key=lambda a: -a.dur)[:10]],
    }, non, attempts


def report(summary, non, attempts):
    """The details first, the summary line last (smoke.sh keeps the last line)."""
    if non:
        print(f"non-retryable attempts ({len(non)}):")
        for a in non[:50]:
            print("  " + a.describe())
        if len(non) > 50:
            print(f"  ... {len(non) - 50} more in the state file")
    if attempts:
        print("slowest attempts:")
        for a in sorted(attempts, key=lambda a: -a.dur)[:10]:
            print("  " + a.describe())
    abandoned = sum(len(v) for v in summary["abandoned"].values())
    s = summary
    print(f"load: {s['clients']} clients, {s['seconds']} s, {s['requests']} requests "
          f"({s['ok']} ok, {s['retryable']} retryable 503/429, "
          f"{s['non_retryable']} non-retryable, {s['stale_retries']} stale-connection "
          f"retries), latency p50 {s['p50_ms']:.0f} ms p99 {s['p99_ms']:.0f} ms "
          f"max {s['max_ms']:.0f} ms, operations p99 {s['op_p99_ms']:.0f} ms "
          f"max {s['op_max_ms']:.0f} ms; "
          f"{s['acknowledged']} observations acknowledged"
          + (f", {abandoned} abandoned" if abandoned else "")
          + (f"; {len(s['crashed_clients'])} clients crashed" if s["crashed_clients"] else ""),
          flush=True)


def load(base, key, state_file, n_clients, stop_file):
    stop, t0 = StopFlag(stop_file), time.monotonic()
    run_id = uuid.uuid4().hex[:8]
    clients = [Client(i, base, key, stop, t0) for i in range(1, n_clients + 1)]
    threads = [threading.Thread(target=c.run, args=(f"docker-smoke-load-{run_id}-{c.n}",),
                                daemon=True) for c in clients]
    for t in threads:
        t.start()
    next_progress = 10.0
    while any(t.is_alive() for t in threads):
        time.sleep(0.2)
        if time.monotonic() - t0 >= next_progress:
            done = [a for c in clients for a in list(c.attempts)]
            bad = sum(a.kind == NON_RETRYABLE for a in done)
            print(f"t={next_progress:.0f} s: {len(done)} requests, {bad} non-retryable",
                  flush=True)
            next_progress += 10.0
    summary, non, attempts = summarise(clients, time.monotonic() - t0)
    with open(state_file, "w") as f:
        json.dump(summary, f, indent=1)
    report(summary, non, attempts)


# ----------------------------------------------------------------------------- check

def stored_observations(base, key, sid):
    stored, after = [], 0
    while True:
        _, page, _ = call(base, key, "GET", f"/v1/sessions/{sid}/observations"
                          f"?after={after}&limit=1000&include_pruned=true")
        stored += page["observations"]
        if page.get("next_after") is None or not page["observations"]:
            return stored
        after = page["next_after"]


def check_session(base, key, sid, acked):
    """Prints the session's line; returns (stored, acked, duplicated, missing, extra)."""
    ids = [o["suggestion_id"] for o in stored_observations(base, key, sid)]
    dupes = sorted(i for i, n in Counter(ids).items() if n > 1)
    missing = sorted(set(acked) - set(ids))
    extra = sorted(set(ids) - set(acked))
    print(f"session {sid}: {len(ids)} observations stored, {len(acked)} acknowledged, "
          f"{len(dupes)} duplicated, {len(missing)} missing, {len(extra)} unacknowledged")
    for label, items in (("duplicated", dupes), ("missing", missing),
                         ("unacknowledged", extra)):
        if items:
            print(f"  {label}: {', '.join(items[:10])}" + (" ..." if len(items) > 10 else ""))
    return len(ids), len(acked), len(dupes), len(missing), len(extra)


def check(base, key, state_file):
    with open(state_file) as f:
        state = json.load(f)
    if "sessions" in state:
        sessions = state["sessions"]
    else:
        sessions = {state["session"]: state["acked"]}
    if not sessions:
        raise SystemExit("FAIL: the state file holds no session")
    totals = [0] * 5
    for sid, acked in sessions.items():
        totals = [t + n for t, n in zip(totals, check_session(base, key, sid, acked))]
    stored, acked, dupes, missing, extra = totals
    abandoned = sum(len(ids) for ids in state.get("abandoned", {}).values())
    if abandoned:
        print(f"{abandoned} observes the client abandoned unacknowledged (stored or not)")
    if "sessions" in state:
        print(f"{len(sessions)} sessions: {stored} observations stored, {acked} acknowledged, "
              f"{dupes} duplicated, {missing} missing, {extra} unacknowledged")
    if dupes or missing or extra or stored != acked:
        raise SystemExit("FAIL: stored observations differ from the acknowledged ones")


if __name__ == "__main__":
    args = sys.argv[1:]
    mode = args[0] if args else ""
    if mode == "rounds" and len(args) == 9:
        n, kill_at, restart_at = map(int, args[4:7])
        rounds(*args[1:4], n, kill_at, restart_at, args[7], args[8])
    elif mode == "load" and len(args) == 6:
        load(*args[1:4], int(args[4]), args[5])
    elif mode == "check" and len(args) == 4:
        check(*args[1:4])
    else:
        raise SystemExit("usage:\n" + "\n".join(
            line for line in __doc__.splitlines() if line.startswith("  smoke_client.py")))
