#!/usr/bin/env python3
"""The tables of docs/decisions/0013-a-drifting-level.md.

1. The real suite: BOLT with the papers' kernel and with a drifting level
   (benchmarks/real/runs-level-none.jsonl.gz and runs-level-drifting.jsonl.gz, `--level
   none|drifting`, the same machine and seeds), W-DBO likewise
   (runs-wdbo-level-{none,drifting}.jsonl.gz), beside the peers of the suite's run log
   (benchmarks/real/runs.jsonl.gz): the fraction of the per-moment optimum, mean ±
   standard error over the seeds, then the mean per phase where the level moves most.
2. The multimodal suite: BOLT under `robust` with and without the level
   (multimodal-{none,drifting}.csv here, the same seeds, run side by side), the mean
   average regret ± standard error and the mean dataset size, the difference in standard
   errors of the difference, and each run beside uniform random search on its seed
   (benchmarks/hyperpriors/multimodal-none-a8f9d8c.csv).
3. The paper functions run so far (paper-{none,drifting}.csv here).

Standard library only:

    python3 benchmarks/level/table.py
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "real"
SYSTEMS = ["compression", "sqlite", "postgres", "postgres-uneven", "rocksdb", "jvm-gc"]
PEERS = ["tune-once", "optuna-tpe", "optuna-tpe-restart", "optuna-gp", "optuna-gp-restart"]
# Phase boundaries in minutes (the scenarios' schedules, docs/real-systems.md).
PHASES = {
    "postgres": [0, 30, 60, 90, 120],
    "postgres-uneven": [0, 37, 50, 99, 120],
    "compression": [0, 20, 40, 60, 80, 100, 120],
    "jvm-gc": [0, 41, 58, 92, 120],
}


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def standard_error(values: list[float]) -> float:
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))


def cell(values: list[float]) -> str:
    return f"{mean(values):.3f} ± {standard_error(values):.3f}"


def runs(path: Path, algorithm: str) -> list[dict]:
    with gzip.open(path, "rt") as lines:
        return [r for r in map(json.loads, lines) if r["algorithm"] == algorithm]


def fractions(recorded: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for run in recorded:
        achieved = [i["achieved"] for i in run["iterations"]]
        out[run["objective"].removeprefix("trace-")].append(mean(achieved))
    return out


def by_phase(recorded: list[dict], system: str) -> list[float]:
    bounds = PHASES[system]
    per_phase: list[list[float]] = [[] for _ in bounds[1:]]
    for run in recorded:
        if run["objective"].removeprefix("trace-") != system:
            continue
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            inside = [i["achieved"] for i in run["iterations"] if a * 60 <= i["t"] < b * 60]
            per_phase[k].append(mean(inside))
    return [mean(p) for p in per_phase]


def peers() -> list[tuple[str, list[dict]]]:
    """The peers' rows of the suite's run log."""
    return [(f"`{p}`", runs(REAL / "runs.jsonl.gz", p)) for p in PEERS]


def print_fractions(rows: list[tuple[str, list[dict]]]) -> None:
    """The fraction of the per-moment optimum per system, a row per (name, runs)."""
    print("| algorithm | " + " | ".join(SYSTEMS) + " | mean |")
    print("|---" * (len(SYSTEMS) + 2) + "|")
    for name, these in rows:
        by_system = fractions(these)
        means = [mean(by_system[s]) for s in SYSTEMS]
        cells = " | ".join(cell(by_system[s]) for s in SYSTEMS)
        print(f"| {name} | {cells} | {mean(means):.3f} |")


def real() -> None:
    rows = [
        ("`bolt`, papers' kernel", runs(REAL / "runs-level-none.jsonl.gz", "bolt")),
        ("`bolt`, drifting level", runs(REAL / "runs-level-drifting.jsonl.gz", "bolt")),
        ("`w-dbo`, papers' kernel", runs(REAL / "runs-wdbo-level-none.jsonl.gz", "w-dbo")),
        ("`w-dbo`, drifting level", runs(REAL / "runs-wdbo-level-drifting.jsonl.gz", "w-dbo")),
    ] + peers()
    print_fractions(rows)
    for system, bounds in PHASES.items():
        phases = [f"{a}–{b} min" for a, b in zip(bounds, bounds[1:])]
        print(f"\n| {system} | " + " | ".join(phases) + " |")
        print("|---" * (len(phases) + 1) + "|")
        for name, these in rows:
            values = " | ".join(f"{v:.3f}" for v in by_phase(these, system))
            print(f"| {name} | {values} |")


def table(path: Path, algorithm: str = "bolt") -> dict[str, dict[int, tuple[float, float]]]:
    """(average regret, mean dataset size) by objective and replication."""
    out: dict[str, dict[int, tuple[float, float]]] = defaultdict(dict)
    if not path.exists():
        return out
    with path.open() as f:
        for row in csv.DictReader(f):
            if row["algorithm"] == algorithm:
                out[row["objective"]][int(row["replication"])] = (
                    float(row["average_regret"]),
                    float(row["mean_dataset_size"]),
                )
    return out


def compare(name: str, random: dict | None = None) -> None:
    none, drifting = table(HERE / f"{name}-none.csv"), table(HERE / f"{name}-drifting.csv")
    print(f"\n| {name} | papers' kernel | drifting level | difference / SE |")
    print("|---|---|---|---|")
    for objective in sorted(none):
        pairs = [r for r in none[objective] if r in drifting.get(objective, {})]
        if not pairs:
            continue
        a = [none[objective][r][0] for r in pairs]
        b = [drifting[objective][r][0] for r in pairs]
        n_a = mean([none[objective][r][1] for r in pairs])
        n_b = mean([drifting[objective][r][1] for r in pairs])
        if len(pairs) > 1:
            se = math.sqrt(standard_error(a) ** 2 + standard_error(b) ** 2)
            diff = f"{(mean(b) - mean(a)) / se:+.1f}" if se > 0 else "–"
            print(f"| {objective} | {cell(a)} (n {n_a:.0f}) | {cell(b)} (n {n_b:.0f}) | {diff} |")
        else:
            print(f"| {objective} | {a[0]:.3g} (n {n_a:.0f}) | {b[0]:.3g} (n {n_b:.0f}) | one seed |")
    if random is None:
        return
    worse = [
        (objective, r, drifting[objective][r][0], random[objective][r][0])
        for objective in drifting
        for r in drifting[objective]
        if r in random.get(objective, {}) and drifting[objective][r][0] > random[objective][r][0]
    ]
    print(f"\nRuns with the level worse than random search on their seed: {worse or 'none'}")


def main() -> None:
    real()
    random = table(HERE.parent / "hyperpriors" / "multimodal-none-a8f9d8c.csv", "random")
    compare("multimodal", random)
    compare("paper")


if __name__ == "__main__":
    main()
