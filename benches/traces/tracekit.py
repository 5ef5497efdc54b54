"""The shared part of the trace recorders (docs/traces.md): the grid of settings, the
conditions, the repeats, the header, the JSON Lines file, progress on stderr and the
command line every recorder has (``--out``, ``--repeats``, ``--quick``).

A recorder declares its parameters (``categorical``, ``integer``, ``real``: the API's
form, with ``values`` when a numeric parameter is measured at a few values only), its
conditions and its measured quantities in a ``Trace``, and passes ``record`` a function
that measures one repeat of one (setting, condition). ``record`` measures every setting of
the grid under every condition, ``repeats`` times each, checks that every measurement has
every quantity as a plain number, and writes the trace; the header says when, on what,
how loaded the machine was before and after, and how long the recording took.

``--quick`` records a tiny subset for smoke tests: the first and last value of the first
parameter, the first value of every other, two repeats; the header describes that
subset (so a quick trace is a complete, if small, trace) and says ``"quick": true``.

Standard library only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

FORMAT_VERSION = 1
QUICK_REPEATS = 2

Setting = dict[str, Any]
Measurement = dict[str, int | float]
Measure = Callable[[Setting, str, int], Measurement]


def categorical(name: str, choices: Sequence[str]) -> dict[str, Any]:
    """A categorical parameter, measured at every choice."""
    return {"name": name, "type": "categorical", "choices": list(choices)}


def integer(
    name: str,
    values: Sequence[int] | None = None,
    *,
    low: int | None = None,
    high: int | None = None,
    scale: str | None = None,
) -> dict[str, Any]:
    """An integer parameter: measured at `values` (its `low` and `high` are their ends),
    or at every integer from `low` to `high` when `values` is None."""
    return _numeric(name, "int", values, low, high, scale)


def real(name: str, values: Sequence[float], *, scale: str | None = None) -> dict[str, Any]:
    """A float parameter, measured at `values` (its `low` and `high` are their ends)."""
    return _numeric(name, "float", values, None, None, scale)


def _numeric(name, type_, values, low, high, scale) -> dict[str, Any]:
    if values is not None:
        values = sorted(values)
        low, high = values[0], values[-1]
    if low is None or high is None:
        raise ValueError(f"{name}: give values, or low and high")
    parameter: dict[str, Any] = {"name": name, "type": type_, "low": low, "high": high}
    if scale is not None:
        parameter["scale"] = scale
    if values is not None:
        parameter["values"] = values
    return parameter


def values_of(parameter: dict[str, Any]) -> list[Any]:
    """The values a parameter is measured at."""
    if parameter["type"] == "categorical":
        return list(parameter["choices"])
    if "values" in parameter:
        return list(parameter["values"])
    if parameter["type"] == "int":
        return list(range(parameter["low"], parameter["high"] + 1))
    raise ValueError(f"{parameter['name']}: a float parameter needs values")


def restricted(parameter: dict[str, Any], values: list[Any]) -> dict[str, Any]:
    """`parameter` measured at `values` only (its header entry for a smaller grid)."""
    if parameter["type"] == "categorical":
        return {**parameter, "choices": values}
    return {**parameter, "low": min(values), "high": max(values), "values": sorted(values)}


def grid(settings: list[dict[str, Any]], order: Sequence[str] = ()) -> list[Setting]:
    """Every setting: the product of each parameter's values. The parameters named in
    `order` vary slowest (first named slowest), then the rest in declared order, the
    last fastest. Each setting's keys follow the declared order."""
    names = [p["name"] for p in settings]
    nesting = list(order) + [name for name in names if name not in order]
    by_name = {p["name"]: values_of(p) for p in settings}
    points = []
    for combination in itertools.product(*(by_name[name] for name in nesting)):
        chosen = dict(zip(nesting, combination, strict=True))
        points.append({name: chosen[name] for name in names})
    return points


