"""Failures the client cannot retry away, said fast and plainly, and the API key kept out
of every error: a server that is not running (10 s, not a minute), one that restarts (the
full deadline), an unknown host, TLS to an http port, something that does not speak HTTP,
a server that never answers; a key read from a file, or with a control character in it;
a URL without its scheme. Against real servers with keys on and the default limits."""

from __future__ import annotations

import re
import socket
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, Iterator, List, Tuple

import httpx
import pytest

import tvbo
from tvbo import _core

from .server import Server

NO_SESSION = "00000000-0000-4000-8000-000000000000"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


def text_of(error: BaseException) -> str:
    """Everything a log shows of ``error``: its traceback, chained exceptions included."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


# ---------------------------------------------------------------- fail fast, say what


def test_a_server_that_is_not_running_is_said_in_10_s() -> None:
    """The default policy: a server never reached is retried for connect_deadline (10 s),
    not for the whole minute of a restart (before: 59 s and 30 attempts)."""
    port = free_port()
    assert tvbo.RetryPolicy().connect_deadline == 10.0
    started = time.monotonic()
    with tvbo.Client(f"http://127.0.0.1:{port}", "k") as client:
        with pytest.raises(tvbo.ConnectionFailed) as raised:
            client.session(NO_SESSION)
    took = time.monotonic() - started
    assert 9.9 <= took <= 12.0, took
    message = str(raised.value)
    pattern = (
        rf"^GET /v1/sessions/{NO_SESSION}: connection refused by 127\.0\.0\.1:{port} "
        rf"\(\d+ attempts over (\d+\.\d) s; never connected: is the server running at "
        rf"http://127\.0\.0\.1:{port}\?\)$"
    )
    match = re.match(pattern, message)
    assert match, message
    assert 9.9 <= float(match.group(1)) <= 12.0
    assert isinstance(raised.value.__cause__, httpx.ConnectError)


def test_a_server_that_answered_before_gets_the_whole_deadline(tmp_path: Path) -> None:
    """Once the server has answered, a refused connection is a restart: retried for the
    policy's deadline, here past a 3 s outage with a connect_deadline of 1 s; a client that
    never reached it gives up after that second."""
    server = Server(tmp_path / "restart")
    policy = tvbo.RetryPolicy(connect_deadline=1.0, deadline=30.0, backoff=0.05, max_backoff=0.3)
    try:
        with tvbo.Client(server.url, server.api_key, retry=policy) as known:
            s = known.create_session([tvbo.Float("x", 0, 1)])  # it has answered
            restart = threading.Thread(target=server.restart, kwargs={"down_for": 3.0})
            restart.start()
            time.sleep(0.3)  # the server is down
            with tvbo.Client(server.url, server.api_key, retry=policy) as stranger:
                started = time.monotonic()
                with pytest.raises(tvbo.ConnectionFailed, match="never connected"):
                    stranger.session(s.id)
                assert time.monotonic() - started < 2.0
            started = time.monotonic()
            assert known.session(s.id).id == s.id  # waited for the restart
            assert time.monotonic() - started > 1.5
            restart.join()
    finally:
        server.stop()


def test_an_unknown_host_fails_at_once() -> None:
    started = time.monotonic()
    with tvbo.Client("http://tvbo-server.invalid:8080", "k") as client:
        with pytest.raises(tvbo.ConnectionFailed) as raised:
            client.session(NO_SESSION)
    assert time.monotonic() - started < 3.0
    message = str(raised.value)
    assert "cannot resolve the host 'tvbo-server.invalid'" in message, message
    assert "not retried" in message


def test_https_to_an_http_port_fails_at_once(default_server: Server) -> None:
    https = default_server.url.replace("http://", "https://")
    started = time.monotonic()
    with tvbo.Client(https, default_server.api_key) as client:
        with pytest.raises(tvbo.ConnectionFailed) as raised:
            client.session(NO_SESSION)
        with pytest.raises(tvbo.ConnectionFailed, match="TLS with"):
            list(client.watch(timeout=30))  # the stream too
    assert time.monotonic() - started < 3.0
    message = str(raised.value)
    hostport = default_server.url.removeprefix("http://")
    assert f"TLS with {hostport} failed" in message, message
    assert "is it an http:// server? (the URL says https://)" in message
    assert "not retried" in message


@pytest.fixture
def not_http() -> Iterator[str]:
    """A listener that answers what is not HTTP (an SSH server's greeting) and keeps the
    connection open."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.05)
    stop = threading.Event()
    held: List[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
            held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_what_does_not_speak_http_fails_at_once(not_http: str) -> None:
    started = time.monotonic()
    with tvbo.Client(not_http, "k") as client:
        with pytest.raises(tvbo.ConnectionFailed) as raised:
            client.session(NO_SESSION)
    assert time.monotonic() - started < 3.0
    message = str(raised.value)
    assert "does not speak HTTP/1.1" in message and "is the URL the tvbo server's?" in message


def test_a_server_that_never_answers_is_said_after_the_timeout() -> None:
    """The default wait for an answer is 130 s, above the server's own limit of 120 s on a
    request (it then answers 503 timeout); a listener that never answers is said with the
    timeout it ran into (here 0.5 s, and a connect_deadline of 1.2 s)."""
    assert _core.DEFAULT_TIMEOUT.read == 130.0 and _core.DEFAULT_TIMEOUT.connect == 10.0
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        policy = tvbo.RetryPolicy(connect_deadline=1.2, backoff=0.01, max_backoff=0.02)
        with tvbo.Client(url, "k", timeout=0.5, retry=policy) as client:
            with pytest.raises(tvbo.ConnectionFailed) as raised:
                client.session(NO_SESSION)
    message = str(raised.value)
    assert re.search(
        r"no answer from 127\.0\.0\.1:\d+ within 0\.5 s \(\d attempts over 1\.\d s; no answer "
        r"from it yet: is http://127\.0\.0\.1:\d+ the tvbo server's URL\?\)$",
        message,
    ), message


# ---------------------------------------------------------------- the API key


def test_a_key_read_from_a_file_works(
    default_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "key.txt"
    path.write_text(default_server.api_key + "\n")
    with tvbo.Client(default_server.url, path.read_text()) as client:
        assert client.create_session([tvbo.Float("x", 0, 1)]).info.pending_count == 0
    monkeypatch.setenv("TVBO_API_KEY", f"  {default_server.api_key}\r\n")
    with tvbo.Client(default_server.url) as client:
        assert client.create_session([tvbo.Float("x", 0, 1)]).info.pending_count == 0


@pytest.mark.parametrize("inside", ["\n", "\r\n", "\x00", "\t", " ", "é"])
def test_a_key_with_a_control_character_is_refused_without_showing_it(
    default_server: Server, inside: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = default_server.api_key
    broken = key[:20] + inside + key[20:]
    sources: List[Tuple[str, Callable[[], tvbo.Client]]] = [
        ("api_key", lambda: tvbo.Client(default_server.url, broken))
    ]
    if inside != "\x00":  # the environment cannot hold a NUL
        monkeypatch.setenv("TVBO_API_KEY", broken)
        sources.append(("$TVBO_API_KEY", lambda: tvbo.Client(default_server.url)))
    for source, make in sources:
        with pytest.raises(tvbo.ConfigError) as raised:
            make()
        error = raised.value
        assert isinstance(error, tvbo.TvboError) and isinstance(error, ValueError)
        message = str(error)
        assert message.startswith(f"{source}: the API key has ") and "position 21" in message
        shown = text_of(error)
        for part in (key[:20], key[20:], key[5:15], key[-10:]):
            assert part not in shown
        assert error.__cause__ is None and error.__context__ is None


def test_no_error_shows_the_key(default_server: Server) -> None:
    """Through the real server (an unknown key) and from httpx itself (a header it cannot
    send, quoted in its text): the client's error never carries the key, and an error
    that does is not chained."""
    wrong = "tvbo_" + "0" * 32 + "_notthesecret"
    with tvbo.Client(default_server.url, wrong) as client:
        with pytest.raises(tvbo.Unauthorized) as unauthorized:
            client.session(NO_SESSION)
    assert "notthesecret" not in text_of(unauthorized.value)

    secret = default_server.api_key
    calls: List[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.LocalProtocolError(f"Illegal header value b'Bearer {secret}\\n'")

    transport = httpx.MockTransport(refuse)
    with tvbo.Client("http://tvbo.test", secret, transport=transport) as client:
        with pytest.raises(tvbo.ConnectionFailed) as raised:
            client.session(NO_SESSION)
    assert len(calls) == 1  # not retried
    shown = text_of(raised.value)
    assert secret not in shown and "<the API key>" in str(raised.value), shown
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_every_transport_error_is_the_clients_own() -> None:
    """httpx's errors never escape: each is a ConnectionFailed (retried when a retry may
    help), its text naming the host."""

    def unsupported(request: httpx.Request) -> httpx.Response:
        raise httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'.")

    with tvbo.Client("http://tvbo.test", "k", transport=httpx.MockTransport(unsupported)) as c:
        with pytest.raises(tvbo.ConnectionFailed, match="not retried"):
            c.session(NO_SESSION)
        with pytest.raises(tvbo.ConnectionFailed, match="not retried"):
            list(c.watch(timeout=5))


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "localhost:8080", "tvbo.internal"])
def test_a_url_without_its_scheme_is_refused(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(tvbo.ConfigError) as raised:
        tvbo.Client(url, "k")
    message = str(raised.value)
    assert message.startswith(f"base_url {url!r} needs an http:// or https:// scheme"), message
    assert f"e.g. 'http://{url}'" in message
    monkeypatch.setenv("TVBO_URL", url)
    with pytest.raises(tvbo.ConfigError, match=r"^\$TVBO_URL "):
        tvbo.AsyncClient(api_key="k")
