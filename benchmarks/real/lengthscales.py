#!/usr/bin/env python3
"""The tables of docs/decisions/0011-per-parameter-lengthscales.md: tvbo's GP algorithms
on the real suite with one spatial lengthscale for every parameter (runs.jsonl.gz, the
suite's run log) and with one per parameter (runs-per-parameter.jsonl.gz), and BOLT with a
smaller constant β beside: with one lengthscale (runs-bolt-beta1-shared.jsonl.gz: β = 1),
and with one per parameter (runs-bolt-beta1.jsonl.gz: β = 1; runs-bolt-beta025.jsonl.gz:
β = 0.25).
Each cell: the fraction of the per-moment optimum achieved, mean ± standard error over the
seeds; the last column the mean over the scenarios. Standard library only:

    python3 benchmarks/real/lengthscales.py
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEMS = ["compression", "sqlite", "postgres", "postgres-uneven", "rocksdb", "jvm-gc"]


def fractions(path: Path, algorithm: str) -> dict[str, list[float]]:
    """Each run's mean fraction of the optimum, by system, for `algorithm`."""
    out: dict[str, list[float]] = defaultdict(list)
    with gzip.open(path, "rt") as lines:
        for line in lines:
            run = json.loads(line)
            if run["algorithm"] != algorithm:
                continue
            achieved = [i["achieved"] for i in run["iterations"]]
            out[run["objective"].removeprefix("trace-")].append(sum(achieved) / len(achieved))
    return out


def cell(values: list[float]) -> str:
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return f"{mean:.3f} ± {math.sqrt(variance / len(values)):.3f}"


def row(label: str, by_system: dict[str, list[float]]) -> None:
    means = [sum(by_system[s]) / len(by_system[s]) for s in SYSTEMS]
    cells = " | ".join(cell(by_system[s]) for s in SYSTEMS)
    print(f"| {label} | {cells} | {sum(means) / len(means):.3f} |")


def main() -> None:
    print("| algorithm, lengthscales | " + " | ".join(SYSTEMS) + " | mean |")
    print("|---" * (len(SYSTEMS) + 2) + "|")
    for algorithm in ["bolt", "w-dbo", "gp-ucb", "tune-once"]:
        row(f"`{algorithm}`, shared", fractions(HERE / "runs.jsonl.gz", algorithm))
        row(f"`{algorithm}`, per parameter", fractions(HERE / "runs-per-parameter.jsonl.gz", algorithm))
    row("`bolt`, shared, β = 1", fractions(HERE / "runs-bolt-beta1-shared.jsonl.gz", "bolt"))
    row("`bolt`, per parameter, β = 1", fractions(HERE / "runs-bolt-beta1.jsonl.gz", "bolt"))
    row("`bolt`, per parameter, β = 0.25", fractions(HERE / "runs-bolt-beta025.jsonl.gz", "bolt"))


if __name__ == "__main__":
    main()
