"""client.watch() without a server: the Server-Sent Events parser, and the reconnects
against a scripted stand-in for ``GET /v1/events`` (tests/sse.py)."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Iterator, List, Union

import httpx
import pytest

import tvbo
from tvbo import _core
from tvbo._core import SseMessage, SseParser

from .conftest import quick_retry
from .sse import StubStream, answer, event, stream

# ---------------------------------------------------------------- the parser


def parse(*chunks: bytes) -> List[SseMessage]:
    parser = SseParser()
    return [m for chunk in chunks for m in parser.feed(chunk)]


def test_a_message_has_its_event_data_and_id() -> None:
    assert parse(b"id: 7\nevent: model-reset\ndata: {}\n\n") == [
        SseMessage("model-reset", "{}", "7")
    ]
    assert parse(b"data: x\n\n") == [SseMessage("message", "x", None)]


def test_data_lines_join_with_newlines_and_lose_one_space() -> None:
    text = b"data:first\ndata:  second\ndata\ndata: \ndata: last\n\n"
    assert parse(text) == [SseMessage("message", "first\n second\n\n\nlast")]


def test_comments_and_messages_without_data_dispatch_nothing() -> None:
    assert parse(b": keep-alive\n\n:\n\nevent: x\n\nid: 3\n\n") == []
    assert parse(b"data: a\n: in between\ndata: b\n\n") == [SseMessage("message", "a\nb")]


def test_each_message_starts_afresh() -> None:
    # event and id belong to one message (the next has neither unless it says so)
    got = parse(b"id: 1\nevent: version\ndata: a\n\ndata: b\n\n")
    assert got == [SseMessage("version", "a", "1"), SseMessage("message", "b", None)]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_lines_end_in_lf_crlf_or_cr(end: bytes) -> None:
    text = b"id: 1" + end + b"data: a" + end + b"data: b" + end + end + b"data: c" + end + end
    assert parse(text) == [SseMessage("message", "a\nb", "1"), SseMessage("message", "c")]
    # the same, one byte at a time: a CRLF split across chunks is one line end
    assert parse(*(text[i : i + 1] for i in range(len(text)))) == parse(text)


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    assert parse(b"data: a\r", b"\n\r", b"\n") == [SseMessage("message", "a")]
    assert parse(b"data: a\r", b"", b"\n\r\n") == [SseMessage("message", "a")]


def test_retry_sets_the_reconnect_delay_and_only_with_digits() -> None:
    parser = SseParser()
    assert parser.feed(b"retry: 2500\n\n") == [] and parser.retry == 2.5
    parser.feed(b"retry: soon\nretry: -1\nretry: 1.5\n\n")
    assert parser.retry == 2.5


def test_odd_fields_and_lines() -> None:
    # a byte order mark at the start; unknown fields; an id with NUL ignored; a field
    # without a colon is the field with an empty value
    text = "\ufeffid: 1\0\nfoo: bar\nevent\ndata: é \u2028 ü\n\n".encode()
    assert parse(text) == [SseMessage("message", "é \u2028 ü", None)]


def test_utf8_split_between_chunks_and_an_unfinished_message() -> None:
    text = "data: €uro\n\n".encode()
    cut = text.index(b"\xe2") + 1
    assert parse(text[:cut], text[cut:]) == [SseMessage("message", "€uro")]
    assert parse(b"data: never dispatched\n") == []  # no blank line: not a message


def test_a_line_is_bounded() -> None:
    parser = SseParser(max_line=10)
    with pytest.raises(tvbo.DecodeError, match="longer than 10 bytes"):
        parser.feed(b"data: " + b"x" * 20)


def test_the_watch_state_deduplicates_and_skips_unknown_messages() -> None:
    state = _core.Watch(
        tvbo.RetryPolicy(), httpx.Timeout(5.0), "http://x", 2, None, None, True, None
    )
    items = state.feed(
        event(1)
        + event(2)
        + event(3)
        + b'event: version\ndata: {"session": "s-1", "version": 9}\n\n'
        + b"event: something-new\ndata: {}\n\n"
        + event(3)
        + event(4, kind="kind-from-the-future")
    )
    assert [getattr(i, "id", None) for i in items] == [3, None, 4]
    assert items[1] == tvbo.SessionChanged("s-1", 9)
    assert isinstance(items[2], tvbo.Event) and items[2].kind == "kind-from-the-future"
    with pytest.raises(tvbo.DecodeError, match="not JSON"):
        state.feed(b"id: 5\ndata: {oops\n\n")
    with pytest.raises(ValueError, match="not a string"):
        _core.Watch(tvbo.RetryPolicy(), httpx.Timeout(5.0), "http://x", None, None, "ab", False, 1)


# ---------------------------------------------------------------- against a stub stream


@pytest.fixture
def stub() -> Iterator[StubStream]:
    s = StubStream()
    yield s
    s.close()


def ids(items: List[Union[tvbo.Event, tvbo.SessionChanged]]) -> List[object]:
    return [i.id if isinstance(i, tvbo.Event) else ("version", i.version) for i in items]


def test_watch_sends_the_key_and_query_and_yields_events(stub: StubStream) -> None:
    stub.plan.append(
        stream(
            b": hello\n\n",
            event(4, session="s-1"),
            b'event: version\ndata: {"session": "s-1", "version": 3}\n\n',
            b":\n\n" + event(5, kind="optimum-moved", session="s-1"),
        )
    )
    with tvbo.Client(stub.url, "the-key", retry=quick_retry()) as client:
        got = list(client.watch(3, session="s-1", kinds=["model-reset", "optimum-moved"]))
    assert ids(list(got)) == [4, 5]
    assert got[0] == tvbo.Event(
        4, "model-reset", 40, 4.0, got[0].at, {"resets": 4}, id=4, session="s-1"
    )
    first = stub.requests[0]
    assert first.path == "/v1/events"
    assert first.query == {"after": "3", "session": "s-1", "kinds": "model-reset,optimum-moved"}
    assert first.headers["authorization"] == "Bearer the-key"
    assert first.headers["accept"] == "text/event-stream"
    assert "last-event-id" not in first.headers
    # the stream ended cleanly: reconnected after 5, then told to stop (204)
    assert len(stub.requests) == 2
    assert stub.requests[1].headers["last-event-id"] == "5"
    assert stub.requests[1].query["after"] == "5"


def test_watch_with_changes_yields_session_changes(stub: StubStream) -> None:
    stub.plan.append(
        stream(event(1), b'event: version\ndata: {"session": "s-1", "version": 3}\n\n')
    )
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        got = list(client.watch(session="s-1", changes=True))
    assert ids(got) == [1, ("version", 3)]
    assert "after" not in stub.requests[0].query
    assert "changes" not in stub.requests[0].query  # a session's changes come anyway


def test_watch_of_every_session_with_changes_asks_for_them(stub: StubStream) -> None:
    stub.plan.append(stream(b'event: version\ndata: {"session": "s-2", "version": 1}\n\n'))
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        got = list(client.watch(changes=True))
    assert ids(got) == [("version", 1)]
    assert stub.requests[0].query["changes"] == "true"


def test_a_lost_connection_resumes_after_the_last_id_and_yields_no_id_twice(
    stub: StubStream,
) -> None:
    stub.plan += [
        stream(event(1), event(2), b'id: 3\ndata: {"id": 3, cut', end="drop"),
        stream(event(2), event(3), event(4)),  # replays 2: dropped
        answer(503, retry_after="0"),
        stream(event(4), event(5), end="drop"),
    ]
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        got = [e.id for e in client.watch()]
    assert got == [1, 2, 3, 4, 5]
    sent = [r.headers.get("last-event-id") for r in stub.requests]
    assert sent == [None, "2", "4", "4", "5"]
    assert [r.query.get("after") for r in stub.requests] == [None, "2", "4", "4", "5"]


def test_a_connection_that_delivered_something_starts_the_back_off_anew(
    stub: StubStream,
) -> None:
    # One retry allowed: each drop follows a delivery, so the watch goes on.
    stub.plan += [stream(event(i), end="drop") for i in range(1, 6)]
    with tvbo.Client(stub.url, "k", retry=quick_retry(retries=1)) as client:
        assert [e.id for e in client.watch()] == [1, 2, 3, 4, 5]
    assert len(stub.requests) == 6


def test_the_servers_retry_and_retry_after_set_the_waits(stub: StubStream) -> None:
    stub.plan += [
        stream(b"retry: 400\n\n", event(1)),
        answer(503, retry_after="1"),
        stream(event(2)),
    ]
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        assert [e.id for e in client.watch()] == [1, 2]
    at = [r.at for r in stub.requests]
    assert at[1] - stub.ended_at[0] >= 0.4  # retry: 400 ms
    assert at[2] - at[1] >= 1.0  # Retry-After: 1


def test_a_silent_connection_is_dropped_after_the_read_timeout(stub: StubStream) -> None:
    stub.plan += [stream(event(1), end="silent"), stream(event(2))]
    timeout = httpx.Timeout(5.0, read=0.3)
    with tvbo.Client(stub.url, "k", timeout=timeout, retry=quick_retry()) as client:
        started = time.monotonic()
        assert [e.id for e in client.watch()] == [1, 2]
    assert time.monotonic() - started < 2.5
    assert stub.requests[1].headers["last-event-id"] == "1"


def test_a_5xx_is_retried_until_the_policy_gives_up(stub: StubStream) -> None:
    stub.plan += [answer(500, "internal"), answer(503), answer(503), answer(503)]
    with tvbo.Client(stub.url, "k", retry=quick_retry(retries=3)) as client:
        with pytest.raises(tvbo.ServiceUnavailable, match="stub 503"):
            list(client.watch())
    assert len(stub.requests) == 4


def test_a_4xx_raises_at_once(stub: StubStream) -> None:
    stub.plan += [answer(404, "not-found"), answer(401, "unauthorized"), answer(429)]
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        with pytest.raises(tvbo.NotFound):
            list(client.watch(session="gone"))
        with pytest.raises(tvbo.Unauthorized):
            list(client.watch())
        assert list(client.watch()) == []  # 429 is retried (then 204: stop)
    assert len(stub.requests) == 4


def test_an_answer_that_is_not_an_event_stream_is_a_decode_error(stub: StubStream) -> None:
    from .sse import Reply

    stub.plan.append(Reply(200, [b"<html>"], headers={"content-type": "text/html"}))
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        with pytest.raises(tvbo.DecodeError, match="not an event stream"):
            list(client.watch())


def test_connection_refused_raises_connection_failed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tvbo.Client(f"http://127.0.0.1:{port}", "k", retry=quick_retry(retries=2)) as client:
        with pytest.raises(tvbo.ConnectionFailed) as raised:
            list(client.watch())
    assert isinstance(raised.value.__cause__, httpx.ConnectError)


def test_the_timeout_ends_the_watch(stub: StubStream) -> None:
    stub.plan += [stream(event(1), end="hold"), stream(event(2), end="silent")]
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        started = time.monotonic()
        assert [e.id for e in client.watch(timeout=0.5)] == [1]  # keep-alives flowing
        assert time.monotonic() - started < 1.5
        started = time.monotonic()
        assert [e.id for e in client.watch(timeout=0.5)] == [2]  # a silent stream
        assert time.monotonic() - started < 1.5


def test_breaking_out_closes_the_connection(stub: StubStream) -> None:
    stub.plan.append(stream(event(1), event(2), end="hold"))
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        for e in client.watch():
            assert e.id == 1
            break
        assert stub.client_left.wait(3.0)
    assert len(stub.requests) == 1


def test_the_async_client_resumes_after_the_last_id(stub: StubStream) -> None:
    stub.plan += [
        stream(event(1), event(2), end="drop"),
        answer(502, "bad-gateway"),
        stream(event(2), b'event: version\ndata: {"session": "s-1", "version": 3}\n\n', event(3)),
    ]

    async def main() -> List[object]:
        async with tvbo.AsyncClient(stub.url, "k", retry=quick_retry()) as client:
            return ids([e async for e in client.watch(session="s-1", changes=True)])

    assert asyncio.run(main()) == [1, 2, ("version", 3), 3]
    assert [r.headers.get("last-event-id") for r in stub.requests] == [None, "2", "2", "3"]


def test_the_async_watch_ends_on_its_timeout_and_raises_a_4xx(stub: StubStream) -> None:
    stub.plan += [stream(event(1), end="hold"), answer(404, "not-found")]

    async def main() -> None:
        async with tvbo.AsyncClient(stub.url, "k", retry=quick_retry()) as client:
            started = time.monotonic()
            assert [e.id async for e in client.watch(timeout=0.5)] == [1]
            assert time.monotonic() - started < 1.5
            with pytest.raises(tvbo.NotFound):
                async for _ in client.watch():
                    pass

    asyncio.run(main())


def test_an_id_sent_alone_is_where_a_reconnect_resumes(stub: StubStream) -> None:
    """A server may name its position before any event (``id:`` without data, which per
    the standard sets the last event id and dispatches nothing): a reconnect resumes
    there, with nothing to read from the listings."""
    stub.plan += [stream(b"retry: 10\nid: 41\n\n", end="drop"), stream(event(42))]
    with tvbo.Client(stub.url, "k", retry=quick_retry()) as client:
        assert [e.id for e in client.watch()] == [42]
    assert [r.path for r in stub.requests] == ["/v1/events"] * 3  # no listing
    assert [r.headers.get("last-event-id") for r in stub.requests] == [None, "41", "42"]
    parser = SseParser()
    assert parser.feed(b"id: 7\n\n") == [] and parser.last_event_id == "7"
    assert parser.feed(b"id: 8\n") == [] and parser.last_event_id == "7"  # not dispatched yet
