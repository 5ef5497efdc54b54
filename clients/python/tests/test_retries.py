"""Retries: a dropped answer, a stalled one, 503 and 429 back-off, connection refused.

The faults come from a proxy in front of the real server (tests/proxy.py), so that each
retry reaches the server with the idempotency key of the first attempt."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Iterator, List

import httpx
import pytest

import tvbo

from .conftest import quick_retry
from .proxy import FaultProxy
from .server import Server


def session_on(server: Server) -> tvbo.Session:
    with tvbo.Client(server.url, server.api_key) as direct:
        s = direct.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 100})
    return s


def test_a_retried_observe_after_a_dropped_answer_stores_one_observation(
    server: Server, proxy: FaultProxy
) -> None:
    s = session_on(server)
    with tvbo.Client(proxy.url, server.api_key, retry=quick_retry()) as client:
        via = client.session(s.id)
        (sg,) = via.suggest()
        proxy.plan("POST", "/observations", "drop")
        stored = via.observe(sg, 0.25)
        assert stored.suggestion_id == sg.id and stored.value == 0.25
        attempts = proxy.entries("POST", "/observations")
        assert [e.action for e in attempts] == ["drop", "forward"]
        assert [e.upstream_status for e in attempts] == [201, 201]  # both reached the server
        assert (
            attempts[0].idempotency_key
            and attempts[0].idempotency_key == attempts[1].idempotency_key
        )
        assert attempts[1].replayed == "true"  # the second answer is the first, replayed
        assert [o.suggestion_id for o in via.observations()] == [sg.id]


def test_without_the_key_the_same_retry_would_store_twice(server: Server) -> None:
    """The control of the test above: an observe of the client's own setting repeated
    without an Idempotency-Key is stored twice, so the key is what makes it act once."""
    s = session_on(server)
    body = {"params": {"x": 0.5}, "value": 1.0}
    for _ in range(2):
        r = httpx.post(
            f"{server.url}/v1/sessions/{s.id}/observations",
            json=body,
            headers={"authorization": f"Bearer {server.api_key}"},
        )
        assert r.status_code == 201
    with tvbo.Client(server.url, server.api_key) as client:
        assert len(list(client.session(s.id).observations())) == 2


def test_a_stalled_answer_times_out_and_the_retry_acts_once(
    server: Server, proxy: FaultProxy
) -> None:
    s = session_on(server)
    proxy.stall_seconds = 2.0
    with tvbo.Client(proxy.url, server.api_key, timeout=0.5, retry=quick_retry()) as client:
        via = client.session(s.id)
        proxy.plan("POST", "/observations", "stall")
        via.observe_many([({"x": 0.1}, 1.0), ({"x": 0.2}, 2.0)])
    attempts = proxy.entries("POST", "/observations")
    assert [e.action for e in attempts] == ["stall", "forward"]
    assert attempts[1].replayed == "true"
    with tvbo.Client(server.url, server.api_key) as client:
        assert [o.value for o in client.session(s.id).observations()] == [1.0, 2.0]


def test_503_is_retried_with_the_same_key(server: Server, proxy: FaultProxy) -> None:
    s = session_on(server)
    with tvbo.Client(proxy.url, server.api_key, retry=quick_retry()) as client:
        via = client.session(s.id)
        proxy.retry_after = None  # no Retry-After: jittered back-off
        proxy.plan("POST", "/suggestions", "503", "503")
        (sg,) = via.suggest()
        attempts = proxy.entries("POST", "/suggestions")
        assert [e.action for e in attempts] == ["503", "503", "forward"]
        assert len({e.idempotency_key for e in attempts}) == 1
        proxy.retry_after = "0"
        proxy.plan("POST", "/observations", "503")
        via.observe(sg, 1.0)
        assert via.refresh().observation_count == 1


def test_503_raises_once_the_retries_are_spent(server: Server, proxy: FaultProxy) -> None:
    s = session_on(server)
    with tvbo.Client(proxy.url, server.api_key, retry=quick_retry(retries=2)) as client:
        proxy.plan("GET", s.id, "503", "503", "503")
        with pytest.raises(tvbo.ServiceUnavailable) as raised:
            client.session(s.id)
        assert raised.value.detail == "injected by the test proxy" and raised.value.retry_after == 0
        assert len(proxy.entries("GET", s.id)) == 3


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Server]:
    """A server allowing 5 requests per second per key, in bursts of 2."""
    s = Server(tmp_path / "limited", {"TVBO_RATE_LIMIT": "5", "TVBO_RATE_BURST": "2"})
    yield s
    s.stop()


def test_429_is_retried_after_retry_after(limited: Server) -> None:
    proxy = FaultProxy(limited.url)
    try:
        with tvbo.Client(proxy.url, limited.api_key) as client:
            s = client.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 100})
            started = time.monotonic()
            for i in range(8):
                s.observe({"x": i / 10}, float(i))
            elapsed = time.monotonic() - started
        statuses = [e.upstream_status for e in proxy.log]
        assert 429 in statuses, statuses
        assert statuses.count(201) == 9  # the create and 8 observes, each stored once
        assert elapsed >= 0.8  # 8 requests at 5/s after a burst of 2 (less the create's)
        with tvbo.Client(limited.url, limited.api_key) as direct:
            assert len(list(direct.session(s.id).observations())) == 8
    finally:
        proxy.close()


def test_429_raises_rate_limited_when_retries_are_off(limited: Server) -> None:
    with tvbo.Client(limited.url, limited.api_key, retry=tvbo.RetryPolicy(retries=0)) as client:
        with pytest.raises(tvbo.RateLimited) as raised:
            for _ in range(10):
                client.create_session([tvbo.Float("x", 0, 1)])
    assert raised.value.status == 429 and raised.value.retry_after is not None
    assert raised.value.retry_after > 0


def test_connection_refused_raises_connection_failed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    started = time.monotonic()
    with tvbo.Client(f"http://127.0.0.1:{port}", "k", retry=quick_retry(retries=3)) as client:
        with pytest.raises(
            tvbo.ConnectionFailed, match=rf"connection refused by 127\.0\.0\.1:{port} \(4 attempts "
        ) as raised:
            client.session("00000000-0000-4000-8000-000000000000")
    assert isinstance(raised.value.__cause__, httpx.ConnectError)
    assert time.monotonic() - started < 5


def test_a_hung_server_holds_a_call_no_longer_than_its_total() -> None:
    # A listener that accepts and never answers: every attempt would wait for its read
    # timeout (130 s by default); the call's total cuts each one short.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        started = time.monotonic()
        policy = tvbo.RetryPolicy(total=1.5)
        with tvbo.Client(f"http://127.0.0.1:{port}", "k", retry=policy) as client:
            with pytest.raises(tvbo.ConnectionFailed):
                client.session("00000000-0000-4000-8000-000000000000")
        assert time.monotonic() - started < 3.0
        assert tvbo.RetryPolicy().total == 180.0


def test_409_concurrent_change_is_retried_and_other_conflicts_are_not(
    server: Server, proxy: FaultProxy
) -> None:
    s = session_on(server)
    with tvbo.Client(proxy.url, server.api_key, retry=quick_retry()) as client:
        via = client.session(s.id)
        proxy.plan("POST", "/observations", "409-concurrent")
        via.observe({"x": 0.5}, 1.0)
        assert [e.action for e in proxy.entries("POST", "/observations")] == [
            "409-concurrent",
            "forward",
        ]
        proxy.plan("POST", "/observations", "409-conflict")
        with pytest.raises(tvbo.Conflict) as raised:
            via.observe({"x": 0.6}, 2.0)
        assert raised.value.kind == "conflict"
        assert len(proxy.entries("POST", "/observations")) == 3  # not retried
        assert [o.value for o in via.observations()] == [1.0]


def test_the_async_client_retries_a_dropped_answer_once(server: Server, proxy: FaultProxy) -> None:
    s = session_on(server)

    async def main() -> None:
        async with tvbo.AsyncClient(proxy.url, server.api_key, retry=quick_retry()) as client:
            via = await client.session(s.id)
            proxy.plan("POST", "/observations", "drop", "503")
            await via.observe_many([({"x": 0.1}, 1.0), ({"x": 0.2}, 2.0)])
            assert [o.value async for o in via.observations()] == [1.0, 2.0]

    asyncio.run(main())
    attempts = proxy.entries("POST", "/observations")
    assert [e.action for e in attempts] == ["drop", "503", "forward"]
    assert len({e.idempotency_key for e in attempts}) == 1 and attempts[2].replayed == "true"


def test_optimize_rides_through_a_restart(tmp_path: Path) -> None:
    """The server killed (SIGKILL) in the middle of `optimize` with 4 workers and back 3 s
    later, under the default retry policy: every measured value is stored, once (before,
    the client gave up after 4 s with 2 of 10 values lost)."""
    server = Server(tmp_path / "restart", {"TVBO_RATE_LIMIT": "0"})
    measured: List[float] = []
    lock = threading.Lock()

    def fn(p: tvbo.Params) -> float:
        time.sleep(0.05)
        with lock:
            value = float(len(measured))
            measured.append(value)
        return value

    try:
        with tvbo.Client(server.url, server.api_key, timeout=30) as client:
            s = client.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 100})
            restart = threading.Timer(0.5, server.restart, kwargs={"down_for": 3.0})
            restart.start()
            started = time.monotonic()
            stored = s.optimize(fn, iterations=60, workers=4)
            restart.join()
            assert time.monotonic() - started > 3.0  # the restart happened in the run
            values = sorted(o.value for o in s.observations(include_pruned=True))
            assert len(stored) == 60
            assert values == sorted(measured) == [float(i) for i in range(60)]
            assert s.refresh().pending_count == 0
    finally:
        server.stop()
