"""Tuning a real system live: a tvbo session drives real software through a drifting day.

The same scenario as the trace replay of ``tvbo bench --suite real`` (its phases, prices
and evaluation time, from ``benchmarks/traces/SYSTEM.scenario.json``), but every
evaluation runs the real program now, with the suggested setting, under the condition of
the moment (docs/real-systems.md, "Live mode"):

- ``compression``: this machine's files compressed with zlib, bz2 or lzma;
- ``sqlite``: a key-value workload on SQLite (Python's ``sqlite3``);
- ``postgres`` and ``postgres-uneven`` (the same trace in a day of uneven phases):
  pgbench against the local PostgreSQL (``PGHOST``/``PGPORT``/``PGUSER``, default
  ``postgres@127.0.0.1:5432``), on a database of its own (``tvbo_trace``);
- ``rocksdb``: RocksDB's ``db_bench`` (Debian's ``rocksdb-tools``);
- ``jvm-gc``: a Java program's allocation patterns in a fresh JVM per evaluation
  (``java`` and ``javac``).

The session runs on client time: the scenario's clock advances by its evaluation time per
evaluation, as in the replay, while each measurement takes the real time it takes. In a
ramp between two phases the setting is measured under both conditions and the values
blended, as the replay blends them. At the end it prints the session's mean fraction of
the per-moment optimum (the best measured setting of the trace under the same phase) and
writes every evaluation to ``--out`` (JSON Lines), for the comparison with the replay.

Run: start a server, make a key, then
    TVBO_API_KEY=$(target/release/tvbo keys create --name live) \\
        python examples/live/live.py compression
``--short`` runs 12 evaluations (seconds; CI runs it); ``--hours H`` runs H hours of the
scenario's clock (default: one full period of its phases).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import tvbo

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches" / "traces"))

Measure = Callable[[Dict[str, Any], str], Dict[str, float]]


def compression(stack: ExitStack, short: bool, header: Dict[str, Any]) -> Measure:
    """Compresses the trace's kinds of data (the same files, by its recorder's choice)."""
    import record_compression  # type: ignore[import-not-found]

    budget = max(sum(f["bytes"] for f in files) for files in header["data"].values())
    data = {kind: record_compression.sample(kind, budget) for kind in header["data"]}
    measure = record_compression.compressed_blocks(data)
    return lambda setting, condition: measure(setting, condition, 0)


def sqlite(stack: ExitStack, short: bool, header: Dict[str, Any]) -> Measure:
    """Runs the trace's SQLite workloads (``--short``: its quick sizes)."""
    import record_sqlite  # type: ignore[import-not-found]

    directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="tvbo-live-sqlite-"))
    recorder = record_sqlite.Recorder(
        record_sqlite.Databases(directory), 0.02 if short else 0.25, short
    )
    stack.callback(recorder.close)
    return lambda setting, condition: recorder.measure(setting, condition, 0)


def postgres(stack: ExitStack, short: bool, header: Dict[str, Any]) -> Measure:
    """Runs the trace's pgbench mixes on a database of its own, loading each
    condition's data when the size changes."""
    import record_postgres  # type: ignore[import-not-found]

    server = record_postgres.Server(
        host=os.environ.get("PGHOST", "127.0.0.1"),
        port=int(os.environ.get("PGPORT", "5432")),
        user=os.environ.get("PGUSER", "postgres"),
    )
    server.create_database()
    stack.callback(server.drop_database)
    directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="tvbo-live-pg-"))
    recorder = record_postgres.Recorder(server, directory, 1, short)
    current: List[Optional[str]] = [None]

    def measure(setting: Dict[str, Any], condition: str) -> Dict[str, float]:
        if current[0] != condition:
            recorder.before_condition(condition)
            current[0] = condition
        measured: Dict[str, float] = recorder.measure(setting, condition, 0)
        return measured

    return measure


def rocksdb(stack: ExitStack, short: bool, header: Dict[str, Any]) -> Measure:
    """Runs the trace's db_bench workloads on a fresh copy of each setting's database,
    made on first use, at the trace's sizes (``--short`` too: its fractions are then
    comparable with the trace's). A database is made per compaction style, write buffer
    and Bloom bits, so an evaluation at a write buffer not tried before fills one first
    (a few seconds)."""
    import record_rocksdb  # type: ignore[import-not-found]

    directory = stack.enter_context(
        tempfile.TemporaryDirectory(prefix="tvbo-live-rocksdb-", dir="/var/tmp")
    )
    recorder = record_rocksdb.Recorder(directory, 1.0, record_rocksdb.KEYS)
    return lambda setting, condition: recorder.measure(setting, condition, 0)


def jvm_gc(stack: ExitStack, short: bool, header: Dict[str, Any]) -> Measure:
    """Runs the trace's allocation pattern in a fresh JVM with the setting's options, the
    trace's whole work (about a second; ``--short`` too)."""
    import record_jvm_gc  # type: ignore[import-not-found]

    classes = stack.enter_context(tempfile.TemporaryDirectory(prefix="tvbo-live-jvm-"))
    recorder = record_jvm_gc.Recorder(classes, quick=False)
    return lambda setting, condition: recorder.measure(setting, condition, 0)


SYSTEMS: Dict[str, Callable[[ExitStack, bool, Dict[str, Any]], Measure]] = {
    "compression": compression,
    "sqlite": sqlite,
    "postgres": postgres,
    "postgres-uneven": postgres,
    "rocksdb": rocksdb,
    "jvm-gc": jvm_gc,
}


