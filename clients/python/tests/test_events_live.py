"""The event stream and webhooks against the real server (``events_api``: these need the
server's GET /v1/events and /v1/webhooks, and the events' ``id`` and ``session``).

Webhook tests run on a server of their own whose allow list (``TVBO_WEBHOOK_ALLOW``)
holds 127.0.0.1, where a receiver of the test listens: a standard-library HTTP server
that verifies each delivery's signature and deduplicates by ``Tvbo-Event-Id``, as
docs/python-client.md shows."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, Iterator, List, Tuple, Union

import pytest

import tvbo
from tvbo.models import decode

from .server import Server
from .tcp_proxy import TcpProxy

pytestmark = pytest.mark.events_api

SECRET = "whsec_python_client_tests"


def resetting_session(client: tvbo.Client, observations: int = 10) -> tvbo.Session:
    """An R-GP-UCB session in client time that resets every 4 observations: with 10
    observations, two ``model-reset`` events (at t = 3 and t = 7)."""
    s = client.create_session(
        [tvbo.Float("x", 0, 1)],
        algorithm={"name": "r-gp-ucb", "reset_every": 4},
        time={"source": "client"},
    )
    observe(s, 0, observations)
    return s


def observe(s: tvbo.Session, start: int, stop: int) -> None:
    for step in range(start, stop):
        point = {"x": (step % 20) / 20}
        s.observe_many([tvbo.ObservationInput(float(step), params=point, t=float(step))])


def take(items: Iterator[tvbo.Event], count: int) -> List[tvbo.Event]:
    """The first ``count`` items (the iterator's own timeout guards the wait)."""
    out: List[tvbo.Event] = []
    for item in items:
        out.append(item)
        if len(out) == count:
            break
    return out


# ---------------------------------------------------------------- the stream


def test_events_name_their_session_and_a_global_id(client: tvbo.Client) -> None:
    a, b = resetting_session(client), resetting_session(client)
    listed = list(a.events()) + list(b.events())
    assert [e.session for e in listed] == [a.id, a.id, b.id, b.id]
    assert [e.id for e in listed] == sorted(e.id for e in listed)
    assert len({e.id for e in listed}) == 4


def test_watch_reads_a_sessions_events_after_an_id(client: tvbo.Client) -> None:
    s = resetting_session(client)
    other = resetting_session(client)
    listed = list(s.events())
    got = take(client.watch(after=0, session=s, timeout=20), 2)
    assert got == listed
    assert take(client.watch(listed[0].id, session=s.id, timeout=20), 1) == listed[1:]
    # nothing of this kind, nothing of the other session
    assert list(client.watch(0, session=s, kinds=["dataset-full"], timeout=1.5)) == []
    assert all(e.session == other.id for e in take(client.watch(0, other, timeout=20), 2))


def test_watch_of_the_tenant_sees_every_session_in_id_order(client: tvbo.Client) -> None:
    a, b = resetting_session(client), resetting_session(client)
    start = min(e.id for e in a.events()) - 1
    mine = {a.id, b.id}
    got = [
        e
        for e in take(client.watch(start, kinds=["model-reset"], timeout=20), 4)
        if e.session in mine
    ]
    assert [e.id for e in got] == sorted(e.id for e in list(a.events()) + list(b.events()))


def test_watch_sees_events_as_they_are_committed(client: tvbo.Client) -> None:
    s = resetting_session(client, observations=0)
    version = s.refresh().version
    later = threading.Timer(1.0, observe, args=(s, 0, 10))
    later.start()
    try:
        seen: List[Union[tvbo.Event, tvbo.SessionChanged]] = []
        for item in client.watch(0, session=s, changes=True, timeout=20):
            seen.append(item)
            if len([i for i in seen if isinstance(i, tvbo.Event)]) == 2:
                break
    finally:
        later.join()
    events = [i for i in seen if isinstance(i, tvbo.Event)]
    changes = [i for i in seen if isinstance(i, tvbo.SessionChanged)]
    assert events == list(s.events())
    assert changes and all(c.session == s.id for c in changes)
    assert max(c.version for c in changes) > version
    assert [c.version for c in changes] == sorted(c.version for c in changes)


def test_an_unknown_session_raises_not_found(client: tvbo.Client) -> None:
    with pytest.raises(tvbo.NotFound):
        list(client.watch(session="00000000-0000-4000-8000-000000000000", timeout=5))


def test_watch_resumes_across_a_server_restart(tmp_path: Path) -> None:
    server = Server(tmp_path / "restart", {"TVBO_RATE_LIMIT": "0"})
    try:
        with tvbo.Client(server.url, server.api_key, timeout=30) as client:
            s = resetting_session(client)
            watch = client.watch(after=0, session=s, timeout=60)
            first = take(watch, 2)

            def restart_and_observe() -> None:
                server.restart(down_for=1.0)
                observe(s, 10, 18)  # two resets more, at t = 11 and 15

            background = threading.Thread(target=restart_and_observe)
            background.start()
            rest = take(watch, 2)
            background.join()
            watch.close()
            assert first + rest == list(s.events())
            assert len({e.id for e in first + rest}) == 4
    finally:
        server.stop()


def test_the_async_client_watches(server: Server) -> None:
    async def main() -> None:
        async with tvbo.AsyncClient(server.url, server.api_key, timeout=30) as client:
            s = await client.create_session(
                [tvbo.Float("x", 0, 1)],
                algorithm={"name": "r-gp-ucb", "reset_every": 4},
                time={"source": "client"},
            )
            for step in range(10):
                item = tvbo.ObservationInput(float(step), params={"x": step / 20}, t=float(step))
                await s.observe_many([item])
            listed = [e async for e in s.events()]
            got: List[tvbo.Event] = []
            watch = client.watch(0, session=s, timeout=20)
            async for e in watch:
                got.append(e)
                if len(got) == 2:
                    break
            await watch.aclose()
            assert got == listed and len(listed) == 2

    asyncio.run(main())


# ---------------------------------------------------------------- webhooks


@dataclass
class Delivery:
    headers: Dict[str, str]
    body: bytes


class Receiver:
    """A webhook receiver on 127.0.0.1: verifies each delivery (401 when the signature
    does not verify), keeps the first of each ``Tvbo-Event-Id`` and answers ``status``."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.status = 200
        self.deliveries: List[Delivery] = []  # every verified one, duplicates included
        self.events: Dict[str, Delivery] = {}  # by Tvbo-Event-Id
        self.refused = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    tvbo.verify_signature(receiver.secret, body, self.headers.get("tvbo-signature"))
                except tvbo.SignatureError:
                    with receiver.lock:
                        receiver.refused += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                got = Delivery({k.lower(): v for k, v in self.headers.items()}, body)
                with receiver.lock:
                    receiver.deliveries.append(got)
                    receiver.events.setdefault(got.headers.get("tvbo-event-id", ""), got)
                self.send_response(receiver.status)
                self.send_header("content-length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def wait_for(self, count: int, seconds: float = 30.0) -> Dict[str, Delivery]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.events) >= count:
                    return dict(self.events)
            time.sleep(0.05)
        raise AssertionError(f"{len(self.events)} of {count} events delivered")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(
        tmp_path_factory.mktemp("hooks"),
        {"TVBO_RATE_LIMIT": "0", "TVBO_WEBHOOK_ALLOW": "127.0.0.1"},
    )
    yield s
    s.stop()


@pytest.fixture
def hooks_client(hooks: Server) -> Iterator[tvbo.Client]:
    # A key of its own, of a tenant of its own (named after the key): its webhooks are
    # the test's alone.
    with tvbo.Client(hooks.url, hooks.make_key(f"hooks-{uuid.uuid4().hex[:8]}"), timeout=30) as c:
        yield c


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(SECRET)
    yield r
    r.close()


def test_webhooks_are_created_listed_read_and_deleted(
    hooks_client: tvbo.Client, receiver: Receiver
) -> None:
    client = hooks_client
    made = client.create_webhook(receiver.url, ["model-reset", "optimum-moved"], SECRET)
    assert made.secret == SECRET and made.url == receiver.url
    assert sorted(made.events) == ["model-reset", "optimum-moved"]
    generated = client.create_webhook(receiver.url)
    assert generated.events == [] and generated.secret and len(generated.secret) >= 16
    listed = {w.id: w for w in client.webhooks()}
    assert set(listed) == {made.id, generated.id}
    assert listed[made.id].secret is None and listed[made.id].created_at == made.created_at
    assert client.webhook(made.id) == listed[made.id]
    client.delete_webhook(made)
    client.delete_webhook(generated.id)
    assert client.webhooks() == []
    with pytest.raises(tvbo.NotFound):
        client.webhook(made.id)
    with pytest.raises(tvbo.NotFound):
        client.delete_webhook(made.id)


def test_a_webhook_is_refused_naming_the_field(hooks_client: tvbo.Client) -> None:
    with pytest.raises(tvbo.InvalidField) as raised:
        hooks_client.create_webhook("http://hooks.example.com/tvbo")  # not in the allow list
    assert raised.value.field == "url"
    with pytest.raises(tvbo.InvalidField) as raised:
        hooks_client.create_webhook("http://127.0.0.1:9/hook", secret="too-short")
    assert raised.value.field == "secret"
    assert hooks_client.webhooks() == []


def test_a_ping_is_a_signed_delivery(hooks_client: tvbo.Client, receiver: Receiver) -> None:
    hook = hooks_client.create_webhook(receiver.url, secret=SECRET)
    ping = hooks_client.ping_webhook(hook)
    assert ping.delivered and ping.status == 200 and ping.error is None
    assert ping.duration_ms >= 0
    (got,) = receiver.wait_for(1).values()
    assert got.headers["tvbo-event-kind"] == "ping"
    assert got.headers["tvbo-webhook-id"] == hook.id
    assert got.headers["content-type"].startswith("application/json")
    receiver.status = 500
    failed = hooks_client.ping_webhook(hook)
    # the outcome in a few words, never the receiver's status or text (docs/events.md)
    assert not failed.delivered and failed.status is None and failed.error == "answered-5xx"
    hooks_client.delete_webhook(hook)


def test_a_webhook_delivers_each_event_once_signed(
    hooks_client: tvbo.Client, receiver: Receiver
) -> None:
    hook = hooks_client.create_webhook(receiver.url, ["model-reset"], SECRET)
    s = resetting_session(hooks_client)
    listed = list(s.events())
    got = receiver.wait_for(2)
    assert receiver.refused == 0
    assert sorted(got) == sorted(str(e.id) for e in listed)
    for event in listed:
        delivery = got[str(event.id)]
        assert delivery.headers["tvbo-event-kind"] == "model-reset"
        assert delivery.headers["tvbo-webhook-id"] == hook.id
        assert decode(tvbo.Event, json.loads(delivery.body)) == event
    deliveries = list(hooks_client.webhook_deliveries(hook, page_size=1))
    assert [(d.event, d.session, d.seq, d.kind) for d in deliveries] == [
        (e.id, s.id, e.seq, e.kind) for e in listed
    ]
    assert all(d.state == "delivered" and d.attempts >= 1 for d in deliveries)
    assert all(d.last_status == 200 and d.delivered_at is not None for d in deliveries)
    assert list(hooks_client.webhook_deliveries(hook, after=listed[0].id)) == deliveries[1:]
    hooks_client.delete_webhook(hook)


def test_the_async_client_manages_webhooks(hooks: Server, receiver: Receiver) -> None:
    key = hooks.make_key(f"hooks-{uuid.uuid4().hex[:8]}")

    async def main() -> None:
        async with tvbo.AsyncClient(hooks.url, key, timeout=30) as client:
            hook = await client.create_webhook(receiver.url, secret=SECRET)
            assert [w.id for w in await client.webhooks()] == [hook.id]
            assert (await client.webhook(hook)).secret is None
            assert (await client.ping_webhook(hook.id)).delivered
            await client.delete_webhook(hook)
            assert await client.webhooks() == []

    asyncio.run(main())


# ---------------------------------------------------------------- resuming, however it started


def collect(watch: Iterator[tvbo.Event], count: int) -> Tuple[List[tvbo.Event], threading.Thread]:
    """The first ``count`` events of ``watch``, gathered by a thread (join it)."""
    got: List[tvbo.Event] = []

    def run() -> None:
        for event in watch:
            got.append(event)
            if len(got) == count:
                break

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return got, thread


def wait_for_count(got: List[tvbo.Event], count: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} events"
        time.sleep(0.05)


@pytest.mark.parametrize("scope", ["every session", "one session"])
def test_a_watch_without_after_misses_nothing_across_lost_connections(
    default_server: Server, own_key: str, scope: str
) -> None:
    """``watch()`` without ``after`` starts at the server's newest event; its connection
    is cut before any event came (the stream had not named its position: the events of
    the outage were lost, ids 13-15 of the report), then again after some: every event
    committed since the watch started is yielded, once, in order, and none before it."""
    direct = tvbo.Client(default_server.url, own_key, timeout=30)
    first = resetting_session(direct)  # two events before the watch: not to be yielded
    # Older than the watch's first connection by more than the second of its Date header.
    time.sleep(2.2)
    proxy = TcpProxy(default_server.url)
    policy = tvbo.RetryPolicy(backoff=0.05, max_backoff=0.2)
    try:
        with tvbo.Client(proxy.url, own_key, timeout=30, retry=policy) as via:
            watched = first if scope == "one session" else None
            expected = 6 if scope == "one session" else 8
            got, thread = collect(via.watch(session=watched, timeout=60), expected)
            proxy.wait_for("bytes_down", 1)  # the stream is open
            proxy.hold()  # lost before any event
            observe(first, 10, 18)  # two resets (t = 11, 15) while disconnected
            second = resetting_session(direct)  # another session: two more
            proxy.release()
            wait_for_count(got, 2 if scope == "one session" else 4)
            assert proxy.opened >= 2
            proxy.hold()  # lost after some
            observe(first, 18, 26)  # two more while disconnected (t = 19, 23)
            proxy.release()
            wait_for_count(got, 4 if scope == "one session" else 6)
            observe(second, 10, 18)  # and two on the stream
            observe(first, 26, 30)  # one more (t = 27)... and the next at t = 31
            observe(first, 30, 32)
            thread.join(30)
        before = {e.id for e in list(first.events())[:2]}
        sessions = [first] if scope == "one session" else [first, second]
        everything = sorted((e for s in sessions for e in s.events()), key=lambda e: e.id)
        wanted = [e for e in everything if e.id not in before][:expected]
        assert [e.id for e in got] == [e.id for e in wanted]
        assert got == wanted
    finally:
        proxy.close()
        direct.close()


def test_the_async_watch_without_after_misses_nothing_after_a_lost_connection(
    default_server: Server, own_key: str
) -> None:
    direct = tvbo.Client(default_server.url, own_key, timeout=30)
    s = resetting_session(direct)
    time.sleep(2.2)
    proxy = TcpProxy(default_server.url)
    policy = tvbo.RetryPolicy(backoff=0.05, max_backoff=0.2)

    async def main() -> List[tvbo.Event]:
        got: List[tvbo.Event] = []
        async with tvbo.AsyncClient(proxy.url, own_key, timeout=30, retry=policy) as client:
            watch = client.watch(session=s.id, timeout=60)

            async def outage() -> None:
                await asyncio.to_thread(proxy.wait_for, "bytes_down", 1)
                proxy.hold()
                await asyncio.to_thread(observe, s, 10, 18)
                proxy.release()

            cut = asyncio.ensure_future(outage())
            async for event in watch:
                got.append(event)
                if len(got) == 2:
                    break
            await watch.aclose()
            await cut
        return got

    try:
        got = asyncio.run(main())
        assert got == list(s.events())[2:4]
    finally:
        proxy.close()
        direct.close()


def test_a_webhook_says_its_health(hooks_client: tvbo.Client, receiver: Receiver) -> None:
    hook = hooks_client.create_webhook(receiver.url, secret=SECRET)
    assert (hook.state, hook.consecutive_failures, hook.paused_at) == ("active", 0, None)
    receiver.status = 500
    ping = hooks_client.ping_webhook(hook)
    assert not ping.delivered and not ping.resumed
    listed = hooks_client.webhook(hook)
    assert listed.state == "active" and listed.paused_reason is None
    hooks_client.delete_webhook(hook)
