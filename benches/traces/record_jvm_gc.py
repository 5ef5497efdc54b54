"""Records a trace of the JVM's garbage collectors (OpenJDK's HotSpot): the CPU time,
wall time and peak memory of a fixed amount of work under every setting of collector ×
heap size × young-generation ratio × thread stack size, for three allocation patterns a
service moves between over a day.

The program is ``benches/traces/jvm/GcWorkload.java``, compiled once with ``javac``
into a temporary directory, then run in a fresh JVM per measurement with the setting as
its options: ``-XX:+Use{Serial,Parallel,G1}GC``, ``-Xms``/``-Xmx`` (a fixed heap, as
services are usually run), ``-XX:NewRatio`` (old : young) and ``-Xss``. Its patterns
(the trace's conditions; the program's comment says what each allocates):

- ``requests``: short-lived objects of a request beside a 16 MiB live set;
- ``cache``: a 96 MiB cache whose 8 KiB entries are replaced at random;
- ``batch``: buffers of 0.25-2 MiB, a few alive at a time.

Each run warms up (a tenth of the work, so that the JIT has compiled the loops) and then
measures the work: ``cpu_seconds`` (the process's CPU time over every thread, the
collector's included), ``wall_seconds``, ``gc_count`` and ``gc_seconds`` (the
collectors' own account) and ``peak_rss_mib`` (the process's peak resident memory,
VmHWM). The random choices come from a seed per repeat, the same for every setting.

Needs a JDK (``java`` and ``javac`` on the path; Debian's ``default-jdk``):

    python3 benches/traces/record_jvm_gc.py --out benchmarks/traces/jvm-gc.jsonl

Takes about 10 minutes (54 settings × 3 patterns × 3 repeats of about 1 s). Run it on
a quiet machine: the times are the measurements.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import tracekit

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "jvm", "GcWorkload.java")
COLLECTORS = {"serial": "-XX:+UseSerialGC", "parallel": "-XX:+UseParallelGC", "g1": "-XX:+UseG1GC"}
PATTERNS = ["requests", "cache", "batch"]
MEASURED = {
    "cpu_seconds": "CPU seconds of the work, every thread of the process",
    "wall_seconds": "wall seconds of the work",
    "gc_count": "collections during the work",
    "gc_seconds": "the collectors' time during the work (their MXBeans' account)",
    "peak_rss_mib": "the process's peak resident memory (VmHWM), MiB",
}


def settings() -> list[dict]:
    return [
        tracekit.categorical("collector", list(COLLECTORS)),
        tracekit.integer("heap_mib", [256, 512, 1024], scale="log"),
        tracekit.integer("new_ratio", [1, 2, 4]),
        tracekit.integer("stack_kib", [256, 1024], scale="log"),
    ]


def options(setting: dict) -> list[str]:
    """The JVM's command-line options for `setting`."""
    heap = setting["heap_mib"]
    return [
        COLLECTORS[setting["collector"]],
        f"-Xms{heap}m",
        f"-Xmx{heap}m",
        f"-XX:NewRatio={setting['new_ratio']}",
        f"-Xss{setting['stack_kib']}k",
    ]


def java_version() -> str:
    shown = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    return shown.stderr.splitlines()[0]


class Recorder:
    """Runs the compiled workload in a fresh JVM per measurement."""

    def __init__(self, classes: str, quick: bool):
        subprocess.run(["javac", "-d", classes, SOURCE], check=True)
        self.classes = classes
        self.quick = quick

    def measure(self, setting: dict, pattern: str, repeat: int) -> dict[str, int | float]:
        command = ["java", *options(setting), "-cp", self.classes, "GcWorkload", pattern]
        command.append(str(1000 + repeat))
        if self.quick:
            command.append("0.05")
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{setting} {pattern}: java failed: {done.stderr.strip()}")
        result = json.loads(done.stdout)
        return {name: result[name] for name in MEASURED}


def main() -> None:
    args = tracekit.arguments(__doc__.split("\n\n")[0]).parse_args()
    trace = tracekit.Trace(
        name="jvm-gc",
        machine=tracekit.machine(java=java_version()),
        settings=settings(),
        condition="pattern",
        conditions=PATTERNS,
        measured=MEASURED,
        data={
            "program": "benches/traces/jvm/GcWorkload.java",
            "patterns": {
                "requests": "1 000 000 requests: 1-8 KiB responses, a 16 MiB live set",
                "cache": "300 000 lookups in a 96 MiB cache of 8 KiB entries, a quarter replacing one",
                "batch": "2 000 buffers of 0.25-2 MiB, five alive at a time",
            },
        },
    )
    with tempfile.TemporaryDirectory(prefix="tvbo-trace-jvm-") as classes:
        recorder = Recorder(classes, args.quick)
        tracekit.record(trace, recorder.measure, out=args.out, repeats=args.repeats, quick=args.quick)


if __name__ == "__main__":
    main()
