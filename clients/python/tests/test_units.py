"""Parts that need no server: back-off, Retry-After, time stamps, decoding."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

import tvbo
from tvbo import _core
from tvbo.errors import api_error
from tvbo.models import decode, parse_datetime


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
    import tomllib  # the tests run on Python >= 3.11

    with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["version"] == tvbo.__version__
