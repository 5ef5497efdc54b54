#!/usr/bin/env python3
"""The table of docs/performance.md, "A fit from the previous fit".

The same runs (objective, algorithm, replication, seed) under three ways of starting the
hyperparameter fit, from benchmarks/fit-start/:

- `fixed-699f96f`: `--fit-start fixed`, every fit from the default start (the papers');
- `chained-699f96f`: `--fit-start previous` as commit 699f96f had it, every fit from the
  one before (guarded only by the default start's likelihood);
- `previous-d8ecbdd`: `--fit-start previous` as it is now, the same but every fifth
  suggest fits from the default start.

Per (objective, algorithm): the mean ± standard error over replications of each run's
average regret and the mean dataset size; then, per algorithm and over all cells, how
many runs of each warm mode did better than the same seed's fixed run, and the mean
relative change of average regret. Standard library only:

    python3 benchmarks/fit-start/table.py
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = [("fixed", "fixed-699f96f"), ("chained", "chained-699f96f"), ("previous", "previous-d8ecbdd")]
NAMES = {"hartmann3": "Hartmann (3)", "shekel": "Shekel (4)", "ackley": "Ackley (4)", "eggholder": "Eggholder (2)"}


def load(stem: str) -> dict[tuple[str, str, int], tuple[float, float]]:
    """(objective, algorithm, replication) -> (average regret, mean n)."""
    out = {}
    with gzip.open(HERE / f"{stem}.jsonl.gz", "rt") as f:
        for line in f:
            run = json.loads(line)
            its = run["iterations"]
            regret = sum(i["regret"] for i in its) / len(its)
            size = sum(i["dataset_size"] for i in its) / len(its)
            out[(run["objective"], run["algorithm"], run["replication"])] = (regret, size)
    return out


def mean_se(values: list[float]) -> str:
    m = sum(values) / len(values)
    if len(values) < 2:
        return f"{m:.3g}"
    se = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))
    return f"{m:.3g} ± {se:.2g}"


def main() -> None:
    runs = {mode: load(stem) for mode, stem in MODES}
    cells = defaultdict(list)
    for key in runs["fixed"]:
        cells[key[:2]].append(key[2])
    print("| objective | algorithm | runs | " + " | ".join(f"regret: {m}" for m, _ in MODES)
          + " | " + " | ".join(f"mean n: {m}" for m, _ in MODES) + " |")
    print("|---|---|---|" + "---|" * (2 * len(MODES)))
    for (objective, algorithm), reps in sorted(cells.items(), key=lambda c: (list(NAMES).index(c[0][0]), c[0][1])):
        regrets = [mean_se([runs[m][(objective, algorithm, r)][0] for r in reps]) for m, _ in MODES]
        sizes = [f"{sum(runs[m][(objective, algorithm, r)][1] for r in reps) / len(reps):.0f}" for m, _ in MODES]
        print(f"| {NAMES[objective]} | {algorithm} | {len(reps)} | " + " | ".join(regrets) + " | " + " | ".join(sizes) + " |")
    print()
    print("| algorithm | mode | runs better than fixed | mean change of average regret |")
    print("|---|---|---|---|")
    for algorithm in ["bolt", "w-dbo", "gp-ucb", "all"]:
        for mode in ["chained", "previous"]:
            keys = [k for k in runs["fixed"] if algorithm in ("all", k[1])]
            better = sum(runs[mode][k][0] < runs["fixed"][k][0] for k in keys)
            change = sum(runs[mode][k][0] / runs["fixed"][k][0] - 1 for k in keys) / len(keys)
            print(f"| {algorithm} | {mode} | {better} of {len(keys)} | {change:+.0%} |")


if __name__ == "__main__":
    main()
