#!/usr/bin/env python3
"""The table of docs/benchmarks.md, "After the speed work: a reduced paper suite".

Each run of the reduced suite (benchmarks/paper-reduced/*.jsonl.gz) beside the run of the
same (objective, algorithm, replication) in the full paper suite (benchmarks/paper/,
horizon 600 s, measured compute), W-DBO's taken from its uncapped re-run
(benchmarks/paper-wdbo-3/ and paper-wdbo-powell/) so that only the speed differs. Per
run: the average regret over its queries, the mean dataset size n and the number of
queries. Prints the Markdown rows, the means over the replications per objective and
algorithm, then a summary per algorithm. Standard library only:

    python3 benchmarks/paper-reduced/table.py
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = {
    "shekel": "Shekel (4)",
    "hartmann3": "Hartmann (3)",
    "ackley": "Ackley (4)",
    "griewank": "Griewank (6)",
    "eggholder": "Eggholder (2)",
    "schwefel": "Schwefel (4)",
    "hartmann6": "Hartmann (6)",
    "powell": "Powell (4)",
}
ALGORITHMS = ["bolt", "w-dbo", "gp-ucb"]


def runs(folder: str) -> list[dict]:
    out = []
    for path in sorted((ROOT / folder).glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def key(run: dict) -> tuple[str, str, int]:
    return (run["objective"], run["algorithm"], run["replication"])


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def stats(run: dict) -> tuple[float, float, int]:
    queries = run["iterations"]
    n = len(queries)
    return (sum(q["regret"] for q in queries) / n, sum(q["dataset_size"] for q in queries) / n, n)


def main() -> None:
    before: dict[tuple[str, str, int], dict] = {}
    for run in runs("paper"):
        if run.get("horizon") == 600 and run.get("fixed_compute") is None:
            if key(run) in before:
                sys.exit(f"two runs of {key(run)} in benchmarks/paper")
            before[key(run)] = run
    for folder in ("paper-wdbo-3", "paper-wdbo-powell"):
        for run in runs(folder):
            if run["algorithm"] == "w-dbo":
                before[key(run)] = run
    after: dict[tuple[str, str, int], dict] = {}
    for run in runs("paper-reduced"):
        if key(run) in after:
            sys.exit(f"two runs of {key(run)} in benchmarks/paper-reduced")
        after[key(run)] = run
    print("| objective | algorithm | replication | average regret: before | after "
          "| mean n: before | after | iterations: before | after |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    for objective in NAMES:
        for replication in range(3):
            for algorithm in ALGORITHMS:
                k = (objective, algorithm, replication)
                if k not in after:
                    continue
                (rb, nb, ib), (ra, na, ia) = stats(before[k]), stats(after[k])
                print(f"| {NAMES[objective]} | {algorithm} | {replication} | {rb:.3g} | {ra:.3g} "
                      f"| {nb:.0f} | {na:.0f} | {ib} | {ia} |")
                summary[algorithm].append((na / nb, ia / ib, ra < rb))
    print()
    print("| objective | algorithm | runs | mean of average regret: before | after "
          "| mean n: before | after | iterations: before | after |")
    print("|---|---|---|---|---|---|---|---|---|")
    for objective in NAMES:
        for algorithm in ALGORITHMS:
            pairs = [(stats(before[k]), stats(after[k])) for k in
                     ((objective, algorithm, r) for r in range(3)) if k in after]
            if not pairs:
                continue
            cols = [mean([p[side][i] for p in pairs]) for i in range(3) for side in (0, 1)]
            print(f"| {NAMES[objective]} | {algorithm} | {len(pairs)} | {cols[0]:.3g} | {cols[1]:.3g} "
                  f"| {cols[2]:.0f} | {cols[3]:.0f} | {cols[4]:.0f} | {cols[5]:.0f} |")
    print()
    for algorithm in ALGORITHMS:
        rows = summary[algorithm]
        if rows:
            n_ratio = [r[0] for r in rows]
            i_ratio = [r[1] for r in rows]
            lower = sum(r[2] for r in rows)
            print(f"{algorithm}: {len(rows)} runs; mean n {min(n_ratio):.2f}–{max(n_ratio):.2f}×, "
                  f"iterations {min(i_ratio):.2f}–{max(i_ratio):.2f}×, lower regret in {lower}")


if __name__ == "__main__":
    main()
