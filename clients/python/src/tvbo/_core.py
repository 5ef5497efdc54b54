"""What the sync and async clients share: the requests of every operation, the retry
policy, and the handling of answers. No I/O happens here."""

from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import math
import os
import random
import re
import sys
import time
import uuid
from datetime import datetime
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)
from urllib.parse import quote

import httpx

from . import models
from .errors import ApiError, ConnectionFailed, TvboError, api_error
from .models import (
    AlgorithmName,
    ArmSpec,
    EventsOptions,
    Goal,
    ModelOptions,
    ObservationInput,
    ParameterSpec,
    Suggestion,
    TimeOptions,
)

#: Every retry is logged here, at WARNING, with the request, the reason and the wait.
log = logging.getLogger("tvbo")

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
USER_AGENT = "tvbo-python"
DEFAULT_TIMEOUT = httpx.Timeout(130.0, connect=10.0)
"""Per attempt: longer than the server's own limit on a request (``TVBO_REQUEST_TIMEOUT``,
120 s by default, answered 503 ``timeout``), so that the client does not give up on, and
then repeat, work that the server is still allowed to finish."""


def client_settings(base_url: Optional[str], api_key: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """The base URL (argument, ``$TVBO_URL`` or the default) and the headers of every
    request (the key from the argument or ``$TVBO_API_KEY``)."""
    url = (base_url or os.environ.get("TVBO_URL") or DEFAULT_BASE_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get("TVBO_API_KEY")
    headers = {"User-Agent": USER_AGENT}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return url, headers


def session_path(session_id: str) -> str:
    """The path of a session, its id quoted (an id never reaches another route)."""
    return f"/v1/sessions/{quote(session_id, safe='')}"


SuggestionRef = Union[Suggestion, str, Mapping[str, Any]]
"""What an observation is for: a :class:`Suggestion`, a suggestion's id, or a setting
of the client's own (a mapping of parameter name to value)."""

ObservationItem = Union[ObservationInput, Tuple[SuggestionRef, float]]
"""One element of a batch observe: an :class:`ObservationInput` or ``(suggestion, value)``."""

Algorithm = Union[AlgorithmName, Mapping[str, Any]]
"""An algorithm by name (``"bolt"``), or with options (``{"name": "w-dbo", "alpha": 0.5}``)."""


@dataclasses.dataclass(frozen=True)
class Call:
    """One API request. A POST carries ``idempotency_key``, sent with every attempt."""

    method: str
    path: str
    params: Optional[Dict[str, str]] = None
    json: Any = None
    idempotency_key: Optional[str] = None


class Page(Protocol):
    """A page of a listing: ``next_after`` is where the next one starts (None: the last)."""

    @property
    def next_after(self) -> Optional[int]: ...


PageT = TypeVar("PageT", bound=Page)


def page_call(path: str, after: Optional[int], page_size: int, **params: str) -> Call:
    """The GET of one page of a listing: ``page_size`` items past ``after`` (from the
    start when None), with the listing's own ``params``."""
    query = {"limit": str(page_size), **params}
    if after is not None:
        query["after"] = str(after)
    return Call("GET", path, params=query)


def post(path: str, body: Any, idempotency_key: Optional[str] = None) -> Call:
    """A POST with a fresh idempotency key unless one is given."""
    return Call("POST", path, json=body, idempotency_key=idempotency_key or str(uuid.uuid4()))


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before retrying.

    A request is retried after a connection error or timeout, a 429, a 503, or a 409
    ``concurrent-change``, for as long as the retry would start within ``deadline``
    seconds of the first attempt (default 60: long enough to ride through a server's
    restart) and, if ``retries`` is set, at most ``retries`` times. The wait is the
    answer's ``Retry-After`` when it gives one (honoured up to ``max_retry_after``
    seconds; a longer one is raised at once), else a "full jitter" back-off: uniform in
    ``[0, min(max_backoff, backoff * 2**attempt)]``. ``total`` bounds the whole call,
    attempts and waits (default 180 s; None: unbounded): each attempt's timeout is cut to
    what is left of it, so a server that hangs holds a call no longer.
    """

    retries: Optional[int] = None
    backoff: float = 0.2
    max_backoff: float = 5.0
    max_retry_after: float = 60.0
    deadline: float = 60.0
    total: Optional[float] = 180.0

    def attempt_timeout(self, configured: httpx.Timeout, elapsed: float) -> httpx.Timeout:
        """The timeout of an attempt ``elapsed`` seconds into the call: ``configured``,
        each part cut to what is left of ``total`` (at least a millisecond)."""
        if self.total is None:
            return configured
        left = max(self.total - elapsed, 0.001)

        def cut(part: Optional[float]) -> float:
            return left if part is None else min(part, left)

        return httpx.Timeout(
            connect=cut(configured.connect),
            read=cut(configured.read),
            write=cut(configured.write),
            pool=cut(configured.pool),
        )

    def delay(
        self, attempt: int, retry_after: Optional[float], elapsed: float = 0.0
    ) -> Optional[float]:
        """Seconds to wait before retry number ``attempt + 1``, ``elapsed`` seconds after
        the first attempt began; None: give up."""
        if self.retries is not None and attempt >= self.retries:
            return None
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            wait = retry_after + random.uniform(0.0, min(0.1, self.backoff))
        else:
            wait = random.uniform(0.0, min(self.max_backoff, self.backoff * (2.0**attempt)))
        within_total = self.total is None or elapsed + wait < self.total
        return wait if elapsed + wait <= self.deadline and within_total else None


RETRYABLE_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
"""httpx errors after which a request is retried (it never got an answer)."""


def headers(call: Call) -> Dict[str, str]:
    """Per-request headers (the idempotency key)."""
    return {"Idempotency-Key": call.idempotency_key} if call.idempotency_key else {}


def retry_after(response: httpx.Response) -> Optional[float]:
    """The ``Retry-After`` header in seconds (delta-seconds or an HTTP date), if any."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def is_retryable(error: ApiError) -> bool:
    """Whether an error answer is worth retrying as is: 429, 503 (but not 503 ``timeout``:
    the server spent its whole time limit on the request, and a retry would spend it
    again), a reverse proxy's 502 and 504, and 409 ``concurrent-change``."""
    if error.status == 503:
        return error.kind != "timeout"
    return error.status in (429, 502, 504) or (
        error.status == 409 and error.kind == "concurrent-change"
    )


def wait_after_error(
    retry: RetryPolicy, attempt: int, elapsed: float, call: Call, error: ApiError
) -> float:
    """Seconds to wait before retrying after an error answer, ``elapsed`` seconds after the
    first attempt; re-raises it when it is not retried."""
    wait = retry.delay(attempt, error.retry_after, elapsed) if is_retryable(error) else None
    if wait is None:
        raise error
    log.warning("%s %s: %s; retry %d in %.2f s", call.method, call.path, error, attempt + 1, wait)
    return wait


def wait_after_lost_answer(
    retry: RetryPolicy, attempt: int, elapsed: float, call: Call, base_url: str, error: Exception
) -> float:
    """Seconds to wait before retrying after no answer, ``elapsed`` seconds after the first
    attempt; :class:`ConnectionFailed` once the retries are spent."""
    wait = retry.delay(attempt, None, elapsed)
    if wait is None:
        raise ConnectionFailed(
            f"{call.method} {base_url}{call.path}: {error!r} "
            f"(after {attempt + 1} attempts in {elapsed:.1f} s)"
        ) from error
    log.warning(
        "%s %s: no answer (%r); retry %d in %.2f s",
        call.method,
        call.path,
        error,
        attempt + 1,
        wait,
    )
    return wait


class Progress:
    """A one-line progress bar on stderr for ``optimize(progress=True)``: evaluations
    done of all, failed runs, and the best value so far in the session's goal."""

    def __init__(self, total: int, minimize: bool, enabled: bool) -> None:
        self.total, self.minimize, self.enabled = total, minimize, enabled
        self.done, self.failed = 0, 0
        self.best: Optional[float] = None
        self.started = time.monotonic()

    def update(self, value: Optional[float]) -> None:
        """One evaluation more: its value, or None for a failed run."""
        if value is None:
            self.failed += 1
        elif self.best is None or (value < self.best if self.minimize else value > self.best):
            self.best = value
        self.done += 1
        if self.enabled:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            best = "–" if self.best is None else f"{self.best:.6g}"
            sys.stderr.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                f"  best {best}  failed {self.failed}  {time.monotonic() - self.started:.0f} s"
            )
            if self.done >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def with_unstored(error: BaseException, unstored: List[Tuple[Suggestion, float]]) -> BaseException:
    """``error`` carrying, in ``unstored``, the values ``optimize`` measured but could not
    store (any exception takes the attribute; :class:`TvboError` declares it)."""
    if unstored:
        error.unstored = list(unstored)  # type: ignore[attr-defined]
    return error


