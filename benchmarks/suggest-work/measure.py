"""Seconds of one suggest call against the model it conditions on: the measurement behind
the bound on model work per call (docs/api.md, "Limits"; tvbo::engine::MAX_SUGGEST_WORK).

Start a server without keys on a scratch database, then run this with the number of
observations and the counts to ask for, one call each (each call also fits the model):

    DATABASE_URL=sqlite:///tmp/work.db TVBO_AUTH=off target/release/tvbo serve --bind 127.0.0.1:18181 &
    python3 benchmarks/suggest-work/measure.py 1990 1 25 26

The session is gp-ucb over 4 parameters with no warm-up and client time, observed at n
uniform random points of a quadratic with noise (seed 1). Python 3 standard library only.
"""

import json
import random
import sys
import time
import urllib.error
import urllib.request

BASE = "http://127.0.0.1:18181"


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        BASE + path, method=method, data=data, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def main():
    n = int(sys.argv[1])
    counts = [int(c) for c in sys.argv[2:]]
    parameters = [{"name": f"x{i}", "low": 0, "high": 1} for i in range(4)]
    status, session = call(
        "POST",
        "/v1/sessions",
        {
            "parameters": parameters,
            "algorithm": {"name": "gp-ucb"},
            "model": {"warmup": 0},
            "time": {"source": "client"},
            "seed": 1,
        },
    )
    assert status == 201, session
    sid = session["id"]
    rng = random.Random(1)
    observations = []
    for i in range(n):
        point = {f"x{d}": rng.random() for d in range(4)}
        value = -sum((point[f"x{d}"] - 0.3) ** 2 for d in range(4)) + 0.05 * rng.gauss(0, 1)
        observations.append({"params": point, "value": value, "t": float(i)})
    for k in range(0, n, 1000):
        status, answer = call(
            "POST", f"/v1/sessions/{sid}/observations", {"observations": observations[k : k + 1000]}
        )
        assert status == 201, answer
    for count in counts:
        started = time.time()
        status, answer = call(
            "POST", f"/v1/sessions/{sid}/suggestions", {"t": float(n), "count": count}
        )
        detail = answer.get("detail", "") if status != 201 else ""
        print(f"n={n} count={count} status={status} seconds={time.time() - started:.2f} {detail}")


if __name__ == "__main__":
    main()
