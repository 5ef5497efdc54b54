#!/usr/bin/env python3
"""The tables of docs/decisions/0012-output-warping.md: BOLT and W-DBO on the real suite
with the values themselves (runs.jsonl.gz, the suite's run log), their logarithms
(runs-warping-log.jsonl.gz: `--warping log`) and the half-rank warping
(runs-warping-half-rank.jsonl.gz: `--warping half_rank`).

The first table: each cell the fraction of the per-moment optimum achieved, mean ±
standard error over the seeds, the last column the mean over the scenarios. The others:
the mean fraction in each phase of the scenarios where the warpings differ most.
Standard library only:

    python3 benchmarks/real/warping.py
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEMS = ["compression", "sqlite", "postgres", "postgres-uneven", "rocksdb", "jvm-gc"]
LOGS = [
    ("none", "runs.jsonl.gz"),
    ("log", "runs-warping-log.jsonl.gz"),
    ("half_rank", "runs-warping-half-rank.jsonl.gz"),
]
# Phase boundaries in minutes (the scenarios' schedules, docs/real-systems.md).
PHASES = {
    "postgres": [0, 30, 60, 90, 120],
    "postgres-uneven": [0, 37, 50, 99, 120],
    "sqlite": [0, 20, 40, 60, 80, 100, 120],
    "compression": [0, 20, 40, 60, 80, 100, 120],
}


def runs(path: Path, algorithm: str) -> list[dict]:
    with gzip.open(path, "rt") as lines:
        return [r for r in map(json.loads, lines) if r["algorithm"] == algorithm]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def cell(values: list[float]) -> str:
    m = mean(values)
    variance = sum((v - m) ** 2 for v in values) / (len(values) - 1)
    return f"{m:.3f} ± {math.sqrt(variance / len(values)):.3f}"


def fractions(recorded: list[dict]) -> dict[str, list[float]]:
    """Each run's mean fraction of the optimum, by system."""
    out: dict[str, list[float]] = defaultdict(list)
    for run in recorded:
        achieved = [i["achieved"] for i in run["iterations"]]
        out[run["objective"].removeprefix("trace-")].append(mean(achieved))
    return out


def by_phase(recorded: list[dict], system: str) -> list[float]:
    """The mean fraction in each phase of `system`, over the runs."""
    bounds = PHASES[system]
    per_phase: list[list[float]] = [[] for _ in bounds[1:]]
    for run in recorded:
        if run["objective"].removeprefix("trace-") != system:
            continue
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            inside = [i["achieved"] for i in run["iterations"] if a * 60 <= i["t"] < b * 60]
            per_phase[k].append(mean(inside))
    return [mean(p) for p in per_phase]


def main() -> None:
    recorded = {
        (algorithm, warping): runs(HERE / name, algorithm)
        for algorithm in ["bolt", "w-dbo"]
        for warping, name in LOGS
    }
    print("| algorithm, warping | " + " | ".join(SYSTEMS) + " | mean |")
    print("|---" * (len(SYSTEMS) + 2) + "|")
    for (algorithm, warping), these in recorded.items():
        by_system = fractions(these)
        means = [mean(by_system[s]) for s in SYSTEMS]
        cells = " | ".join(cell(by_system[s]) for s in SYSTEMS)
        print(f"| `{algorithm}`, {warping} | {cells} | {mean(means):.3f} |")
    for system, bounds in PHASES.items():
        phases = [f"{a}–{b} min" for a, b in zip(bounds, bounds[1:])]
        print(f"\n| {system} | " + " | ".join(phases) + " |")
        print("|---" * (len(phases) + 1) + "|")
        for (algorithm, warping), these in recorded.items():
            values = " | ".join(f"{v:.3f}" for v in by_phase(these, system))
            print(f"| `{algorithm}`, {warping} | {values} |")


if __name__ == "__main__":
    main()