def check(call: Call, response: httpx.Response, after_lost_answer: bool) -> Any:
    """The decoded JSON of a 2xx answer (None for 204); raises :class:`ApiError` otherwise
    (:class:`DecodeError` for a 2xx that is not JSON, e.g. a proxy's page).

    A DELETE retried after a lost answer may find the session already gone: its 404 then
    counts as done.
    """
    if response.status_code == 204:
        return None
    if 200 <= response.status_code < 300:
        try:
            return response.json()
        except ValueError as e:
            raise models.DecodeError(
                f"{call.method} {call.path}: the {response.status_code} answer is not JSON"
            ) from e
    if call.method == "DELETE" and response.status_code == 404 and after_lost_answer:
        return None
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    raise api_error(
        response.status_code,
        body,
        retry_after(response),
        response.headers.get("x-request-id"),
    )


# ---------------------------------------------------------------- request bodies


def _drop_none(d: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def parameter_json(p: ParameterSpec) -> Dict[str, Any]:
    return _drop_none(dataclasses.asdict(p))


def create_session_body(
    parameters: Sequence[ParameterSpec],
    name: Optional[str],
    goal: Optional[Goal],
    algorithm: Optional[Algorithm],
    model: Optional[ModelOptions],
    time: Optional[TimeOptions],
    arms: Optional[Sequence[ArmSpec]],
    seed: Optional[int],
    resume: bool = False,
    events: Optional[EventsOptions] = None,
) -> Dict[str, Any]:
    """The body of ``POST /v1/sessions``. ``events`` is sent as given, its None values
    included: ``"idle_seconds": None`` switches ``session-idle`` off (absent, it takes
    the default), and a None elsewhere in it takes the default as an absent key does."""
    if isinstance(algorithm, str):
        algorithm_json: Optional[Dict[str, Any]] = {"name": algorithm}
    else:
        algorithm_json = dict(algorithm) if algorithm is not None else None
    return _drop_none(
        {
            "name": name,
            "goal": goal,
            "parameters": [parameter_json(p) for p in parameters],
            "algorithm": algorithm_json,
            "model": _drop_none(model) if model is not None else None,
            "time": _drop_none(time) if time is not None else None,
            "events": dict(events) if events is not None else None,
            "arms": [_drop_none(dataclasses.asdict(a)) for a in arms] if arms is not None else None,
            "seed": seed,
            "resume": True if resume else None,
        }
    )


def observation_json(
    suggestion: SuggestionRef,
    value: Optional[float],
    measured_at: Optional[datetime] = None,
    t: Optional[float] = None,
    regret: Optional[float] = None,
    failed: bool = False,
    reason: Optional[str] = None,
    metadata: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """One observation's JSON (schema ``ObservationInput``): a value, or ``failed``
    (with an optional ``reason``) for a failed measurement."""
    body: Dict[str, Any] = {}
    if failed:
        body["failed"] = True
        if reason is not None:
            body["reason"] = reason
    elif value is None:
        raise ValueError("value: is required (or failed=True, for a failed run)")
    else:
        body["value"] = finite("value", value)
    if isinstance(suggestion, Suggestion):
        body["suggestion_id"] = suggestion.id
    elif isinstance(suggestion, str):
        body["suggestion_id"] = suggestion
    else:
        body["params"] = {k: param_value(f"params.{k}", v) for k, v in suggestion.items()}
    if measured_at is not None:
        body["measured_at"] = models.format_datetime(measured_at)
    if t is not None:
        body["t"] = finite("t", t)
    if regret is not None:
        body["regret"] = finite("regret", regret)
    if metadata is not None:
        body["metadata"] = dict(metadata)
    return body


def suggestion_path(session_path: str, suggestion: Union[Suggestion, str]) -> str:
    """The path of one of the session's suggestions (a :class:`Suggestion` or its id)."""
    sid = suggestion.id if isinstance(suggestion, Suggestion) else suggestion
    return f"{session_path}/suggestions/{quote(str(sid), safe='')}"


def batch_json(items: Iterable[ObservationItem]) -> Dict[str, Any]:
    """The body of a batch observe (``{"observations": [...]}``)."""
    out: List[Dict[str, Any]] = []
    for item in items:
        if isinstance(item, ObservationInput):
            ref: SuggestionRef
            if item.suggestion_id is not None:
                ref = item.suggestion_id
            elif item.params is not None:
                ref = item.params
            else:
                raise ValueError("an ObservationInput needs suggestion_id or params")
            out.append(
                observation_json(
                    ref,
                    item.value,
                    item.measured_at,
                    item.t,
                    item.regret,
                    bool(item.failed),
                    item.reason,
                    item.metadata,
                )
            )
        else:
            ref, value = item
            out.append(observation_json(ref, value))
    if not out:
        raise ValueError("a batch observe needs at least one observation")
    return {"observations": out}


def suggest_body(
    count: int, t: Optional[float], fixed: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    return _drop_none(
        {
            "count": count,
            "t": None if t is None else finite("t", t),
            "fixed": None
            if fixed is None
            else {k: param_value(f"fixed.{k}", v) for k, v in fixed.items()},
        }
    )


def predict_body(points: Sequence[Mapping[str, float]], t: Optional[float]) -> Dict[str, Any]:
    return _drop_none(
        {
            "points": [
                {k: param_value(f"points[{i}].{k}", v) for k, v in p.items()}
                for i, p in enumerate(points)
            ],
            "t": None if t is None else finite("t", t),
        }
    )


def param_value(field: str, value: Any) -> Any:
    """A parameter's value for JSON: a categorical choice (a string) as it is, an int as
    an int, any other number as a finite float (:func:`finite`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return finite(field, value)


def finite(field: str, value: float) -> float:
    """``value`` as a float; ValueError naming ``field`` when it is NaN or infinite (JSON
    has no such numbers, and the server would refuse them)."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{field}: must be a finite number, not {number!r}")
    return number


def fmt_float(t: float) -> str:
    """A float for a query string, exactly (repr round-trips)."""
    return repr(float(t))


# ---------------------------------------------------------------- webhooks


def webhook_path(webhook_id: str) -> str:
    """The path of a webhook, its id quoted."""
    return f"/v1/webhooks/{quote(str(webhook_id), safe='')}"


def create_webhook_body(
    url: str, events: Optional[Sequence[str]], secret: Optional[str]
) -> Dict[str, Any]:
    """The body of ``POST /v1/webhooks`` (``events`` omitted: every kind)."""
    if isinstance(events, str):
        raise ValueError("events: a list of kinds, e.g. ['model-reset'], not a string")
    return _drop_none(
        {"url": url, "events": None if events is None else list(events), "secret": secret}
    )


# ---------------------------------------------------------------- the event stream

_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclasses.dataclass(frozen=True)
class SseMessage:
    """One dispatched Server-Sent Events message: its ``event`` type (``message`` when
    the server named none), its ``data`` (the ``data:`` lines joined by newlines) and the
    ``id`` given in it (None when it had no ``id:`` line)."""

    event: str
    data: str
    id: Optional[str] = None


class SseParser:
    """An incremental parser of a ``text/event-stream``, as the HTML standard's
    "interpreting an event stream" says: lines end in CRLF, LF or CR (also across chunk
    boundaries); ``:`` starts a comment (a keep-alive); a field's value loses one leading
    space; ``data:`` lines accumulate; a blank line dispatches the message (none when it
    had no data); ``retry:`` with digits only sets :attr:`retry` (seconds); an ``id``
    containing NUL is ignored; a leading byte order mark is dropped. Only the line being
    read and the message being built are held, never the stream."""

    def __init__(self, max_line: int = 16 * 1024 * 1024) -> None:
        self.retry: Optional[float] = None
        self._max_line = max_line
        self._rest = b""
        self._skip_lf = False
        self._first = True
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None

    def feed(self, chunk: bytes) -> List[SseMessage]:
        """The messages completed by ``chunk``, in order."""
        if not chunk:
            return []
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        buffer = self._rest + chunk
        lines = _LINE_END.split(buffer)
        self._rest = lines.pop()
        if len(self._rest) > self._max_line:
            raise models.DecodeError(f"event stream: a line longer than {self._max_line} bytes")
        # A CR ending the buffer may be the first half of a CRLF split across chunks.
        self._skip_lf = buffer.endswith(b"\r")
        out: List[SseMessage] = []
        for raw in lines:
            message = self.line(raw.decode("utf-8", errors="replace"))
            if message is not None:
                out.append(message)
        return out

    def line(self, line: str) -> Optional[SseMessage]:
        """Interpret one line (without its end); the message a blank line dispatches."""
        if self._first:
            self._first = False
            if line.startswith("\ufeff"):
                line = line[1:]
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value) / 1000.0
        return None

    def _dispatch(self) -> Optional[SseMessage]:
        event, data, id_ = self._event or "message", self._data, self._id
        self._event, self._data, self._id = "", [], None
        if not data:
            return None
        return SseMessage(event, "\n".join(data), id_)


WatchItem = Union[models.Event, models.SessionChanged]
"""What :meth:`Client.watch` yields: events, and with ``changes=True`` session changes."""


class Watch:
    """The state of one :meth:`Client.watch` across its connections (the sync and async
    clients do the I/O): the request of each attempt, the parsing and deduplication of
    what arrives, and the wait before a reconnect.

    Resuming: each reconnect sends ``Last-Event-ID`` (and ``after``) set to the last event
    id yielded, and an event whose id is not above it is dropped, so no id is yielded
    twice. Waiting: after a connection that delivered something ended, the server's
    ``retry:`` delay, or the policy's first back-off if longer; after failed attempts
    (refused, reset, a 5xx or 429), the policy's back-off growing with each one, the
    answer's ``Retry-After`` when it gives one, until the server has been unreachable for
    the policy's ``deadline``: then the error is raised (:class:`ConnectionFailed`, or the
    last :class:`ApiError`)."""

    path = "/v1/events"

    def __init__(
        self,
        retry: RetryPolicy,
        configured: httpx.Timeout,
        base_url: str,
        after: Optional[int],
        session: Optional[str],
        kinds: Optional[Sequence[str]],
        changes: bool,
        timeout: Optional[float],
    ) -> None:
        if isinstance(kinds, str):
            raise ValueError("kinds: a list of kinds, e.g. ['model-reset'], not a string")
        self.retry = retry
        self.configured = configured
        self.base_url = base_url
        self.last_id = after
        self.session = session
        self.kinds = None if kinds is None else list(kinds)
        self.changes = changes
        self.ends = None if timeout is None else time.monotonic() + timeout
        self.parser = SseParser()
        self.connections = 0
        self.attempt = 0
        self.outage: Optional[float] = None
        self.received = False

    # ------------------------------------------------------------ requests

    def params(self) -> Dict[str, str]:
        """The query of the next attempt."""
        query: Dict[str, str] = {}
        if self.last_id is not None:
            query["after"] = str(self.last_id)
        if self.session is not None:
            query["session"] = self.session
        if self.kinds:
            query["kinds"] = ",".join(self.kinds)
        if self.changes and self.session is None:
            query["changes"] = "true"
        return query

    def headers(self) -> Dict[str, str]:
        """The headers of the next attempt: ``Last-Event-ID`` on a reconnect."""
        out = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self.connections > 0 and self.last_id is not None:
            out["Last-Event-ID"] = str(self.last_id)
        return out

    def timeout(self) -> httpx.Timeout:
        """The next attempt's timeouts: the client's (``read`` bounds the silence on an
        open stream: the server's keep-alives break it), each cut to what is left of the
        watch's own ``timeout``."""
        if self.ends is None:
            return self.configured
        left = max(self.ends - time.monotonic(), 0.001)

        def cut(part: Optional[float]) -> float:
            return left if part is None else min(part, left)

        return httpx.Timeout(
            connect=cut(self.configured.connect),
            read=cut(self.configured.read),
            write=cut(self.configured.write),
            pool=cut(self.configured.pool),
        )

    def expired(self, wait: float = 0.0) -> bool:
        """Whether the watch's ``timeout`` has passed, or will have after ``wait`` seconds
        (the iteration then ends)."""
        return self.ends is not None and time.monotonic() + wait >= self.ends

    # ------------------------------------------------------------ answers

    def opened(self, response: httpx.Response) -> None:
        """Check a 2xx answer (its body not read yet) as an event stream; a new
        connection starts a new parse (a message cut by the last one is dropped)."""
        content_type = response.headers.get("content-type", "")
        if not content_type.split(";")[0].strip().lower() == "text/event-stream":
            raise models.DecodeError(
                f"GET {self.path}: the {response.status_code} answer is not an event stream "
                f"({content_type or 'no content type'})"
            )
        self.connections += 1
        self.received = False
        retry = self.parser.retry
        self.parser = SseParser()
        self.parser.retry = retry

    def refused(self, response: httpx.Response) -> float:
        """The wait before reconnecting after an error answer (its body read); raises the
        :class:`ApiError` when it is not retried (a 4xx but 429) or the retries are spent."""
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        error = api_error(
            response.status_code, body, retry_after(response), response.headers.get("x-request-id")
        )
        if not (response.status_code >= 500 or response.status_code == 429):
            raise error
        return self._wait(error.retry_after, error, error)

    def lost(self, error: Exception) -> float:
        """The wait before reconnecting after the connection failed or broke; raises
        :class:`ConnectionFailed` once the retries are spent."""
        failure = ConnectionFailed(f"GET {self.base_url}{self.path}: {error!r}")
        failure.__cause__ = error
        return self._wait(None, error, failure)

    def ended(self) -> float:
        """The wait before reconnecting after the server ended the stream."""
        failure = ConnectionFailed(f"GET {self.base_url}{self.path}: the stream ended")
        return self._wait(None, "the stream ended", failure)

    def _wait(self, retry_after: Optional[float], reason: object, error: TvboError) -> float:
        now = time.monotonic()
        if self.received:
            # The connection delivered something: the outage starts now, back-off anew.
            self.attempt, self.outage, self.received = 0, None, False
        if self.outage is None:
            self.outage = now
        wait = self.retry.delay(self.attempt, retry_after, now - self.outage)
        if wait is not None and retry_after is None and self.parser.retry is not None:
            wait = max(wait, min(self.parser.retry, self.retry.max_retry_after))
        if wait is None:
            raise error
        log.warning("GET %s: %s; reconnect %d in %.2f s", self.path, reason, self.attempt + 1, wait)
        self.attempt += 1
        return wait

    def feed(self, chunk: bytes) -> List[WatchItem]:
        """What ``chunk`` completes, to yield in order: new events (their ids above every
        one yielded before), and session changes when asked for."""
        if chunk:
            self.received = True
        out: List[WatchItem] = []
        for message in self.parser.feed(chunk):
            if message.event == "version" and message.id is None:
                if self.changes:
                    out.append(models.decode(models.SessionChanged, self._json(message)))
                continue
            if message.id is None:
                continue  # a message of a kind this client does not know, and no event
            event = models.decode(models.Event, self._json(message))
            if self.last_id is not None and event.id <= self.last_id:
                continue  # already yielded (a replay after a reconnect)
            self.last_id = event.id
            out.append(event)
        return out

    def _json(self, message: SseMessage) -> Any:
        try:
            return json.loads(message.data)
        except ValueError as e:
            raise models.DecodeError(
                f"GET {self.path}: the data of an {message.event!r} message is not JSON"
            ) from e
