"""Records a trace of real SQLite (Python's ``sqlite3``, the C library): the throughput
and tail latency of a key-value workload under every setting of journal mode ×
synchronous × page cache × page size × memory map, for four workloads whose read/write
ratio and working set shift the way a service's do over a day.

The database: one table ``kv(id INTEGER PRIMARY KEY, payload BLOB)`` of 200-byte
payloads, in a fresh file per (table size, page size) in a temporary directory (a page
size is fixed when a database is created). The workloads (the trace's conditions):

- ``read-small``: 10 000 rows (about 2.3 MB), reads only;
- ``read-large``: 250 000 rows (about 57 MB, more than the largest page cache, less than
  the memory map), reads only;
- ``write-small``: 10 000 rows, half the statements writes, each statement its own
  transaction (interactive writes: a commit per write);
- ``write-large``: 250 000 rows, 90 % writes in transactions of 100 statements (a batch).

A read is ``SELECT count(*), sum(length(payload))`` over 20 consecutive ids from a random
one, a write an ``UPDATE`` of a random row's payload (sizes stay the same). The statements
come from a random generator seeded by the condition and the repeat, so every setting
sees the same sequence. A measurement opens a connection, sets the pragmas, warms up
(runs the workload for a short while, filling the page cache) and then runs it for
``--seconds``, timing each transaction (an autocommitted statement is one).

Measured per repeat: ``ops`` (statements done), ``seconds`` (wall), ``p99_ms`` (the 99th
percentile of a transaction's latency).

Standard library only:

    python3 benches/traces/record_sqlite.py --out benchmarks/traces/sqlite.jsonl

Takes about 8 minutes (162 settings × 4 workloads × 3 repeats of 0.2 s). Run it on a
quiet machine: the times are the measurements.
"""

from __future__ import annotations

import os
import random
import sqlite3
import tempfile
import time
import zlib
from dataclasses import dataclass

import tracekit

PAYLOAD_BYTES = 200
RANGE_ROWS = 20
WARMUP_SECONDS = 0.05


@dataclass(frozen=True)
class Workload:
    """A condition: table size, the fraction of statements that write, and the number
    of statements in a transaction."""

    rows: int
    write_fraction: float
    statements_per_transaction: int


WORKLOADS = {
    "read-small": Workload(rows=10_000, write_fraction=0.0, statements_per_transaction=1),
    "read-large": Workload(rows=250_000, write_fraction=0.0, statements_per_transaction=1),
    "write-small": Workload(rows=10_000, write_fraction=0.5, statements_per_transaction=1),
    "write-large": Workload(rows=250_000, write_fraction=0.9, statements_per_transaction=100),
}
QUICK_ROWS = {10_000: 1_000, 250_000: 5_000}


def settings() -> list[dict]:
    return [
        tracekit.categorical("journal_mode", ["delete", "truncate", "wal"]),
        tracekit.categorical("synchronous", ["off", "normal", "full"]),
        tracekit.integer("cache_size_kib", [256, 2048, 16384], scale="log"),
        tracekit.integer("page_size", [1024, 4096, 16384], scale="log"),
        tracekit.integer("mmap_mib", [0, 64]),
    ]


class Databases:
    """The database files, one per (rows, page size), made when first needed."""

    def __init__(self, directory: str):
        self.directory = directory
        self.paths: dict[tuple[int, int], str] = {}

    def path(self, rows: int, page_size: int) -> str:
        if (rows, page_size) not in self.paths:
            path = os.path.join(self.directory, f"kv-{rows}-{page_size}.db")
            create(path, rows, page_size)
            self.paths[rows, page_size] = path
        return self.paths[rows, page_size]


def create(path: str, rows: int, page_size: int) -> None:
    """A fresh database of `rows` random payloads with pages of `page_size` bytes."""
    generator = random.Random(rows)
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute(f"PRAGMA page_size = {page_size}")
        db.execute("PRAGMA journal_mode = delete")
        db.execute("CREATE TABLE kv (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO kv (id, payload) VALUES (?, ?)",
            ((i, generator.randbytes(PAYLOAD_BYTES)) for i in range(rows)),
        )
        db.execute("COMMIT")
    db.close()


