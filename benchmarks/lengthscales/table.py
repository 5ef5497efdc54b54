#!/usr/bin/env python3
"""The multimodal rows of docs/decisions/0011-per-parameter-lengthscales.md: BOLT under
the service's hyperpriors (`robust`) with one spatial lengthscale for every parameter and
its β schedule (benchmarks/hyperpriors/multimodal-robust-*.csv, the runs of decision
0009), with one lengthscale per parameter (multimodal-per_parameter-*.csv here), and with
one lengthscale and β = 1 (multimodal-beta1-*.csv here), the same seeds; each cell the
mean average regret ± its standard error over the seeds and the mean dataset size n, with
the difference from the first in standard errors of the difference; then every run beside
uniform random search on the same objective and seed
(benchmarks/hyperpriors/multimodal-none-a8f9d8c.csv).
Standard library only:

    python3 benchmarks/lengthscales/table.py
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
HYPERPRIORS = HERE.parent / "hyperpriors"


def runs(paths: list[Path], algorithm: str) -> dict[str, dict[int, tuple[float, float]]]:
    """(average regret, mean dataset size) by objective and replication."""
    out: dict[str, dict[int, tuple[float, float]]] = defaultdict(dict)
    for path in paths:
        with path.open() as f:
            for row in csv.DictReader(f):
                if row["algorithm"] == algorithm:
                    out[row["objective"]][int(row["replication"])] = (
                        float(row["average_regret"]),
                        float(row["mean_dataset_size"]),
                    )
    return out


def mean_se(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def main() -> None:
    shared = runs(sorted(HYPERPRIORS.glob("multimodal-robust-*.csv")), "bolt")
    variants = {
        "per parameter": runs(sorted(HERE.glob("multimodal-per_parameter-*.csv")), "bolt"),
        "β = 1": runs(sorted(HERE.glob("multimodal-beta1-*.csv")), "bolt"),
    }
    random = runs([HYPERPRIORS / "multimodal-none-a8f9d8c.csv"], "random")
    names = [name for name, found in variants.items() if found]
    print("| objective | shared, β schedule | " + " | ".join(f"{n} (difference / SE)" for n in names) + " |")
    print("|---" * (2 + len(names)) + "|")
    for objective in sorted(shared):
        a = [shared[objective][r][0] for r in sorted(shared[objective])]
        ma, sa = mean_se(a)
        na = sum(shared[objective][r][1] for r in shared[objective]) / len(a)
        cells = []
        for name in names:
            found = variants[name][objective]
            b = [found[r][0] for r in sorted(found)]
            mb, sb = mean_se(b)
            nb = sum(found[r][1] for r in found) / len(b)
            z = (mb - ma) / math.sqrt(sa * sa + sb * sb)
            cells.append(f"{mb:.3g} ± {sb:.2g} (n {nb:.0f}; {z:+.1f})")
        print(f"| {objective} | {ma:.3g} ± {sa:.2g} (n {na:.0f}) | " + " | ".join(cells) + " |")
    print()
    print("| objective | replication | " + " | ".join(names) + " | random search |")
    print("|---" * (3 + len(names)) + "|")
    for objective in sorted(shared):
        for r in sorted(shared[objective]):
            values = " | ".join(f"{variants[n][objective][r][0]:.3g}" for n in names)
            print(f"| {objective} | {r} | {values} | {random[objective][r][0]:.3g} |")


if __name__ == "__main__":
    main()
