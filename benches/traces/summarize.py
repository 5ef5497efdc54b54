"""Summarises a recorded trace (docs/traces.md): how long the recording and a measurement
took, how noisy a quantity is between repeats (coefficient of variation: median and
90th percentile over the points), and the best setting per condition by the quantity's
mean over the repeats.

    python3 benches/traces/summarize.py benchmarks/traces/sqlite.jsonl --quantity ops/seconds
    python3 benches/traces/summarize.py benchmarks/traces/postgres.jsonl --quantity tps

``--lower`` when less is better (a latency, a cost). ``--seconds`` names the quantity
that is a measurement's duration (``seconds`` by default; none when absent).
"""

from __future__ import annotations

import argparse
import statistics

import tracekit


def value(measurement: dict, quantity: str) -> float:
    """A measured quantity, or a ratio of two (``ops/seconds``)."""
    if "/" in quantity:
        numerator, denominator = quantity.split("/")
        return measurement[numerator] / measurement[denominator]
    return measurement[quantity]


def coefficient_of_variation(values: list[float]) -> float:
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean else 0.0


def quantile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def best_per_condition(points: list[dict], quantity: str, lower: bool) -> dict[str, tuple]:
    """condition → (the best setting, its mean, the worst mean)."""
    by_condition: dict[str, list[tuple[float, dict]]] = {}
    for p in points:
        mean = statistics.fmean(value(m, quantity) for m in p["measurements"])
        by_condition.setdefault(p["condition"], []).append((mean, p["setting"]))
    best = {}
    for condition, scored in by_condition.items():
        scored.sort(key=lambda pair: pair[0], reverse=not lower)
        best[condition] = (scored[0][1], scored[0][0], scored[-1][0])
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--quantity", required=True, help="a measured quantity, or a/b")
    parser.add_argument("--lower", action="store_true", help="less is better")
    parser.add_argument("--seconds", default="seconds")
    args = parser.parse_args()
    header, points = tracekit.read(args.trace)
    settings = tracekit.grid(header["settings"])
    print(
        f"{header['trace']}: {len(settings)} settings × {len(header['conditions']['choices'])}"
        f" conditions × {header['repeats']} repeats, recorded in"
        f" {header.get('load', {}).get('seconds', '?')} s, load {header.get('load')}"
    )
    if args.seconds in header["measured"]:
        durations = [m[args.seconds] for p in points for m in p["measurements"]]
        print(
            f"a measurement: {statistics.fmean(durations):.3f} s on average,"
            f" {max(durations):.3f} s at most"
        )
    cvs = [
        coefficient_of_variation([value(m, args.quantity) for m in p["measurements"]])
        for p in points
    ]
    print(
        f"noise of {args.quantity}: CV median {statistics.median(cvs):.1%},"
        f" p90 {quantile(cvs, 0.9):.1%}"
    )
    for condition, (setting, best, worst) in best_per_condition(
        points, args.quantity, args.lower
    ).items():
        shown = ", ".join(f"{k}={v}" for k, v in setting.items())
        print(f"  {condition:16} best {shown}: {best:.4g} (worst {worst:.4g})")


if __name__ == "__main__":
    main()
