"""Choosing a compression codec and level for each kind of data, as the load changes.

What it shows: a categorical parameter (the codec) tuned together with an integer one
(its level), given two context parameters the program measures but does not choose: the
kind of data in the next batch (a categorical context) and the machine's load (a float
context). Every suggest gives the context in ``fixed``; the server answers with the best
codec and level for it, learning from every batch how the three codecs trade CPU time
for bytes on each kind of data.

The measurements are real: each step compresses a batch with Python's own ``zlib``,
``bz2`` or ``lzma`` and times it. The cost to minimise is what a storage service pays:
CPU seconds at a price that rises with the load, plus the bytes kept. Logs and JSON
compress well and repay a slow codec while CPU is cheap, random bytes (already-compressed
media) not at all: the fastest setting wins there whatever the load. The session runs on client
time, each step one simulated 10 minutes of a day whose load peaks in the afternoon.

How long: 144 steps, about 30 s; ``--short`` (or ``TVBO_EXAMPLE_SHORT=1``) runs 36,
a few seconds. At the end it prints, for each kind of data at a low and a high load, the
session's choice next to the cheapest setting found by trying all 27.

Run: start a server, make a key, then
    TVBO_API_KEY=$(cargo run --release -q -- keys create --name compression) \\
        python examples/python/compression_by_data.py
"""

from __future__ import annotations

import argparse
import bz2
import lzma
import math
import os
import random
import time
import zlib
from typing import Callable, Dict, List, Tuple

import tvbo

CODECS: Dict[str, Callable[[bytes, int], bytes]] = {
    "zlib": lambda data, level: zlib.compress(data, level),
    "bz2": lambda data, level: bz2.compress(data, level),
    "lzma": lambda data, level: lzma.compress(data, preset=level - 1),
}
KINDS = ["logs", "json", "random"]
STEP = 600.0
# The prices: a CPU second costs 0.5 at no load and 20 at full load; a kilobyte kept
# costs 0.01 (both in the same made-up currency). Measured on this machine kind, bz2
# is then the cheapest for logs and JSON at a low load and zlib at a high one, and zlib
# for random bytes at any load.
CPU_PRICE = (0.5, 20.0)
KB_PRICE = 0.01


def batch(kind: str, rng: random.Random, size: int = 48_000) -> bytes:
    """A batch of data of one kind: log lines, JSON records or random bytes."""
    if kind == "random":
        return rng.randbytes(size)
    lines: List[str] = []
    while sum(map(len, lines)) < size:
        n = rng.randrange(100_000)
        if kind == "logs":
            level = rng.choice(["INFO", "INFO", "INFO", "WARN", "ERROR"])
            stamp = f"2026-11-27T10:{n % 60:02d}:{n % 59:02d}Z"
            lines.append(f"{stamp} {level} request {n} ok in {n % 97} ms\n")
        else:
            score = f"{rng.random():.4f}"
            lines.append(f'{{"id": {n}, "user": "u{n % 313}", "score": {score}, "tags": []}}\n')
    return "".join(lines).encode()[:size]


def load_at(t: float) -> float:
    """The machine's load over a day: low at night, a peak in the afternoon."""
    hour = (t / 3600.0) % 24.0
    return min(1.0, max(0.0, 0.15 + 0.75 * math.exp(-((hour - 15.0) ** 2) / 12.0)))


def kind_at(t: float, rng: random.Random) -> str:
    """The next batch's kind: mostly logs at night, JSON by day, media in the evening."""
    hour = (t / 3600.0) % 24.0
    weights = [0.7, 0.2, 0.1] if hour < 8 else [0.2, 0.6, 0.2] if hour < 18 else [0.2, 0.2, 0.6]
    return rng.choices(KINDS, weights)[0]


def cost(codec: str, level: int, data: bytes, load: float) -> float:
    """The measured cost of compressing `data` so: CPU seconds at the load's price plus
    the kilobytes kept."""
    started = time.process_time()
    out = CODECS[codec](data, level)
    seconds = time.process_time() - started
    cpu_price = CPU_PRICE[0] + (CPU_PRICE[1] - CPU_PRICE[0]) * load
    return seconds * cpu_price + len(out) / 1000.0 * KB_PRICE


def cheapest(data: bytes, load: float) -> Tuple[str, int, float]:
    """The cheapest of all 27 settings for `data` at `load`, by trying each."""
    tried = [(cost(c, lv, data, load), c, lv) for c in CODECS for lv in range(1, 10)]
    best_cost, codec, level = min(tried)
    return codec, level, best_cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="36 steps instead of 144")
    args = parser.parse_args()
    short = args.short or os.environ.get("TVBO_EXAMPLE_SHORT") == "1"
    steps = 36 if short else 144
    rng = random.Random(7)
    url = os.environ.get("TVBO_URL", "http://127.0.0.1:8080")
    with tvbo.Client(url, os.environ.get("TVBO_API_KEY")) as client:
        session = client.create_session(
            [
                tvbo.Categorical("codec", list(CODECS)),
                tvbo.Int("level", 1, 9),
                tvbo.Categorical("data", KINDS, context=True),
                tvbo.Float("load", 0, 1, context=True),
            ],
            name="compression by data and load",
            goal="minimize",
            algorithm="bolt",
            model={"warmup": 8},
            time={"source": "client"},
            seed=3,
        )
        print(f"session {session.id}: {steps} batches")
        for step in range(steps):
            t = step * STEP
            kind, load = kind_at(t, rng), round(load_at(t), 3)
            data = batch(kind, rng)
            (suggestion,) = session.suggest(t=t, fixed={"data": kind, "load": load})
            codec, level = str(suggestion.params["codec"]), int(suggestion.params["level"])
            value = cost(codec, level, data, load)
            session.observe(suggestion, value, t=t + 1.0, metadata={"bytes": len(data)})
            if step % 6 == 5:
                hour = t / 3600
                print(f"  {hour:5.1f} h  {kind:6} load {load:.2f}: {codec} {level}  {value:.4f}")
        t = steps * STEP
        print("kind    load  session's choice        cheapest of all 27")
        for kind in KINDS:
            data = batch(kind, rng)
            for load in (0.1, 0.9):
                (s,) = session.suggest(t=t, fixed={"data": kind, "load": load})
                ours = cost(str(s.params["codec"]), int(s.params["level"]), data, load)
                codec, level, best = cheapest(data, load)
                print(
                    f"{kind:6}  {load:.1f}   {s.params['codec']:4} {s.params['level']}  {ours:.4f}"
                    f"      {codec:4} {level}  {best:.4f}"
                )
                session.abandon(s)
        print(f"dashboard: {session.dashboard_url}")


if __name__ == "__main__":
    main()
