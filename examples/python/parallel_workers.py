"""Several workers tuning one cache at once, while its workload grows.

What it shows: ``session.optimize(fn, iterations, workers=N)`` running N benchmark
workers in threads against one session. Each suggestion handed out stays *pending* on
the server until its value arrives, and the model treats it as already evaluated, so
workers busy at the same time are sent to different settings. The system is a cache
whose latency depends on its size (16 MiB to 16 GiB, log scale) and its eviction
sample size; the workload's working set doubles every 4 seconds, so the best size keeps
growing. Each benchmark run takes 0.2 to 0.6 s. The session runs on the server's wall
clock (the default): the time axis is real time. The script prints each result with
the worker that measured it and its true regret, how many runs overlapped, and the link
to the session's dashboard page.

How long: 4 workers, 80 runs, about 10 s; ``--short`` (or ``TVBO_EXAMPLE_SHORT=1``):
4 workers, 16 runs, about 3 s.

Run: start a server, make a key, then
    TVBO_API_KEY=$(cargo run --release -q -- keys create --name cache) \\
        python examples/python/parallel_workers.py
"""

from __future__ import annotations

import argparse
import math
import os
import random
import threading
import time

import tvbo

START = time.monotonic()


def working_set_mb() -> float:
    """The workload's working set now: 200 MiB at the start, doubling every 4 s."""
    return 200.0 * 2 ** ((time.monotonic() - START) / 4.0)


def latency_ms(cache_mb: float, samples: float, working_set: float) -> float:
    """Mean request latency: hits cost 0.2 ms, misses 5 ms; a bigger cache costs memory
    bandwidth, and eviction sampling trades accuracy for CPU."""
    hit = (1 - math.exp(-cache_mb / working_set)) * (1 - 0.3 / samples)
    return 0.2 * hit + 5.0 * (1 - hit) + 0.0004 * cache_mb + 0.01 * samples


def best_latency_ms(working_set: float) -> float:
    return min(
        latency_ms(2 ** (e / 8), s, working_set) for e in range(32, 113) for s in range(1, 33)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("TVBO_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--key", default=os.environ.get("TVBO_API_KEY"))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=80)
    parser.add_argument(
        "--short",
        action="store_true",
        default=os.environ.get("TVBO_EXAMPLE_SHORT", "") not in ("", "0"),
    )
    args = parser.parse_args()
    runs = 16 if args.short else args.runs
    lock = threading.Lock()
    running = 0
    most_running = 0
    regrets: list[float] = []

    def benchmark(params: tvbo.Params) -> float:
        """One benchmark run of the cache (what a worker would really measure)."""
        nonlocal running, most_running
        with lock:
            running += 1
            most_running = max(most_running, running)
        time.sleep(random.uniform(0.2, 0.6))
        ws = working_set_mb()
        cache_mb, samples = float(params["cache_mb"]), int(params["samples"])
        value = latency_ms(cache_mb, samples, ws)
        with lock:
            running -= 1
            regrets.append(value - best_latency_ms(ws))
            print(
                f"{threading.current_thread().name:17s} cache {cache_mb:6.0f} MiB  "
                f"samples {samples:2d}  working set {ws:6.0f} MiB  "
                f"latency {value:5.2f} ms  regret {regrets[-1]:5.2f} ms"
            )
        return value

    with tvbo.Client(args.url, args.key) as client:
        session = client.create_session(
            [tvbo.Int("cache_mb", 16, 16384, log=True), tvbo.Int("samples", 1, 32)],
            name="cache under a growing workload",
            goal="minimize",
            algorithm="bolt",
            model={"warmup": args.workers},
        )
        print(f"session {session.id}: {runs} runs by {args.workers} workers")
        global START
        START = time.monotonic()  # the workload starts growing now
        stored = session.optimize(benchmark, iterations=runs, workers=args.workers)
        ids = {o.suggestion_id for o in stored}
        print(
            f"{len(stored)} runs stored, {len(ids)} distinct suggestions, "
            f"up to {most_running} running at once"
        )
        half = len(regrets) // 2
        print(
            f"mean regret: first half {sum(regrets[:half]) / max(half, 1):.2f} ms, "
            f"second half {sum(regrets[half:]) / max(len(regrets) - half, 1):.2f} ms"
        )
        best = session.best()
        print(
            f"recommended now: {best.params['cache_mb']:.0f} MiB, {best.params['samples']:.0f} "
            f"samples (working set {working_set_mb():.0f} MiB)"
        )
        print(f"dashboard: {session.dashboard_url}")


if __name__ == "__main__":
    main()