class Scenario:
    """A scenario file and its trace: the schedule, the objective of each phase, and the
    trace's best value under each phase (the per-moment optimum of the replay)."""

    def __init__(self, system: str) -> None:
        path = ROOT / "benchmarks" / "traces" / f"{system}.scenario.json"
        self.spec: Dict[str, Any] = json.loads(path.read_text())
        lines = (path.parent / self.spec["trace"]).read_text().splitlines()
        self.header: Dict[str, Any] = json.loads(lines[0])
        # Each measured setting's points, by condition.
        self.by_setting: Dict[str, Dict[str, Dict[str, Any]]] = {}
        for line in lines[1:]:
            if line.strip():
                point = json.loads(line)
                key = json.dumps(point["setting"], sort_keys=True)
                self.by_setting.setdefault(key, {})[point["condition"]] = point
        self.sign = 1.0 if self.spec["goal"] == "minimize" else -1.0
        self.phases: List[Dict[str, Any]] = self.spec["phases"]
        self.period = sum(p["seconds"] for p in self.phases)

    def parameters(self) -> List[tvbo.ParameterSpec]:
        """The trace's settings as the session's parameters (the grid's values are what
        the trace measured, not a constraint: the session searches the whole range)."""
        out = []
        for s in self.header["settings"]:
            log = s.get("scale") == "log"
            if s["type"] == "categorical":
                out.append(tvbo.Categorical(s["name"], s["choices"]))
            elif s["type"] == "int":
                out.append(tvbo.Int(s["name"], s["low"], s["high"], log=log))
            else:
                out.append(tvbo.Float(s["name"], s["low"], s["high"], log=log))
        return out

    def at(self, t: float) -> Tuple[int, int, float]:
        """The phase at `t`, the next one, and the next one's weight in the blend."""
        local = t % self.period
        ramp = self.spec.get("ramp_seconds", 0.0)
        for k, phase in enumerate(self.phases):
            if local < phase["seconds"] or k + 1 == len(self.phases):
                into_ramp = local - (phase["seconds"] - ramp)
                blend = min(1.0, into_ramp / ramp) if ramp > 0 and into_ramp > 0 else 0.0
                return k, (k + 1) % len(self.phases), blend
            local -= phase["seconds"]
        raise AssertionError("a scenario has phases")

    def value(self, phase: int, measured: Dict[str, float]) -> float:
        """The objective of phase `phase` on one measurement (the sign of the goal kept)."""
        terms = self.phases[phase].get("objective") or self.spec["objective"]
        total = 0.0
        for term in terms:
            quantity = measured[term["quantity"]]
            if term.get("per"):
                quantity /= measured[term["per"]]
            total += term.get("weight", 1.0) * quantity
        return total

    def optimum(self, t: float) -> float:
        """The best mean over the trace's settings at `t` (blended as the replay does)."""
        phase, following, blend = self.at(t)

        def mean(point: Dict[str, Any], k: int) -> float:
            values = [self.value(k, m) for m in point["measurements"]]
            return sum(values) / len(values)

        best = float("inf")
        for conditions in self.by_setting.values():
            a = conditions[self.phases[phase]["condition"]]
            b = conditions[self.phases[following]["condition"]]
            blended = (1 - blend) * mean(a, phase) + blend * mean(b, following)
            best = min(best, self.sign * blended)
        return self.sign * best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("system", choices=sorted(SYSTEMS))
    parser.add_argument("--short", action="store_true", help="12 evaluations")
    parser.add_argument("--hours", type=float, help="hours of the scenario's clock")
    parser.add_argument("--algorithm", default="bolt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="JSON Lines of every evaluation")
    args = parser.parse_args()
    short = args.short or os.environ.get("TVBO_EXAMPLE_SHORT") == "1"
    scenario = Scenario(args.system)
    step = float(scenario.spec["evaluation_seconds"])
    horizon = 12 * step if short else (args.hours * 3600 if args.hours else scenario.period)
    url = os.environ.get("TVBO_URL", "http://127.0.0.1:8080")
    with ExitStack() as stack, tvbo.Client(url, os.environ.get("TVBO_API_KEY")) as client:
        measure = SYSTEMS[args.system](stack, short, scenario.header)
        out = stack.enter_context(open(args.out, "w")) if args.out else None
        session = client.create_session(
            scenario.parameters(),
            name=f"live {args.system} {args.algorithm} seed {args.seed}",
            goal=scenario.spec["goal"],
            algorithm=args.algorithm,
            time={"source": "client"},
            seed=args.seed,
        )
        print(f"session {session.id}: {args.system}, {horizon / step:.0f} evaluations")
        print(f"dashboard: {session.dashboard_url}")
        t, fractions, started = 0.0, [], time.monotonic()
        while t < horizon:
            (suggestion,) = session.suggest(t=t)
            phase, following, blend = scenario.at(t)
            conditions = [(phase, 1.0 - blend)] + ([(following, blend)] if blend > 0 else [])
            value = 0.0
            for k, weight in conditions:
                measured = measure(suggestion.params, scenario.phases[k]["condition"])
                value += weight * scenario.value(k, measured)
            session.observe(suggestion, value, t=t)
            optimum = scenario.optimum(t)
            fraction = optimum / value if scenario.sign > 0 else value / optimum
            fractions.append(fraction)
            if out:
                record = {"t": t, "params": suggestion.params, "value": value}
                out.write(json.dumps({**record, "optimum": optimum, "fraction": fraction}) + "\n")
            t += step
        mean = sum(fractions) / len(fractions)
        print(
            f"{len(fractions)} evaluations in {time.monotonic() - started:.0f} s: "
            f"mean fraction of the per-moment optimum {mean:.3f}"
        )


if __name__ == "__main__":
    main()
