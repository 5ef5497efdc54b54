"""Starting a real tvbo server for the tests: SQLite in a temporary directory, a key
made with ``tvbo keys create``, a kernel-chosen port read from its JSON log."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import httpx

REPO = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("TVBO_BIN") or REPO / "target" / "debug" / "tvbo")


def _find(obj: Any, key: str) -> Optional[str]:
    if isinstance(obj, dict):
        if isinstance(obj.get(key), str):
            return str(obj[key])
        for value in obj.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


class Server:
    """A running ``tvbo serve``; :meth:`stop` ends it (SIGTERM, then SIGKILL)."""

    def __init__(self, directory: Path, env: Optional[Dict[str, str]] = None) -> None:
        if not BINARY.is_file():
            raise RuntimeError(
                f"no tvbo binary at {BINARY}: run `cargo build --bin tvbo` or set TVBO_BIN"
            )
        directory.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ)
        self.env.update(
            {
                "DATABASE_URL": f"sqlite://{directory / 'tvbo.db'}",
                "TVBO_BIND": "127.0.0.1:0",
                "TVBO_LOG_FORMAT": "json",
                "RUST_LOG": "info",
                # No drain before a stop: nothing balances over these servers.
                "TVBO_DRAIN_PERIOD": "0",
            }
        )
        self.env.update(env or {})
        self.api_key = self.make_key("python-client-tests")
        self.lines: List[str] = []
        self._start()

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [str(BINARY), "serve"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        found: "queue.Queue[str]" = queue.Queue()
        process = self.process

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.lines.append(line)
                if "tvbo listening" in line:
                    address = _find(json.loads(line), "address")
                    if address:
                        found.put(address)

        threading.Thread(target=read, daemon=True).start()
        try:
            address = found.get(timeout=30)
        except queue.Empty:
            self.stop()
            raise RuntimeError("tvbo did not start:\n" + "".join(self.lines[-30:])) from None
        self.url = f"http://{address}"
        deadline = time.monotonic() + 30
        while httpx.get(f"{self.url}/readyz").status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("tvbo is not ready:\n" + "".join(self.lines[-30:]))
            time.sleep(0.05)

    def restart(self, down_for: float) -> None:
        """Kill the server (SIGKILL: nothing finishes), and start it again ``down_for``
        seconds later on the same address and database."""
        self.process.kill()
        self.process.wait()
        time.sleep(down_for)
        self.env["TVBO_BIND"] = self.url.removeprefix("http://")
        self._start()

    def make_key(self, name: str) -> str:
        """A new API key in the server's database."""
        out = subprocess.run(
            [str(BINARY), "keys", "create", "--name", name],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
