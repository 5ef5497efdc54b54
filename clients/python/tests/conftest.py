"""Fixtures: one real tvbo server for the whole run, clients on it, and a fault proxy."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import pytest

import tvbo

from .proxy import FaultProxy
from .server import Server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A tvbo server on SQLite with the rate limit off (tests make bursts of requests)."""
    s = Server(tmp_path_factory.mktemp("tvbo"), {"TVBO_RATE_LIMIT": "0"})
    yield s
    s.stop()


@pytest.fixture(scope="session")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A tvbo server as users run it: keys required, every limit at its default (the
    request rate, the streams per key)."""
    s = Server(tmp_path_factory.mktemp("tvbo-defaults"))
    yield s
    s.stop()


@pytest.fixture
def own_key(default_server: Server) -> str:
    """A key of its own on :func:`default_server`, of a tenant of its own (named after the
    key): the test's sessions and events are the only ones it sees."""
    return default_server.make_key(f"t-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def own_client(default_server: Server, own_key: str) -> Iterator[tvbo.Client]:
    with tvbo.Client(default_server.url, own_key) as c:
        yield c


@pytest.fixture
def client(server: Server) -> Iterator[tvbo.Client]:
    with tvbo.Client(server.url, server.api_key, timeout=30) as c:
        yield c


@pytest.fixture
def proxy(server: Server) -> Iterator[FaultProxy]:
    p = FaultProxy(server.url)
    yield p
    p.close()


def quick_retry(retries: int = 5) -> tvbo.RetryPolicy:
    """Retries with short waits, so that the tests are fast."""
    return tvbo.RetryPolicy(retries=retries, backoff=0.01, max_backoff=0.05)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]
