"""Ctrl-C on a program running ``optimize``, as a user presses it: SIGINT to a separate
Python process whose workers are measuring. The program exits with KeyboardInterrupt,
and the session has nothing pending (before: the suggestions in hand stayed pending for
``time.pending_timeout``, an hour by default)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import tvbo

from .server import Server

PROGRAM = {
    "threads": """
        def fn(p):
            time.sleep(60)
            return 1.0

        session.optimize(fn, iterations=100, workers=4)
    """,
    "asyncio": """
        import asyncio

        async def fn(p):
            await asyncio.sleep(60)
            return 1.0

        async def main():
            async with tvbo.AsyncClient() as client:
                s = await client.session(session.id)
                await s.optimize(fn, iterations=100, workers=4)

        asyncio.run(main())
    """,
}


@pytest.mark.parametrize("kind", sorted(PROGRAM))
def test_ctrl_c_leaves_nothing_pending(
    kind: str, default_server: Server, own_key: str, own_client: tvbo.Client, tmp_path: Path
) -> None:
    s = own_client.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 100})
    script = tmp_path / "program.py"
    script.write_text(
        "import signal, sys, time\n"
        "import tvbo\n"
        # As in a terminal: a background job (CI's) starts with SIGINT ignored.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "session = tvbo.Client().session(sys.argv[1])\n" + textwrap.dedent(PROGRAM[kind])
    )
    env = {"TVBO_URL": default_server.url, "TVBO_API_KEY": own_key, "PATH": "/usr/bin:/bin"}
    program = subprocess.Popen(
        [sys.executable, str(script), s.id],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while s.refresh().pending_count < 4:  # the four workers measure
            assert program.poll() is None, program.communicate()[0]
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.05)
        pressed = time.monotonic()
        program.send_signal(signal.SIGINT)
        output, _ = program.communicate(timeout=20)
    finally:
        if program.poll() is None:
            program.kill()
            program.wait()
    assert time.monotonic() - pressed < 5.0
    assert program.returncode != 0 and "KeyboardInterrupt" in output, output
    info = s.refresh()
    assert (info.pending_count, info.observation_count) == (0, 0), output
    abandoned = [r for r in s.timeline().ended_runs if r.kind == "abandoned"]
    assert len(abandoned) == 4