def machine(**versions: str) -> dict[str, Any]:
    """What the trace was recorded on: the CPU, its cores, Python, and `versions`."""
    return {
        "cpu": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        **versions,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


@dataclass
class Trace:
    """What a trace is of: its parameters, its conditions and its measured quantities
    (name → what it is), with `data` (what the program worked on) and `machine`."""

    name: str
    settings: list[dict[str, Any]]
    condition: str
    conditions: list[str]
    measured: dict[str, str]
    machine: dict[str, Any] = field(default_factory=machine)
    data: dict[str, Any] | None = None
    order: Sequence[str] = ()

    def quick(self) -> Trace:
        """The tiny subset of `--quick` (first and last value of the first parameter,
        the first of the others)."""
        first, *rest = self.settings
        ends = values_of(first)
        settings = [restricted(first, sorted({ends[0], ends[-1]}, key=ends.index))]
        settings += [restricted(p, values_of(p)[:1]) for p in rest]
        return replace(self, settings=settings)

    def header(self, repeats: int) -> dict[str, Any]:
        header: dict[str, Any] = {
            "trace": self.name,
            "version": FORMAT_VERSION,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": self.machine,
            "settings": self.settings,
            "conditions": {"name": self.condition, "choices": self.conditions},
            "measured": self.measured,
        }
        if self.data is not None:
            header["data"] = self.data
        header["repeats"] = repeats
        return header


def arguments(description: str, *, repeats: int = 3) -> argparse.ArgumentParser:
    """The command line every recorder has; a recorder adds its own options to it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="the trace file (JSON Lines)")
    parser.add_argument("--repeats", type=int, default=repeats, help="measurements per point")
    parser.add_argument(
        "--quick", action="store_true", help="a tiny subset of the grid (smoke tests)"
    )
    return parser


def record(
    trace: Trace,
    measure: Measure,
    *,
    out: str,
    repeats: int,
    quick: bool = False,
    before_condition: Callable[[str], None] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Measures every (setting, condition) `repeats` times (`measure(setting, condition,
    repeat)` returns one measurement), conditions outermost, and writes the trace to
    `out`. `before_condition(condition)` runs before a condition's first point (to load
    its data); `progress` reports on stderr. Returns the header. The points go to
    `out`.part as they are measured; `out` is written, header first, at the end."""
    if quick:
        trace = trace.quick()
        repeats = min(repeats, QUICK_REPEATS)
    header = trace.header(repeats)
    if quick:
        header["quick"] = True
    settings = grid(trace.settings, trace.order)
    load_before = os.getloadavg()
    started = time.monotonic()
    partial = out + ".part"
    with open(partial, "w", encoding="utf-8") as points:
        report = Progress(trace.name, len(settings) * len(trace.conditions), started, progress)
        for condition in trace.conditions:
            if before_condition is not None:
                before_condition(condition)
            for setting in settings:
                measurements = [
                    checked(measure(setting, condition, repeat), trace.measured)
                    for repeat in range(repeats)
                ]
                points.write(json.dumps(point(setting, condition, measurements)) + "\n")
                report.step(condition)
    header["load"] = {
        "before": [round(x, 2) for x in load_before],
        "after": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(time.monotonic() - started, 1),
    }
    write(out, header, partial)
    report.done(header["load"]["seconds"])
    return header


def point(setting: Setting, condition: str, measurements: list[Measurement]) -> dict:
    """One line of the trace."""
    return {"setting": setting, "condition": condition, "measurements": measurements}


def checked(measurement: Measurement, measured: dict[str, str]) -> Measurement:
    """`measurement` if it has exactly the measured quantities, each a finite number."""
    if set(measurement) != set(measured):
        raise ValueError(f"measured {sorted(measurement)}, declared {sorted(measured)}")
    for name, value in measurement.items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value):
            raise ValueError(f"{name} = {value!r} is not a finite number")
    return measurement


def write(out: str, header: dict[str, Any], partial: str) -> None:
    """The trace: `header`, then the points in `partial` (removed afterwards)."""
    with open(out, "w", encoding="utf-8") as trace, open(partial, encoding="utf-8") as points:
        trace.write(json.dumps(header) + "\n")
        for line in points:
            trace.write(line)
    os.remove(partial)


class Progress:
    """Progress on stderr: points done, elapsed time and an estimate of what is left,
    at most every few seconds and at each new condition."""

    EVERY_SECONDS = 5.0

    def __init__(self, name: str, total: int, started: float, enabled: bool = True):
        self.name, self.total, self.started = name, total, started
        self.enabled = enabled
        self.done_points = 0
        self.last_report = started
        self.condition: str | None = None

    def step(self, condition: str) -> None:
        self.done_points += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if condition != self.condition or now - self.last_report >= self.EVERY_SECONDS:
            self.condition, self.last_report = condition, now
            elapsed = now - self.started
            left = elapsed / self.done_points * (self.total - self.done_points)
            print(
                f"[{self.name}] {condition}: {self.done_points}/{self.total} points,"
                f" {elapsed:.0f} s, about {left:.0f} s left",
                file=sys.stderr,
                flush=True,
            )

    def done(self, seconds: float) -> None:
        if self.enabled:
            print(f"[{self.name}] {self.total} points in {seconds:.0f} s", file=sys.stderr)


def read(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A trace's header and points."""
    with open(path, encoding="utf-8") as trace:
        lines = [json.loads(line) for line in trace if line.strip()]
    return lines[0], lines[1:]
