#!/usr/bin/env python3
"""The tables of docs/benchmarks.md, "Hyperpriors: evidence for the default".

Reads the runs in benchmarks/hyperpriors/<suite>-<mode>-<commit>.jsonl.gz (suite
`multimodal` or `paper-reduced`, mode `none` or `robust`, as `tvbo bench --hyperpriors`
recorded them) and prints, per objective and algorithm, the mean average regret ± its
standard error under each mode, with the runs counted; then, for the multimodal set, every
BOLT run beside uniform random search on the same objective (the same seed, and the mean
of random's runs). Standard library only:

    python3 benchmarks/hyperpriors/table.py
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ["none", "robust"]


def runs(suite: str) -> dict[str, list[dict]]:
    by_mode: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(HERE.glob(f"{suite}-*.jsonl.gz")):
        mode = path.name[len(suite) + 1 :].split("-")[0]
        with gzip.open(path, "rt") as f:
            for line in f:
                if line.strip():
                    run = json.loads(line)
                    assert run.get("hyperpriors", "none") == mode, path
                    by_mode[mode].append(run)
    return by_mode


def average_regret(run: dict) -> float:
    queries = run["iterations"]
    return sum(q["regret"] for q in queries) / len(queries)


def mean_se(values: list[float]) -> str:
    if not values:
        return "–"
    m = sum(values) / len(values)
    if len(values) < 2:
        return f"{m:.3g}"
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
    return f"{m:.3g} ± {sd / math.sqrt(len(values)):.2g}"


def table(suite: str) -> dict[str, list[dict]]:
    by_mode = runs(suite)
    cells: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    order: list[tuple[str, str]] = []
    for mode in MODES:
        for run in by_mode.get(mode, []):
            k = (run["objective"], run["algorithm"])
            if k not in cells:
                order.append(k)
            cells[k][mode].append(average_regret(run))
    print(f"\n{suite}: mean average regret ± standard error (runs)\n")
    print("| objective | algorithm | none | robust |")
    print("|---|---|---|---|")
    for k in sorted(order):
        c = cells[k]
        row = [f"{mean_se(c[m])} ({len(c[m])})" for m in MODES]
        print(f"| {k[0]} | {k[1]} | {row[0]} | {row[1]} |")
    return by_mode


def bolt_against_random(by_mode: dict[str, list[dict]]) -> None:
    print("\nmultimodal: BOLT's average regret per seed beside random search's\n")
    print("| objective | seed | random (same seed) | random (mean) | bolt, none | bolt, robust |")
    print("|---|---|---|---|---|---|")
    random: dict[tuple[str, int], float] = {}
    for mode in MODES:
        for run in by_mode.get(mode, []):
            if run["algorithm"] == "random":
                random[(run["objective"], run["replication"])] = average_regret(run)
    bolt: dict[tuple[str, int, str], float] = {}
    for mode in MODES:
        for run in by_mode.get(mode, []):
            if run["algorithm"] == "bolt":
                bolt[(run["objective"], run["replication"], mode)] = average_regret(run)
    for objective, replication in sorted({(o, r) for o, r, _ in bolt}):
        same = random.get((objective, replication))
        others = [v for (o, _), v in random.items() if o == objective]
        rmean = sum(others) / len(others) if others else None
        cells = []
        for mode in MODES:
            v = bolt.get((objective, replication, mode))
            if v is None:
                cells.append("–")
            else:
                worse = rmean is not None and v > rmean
                cells.append(f"**{v:.3g}**" if worse else f"{v:.3g}")
        fmt = lambda v: "–" if v is None else f"{v:.3g}"  # noqa: E731
        print(f"| {objective} | {replication} | {fmt(same)} | {fmt(rmean)} | {cells[0]} | {cells[1]} |")


def main() -> None:
    multimodal = table("multimodal")
    bolt_against_random(multimodal)
    table("paper-reduced")


if __name__ == "__main__":
    main()
