"""Tests of the trace recorders: tracekit on a fake program whose measurements are known,
and ``--quick`` runs of the SQLite, PostgreSQL, JVM and RocksDB recorders (each skipped,
saying why, when its program or server is missing). From the repository's root:

    python3 -m unittest discover -s benches/traces -p 'test_*.py'
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from collections import Counter

import tracekit

HERE = os.path.dirname(os.path.abspath(__file__))


def fake_program(setting: dict, condition: str, repeat: int) -> dict[str, int | float]:
    """A 'program' with known behaviour: its latency is a function of the setting and
    the load, plus a deterministic wobble per repeat; its bytes are exact."""
    load = {"quiet": 1.0, "busy": 3.0}[condition]
    base = {"fifo": 2.0, "lru": 1.5, "arc": 1.0}[setting["policy"]]
    latency = base * load / setting["threads"] + setting["ratio"]
    wobble = (-0.01, 0.0, 0.01)[repeat % 3]
    return {"latency_ms": latency * (1 + wobble), "bytes": setting["threads"] * 100}


FAKE = tracekit.Trace(
    name="fake",
    settings=[
        tracekit.categorical("policy", ["fifo", "lru", "arc"]),
        tracekit.integer("threads", [1, 2, 8], scale="log"),
        tracekit.real("ratio", [0.5, 0.25]),
    ],
    condition="load",
    conditions=["quiet", "busy"],
    measured={"latency_ms": "a request's latency", "bytes": "bytes written"},
    data={"quiet": {"clients": 1}, "busy": {"clients": 3}},
)


class Recorded(unittest.TestCase):
    """The fake program recorded through tracekit."""

    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp(prefix="tvbo-test-traces-")
        cls.path = os.path.join(cls.directory, "fake.jsonl")
        cls.returned = tracekit.record(FAKE, fake_program, out=cls.path, repeats=3, progress=False)
        cls.header, cls.points = tracekit.read(cls.path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory)

    def test_header_has_the_settings_in_the_api_form(self):
        policy, threads, ratio = self.header["settings"]
        self.assertEqual(
            policy, {"name": "policy", "type": "categorical", "choices": ["fifo", "lru", "arc"]}
        )
        self.assertEqual(
            threads,
            {
                "name": "threads",
                "type": "int",
                "low": 1,
                "high": 8,
                "scale": "log",
                "values": [1, 2, 8],
            },
        )
        self.assertEqual(
            ratio,
            {"name": "ratio", "type": "float", "low": 0.25, "high": 0.5, "values": [0.25, 0.5]},
        )

    def test_header_has_conditions_repeats_measured_load(self):
        self.assertEqual(self.header["trace"], "fake")
        self.assertEqual(self.header["version"], 1)
        self.assertEqual(self.header["conditions"], {"name": "load", "choices": ["quiet", "busy"]})
        self.assertEqual(self.header["repeats"], 3)
        self.assertEqual(set(self.header["measured"]), {"latency_ms", "bytes"})
        self.assertEqual(self.header["data"]["busy"], {"clients": 3})
        load = self.header["load"]
        self.assertEqual(len(load["before"]), 3)
        self.assertEqual(len(load["after"]), 3)
        self.assertGreaterEqual(load["seconds"], 0)
        self.assertNotIn("quick", self.header)
        self.assertEqual(self.returned, self.header)

    def test_every_setting_and_condition_once_with_every_repeat(self):
        seen = Counter((tuple(sorted(p["setting"].items())), p["condition"]) for p in self.points)
        self.assertEqual(len(self.points), 3 * 3 * 2 * 2)
        self.assertEqual(set(seen.values()), {1})
        for p in self.points:
            self.assertEqual(list(p["setting"]), ["policy", "threads", "ratio"])
            self.assertEqual(len(p["measurements"]), 3)

    def test_values_round_trip(self):
        for p in self.points:
            for repeat, measured in enumerate(p["measurements"]):
                self.assertEqual(measured, fake_program(p["setting"], p["condition"], repeat))

    def test_numeric_grids_include_their_ends(self):
        for parameter in self.header["settings"]:
            if parameter["type"] != "categorical":
                self.assertEqual(parameter["values"][0], parameter["low"])
                self.assertEqual(parameter["values"][-1], parameter["high"])

    def test_no_partial_file_is_left(self):
        self.assertEqual(os.listdir(self.directory), ["fake.jsonl"])


class Checks(unittest.TestCase):
    def test_a_measurement_must_have_every_quantity_as_a_number(self):
        measured = {"a": "", "b": ""}
        self.assertEqual(tracekit.checked({"a": 1, "b": 2.5}, measured), {"a": 1, "b": 2.5})
        for bad in ({"a": 1}, {"a": 1, "b": "2"}, {"a": 1, "b": True}, {"a": 1, "b": float("nan")}):
            with self.assertRaises(ValueError):
                tracekit.checked(bad, measured)

    def test_grid_order_puts_named_parameters_outermost(self):
        points = tracekit.grid(FAKE.settings, order=("ratio",))
        self.assertEqual([p["ratio"] for p in points[:9]], [0.25] * 9)
        self.assertEqual(list(points[0]), ["policy", "threads", "ratio"])

    def test_int_without_values_is_every_integer(self):
        self.assertEqual(tracekit.values_of(tracekit.integer("level", low=1, high=4)), [1, 2, 3, 4])

    def test_quick_is_a_complete_small_trace(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "quick.jsonl")
            tracekit.record(FAKE, fake_program, out=path, repeats=5, quick=True, progress=False)
            header, points = tracekit.read(path)
        self.assertTrue(header["quick"])
        self.assertEqual(header["repeats"], 2)
        self.assertEqual(header["settings"][0]["choices"], ["fifo", "arc"])
        self.assertEqual(header["settings"][1]["values"], [1])
        self.assertEqual(len(points), 2 * 2)


def run_quick(script: str, directory: str) -> tuple[dict, list[dict]]:
    """Runs a recorder with --quick and reads its trace."""
    path = os.path.join(directory, "trace.jsonl")
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, script), "--quick", "--out", path],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"{script} failed:\n{done.stderr}")
    return tracekit.read(path)


class QuickRecorders(unittest.TestCase):
    def check_complete(self, header: dict, points: list[dict]):
        settings = tracekit.grid(header["settings"])
        conditions = header["conditions"]["choices"]
        self.assertTrue(header["quick"])
        self.assertEqual(len(points), len(settings) * len(conditions))
        keys = {(json.dumps(p["setting"]), p["condition"]) for p in points}
        self.assertEqual(keys, {(json.dumps(s), c) for s in settings for c in conditions})
        for p in points:
            self.assertEqual(len(p["measurements"]), header["repeats"])
            for measured in p["measurements"]:
                self.assertEqual(set(measured), set(header["measured"]))
                self.assertTrue(all(value > 0 for value in measured.values()))

    def test_sqlite(self):
        with tempfile.TemporaryDirectory() as directory:
            header, points = run_quick("record_sqlite.py", directory)
        self.assertEqual(header["trace"], "sqlite")
        self.check_complete(header, points)

    def test_jvm_gc(self):
        for program in ("java", "javac"):
            if shutil.which(program) is None:
                self.skipTest(f"{program} is not installed (Debian's default-jdk)")
        with tempfile.TemporaryDirectory() as directory:
            header, points = run_quick("record_jvm_gc.py", directory)
        self.assertEqual(header["trace"], "jvm-gc")
        self.check_complete(header, points)

    def test_rocksdb(self):
        if shutil.which("db_bench") is None:
            self.skipTest("db_bench is not installed (Debian's rocksdb-tools)")
        with tempfile.TemporaryDirectory() as directory:
            header, points = run_quick("record_rocksdb.py", directory)
        self.assertEqual(header["trace"], "rocksdb")
        self.check_complete(header, points)

    def test_postgres(self):
        reason = postgres_unavailable()
        if reason:
            self.skipTest(reason)
        with tempfile.TemporaryDirectory() as directory:
            header, points = run_quick("record_postgres.py", directory)
        self.assertEqual(header["trace"], "postgres")
        self.check_complete(header, points)


def postgres_unavailable() -> str | None:
    """Why the PostgreSQL recorder cannot run here, or None."""
    for program in ("psql", "pgbench"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    done = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-XAtc", "SELECT 1"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    if done.returncode != 0:
        return f"no PostgreSQL on 127.0.0.1:5432 as postgres: {done.stderr.strip()}"
    return None


if __name__ == "__main__":
    unittest.main()
