"""Parts that need no server: back-off, Retry-After, time stamps, decoding."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import List

import httpx
import pytest

import tvbo
from tvbo import _core
from tvbo.errors import api_error
from tvbo.models import TimeConfig, decode, parse_datetime


def test_backoff_is_jittered_bounded_and_gives_up() -> None:
    policy = tvbo.RetryPolicy(retries=3, backoff=0.5, max_backoff=1.5)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 1.5)]:
        waits = [policy.delay(attempt, None) for _ in range(200)]
        assert all(w is not None and 0 <= w <= ceiling for w in waits)
        assert len(set(waits)) > 100  # jittered
    assert policy.delay(3, None) is None
    assert policy.delay(0, 2.0) == pytest.approx(2.0, abs=0.11)  # Retry-After honoured
    assert policy.delay(0, 61.0) is None  # beyond max_retry_after: give up


def test_retry_after_header() -> None:
    assert _core.retry_after(httpx.Response(429, headers={"retry-after": "3"})) == 3.0
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    date = when.strftime("%a, %d %b %Y %H:%M:%S GMT")
    seconds = _core.retry_after(httpx.Response(503, headers={"retry-after": date}))
    assert seconds is not None and 28 <= seconds <= 31
    assert _core.retry_after(httpx.Response(503)) is None


def test_rfc3339_with_nanoseconds() -> None:
    t = parse_datetime("2026-11-22T10:00:00.123456789Z")
    assert t == datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert parse_datetime("2026-11-22T10:00:00+02:00").utcoffset() == timedelta(hours=2)


def test_decode_requires_required_fields_and_ignores_unknown_ones() -> None:
    best = decode(tvbo.Best, {"t": 1, "params": {"x": 2}, "mean": 0.5, "std": 0.1, "new": 1})
    assert best == tvbo.Best(1.0, {"x": 2.0}, 0.5, 0.1)
    with pytest.raises(tvbo.DecodeError, match="missing 'std'"):
        decode(tvbo.Best, {"t": 1, "params": {}, "mean": 0.5})
    with pytest.raises(tvbo.DecodeError, match="expected a number"):
        decode(tvbo.Best, {"t": "soon", "params": {}, "mean": 0.5, "std": 0})


def test_problem_without_json_body() -> None:
    e = api_error(503, "upstream down")
    assert isinstance(e, tvbo.ServiceUnavailable) and e.detail == "upstream down"
    assert e.field is None


def test_batch_needs_items() -> None:
    with pytest.raises(ValueError):
        _core.batch_json([])


def test_version_matches_pyproject() -> None:
    # The [project] table's version line (tomllib is Python 3.11+; the tests run on 3.9).
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    project = text.split("[project]", 1)[1].split("\n[", 1)[0]
    (version,) = re.findall(r'^version\s*=\s*"([^"]+)"', project, re.MULTILINE)
    assert version == tvbo.__version__


def test_which_error_answers_are_retried() -> None:
    def problem(status: int, kind: str) -> tvbo.ApiError:
        return api_error(status, {"type": f"https://tvbo.dev/problems/{kind}", "detail": "d"})

    retried = [(429, "rate-limited"), (503, "busy"), (502, "x"), (504, "x")]
    retried.append((409, "concurrent-change"))
    for status, kind in retried:
        assert _core.is_retryable(problem(status, kind)), (status, kind)
    refused = [(503, "timeout"), (409, "conflict"), (422, "invalid-field"), (404, "not-found")]
    for status, kind in refused:
        assert not _core.is_retryable(problem(status, kind)), (status, kind)


def test_a_delete_404_is_done_only_after_a_lost_answer() -> None:
    delete = _core.Call("DELETE", "/v1/sessions/x")
    gone = httpx.Response(404, json={"type": "about:blank", "detail": "no session"})
    assert _core.check(delete, gone, after_lost_answer=True) is None
    with pytest.raises(tvbo.NotFound):
        _core.check(delete, gone, after_lost_answer=False)


def test_a_2xx_that_is_not_json_is_a_decode_error() -> None:
    page = httpx.Response(200, text="<html>proxy</html>")
    with pytest.raises(tvbo.DecodeError, match="not JSON"):
        _core.check(_core.Call("GET", "/v1/sessions"), page, after_lost_answer=False)


def test_non_finite_numbers_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="^value: must be a finite number"):
        _core.observation_json("id", float("nan"))
    with pytest.raises(ValueError, match=r"^params\.x: must be a finite number"):
        _core.observation_json({"x": float("inf")}, 1.0)
    with pytest.raises(ValueError, match=r"^points\[1\]\.x: must be a finite number"):
        _core.predict_body([{"x": 0.0}, {"x": float("nan")}], None)
    with pytest.raises(ValueError, match="^t: must be a finite number"):
        _core.suggest_body(1, float("inf"))


def test_an_unknown_value_of_a_fixed_set_is_kept() -> None:
    # A newer server's time source is kept as it is; a non-string still fails.
    config = decode(TimeConfig, {"source": "gps", "pending_timeout": 60})
    assert str(config.source) == "gps"
    with pytest.raises(tvbo.DecodeError, match="unexpected value"):
        decode(TimeConfig, {"source": 3, "pending_timeout": 60})


def test_errors_survive_pickling() -> None:
    """multiprocessing and joblib send a worker's exception back pickled."""
    import pickle

    error = api_error(
        422,
        {"detail": "must be finite", "type": "https://tvbo.dev/invalid-field", "field": "value"},
        retry_after=2.0,
        request_id="a1b2c3",
    )
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is tvbo.InvalidField
    assert (back.status, back.detail, back.field, back.kind, back.retry_after) == (
        422,
        "must be finite",
        "value",
        "invalid-field",
        2.0,
    )
    assert back.request_id == "a1b2c3"
    assert str(back) == str(error)
    lost = pickle.loads(pickle.dumps(tvbo.ConnectionFailed("no answer")))
    assert str(lost) == "no answer"


