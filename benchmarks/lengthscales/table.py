#!/usr/bin/env python3
"""The multimodal rows of docs/decisions/0011-per-parameter-lengthscales.md: BOLT under
the service's hyperpriors (`robust`) with one spatial lengthscale for every parameter and
its β schedule (benchmarks/hyperpriors/multimodal-robust-*.csv, the runs of decision
0009), with one lengthscale per parameter (multimodal-per_parameter-*.csv here), and with
one lengthscale and β = 1 (multimodal-beta1-*.csv here), the same seeds; each cell the
mean average regret ± its standard error over the seeds and the mean dataset size n, with
the difference from the first in standard errors of the difference; then every run beside
uniform random search on the same objective and seed
(benchmarks/hyperpriors/multimodal-none-a8f9d8c.csv). Then the reduced paper suite (002's
eight functions, 600 s): BOLT under `robust` with its β schedule
(benchmarks/hyperpriors/paper-reduced-robust.jsonl.gz, 3 replications) beside β = 1
(paper-beta1-*.jsonl.gz here, the replications run so far, the same seeds).
Standard library only:

    python3 benchmarks/lengthscales/table.py
"""

from __future__ import annotations

import csv
import gzip
import json
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


def paper_regrets(paths: list[Path]) -> dict[str, dict[int, float]]:
    """BOLT's average regret by objective and replication."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for path in paths:
        with gzip.open(path, "rt") as lines:
            for line in lines:
                run = json.loads(line)
                if run["algorithm"] == "bolt":
                    regrets = [i["regret"] for i in run["iterations"]]
                    out[run["objective"]][run["replication"]] = sum(regrets) / len(regrets)
    return out


def paper() -> None:
    schedule = paper_regrets([HYPERPRIORS / "paper-reduced-robust.jsonl.gz"])
    beta1 = paper_regrets(sorted(HERE.glob("paper-beta1-*.jsonl.gz")))
    if not beta1:
        return
    print()
    print("| objective | β schedule (3 replications) | β schedule, replication 0 | β = 1 | β = 1 − schedule, in the schedule's SE |")
    print("|---|---|---|---|---|")
    for objective in sorted(beta1):
        values = [schedule[objective][r] for r in sorted(schedule[objective])]
        m, se = mean_se(values)
        b = [beta1[objective][r] for r in sorted(beta1[objective])]
        mb = sum(b) / len(b)
        reps = f" ({len(b)})" if len(b) < 3 else ""
        print(f"| {objective} | {m:.3g} ± {se:.2g} | {values[0]:.3g} | {mb:.3g}{reps} | {(mb - m) / se:+.1f} |")


if __name__ == "__main__":
    main()
    paper()
