"""Records a trace of real compression: every setting of codec × level × block size on
blocks of four kinds of real data of this machine, each measured several times.

The trace (docs/traces.md) is what a replay benchmark needs to make a time-varying
objective of real software: the settings, the conditions (here the kind of data), and
for each (setting, condition) the repeated measurements, whose spread is the real noise.
What is measured, per block: the CPU seconds of compressing it (``time.process_time``
around the call, this process only) and the bytes in and out. The codecs are Python's
``zlib``, ``bz2`` and ``lzma`` (the C libraries, called through the standard library).

The data: log files (``/var/log``), JSON documents, executables (``/usr/bin``) and files
that are compressed already (``.gz``, ``.png``, ``.jpg``), the first files of each kind
found on this machine, read whole and cut into blocks; the trace's header names them
with their sizes and SHA-256.

Standard library only (Python 3.11 or later):

    python3 benches/traces/record_compression.py --out benchmarks/traces/compression.jsonl

Takes about a minute on two cores (run it on a quiet machine: its CPU times are the
measurements). ``--repeats`` and ``--budget`` (bytes of data per kind) trade time for
noise; ``--quick`` records a tiny subset (benches/traces/tracekit.py).
"""

from __future__ import annotations

import bz2
import glob
import hashlib
import lzma
import os
import time
import zlib
from collections.abc import Callable

import tracekit

CODECS: dict[str, Callable[[bytes, int], bytes]] = {
    "zlib": lambda data, level: zlib.compress(data, level),
    "bz2": lambda data, level: bz2.compress(data, level),
    "lzma": lambda data, level: lzma.compress(data, preset=level - 1),
}
LEVELS = range(1, 10)
BLOCK_KIB = [16, 64, 256]
KINDS = {
    "logs": ["/var/log/*.log", "/var/log/*/*.log"],
    "json": ["/usr/share/**/*.json", "/root/.pyenv/versions/*/lib/python3*/test/*.json"],
    "binaries": ["/usr/bin/*"],
    "compressed": ["/usr/share/doc/*/*.gz", "/usr/share/**/*.png", "/usr/share/**/*.jpg"],
}


def sample(kind: str, budget: int) -> list[tuple[str, bytes]]:
    """The first readable files of `kind` (sorted paths), up to `budget` bytes in all."""
    files: list[tuple[str, bytes]] = []
    total = 0
    for pattern in KINDS[kind]:
        for path in sorted(glob.glob(pattern, recursive=True)):
            if total >= budget or not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                with open(path, "rb") as f:
                    data = f.read(budget - total)
            except OSError:
                continue
            if len(data) < 4096:
                continue
            files.append((path, data))
            total += len(data)
    if total < budget // 4:
        raise SystemExit(f"too little {kind} data on this machine ({total} bytes)")
    return files


def blocks(data: bytes, size: int) -> list[bytes]:
    """`data` cut into blocks of `size` bytes, the last one shorter where `size` does not
    divide it: every byte is compressed whatever the block size (the trace's sizes divide
    its data; the live harness tries sizes between them)."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def compressed_blocks(data: dict[str, list[tuple[str, bytes]]]):
    """The measurement of one repeat: CPU seconds compressing a kind's data block by block
    with a codec at a level, and the bytes in and out."""
    chunks: dict[tuple[str, int], list[bytes]] = {}

    def measure(setting: dict, kind: str, _repeat: int) -> dict[str, int | float]:
        block_kib = setting["block_kib"]
        if (kind, block_kib) not in chunks:
            joined = b"".join(raw for _, raw in data[kind])
            chunks[kind, block_kib] = blocks(joined, block_kib * 1024)
        compress, level = CODECS[setting["codec"]], setting["level"]
        cpu = time.process_time()
        size = sum(len(compress(chunk, level)) for chunk in chunks[kind, block_kib])
        cpu = time.process_time() - cpu
        return {
            "cpu_seconds": round(cpu, 6),
            "bytes_in": sum(len(chunk) for chunk in chunks[kind, block_kib]),
            "bytes_out": size,
        }

    return measure


def described(files: list[tuple[str, bytes]]) -> list[dict[str, int | str]]:
    """The header's account of a kind's files: path, bytes, SHA-256."""
    return [
        {"path": path, "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
        for path, raw in files
    ]


def main() -> None:
    parser = tracekit.arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=1 << 20, help="bytes of data per kind")
    args = parser.parse_args()
    data = {kind: sample(kind, args.budget) for kind in KINDS}
    trace = tracekit.Trace(
        name="compression",
        machine=tracekit.machine(zlib=zlib.ZLIB_RUNTIME_VERSION),
        settings=[
            tracekit.categorical("codec", list(CODECS)),
            tracekit.integer("level", low=LEVELS[0], high=LEVELS[-1]),
            tracekit.integer("block_kib", BLOCK_KIB, scale="log"),
        ],
        condition="data",
        conditions=list(KINDS),
        measured={
            "cpu_seconds": "CPU seconds compressing the blocks (this process)",
            "bytes_in": "bytes of data compressed",
            "bytes_out": "bytes after compression",
        },
        data={kind: described(files) for kind, files in data.items()},
        order=("block_kib", "codec"),
    )
    tracekit.record(
        trace,
        compressed_blocks(data),
        out=args.out,
        repeats=args.repeats,
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
