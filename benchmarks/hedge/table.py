#!/usr/bin/env python3
"""The tables of docs/decisions/0011-per-parameter-lengthscales.md, "GP-Hedge over β",
and of docs/decisions/0013-a-drifting-level.md, "A floor under the level's lengthscale".

All runs here were made on one 2-core AMD EPYC VM on 2026-11-29, the variants side by
side on the same seeds, by the binary of commit e6db83b (`algorithm.beta: "hedge"`,
reverted after):

- real-{wdbo,hedge}.jsonl.gz: `tvbo bench --suite real --hyperpriors default
  --algorithms bolt [--algorithm-options 'bolt={"beta":"hedge"}']`, beside the peers of
  the suite's run log (benchmarks/real/runs.jsonl.gz); real-still.jsonl.gz: β
  multiplied by k_T(s/l_T), floored at 1/16, s the time since the recommendation last
  moved (a change made for the check and removed);
- paper-{wdbo,hedge}.jsonl.gz: `--suite paper --objectives hartmann3,hartmann6
  --hyperpriors robust` (Hartmann-3 on 5 seeds, Hartmann-6 on the first);
- real-static.jsonl.gz, real-static-level.jsonl.gz and paper-static.jsonl.gz (Hartmann-3
  alone): the same commands under a static component λ₀ k_S beside the product, the
  second with `--level drifting` too, by the binary of commit 3542048 (`TVBO_STATIC=1`,
  reverted after); decision 0011, "A static component beside the product";
- ../level/hartmann3-epyc-{drifting,spacing-floor,shape-ucb}.jsonl.gz: the same
  Hartmann-3 runs with `--level drifting`, the second with l_L's lower bound raised to
  ten times the mean time between the observations, the third with UCB's σ the shape's
  alone (changes made for the checks and removed).

Standard library only:

    python3 benchmarks/hedge/table.py
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from level.table import REAL, cell, mean, peers, print_fractions, runs  # noqa: E402


def regrets(path: Path) -> dict[str, dict[int, float]]:
    """Average regret over a run's queries, by objective and replication."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    with gzip.open(path, "rt") as lines:
        for run in map(json.loads, lines):
            values = [i["regret"] for i in run["iterations"]]
            out[run["objective"]][run["replication"]] = mean(values)
    return out


def real() -> None:
    rows = [
        ("`bolt`, β = 0.2·d·ln(2n)", runs(HERE / "real-wdbo.jsonl.gz", "bolt")),
        ("`bolt`, β hedged", runs(HERE / "real-hedge.jsonl.gz", "bolt")),
        ("`bolt`, β falls while still", runs(HERE / "real-still.jsonl.gz", "bolt")),
        ("`bolt`, static component", runs(HERE / "real-static.jsonl.gz", "bolt")),
        ("`bolt`, drifting level", runs(REAL / "runs-level-drifting.jsonl.gz", "bolt")),
        ("`bolt`, drifting level and static", runs(HERE / "real-static-level.jsonl.gz", "bolt")),
    ] + peers()
    print_fractions(rows)


def hartmann() -> None:
    rows = [
        ("BOLT, β = 0.2·d·ln(2n)", HERE / "paper-wdbo.jsonl.gz"),
        ("BOLT, β hedged", HERE / "paper-hedge.jsonl.gz"),
        ("BOLT, static component", HERE / "paper-static.jsonl.gz"),
        ("BOLT, drifting level", HERE.parent / "level" / "hartmann3-epyc-drifting.jsonl.gz"),
        (
            "BOLT, drifting level, l_L ≥ 10 × spacing",
            HERE.parent / "level" / "hartmann3-epyc-spacing-floor.jsonl.gz",
        ),
        (
            "BOLT, drifting level, UCB's σ of the shape",
            HERE.parent / "level" / "hartmann3-epyc-shape-ucb.jsonl.gz",
        ),
    ]
    print("\n| variant | Hartmann-3, per seed | Hartmann-3 | Hartmann-6 (seed 0) |")
    print("|---|---|---|---|")
    for name, path in rows:
        by = regrets(path)
        h3 = [by["hartmann3"][r] for r in sorted(by["hartmann3"])]
        seeds = " ".join(f"{v:.3f}" for v in h3)
        h6 = f"{by['hartmann6'][0]:.3f}" if 0 in by.get("hartmann6", {}) else "–"
        print(f"| {name} | {seeds} | {cell(h3)} | {h6} |")


def sqlite_journal() -> None:
    """Where the exploring queries go on SQLite: after the warm-up, the share of queries
    outside the WAL journal mode and their share of the shortfall from the optimum."""
    print("\n| SQLite, after the warm-up | queries not in WAL | below 0.8 | of those, not in WAL | shortfall per query | of it, not in WAL |")
    print("|---|---|---|---|---|---|")
    for name, path, algorithm in [
        ("`bolt`", REAL / "runs-level-none.jsonl.gz", "bolt"),
        ("`bolt`, static component", HERE / "real-static.jsonl.gz", "bolt"),
        ("`bolt`, drifting level", REAL / "runs-level-drifting.jsonl.gz", "bolt"),
        ("`bolt`, drifting level and static", HERE / "real-static-level.jsonl.gz", "bolt"),
        ("`tune-once`", REAL / "runs.jsonl.gz", "tune-once"),
    ]:
        queries = [
            i
            for run in runs(path, algorithm)
            if run["objective"] == "trace-sqlite"
            for i in run["iterations"][15:]
        ]
        other = [i for i in queries if i["setting"]["journal_mode"] != "wal"]
        bad = [i for i in queries if i["achieved"] < 0.8]
        bad_other = [i for i in bad if i["setting"]["journal_mode"] != "wal"]
        loss = sum(1 - i["achieved"] for i in queries)
        loss_other = sum(1 - i["achieved"] for i in other)
        print(
            f"| {name} | {len(other) / len(queries):.1%} | {len(bad) / len(queries):.1%} "
            f"| {len(bad_other) / max(len(bad), 1):.0%} | {loss / len(queries):.3f} "
            f"| {loss_other / loss:.0%} |"
        )


if __name__ == "__main__":
    real()
    hartmann()
    sqlite_journal()
