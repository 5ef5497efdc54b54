"""The snippets of docs/python-client.md, run as written, one after the other in one
namespace, against a live server (keys on, the default limits; its allow list holds the
doc's hooks.example.com and the receiver's 127.0.0.1): the server's address replaces
``http://127.0.0.1:8080``, and ``$TVBO_URL``, ``$TVBO_API_KEY`` are set as the page says.
The receiver of "Verifying a delivery" is a program of its own: run as written but for
its last line (it serves on a free port of 127.0.0.1 in a thread, not on 0.0.0.0:8000
for ever), and sent a ping and real events."""

from __future__ import annotations

import re
import threading
import time
import uuid
from typing import Any, Dict, Iterator, List

import pytest

import tvbo

from .conftest import repo_root
from .server import Server

DOC = repo_root() / "docs" / "python-client.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SERVE = 'ThreadingHTTPServer(("0.0.0.0", 8000), Receiver).serve_forever()'


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(
        tmp_path_factory.mktemp("docs"), {"TVBO_WEBHOOK_ALLOW": "hooks.example.com,127.0.0.1"}
    )
    yield s
    s.stop()


def blocks() -> List[str]:
    return list(BLOCK.findall(DOC.read_text(encoding="utf-8")))


def test_the_page_has_its_snippets() -> None:
    found = blocks()
    assert len(found) >= 8 and sum(SERVE in b for b in found) == 1


def test_the_snippets_run_in_order(
    docs_server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TVBO_API_KEY", docs_server.make_key(f"docs-{uuid.uuid4().hex[:8]}"))
    monkeypatch.setenv("TVBO_URL", docs_server.url)
    namespace: Dict[str, Any] = {"__name__": "docs"}
    for number, block in enumerate(blocks(), 1):
        if SERVE in block:
            continue  # the receiver: below
        code = block.replace("http://127.0.0.1:8080", docs_server.url)
        exec(compile(code, f"{DOC.name}, snippet {number}", "exec"), namespace)
    session: tvbo.Session = namespace["session"]
    info = session.refresh()
    assert len(namespace["stored"]) == 12 and info.pending_count == 0
    assert info.observation_count == 6 + 12  # 1 + 1, a batch of 3, 1; optimize's 12
    assert namespace["worker"].info.name == "cache worker"
    assert namespace["same"].id == namespace["worker"].id
    by_load: tvbo.Session = namespace["by_load"]
    loads = sorted(float(o.params["load"]) for o in by_load.observations())
    assert loads == sorted([0.4] * 3 + namespace["loads"])
    assert by_load.refresh().pending_count == 0
    out = capsys.readouterr().out
    assert "cache tuning" in out and "cache worker" in out
    assert "'load': 0.9" in out and "'load': 0.5" in out


def test_the_receiver_runs_as_written(
    docs_server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "whsec_" + uuid.uuid4().hex
    monkeypatch.setenv("TVBO_WEBHOOK_SECRET", secret)
    (receiver,) = [b for b in blocks() if SERVE in b]
    code = receiver.replace(SERVE, 'server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)')
    namespace: Dict[str, Any] = {"__name__": "receiver"}
    exec(compile(code, f"{DOC.name}, the receiver", "exec"), namespace)
    server = namespace["server"]
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        key = docs_server.make_key(f"receiver-{uuid.uuid4().hex[:8]}")
        with tvbo.Client(docs_server.url, key) as client:
            url = f"http://127.0.0.1:{server.server_address[1]}/"
            hook = client.create_webhook(url, ["model-reset"], secret)
            assert client.ping_webhook(hook).delivered
            s = client.create_session(
                [tvbo.Float("x", 0, 1)],
                algorithm={"name": "r-gp-ucb", "reset_every": 4},
                time={"source": "client"},
            )
            for step in range(8):
                point = tvbo.ObservationInput(float(step), params={"x": step / 10}, t=float(step))
                s.observe_many([point])
            wanted = {"0"} | {str(e.id) for e in s.events()}
            deadline = time.monotonic() + 30
            while namespace["seen"] != wanted:
                assert time.monotonic() < deadline, namespace["seen"]
                time.sleep(0.05)
        assert capsys.readouterr().out.count("model-reset") == 2
    finally:
        server.shutdown()
        server.server_close()
