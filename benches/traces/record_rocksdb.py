"""Records a trace of RocksDB under ``db_bench`` (the benchmark RocksDB ships; Debian's
``rocksdb-tools``): the throughput of three workloads a key-value store moves between
over a day, under every setting of compaction style × write buffer × block cache ×
Bloom filter bits.

The database: 300 000 random keys of 16 bytes with 100-byte values (Snappy-compressed,
about 17 MB on disk), made once per (compaction style, write buffer, Bloom bits) by
``fillrandom`` followed by ``waitforcompaction``, since those settings decide its files;
each measurement runs on a fresh copy of it, in a temporary directory, so that no
measurement sees another's writes or compactions. The workloads (the trace's
conditions), each a fixed number of operations by one client thread (``OPERATIONS``,
about a second each), RocksDB's background jobs beside it:

- ``ingest``: ``readrandomwriterandom`` with 10 % reads (a feed being written);
- ``serve``: ``readrandomwriterandom`` with 95 % reads (point lookups of a live store);
- ``scan``: ``seekrandom`` with 20 ``Next()`` after each seek (range reads of reports).

Measured per repeat: ``ops`` (operations done), ``seconds`` (db_bench's own account of
the time they took) and ``found`` (reads that found their key: a random key of the
key space exists with probability about 0.63 after a random fill, whatever the setting).
The random keys come from a seed per repeat (``--seed``), the same for every setting.

    python3 benches/traces/record_rocksdb.py --out benchmarks/traces/rocksdb.jsonl

Takes about 8 minutes (36 settings × 3 workloads × 3 repeats of about 1.2 s, and 12
databases to make). Run it on a quiet machine: the times are the measurements.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import tracekit

KEYS = 300_000
# How long a database's fill and compactions may take (a few seconds each on 2 cores).
WAIT_SECONDS = 60
QUICK_KEYS = 20_000
VALUE_BYTES = 100
STYLES = {"level": 0, "universal": 1}
WORKLOADS = {
    "ingest": ["--benchmarks=readrandomwriterandom", "--readwritepercent=10"],
    "serve": ["--benchmarks=readrandomwriterandom", "--readwritepercent=95"],
    "scan": ["--benchmarks=seekrandom", "--seek_nexts=20"],
}
# Operations per measurement: about a second each on a 2-core EPYC at the slower
# settings (a fixed amount of work: db_bench's `--duration` counts in steps of 1000).
OPERATIONS = {"ingest": 60_000, "serve": 60_000, "scan": 20_000}
RESULT = re.compile(
    r"^(\w+)\s*:\s*[\d.]+ micros/op \d+ ops/sec ([\d.]+) seconds (\d+) operations;(.*)$",
    re.MULTILINE,
)
FOUND = re.compile(r"(?:(\d+) of \d+ found|found:(\d+))")
MEASURED = {
    "ops": "operations done (reads, writes, or seeks with their Next() calls)",
    "seconds": "wall seconds of the workload (db_bench's account)",
    "found": "reads or seeks that found a key",
}


def settings() -> list[dict]:
    return [
        tracekit.categorical("compaction_style", list(STYLES)),
        tracekit.integer("write_buffer_mib", [1, 8, 64], scale="log"),
        tracekit.integer("block_cache_mib", [1, 8, 64], scale="log"),
        tracekit.integer("bloom_bits", [0, 10]),
    ]


def options(setting: dict) -> list[str]:
    """db_bench's options for `setting`."""
    return [
        f"--compaction_style={STYLES[setting['compaction_style']]}",
        f"--write_buffer_size={setting['write_buffer_mib'] << 20}",
        f"--cache_size={setting['block_cache_mib'] << 20}",
        f"--bloom_bits={setting['bloom_bits']}",
        f"--value_size={VALUE_BYTES}",
        "--threads=1",
        "--statistics=0",
    ]


def db_bench(arguments: list[str]) -> str:
    done = subprocess.run(["db_bench", *arguments], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"db_bench {' '.join(arguments)} failed: {done.stderr.strip()}")
    return done.stdout


