#!/usr/bin/env python3
"""The tables of docs/benchmarks.md, "Hyperpriors: evidence for the default".

Reads benchmarks/hyperpriors/<suite>-<variant>-<commit>.csv (one row per run: objective,
algorithm, replication, seed, iterations, average regret, mean dataset size) and prints,
per objective and algorithm, the mean average regret ± its standard error and the mean
dataset size under each variant; then every BOLT run beside uniform random search on the
same objective and seed. Variants: `none` (exact likelihood), `robust_lt_fifth` (the
first robust priors, l_T's mode at a fifth of the data's span), `robust_no_lt` (no prior
on l_T), `robust` (l_T's mode at the span: the default). Then the reduced paper suite
(BOLT, W-DBO, GP-UCB × 002's eight functions × 3 replications, 600 s): `none` from
benchmarks/paper-reduced/runs-*.jsonl.gz, `robust` from paper-reduced-robust.jsonl.gz,
each cell the mean average regret ± its standard error (the replications in parentheses
where fewer than 3), with the difference in standard errors of the difference. Standard
library only:

    python3 benchmarks/hyperpriors/table.py
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ["none", "robust_lt_fifth", "robust_no_lt", "robust"]


def runs(suite: str) -> dict[str, list[dict]]:
    by_variant: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(HERE.glob(f"{suite}-*.csv")):
        variant = path.stem[len(suite) + 1 :].rsplit("-", 1)[0]
        with open(path, newline="") as f:
            by_variant[variant].extend(csv.DictReader(f))
    return by_variant


def mean_se(values: list[float]) -> str:
    if not values:
        return "–"
    m, se = stats(values)
    return f"{m:.3g}" if len(values) < 2 else f"{m:.3g} ± {se:.2g}"


def main() -> None:
    by_variant = runs("multimodal")
    cells: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for variant, rows in by_variant.items():
        for row in rows:
            cells[(row["objective"], row["algorithm"])][variant].append(row)
    print("| objective | algorithm | " + " | ".join(VARIANTS) + " |")
    print("|---|---|" + "---|" * len(VARIANTS))
    for key in sorted(cells):
        out = []
        for variant in VARIANTS:
            rows = cells[key][variant]
            regret = mean_se([float(r["average_regret"]) for r in rows])
            n = sum(float(r["mean_dataset_size"]) for r in rows) / len(rows) if rows else None
            out.append("–" if n is None else f"{regret} (n {n:.0f})")
        print(f"| {key[0]} | {key[1]} | " + " | ".join(out) + " |")
    print()
    print("| objective | seed | random | " + " | ".join(f"bolt, {v}" for v in VARIANTS) + " |")
    print("|---|---|---|" + "---|" * len(VARIANTS))
    random = {(r["objective"], r["replication"]): float(r["average_regret"])
              for rows in by_variant.values() for r in rows if r["algorithm"] == "random"}
    bolt = {(r["objective"], r["replication"], v): float(r["average_regret"])
            for v, rows in by_variant.items() for r in rows if r["algorithm"] == "bolt"}
    for objective, replication in sorted({(o, r) for o, r, _ in bolt}):
        same = random.get((objective, replication))
        values = []
        for v in VARIANTS:
            b = bolt.get((objective, replication, v))
            values.append("–" if b is None else (f"**{b:.3g}**" if same is not None and b > same else f"{b:.3g}"))
        print(f"| {objective} | {replication} | {'–' if same is None else f'{same:.3g}'} | " + " | ".join(values) + " |")


def paper_runs(paths: list[Path]) -> dict[tuple[str, str], list[float]]:
    """Each (objective, algorithm)'s average regrets, one per replication."""
    regrets: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for path in paths:
        with gzip.open(path, "rt") as f:
            for line in f:
                run = json.loads(line)
                iterations = run["iterations"]
                regret = sum(i["regret"] for i in iterations) / len(iterations)
                regrets[(run["objective"], run["algorithm"])][run["replication"]] = regret
    return {key: [by_rep[r] for r in sorted(by_rep)] for key, by_rep in regrets.items()}


def stats(values: list[float]) -> tuple[float, float]:
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
    return m, sd / math.sqrt(len(values))


def paper_reduced() -> None:
    none = paper_runs(sorted((HERE.parent / "paper-reduced").glob("runs-*.jsonl.gz")))
    robust = paper_runs([HERE / "paper-reduced-robust.jsonl.gz"])
    algorithms = ["bolt", "w-dbo", "gp-ucb"]
    print("| objective | " + " | ".join(f"{a}: none → robust (Δ/SE)" for a in algorithms) + " |")
    print("|---|" + "---|" * len(algorithms))
    for objective in sorted({o for o, _ in none}):
        cells = []
        for algorithm in algorithms:
            a, b = none.get((objective, algorithm)), robust.get((objective, algorithm))
            if not a or not b:
                cells.append("–")
                continue
            (ma, sa), (mb, sb) = stats(a), stats(b)
            count = "" if len(b) == 3 else f" ({len(b)})"
            z = (mb - ma) / math.sqrt(sa**2 + sb**2) if sa > 0 or sb > 0 else float("nan")
            cells.append(f"{ma:.3g} ± {sa:.2g} → {mb:.3g} ± {sb:.2g}{count} ({z:+.1f})")
        print(f"| {objective} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
    print()
    paper_reduced()
