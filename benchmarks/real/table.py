#!/usr/bin/env python3
"""The table of docs/real-systems.md: every algorithm on every replayed trace.

Reads benchmarks/real/runs.jsonl.gz (the run log of `tvbo bench --suite real`) and prints,
per system (scenario) and algorithm, the fraction of the per-moment optimum achieved (the
mean over a run's queries; mean ± standard error over the seeds; the best in bold) with
its mean over the scenarios, and the average regret in the objective's own units; then, per system, the same fraction by
phase of its scenario (benchmarks/traces/NAME.scenario.json; a query counts for the phase
its time falls in, a ramp for the phase it ends, every occurrence of a phase together: the
table `tvbo bench` writes into report.md); then the live runs of benchmarks/live/*.jsonl
beside the replay's runs of the same algorithm. Standard library only:

    python3 benchmarks/real/table.py [RUNS]

RUNS: another run log (`bench-results/real/runs.jsonl`, plain or gzipped).
"""

from __future__ import annotations

import gzip
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = HERE.parent / "traces"
SYSTEMS = ["compression", "sqlite", "postgres", "postgres-uneven", "rocksdb", "jvm-gc"]
ORDER = ["bolt", "w-dbo", "gp-ucb", "tune-once", "optuna-tpe", "optuna-tpe-restart", "optuna-gp",
         "optuna-gp-restart", "random"]


def number(x: float) -> str:
    """Three significant digits, thousands grouped by a space (14 600, not 1.46e+04)."""
    if math.isnan(x):
        return "–"
    if abs(x) >= 1000:
        return f"{float(f'{x:.3g}'):,.0f}".replace(",", " ")
    return f"{x:.3g}"


def mean_se(values: list[float]) -> tuple[float, float]:
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, float("nan")
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))


def phase_at(phases: list[dict], t: float) -> int:
    """The index of the phase time t falls in, the phases repeating (a ramp is the end of
    its phase): the bench's `Scenario::phase_at`."""
    local = max(t, 0.0) % sum(p["seconds"] for p in phases)
    for k, phase in enumerate(phases):
        if local < phase["seconds"]:
            return k
        local -= phase["seconds"]
    return len(phases) - 1


def by_phase(system: str, runs: dict[str, list[list[dict]]]) -> None:
    """Prints the fraction achieved by phase of `system`'s scenario, per algorithm (mean
    over a run's queries in the phase; mean ± standard error over the seeds)."""
    phases = json.loads((TRACES / f"{system}.scenario.json").read_text())["phases"]
    algorithms = [a for a in ORDER if a in runs]
    print(f"{system}, by phase:")
    print()
    print("| phase | " + " | ".join(algorithms) + " |")
    print("|---|" + "---|" * len(algorithms))
    start = 0.0
    for k, phase in enumerate(phases):
        end = start + phase["seconds"]
        cells = []
        for algorithm in algorithms:
            means = []
            for its in runs[algorithm]:
                mine = [i["achieved"] for i in its if phase_at(phases, i["t"]) == k]
                if mine:
                    means.append(sum(mine) / len(mine))
            cells.append(f"{mean_se(means)[0]:.3f} ± {mean_se(means)[1]:.3f}" if means else "–")
        print(f"| {k + 1}. {phase['condition']} ({start / 60:g}–{end / 60:g} min) | "
              + " | ".join(cells) + " |")
        start = end
    print()


def main() -> None:
    achieved: dict[tuple[str, str], list[float]] = defaultdict(list)
    regret: dict[tuple[str, str], list[float]] = defaultdict(list)
    iterations: dict[str, dict[str, list[list[dict]]]] = defaultdict(lambda: defaultdict(list))
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "runs.jsonl.gz"
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        for line in f:
            run = json.loads(line)
            its = run["iterations"]
            key = (run["objective"].removeprefix("trace-"), run["algorithm"])
            achieved[key].append(sum(i["achieved"] for i in its) / len(its))
            regret[key].append(sum(i["regret"] for i in its) / len(its))
            iterations[key[0]][key[1]].append(its)
    systems = [s for s in SYSTEMS if any(k[0] == s for k in achieved)]
    print("| algorithm | " + " | ".join(systems) + " | mean over the scenarios |")
    print("|---|" + "---|" * (len(systems) + 1))
    best = {s: max(mean_se(v)[0] for k, v in achieved.items() if k[0] == s) for s in systems}
    for algorithm in ORDER:
        cells, means = [], []
        for system in systems:
            values = achieved.get((system, algorithm))
            if not values:
                cells.append("–")
                continue
            m, se = mean_se(values)
            means.append(m)
            seeds = "" if len(values) >= 5 else f" ({len(values)} seeds)"
            cell = f"{m:.3f} ± {se:.3f}{seeds}"
            cells.append(f"**{cell}**" if m == best[system] else cell)
        overall = f"{sum(means) / len(means):.3f}" if len(means) == len(systems) else "–"
        print(f"| `{algorithm}` | " + " | ".join(cells) + f" | {overall} |")
    print()
    print("Average regret, in each objective's units (mean ± standard error over the seeds):")
    print()
    print("| algorithm | " + " | ".join(systems) + " |")
    print("|---|" + "---|" * len(systems))
    for algorithm in ORDER:
        cells = []
        for system in systems:
            values = regret.get((system, algorithm))
            cells.append("–" if not values else " ± ".join(map(number, mean_se(values))))
        print(f"| `{algorithm}` | " + " | ".join(cells) + " |")
    print()
    for system in systems:
        by_phase(system, iterations[system])
    print("| live run | fraction live | replay, same algorithm (seeds) |")
    print("|---|---|---|")
    for path in sorted((HERE.parent / "live").glob("*.jsonl")):
        system, algorithm = path.stem.split("-", 1)
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        live = sum(r["fraction"] for r in rows) / len(rows)
        values = achieved.get((system, algorithm))
        replay = "–" if not values else f"{mean_se(values)[0]:.3f} ± {mean_se(values)[1]:.3f} ({len(values)})"
        print(f"| {system}, {algorithm}, {len(rows)} evaluations | {live:.3f} | {replay} |")


if __name__ == "__main__":
    main()
