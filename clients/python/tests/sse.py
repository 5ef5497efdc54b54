"""A scripted stand-in for the server's event stream, ``GET /v1/events``, for the tests
of ``watch()`` that need no server: each connection takes the next planned reply, and
every request is logged (its query and headers) for the tests to check.

Replies: :func:`stream` (200 ``text/event-stream``, chunked: its chunks written one by
one, then the stream ended cleanly, dropped mid-body, or held open with keep-alives until
the client goes) and :func:`answer` (a status with a problem+json body). Once the plan is
spent, every connection is answered 204, which tells a client to stop reconnecting.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Sequence
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Reply:
    status: int = 200
    chunks: Sequence[bytes] = ()
    end: str = "end"  # "end", "drop", "hold" (keep-alives) or "silent" (nothing, 3 s)
    headers: Dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    pause: float = 0.0  # between chunks


def stream(*chunks: bytes, end: str = "end", pause: float = 0.0) -> Reply:
    return Reply(200, chunks, end, {"content-type": "text/event-stream"}, pause=pause)


def answer(status: int, kind: str = "busy", retry_after: Optional[str] = None) -> Reply:
    headers = {"content-type": "application/problem+json"}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    body = json.dumps(
        {
            "type": f"https://tvbo.dev/problems/{kind}",
            "title": kind,
            "status": status,
            "detail": f"stub {status}",
        }
    ).encode()
    return Reply(status, headers=headers, body=body)


def event(id: int, kind: str = "model-reset", session: str = "s-1", seq: int = 0) -> bytes:
    """An event message as the server sends it."""
    data = {
        "id": id,
        "session": session,
        "seq": seq or id,
        "kind": kind,
        "step": 10 * id,
        "t": float(id),
        "at": "2026-11-28T10:00:00Z",
        "data": {"resets": id},
    }
    return f"id: {id}\nevent: {kind}\ndata: {json.dumps(data)}\n\n".encode()


@dataclass
class Request:
    at: float
    path: str
    query: Dict[str, str]
    headers: Dict[str, str]


class StubStream:
    def __init__(self, *plan: Reply) -> None:
        self.plan: List[Reply] = list(plan)
        self.requests: List[Request] = []
        self.ended_at: List[float] = []  # when each reply was done
        self.client_left = threading.Event()  # a held stream saw its client go
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                stub._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        with self._lock:
            self.requests.append(
                Request(
                    time.monotonic(),
                    parts.path,
                    dict(parse_qsl(parts.query)),
                    {k.lower(): v for k, v in h.headers.items()},
                )
            )
            reply = self.plan.pop(0) if self.plan else Reply(204)
        h.close_connection = True
        try:
            h.send_response(reply.status)
            for k, v in reply.headers.items():
                h.send_header(k, v)
            if reply.status == 200:
                h.send_header("transfer-encoding", "chunked")
            else:
                h.send_header("content-length", str(len(reply.body)))
            h.send_header("connection", "close")
            h.end_headers()
            if reply.status != 200:
                h.wfile.write(reply.body)
                return
            for chunk in reply.chunks:
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                h.wfile.flush()
                time.sleep(reply.pause)
            if reply.end == "end":
                h.wfile.write(b"0\r\n\r\n")
            elif reply.end == "hold":
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                    h.wfile.write(b"3\r\n:\n\n\r\n")  # a keep-alive comment
                    h.wfile.flush()
            elif reply.end == "silent":
                time.sleep(3)  # no keep-alive: only the client's read timeout notices
            # "drop" (and "silent"): the connection closes without the last chunk
        except (BrokenPipeError, ConnectionResetError):
            self.client_left.set()
        finally:
            with self._lock:
                self.ended_at.append(time.monotonic())