def fill(path: str, keys: int, setting: dict) -> None:
    """Makes the database at `path`: `keys` random keys, then the compactions they call
    for. db_bench 7.8's ``waitforcompaction`` can wait for ever (seen with universal
    compaction and a 2 MiB write buffer, a setting between the trace's): after
    ``WAIT_SECONDS`` the fill, done by then, is kept as it is, as a crash would leave it
    (RocksDB recovers it from its log when it is opened), and the wait is given up."""
    command = [
        "db_bench",
        f"--db={path}",
        "--benchmarks=fillrandom,waitforcompaction",
        f"--num={keys}",
        "--seed=1",
        *options(setting),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=WAIT_SECONDS)
    except subprocess.TimeoutExpired as waited:
        output = waited.stdout.decode() if isinstance(waited.stdout, bytes) else waited.stdout
        if not any(m.group(1) == "fillrandom" for m in RESULT.finditer(output or "")):
            raise RuntimeError(f"{' '.join(command)}: no fill after {WAIT_SECONDS} s") from None
        print(f"rocksdb: {setting}: compactions not done after {WAIT_SECONDS} s, kept as is",
              file=sys.stderr)
        return
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")


def parsed(output: str, benchmark: str) -> dict[str, int | float]:
    """The measured quantities of `benchmark`'s result line in db_bench's output."""
    for match in RESULT.finditer(output):
        name, seconds, operations, rest = match.groups()
        found = FOUND.search(rest)
        if name == benchmark and found:
            return {
                "ops": int(operations),
                "seconds": float(seconds),
                "found": int(found.group(1) or found.group(2)),
            }
    raise RuntimeError(f"no result line of {benchmark} in db_bench's output:\n{output}")


def version() -> str:
    shown = subprocess.run(["db_bench", "--version"], capture_output=True, text=True)
    return (shown.stdout or shown.stderr).strip().splitlines()[0]


class Recorder:
    """Makes each database once and measures each workload on a fresh copy of it."""

    def __init__(self, directory: str, work: float, keys: int):
        self.directory, self.work, self.keys = directory, work, keys
        self.made: set[tuple] = set()

    def database(self, setting: dict) -> str:
        """The database of `setting`'s layout, made on first use."""
        layout = (setting["compaction_style"], setting["write_buffer_mib"], setting["bloom_bits"])
        path = os.path.join(self.directory, "db-" + "-".join(map(str, layout)))
        if layout not in self.made:
            fill(path, self.keys, setting)
            self.made.add(layout)
        return path

    def measure(self, setting: dict, workload: str, repeat: int) -> dict[str, int | float]:
        copy = os.path.join(self.directory, "measured")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(self.database(setting), copy)
        output = db_bench(
            [
                f"--db={copy}",
                "--use_existing_db=1",
                f"--num={self.keys}",
                f"--reads={max(1, int(OPERATIONS[workload] * self.work))}",
                f"--seed={1000 + repeat}",
                *WORKLOADS[workload],
                *options(setting),
            ]
        )
        return parsed(output, WORKLOADS[workload][0].split("=")[1])


def main() -> None:
    parser = tracekit.arguments(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=float, default=1.0, help="operations per measurement, as a multiple"
    )
    args = parser.parse_args()
    work = 0.05 if args.quick else args.work
    keys = QUICK_KEYS if args.quick else KEYS
    trace = tracekit.Trace(
        name="rocksdb",
        machine=tracekit.machine(rocksdb=version()),
        settings=settings(),
        condition="workload",
        conditions=list(WORKLOADS),
        measured=MEASURED,
        data={
            "keys": keys,
            "key_bytes": 16,
            "value_bytes": VALUE_BYTES,
            "compression": "snappy",
            "fill": "fillrandom,waitforcompaction --seed=1",
            "workloads": {name: " ".join(flags) for name, flags in WORKLOADS.items()},
            "operations": {name: int(n * work) for name, n in OPERATIONS.items()},
        },
        order=("compaction_style", "write_buffer_mib", "bloom_bits"),
    )
    with tempfile.TemporaryDirectory(prefix="tvbo-trace-rocksdb-", dir="/var/tmp") as directory:
        recorder = Recorder(directory, work, keys)
        tracekit.record(trace, recorder.measure, out=args.out, repeats=args.repeats, quick=args.quick)


if __name__ == "__main__":
    main()