def connect(path: str, setting: dict) -> sqlite3.Connection:
    """A connection to `path` with the setting's pragmas (autocommit mode)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA journal_mode = {setting['journal_mode']}")
    db.execute(f"PRAGMA synchronous = {setting['synchronous']}")
    db.execute(f"PRAGMA cache_size = -{setting['cache_size_kib']}")
    db.execute(f"PRAGMA mmap_size = {setting['mmap_mib'] * 1024 * 1024}")
    return db


def run(db: sqlite3.Connection, workload: Workload, rows: int, seconds: float, seed: int):
    """Runs `workload` for `seconds`: the statements done and each transaction's
    latency in seconds."""
    generator = random.Random(seed)
    batch = workload.statements_per_transaction
    latencies = []
    ops = 0
    deadline = time.perf_counter() + seconds
    while (started := time.perf_counter()) < deadline:
        if batch > 1:
            db.execute("BEGIN")
        for _ in range(batch):
            statement(db, generator, workload.write_fraction, rows)
        if batch > 1:
            db.execute("COMMIT")
        latencies.append(time.perf_counter() - started)
        ops += batch
    return ops, latencies


def statement(db: sqlite3.Connection, generator: random.Random, writes: float, rows: int):
    """One read or write of a random row."""
    if generator.random() < writes:
        row = generator.randrange(rows)
        payload = generator.randbytes(PAYLOAD_BYTES)
        db.execute("UPDATE kv SET payload = ? WHERE id = ?", (payload, row))
    else:
        first = generator.randrange(rows - RANGE_ROWS)
        db.execute(
            "SELECT count(*), sum(length(payload)) FROM kv WHERE id BETWEEN ? AND ?",
            (first, first + RANGE_ROWS - 1),
        ).fetchone()


def percentile(values: list[float], fraction: float) -> float:
    """The `fraction` quantile of `values` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Recorder:
    """Measures one repeat of a (setting, workload); the connection of a setting is
    kept for its repeats and warmed up before the first."""

    def __init__(self, databases: Databases, seconds: float, quick: bool):
        self.databases, self.seconds, self.quick = databases, seconds, quick
        self.db: sqlite3.Connection | None = None

    def rows(self, workload: Workload) -> int:
        return QUICK_ROWS[workload.rows] if self.quick else workload.rows

    def measure(self, setting: dict, condition: str, repeat: int) -> dict[str, int | float]:
        workload = WORKLOADS[condition]
        rows = self.rows(workload)
        if repeat == 0:
            self.close()
            self.db = connect(self.databases.path(rows, setting["page_size"]), setting)
            run(self.db, workload, rows, WARMUP_SECONDS, seed=-1)
        seed = zlib.crc32(f"{condition}/{repeat}".encode())
        started = time.perf_counter()
        ops, latencies = run(self.db, workload, rows, self.seconds, seed)
        seconds = time.perf_counter() - started
        return {
            "ops": ops,
            "seconds": round(seconds, 6),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 4),
        }

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def main() -> None:
    parser = tracekit.arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=0.2, help="how long a measurement runs")
    args = parser.parse_args()
    seconds = 0.02 if args.quick else args.seconds
    trace = tracekit.Trace(
        name="sqlite",
        machine=tracekit.machine(sqlite=sqlite3.sqlite_version),
        settings=settings(),
        condition="workload",
        conditions=list(WORKLOADS),
        measured={
            "ops": "statements done (reads and writes)",
            "seconds": "wall seconds the statements took",
            "p99_ms": "99th percentile of a transaction's latency, milliseconds",
        },
        data={
            name: {
                "rows": QUICK_ROWS[w.rows] if args.quick else w.rows,
                "payload_bytes": PAYLOAD_BYTES,
                "write_fraction": w.write_fraction,
                "statements_per_transaction": w.statements_per_transaction,
                "read_rows": RANGE_ROWS,
            }
            for name, w in WORKLOADS.items()
        },
        order=("page_size",),
    )
    with tempfile.TemporaryDirectory(prefix="tvbo-trace-sqlite-") as directory:
        recorder = Recorder(Databases(directory), seconds, args.quick)
        try:
            tracekit.record(
                trace, recorder.measure, out=args.out, repeats=args.repeats, quick=args.quick
            )
        finally:
            recorder.close()


if __name__ == "__main__":
    main()
