"""A small HTTP proxy for the tests, in front of a real tvbo server.

Each request is forwarded to the server and its answer relayed, unless a planned fault
for the request's method and path says otherwise:

- ``"drop"``: forward the request, let the server answer, then close the client's
  connection without relaying the answer (the write was committed; the client never
  hears of it);
- ``"stall"``: forward, then wait ``stall_seconds`` before relaying (past the client's
  timeout);
- ``"503"``, ``"409-concurrent"``, ``"409-conflict"``: answer 503 ``busy``, 409
  ``concurrent-change`` or 409 ``conflict`` (problem+json, with ``Retry-After: 0`` unless
  ``retry_after`` is None) without forwarding.

Every request is logged with its idempotency key, what was done and the server's status
and ``idempotent-replayed`` header, for the tests to check.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple

INJECTED = {
    "503": (503, "busy"),
    "409-concurrent": (409, "concurrent-change"),
    "409-conflict": (409, "conflict"),
}


@dataclass
class Entry:
    method: str
    path: str
    idempotency_key: Optional[str]
    action: str
    upstream_status: Optional[int]
    replayed: Optional[str]


class FaultProxy:
    def __init__(self, upstream: str, stall_seconds: float = 3.0) -> None:
        host, port = upstream.removeprefix("http://").rsplit(":", 1)
        self.upstream: Tuple[str, int] = (host, int(port))
        self.stall_seconds = stall_seconds
        self.retry_after: Optional[str] = "0"
        self.log: List[Entry] = []
        self._plans: Dict[Tuple[str, str], List[str]] = {}
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                proxy._handle(self)

            do_POST = do_GET
            do_DELETE = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def plan(self, method: str, path_suffix: str, *actions: str) -> None:
        """Apply ``actions`` in turn to the next requests whose path ends with the suffix."""
        with self._lock:
            self._plans.setdefault((method, path_suffix), []).extend(actions)

    def entries(self, method: str, path_suffix: str) -> List[Entry]:
        with self._lock:
            return [e for e in self.log if e.method == method and e.path.endswith(path_suffix)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_action(self, method: str, path: str) -> str:
        with self._lock:
            for (m, suffix), actions in self._plans.items():
                if m == method and path.split("?")[0].endswith(suffix) and actions:
                    return actions.pop(0)
        return "forward"

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        action = self._next_action(h.command, h.path)
        entry = Entry(h.command, h.path, h.headers.get("idempotency-key"), action, None, None)
        with self._lock:
            self.log.append(entry)
        h.close_connection = True
        if action in INJECTED:
            status, kind = INJECTED[action]
            problem = json.dumps(
                {
                    "type": f"https://tvbo.dev/problems/{kind}",
                    "title": "injected",
                    "status": status,
                    "detail": "injected by the test proxy",
                }
            ).encode()
            h.send_response(status)
            h.send_header("content-type", "application/problem+json")
            h.send_header("content-length", str(len(problem)))
            if self.retry_after is not None:
                h.send_header("retry-after", self.retry_after)
            h.send_header("connection", "close")
            h.end_headers()
            h.wfile.write(problem)
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(h.command, h.path, body=body, headers=headers)
        response = conn.getresponse()
        payload = response.read()
        conn.close()
        entry.upstream_status = response.status
        entry.replayed = response.getheader("idempotent-replayed")
        if action == "drop":
            return  # the server has answered; the client hears nothing
        if action == "stall":
            time.sleep(self.stall_seconds)
        skip = ("connection", "transfer-encoding", "content-length", "date", "server")
        try:
            h.send_response(response.status)
            for k, v in response.getheaders():
                if k.lower() not in skip:
                    h.send_header(k, v)
            h.send_header("content-length", str(len(payload)))
            h.send_header("connection", "close")
            h.end_headers()
            h.wfile.write(payload)
        except ConnectionError:
            pass  # the client gave up waiting (a stall past its timeout)
