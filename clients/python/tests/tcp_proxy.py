"""A TCP relay in front of a real tvbo server, for the tests of ``watch()``: unlike
tests/proxy.py it relays bytes as they come (an event stream never ends), and it can cut
every open connection and refuse new ones for a while, as a network outage or a load
balancer between replicas would."""

from __future__ import annotations

import socket
import threading
import time
from typing import List, Tuple


class TcpProxy:
    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").rsplit(":", 1)
        self.upstream: Tuple[str, int] = (host, int(port))
        self.opened = 0  # connections relayed
        self.bytes_down = 0  # bytes relayed from the server
        self._holding = False
        self._closed = False
        self._pairs: List[Tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.05)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def hold(self) -> None:
        """Cut every open connection; new ones are closed at once until :meth:`release`."""
        with self._lock:
            self._holding = True
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _close(sock)

    def release(self) -> None:
        with self._lock:
            self._holding = False

    def wait_for(self, what: str, minimum: int, seconds: float = 20.0) -> None:
        """Wait until ``opened`` or ``bytes_down`` reaches ``minimum``."""
        deadline = time.monotonic() + seconds
        while getattr(self, what) < minimum:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} is {getattr(self, what)}, not {minimum}")
            time.sleep(0.02)

    def close(self) -> None:
        self._closed = True
        self.hold()
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            with self._lock:
                holding = self._holding
            if holding:
                _close(downstream)
                continue
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                _close(downstream)
                continue
            with self._lock:
                self._pairs.append((downstream, upstream))
                self.opened += 1
            threading.Thread(
                target=self._pump, args=(downstream, upstream, False), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(upstream, downstream, True), daemon=True
            ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, down: bool) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
                if down:
                    with self._lock:
                        self.bytes_down += len(data)
        except OSError:
            pass
        finally:
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