def test_retries_are_logged_on_the_tvbo_logger(caplog: pytest.LogCaptureFixture) -> None:
    call = _core.post("/v1/sessions", {})
    policy = tvbo.RetryPolicy(retries=2, backoff=0.01)
    link = _core.Link("http://x", None)
    with caplog.at_level("WARNING", logger="tvbo"):
        _core.wait_after_error(policy, 0, 0.0, call, api_error(503, {"detail": "busy"}))
        timeout = httpx.Timeout(3.0)
        link.wait_after_transport_error(policy, 1, 0.1, call, httpx.ReadTimeout("slow"), timeout)
    assert [r.name for r in caplog.records] == ["tvbo", "tvbo"]
    assert "POST /v1/sessions: 503: busy; retry 1" in caplog.records[0].getMessage()
    assert "POST /v1/sessions: no answer from x:80 within 3 s; retry 2" in (
        caplog.records[1].getMessage()
    )


def test_a_connection_error_is_retried_for_the_connect_deadline_until_an_answer() -> None:
    policy = tvbo.RetryPolicy(backoff=1.0, max_backoff=1.0)
    link = _core.Link("https://tvbo.example", None)
    assert link.hostport == "tvbo.example:443" and link.deadline(policy) == 10.0
    assert policy.delay(3, None, 9.5, link.deadline(policy)) == pytest.approx(0.5, abs=0.5)
    assert policy.delay(3, None, 10.0, link.deadline(policy)) is None
    link.answered = True
    assert link.deadline(policy) == 60.0
    # a back-off that would pass the deadline is cut: the last retry is made at it
    waits = [policy.delay(0, None, 59.9) for _ in range(50)]
    assert all(w is not None and w <= 0.1 + 1e-9 for w in waits)


def test_the_default_policy_retries_until_its_deadline() -> None:
    """No count limit by default: a retry is made while it would start within 60 s of the
    first attempt, so a restart of the server is ridden through."""
    policy = tvbo.RetryPolicy()
    assert policy.retries is None and policy.deadline == 60.0
    waits = [policy.delay(attempt, None, 0.0) for attempt in range(100)]
    assert all(w is not None and 0 <= w <= policy.max_backoff for w in waits)
    assert policy.delay(0, 2.0, 57.0) == pytest.approx(2.0, abs=0.11)
    assert policy.delay(0, 2.0, 59.0) is None
    assert policy.delay(50, None, 60.0) is None
    assert tvbo.RetryPolicy(retries=2).delay(2, None, 0.0) is None


def test_the_events_of_a_create_are_sent_with_their_nulls() -> None:
    body = _core.create_session_body(
        [tvbo.Float("x", 0, 1)],
        None,
        None,
        None,
        {"warmup": None},
        None,
        None,
        None,
        events={"idle_seconds": None, "tracking": {"window": 16}},
    )
    assert body["model"] == {}
    assert body["events"] == {"idle_seconds": None, "tracking": {"window": 16}}
    without = _core.create_session_body(
        [tvbo.Float("x", 0, 1)], None, None, None, None, None, None, None
    )
    assert "events" not in without


def test_best_sends_fixed_as_a_url_encoded_json_object() -> None:
    sent: List[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        body = {"t": 1.5, "params": {"level": 0.4, "load": 0.7}, "mean": 1.0, "std": 0.1}
        return httpx.Response(200, json=body)

    info = {
        "id": "s1",
        "name": "",
        "goal": "maximize",
        "parameters": [{"name": "load", "low": 0, "high": 1, "context": True}],
        "algorithm": {"name": "bolt"},
        "model": {"spatial_kernel": "matern52", "warmup": 5},
        "time": {"source": "wall", "pending_timeout": 60},
        "events": {},
        "seed": 1,
        "status": "active",
        "created_at": "2026-01-01T00:00:00Z",
        "observation_count": 1,
        "dataset_size": 1,
        "pending_count": 0,
        "version": 1,
    }
    client = tvbo.Client("http://tvbo.test", "tvbo_k", transport=httpx.MockTransport(answer))
    session = tvbo.Session(client, decode(tvbo.SessionInfo, info))
    session.best(t=1.5, fixed={"load": 0.7, "codec": "zstd", "threads": 4})
    session.best()
    assert sent[0].url.params["t"] == "1.5"
    assert json.loads(sent[0].url.params["fixed"]) == {"load": 0.7, "codec": "zstd", "threads": 4}
    assert "%7B%22load%22%3A0.7" in str(sent[0].url)  # URL-encoded
    assert sent[1].url.query == b""
    with pytest.raises(ValueError, match="fixed.load"):
        _core.best_query(None, {"load": math.inf})
    with pytest.raises(ValueError, match="fixed"):
        _core.best_query(None, "load=0.7")  # type: ignore[arg-type]


def test_optimize_takes_fixed_values_or_a_function_of_the_round() -> None:
    assert _core.fixed_at(None, 3) is None
    assert _core.fixed_at({"load": 0.5}, 3) == {"load": 0.5}
    assert _core.fixed_at(lambda number: {"load": number / 10}, 3) == {"load": 0.3}
    with pytest.raises(TypeError, match="round 2"):
        _core.fixed_at(lambda number: [0.5], 2)  # type: ignore[arg-type]
