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
import socket
import ssl
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import (
    Any,
    Callable,
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
    cast,
)
from urllib.parse import quote

import httpx

from . import models
from .errors import ApiError, ConfigError, ConnectionFailed, TvboError, api_error
from .models import (
    AlgorithmName,
    ArmSpec,
    EventsOptions,
    Goal,
    ModelOptions,
    ObservationInput,
    ParameterSpec,
    Params,
    ParamValue,
    Suggestion,
    TimeOptions,
)

#: Every retry is logged here, at WARNING, with the request, the reason and the wait.
log = logging.getLogger("tvbo")

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
USER_AGENT = "tvbo-python"
DEFAULT_TIMEOUT = httpx.Timeout(130.0, connect=10.0)
"""Per attempt: 10 s to connect, 130 s to wait for an answer. The answer's wait is longer
than the server's own limit on a request (``TVBO_REQUEST_TIMEOUT``, 120 s by default,
answered 503 ``timeout``; a suggest on a busy session may legitimately take most of it),
so that the client never gives up on, and then repeats, work that the server is still
allowed to finish: the server's 503 says what happened. A server that accepts
connections and never answers therefore fails a call after 130 s; pass ``timeout=`` (say
30) where your requests are known to be quick."""


def client_settings(
    base_url: Optional[str], api_key: Optional[str]
) -> Tuple[str, Dict[str, str], Optional[str]]:
    """The base URL (argument, ``$TVBO_URL`` or the default), the headers of every request
    and the API key (the argument or ``$TVBO_API_KEY``, without surrounding whitespace;
    empty: none). Raises :class:`ConfigError` for a URL without ``http://`` or
    ``https://`` and for a key with a control character or one outside printable ASCII
    (its text never shows the key)."""
    url = (base_url or os.environ.get("TVBO_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
    url_source = "base_url" if base_url else "$TVBO_URL" if os.environ.get("TVBO_URL") else ""
    check_base_url(url, url_source or "base_url")
    from_env = api_key is None
    key = os.environ.get("TVBO_API_KEY") if from_env else api_key
    key = key.strip() if key is not None else None
    headers = {"User-Agent": USER_AGENT}
    if key:
        check_api_key(key, "$TVBO_API_KEY" if from_env else "api_key")
        headers["Authorization"] = f"Bearer {key}"
    return url, headers, key or None


def check_base_url(url: str, source: str) -> None:
    """:class:`ConfigError` unless ``url`` is an absolute http or https URL with a host."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as e:
        raise ConfigError(f"{source} {url!r} is not a URL ({e})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        guess = url.split("://", 1)[-1]
        raise ConfigError(
            f"{source} {url!r} needs an http:// or https:// scheme and a host, "
            f"e.g. 'http://{guess}'"
        )


def check_api_key(key: str, source: str) -> None:
    """:class:`ConfigError` for a key (surrounding whitespace already removed) holding a
    character an HTTP header cannot carry or a key never holds: a control character, a
    space, anything outside printable ASCII. The text says where, never what the key is."""
    for position, char in enumerate(key, 1):
        code = ord(char)
        if 0x21 <= code <= 0x7E:
            continue
        if code < 0x20 or code == 0x7F:
            what = f"a control character (U+{code:04X})"
        elif code == 0x20:
            what = "a space"
        else:
            what = "a character outside printable ASCII"
        raise ConfigError(
            f"{source}: the API key has {what} at position {position} of {len(key)}; a key "
            "is printable ASCII (tvbo_…): check how it was read or pasted"
        )


def redact(text: str, secret: Optional[str]) -> str:
    """``text`` with the API key replaced (an error's text may quote a header)."""
    return text.replace(secret, "<the API key>") if secret else text


def carries(error: BaseException, secret: Optional[str]) -> bool:
    """Whether ``error`` or an exception it chains quotes ``secret``."""
    seen: set[int] = set()
    current: Optional[BaseException] = error
    while secret and current is not None and id(current) not in seen:
        seen.add(id(current))
        if secret in str(current) or secret in repr(current.args):
            return True
        current = current.__cause__ or current.__context__
    return False


def session_path(session_id: str) -> str:
    """The path of a session, its id quoted (an id never reaches another route)."""
    return f"/v1/sessions/{quote(session_id, safe='')}"


SuggestionRef = Union[Suggestion, str, Mapping[str, ParamValue]]
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


def sessions_query(
    page_size: int,
    cursor: Optional[str],
    name: Optional[str],
    algorithm: Optional[str],
    sort: Optional[str],
    order: Optional[str],
) -> Dict[str, str]:
    """The query of a page of ``GET /v1/sessions``: the filters and order (None: the
    server's default), and the cursor of the page."""
    query = {"limit": str(page_size)}
    for key, value in (
        ("name", name),
        ("algorithm", algorithm),
        ("sort", sort),
        ("order", order),
        ("cursor", cursor),
    ):
        if value is not None:
            query[key] = value
    return query


def post(path: str, body: Any, idempotency_key: Optional[str] = None) -> Call:
    """A POST with a fresh idempotency key unless one is given."""
    return Call("POST", path, json=body, idempotency_key=idempotency_key or str(uuid.uuid4()))


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before retrying.

    A request is retried after a connection error or timeout, a 429, a 503, or a 409
    ``concurrent-change``, for as long as the retry would start within ``deadline``
    seconds of the first attempt (default 60: long enough to ride through a server's
    restart) and, if ``retries`` is set, at most ``retries`` times. Until the client has
    had an answer from the server (any answer, to any request), a connection error is
    retried for ``connect_deadline`` seconds only (default 10: a server that is starting
    is up by then; a wrong URL or a server that is not running is said in 10 s, not 60).
    Errors no retry can fix are raised at once: a host name that does not resolve, a TLS
    failure (https:// to an http port, an untrusted certificate), an answer that is not
    HTTP. The wait is the answer's ``Retry-After`` when it gives one (honoured up to
    ``max_retry_after`` seconds; a longer one is raised at once), else a "full jitter"
    back-off: uniform in ``[0, min(max_backoff, backoff * 2**attempt)]``. ``total``
    bounds the whole call, attempts and waits (default 180 s; None: unbounded): each
    attempt's timeout is cut to what is left of it, so a server that hangs holds a call
    no longer.
    """

    retries: Optional[int] = None
    backoff: float = 0.2
    max_backoff: float = 5.0
    max_retry_after: float = 60.0
    deadline: float = 60.0
    total: Optional[float] = 180.0
    connect_deadline: float = 10.0

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
        self,
        attempt: int,
        retry_after: Optional[float],
        elapsed: float = 0.0,
        deadline: Optional[float] = None,
    ) -> Optional[float]:
        """Seconds to wait before retry number ``attempt + 1``, ``elapsed`` seconds after
        the first attempt began, the retry starting within ``deadline`` (default: the
        policy's; a back-off that would pass it is cut short, so the last retry is made at
        the deadline); None: give up."""
        limit = self.deadline if deadline is None else deadline
        if (self.retries is not None and attempt >= self.retries) or elapsed >= limit:
            return None
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            wait = retry_after + random.uniform(0.0, min(0.1, self.backoff))
            if elapsed + wait > limit:
                return None  # the server asks for longer than is left
        else:
            wait = random.uniform(0.0, min(self.max_backoff, self.backoff * (2.0**attempt)))
            wait = min(wait, limit - elapsed)  # the last retry at the deadline, not before
        within_total = self.total is None or elapsed + wait < self.total
        return wait if within_total else None


@dataclasses.dataclass(frozen=True)
class Failure:
    """What a transport error means: ``text`` (host and port, what happened; never the
    key), and ``stage``: ``connect`` (no connection was made), ``answer`` (connected, no
    whole answer) or ``fatal`` (no retry can fix it)."""

    text: str
    stage: str


def _root(error: BaseException) -> Optional[BaseException]:
    """The OS or TLS error under an httpx error (httpx chains httpcore's, which chains
    the socket's)."""
    seen: set[int] = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (OSError, ssl.SSLError)):
            return current
        current = current.__cause__ or current.__context__
    return None


def _seconds(value: Optional[float]) -> str:
    return "its timeout" if value is None else f"{value:g} s"


class Link:
    """What a client knows of its server, for its retries and its errors: the base URL,
    ``host:port``, the API key (to keep it out of every error's text), and whether the
    server has ever answered (``answered``: any HTTP answer to any request). Until it has,
    a connection error is retried for the policy's ``connect_deadline`` only."""

    def __init__(self, base_url: str, secret: Optional[str]) -> None:
        self.base_url = base_url
        self.secret = secret
        url = httpx.URL(base_url)
        port = url.port or (443 if url.scheme == "https" else 80)
        self.scheme = url.scheme
        self.host = url.host
        self.hostport = f"[{url.host}]:{port}" if ":" in url.host else f"{url.host}:{port}"
        self.answered = False

    def failure(self, error: BaseException, timeout: Optional[httpx.Timeout] = None) -> Failure:
        """What ``error`` (an httpx error) means, for a retry and for the user."""
        where = self.hostport
        root = _root(error)
        message = redact(str(error), self.secret)
        if isinstance(error, httpx.ConnectTimeout):
            connect = None if timeout is None else timeout.connect
            return Failure(f"no connection to {where} within {_seconds(connect)}", "connect")
        if isinstance(error, httpx.ReadTimeout):
            read = None if timeout is None else timeout.read
            return Failure(f"no answer from {where} within {_seconds(read)}", "answer")
        if isinstance(error, httpx.WriteTimeout):
            write = None if timeout is None else timeout.write
            return Failure(
                f"could not send the request to {where} within {_seconds(write)}", "answer"
            )
        if isinstance(error, httpx.PoolTimeout):
            return Failure("no free connection in the client's pool in time", "answer")
        if isinstance(root, socket.gaierror):
            if root.errno == getattr(socket, "EAI_AGAIN", None):
                return Failure(
                    f"cannot resolve the host {self.host!r} for now ({root.strerror})", "connect"
                )
            return Failure(
                f"cannot resolve the host {self.host!r} ({root.strerror}): check the URL",
                "fatal",
            )
        if isinstance(root, ssl.SSLError):
            text = f"TLS with {where} failed ({redact(str(root), self.secret)})"
            reason = str(getattr(root, "reason", "") or root)
            if isinstance(root, ssl.SSLCertVerificationError):
                text += ": its certificate is not trusted"
            elif any(
                s in reason.upper()
                for s in ("WRONG_VERSION", "RECORD_LAYER", "UNKNOWN_PROTOCOL", "PACKET_LENGTH")
            ):
                text += f": is it an http:// server? (the URL says {self.scheme}://)"
            return Failure(text, "fatal")
        if isinstance(error, (httpx.UnsupportedProtocol, httpx.LocalProtocolError)):
            return Failure(f"the request could not be sent ({message})", "fatal")
        if isinstance(error, httpx.ProxyError):
            return Failure(f"the HTTP proxy failed ({message})", "fatal")
        if isinstance(error, httpx.RemoteProtocolError):
            lowered = message.lower()
            if "without sending a response" in lowered:
                return Failure(f"{where} closed the connection without an answer", "answer")
            if "peer closed" in lowered or "incomplete" in lowered:
                return Failure(
                    f"{where} closed the connection in the middle of the answer", "answer"
                )
            return Failure(
                f"what answers at {where} does not speak HTTP/1.1 ({message[:200]}): "
                "is the URL the tvbo server's?",
                "fatal",
            )
        stage = "connect" if isinstance(error, httpx.ConnectError) else "answer"
        if isinstance(root, ConnectionRefusedError):
            return Failure(f"connection refused by {where}", stage)
        if isinstance(root, ConnectionResetError):
            return Failure(f"connection reset by {where}", stage)
        if isinstance(root, (ConnectionAbortedError, BrokenPipeError)):
            return Failure(f"connection closed by {where}", stage)
        if isinstance(root, OSError) and root.strerror:
            return Failure(f"{where}: {root.strerror}", stage)
        if isinstance(error, httpx.TransportError):
            return Failure(f"{where}: {type(error).__name__}: {message}", stage)
        return Failure(f"{where}: {type(error).__name__}: {message}", "fatal")

    def deadline(self, retry: RetryPolicy) -> float:
        """How long after a call's first attempt a connection error may still be retried:
        the policy's ``connect_deadline`` until the server has answered once."""
        return retry.deadline if self.answered else min(retry.connect_deadline, retry.deadline)

    def note(self, failure: Failure, retry: RetryPolicy) -> str:
        """Why the retries stopped, for the error's text."""
        if self.answered:
            return (
                f"it answered before; still none after the retry deadline of {retry.deadline:g} s"
            )
        if failure.stage == "connect":
            return f"never connected: is the server running at {self.base_url}?"
        return f"no answer from it yet: is {self.base_url} the tvbo server's URL?"

    def given_up(
        self,
        what: str,
        failure: Failure,
        attempts: int,
        elapsed: float,
        retry: RetryPolicy,
        error: BaseException,
    ) -> ConnectionFailed:
        """The :class:`ConnectionFailed` of a request ``what`` (``GET /v1/…``)."""
        if failure.stage == "fatal":
            detail = "not retried: a retry cannot fix this"
        else:
            plural = "attempt" if attempts == 1 else "attempts"
            detail = f"{attempts} {plural} over {elapsed:.1f} s; {self.note(failure, retry)}"
        out = ConnectionFailed(f"{what}: {failure.text} ({detail})")
        if carries(error, self.secret):
            out.__suppress_context__ = True  # its text quotes the key: not chained
        else:
            out.__cause__ = error
        return out

    def wait_after_transport_error(
        self,
        retry: RetryPolicy,
        attempt: int,
        elapsed: float,
        call: Call,
        error: BaseException,
        timeout: Optional[httpx.Timeout] = None,
    ) -> float:
        """Seconds to wait before retrying after ``error`` (an httpx error: no answer),
        ``elapsed`` seconds after the first attempt; raises :class:`ConnectionFailed` when
        it cannot help or the retries are spent."""
        failure = self.failure(error, timeout)
        wait = None
        if failure.stage != "fatal":
            wait = retry.delay(attempt, None, elapsed, self.deadline(retry))
        if wait is None:
            what = f"{call.method} {call.path}"
            raise self.given_up(what, failure, attempt + 1, elapsed, retry, error)
        log.warning(
            "%s %s: %s; retry %d in %.2f s", call.method, call.path, failure.text, attempt + 1, wait
        )
        return wait


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


RELEASE_RETRY = RetryPolicy(
    retries=3, backoff=0.05, max_backoff=0.5, deadline=3.0, total=5.0, connect_deadline=3.0
)
"""The retries of the abandons of an interrupted ``optimize``: a few, over 3 s at most."""

RELEASE_GRACE = 5.0
"""Seconds an interrupted ``optimize`` waits for its requests in flight (a suggest whose
answer it then abandons, a value being stored) before it raises."""


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


# ---------------------------------------------------------------- parameter values

HasParams = TypeVar("HasParams")


def param_kind(spec: ParameterSpec) -> str:
    """A parameter's type: its ``type``, else ``categorical`` with ``choices``, else
    ``float`` (the server's default)."""
    if spec.type is not None:
        return str(spec.type)
    return "categorical" if spec.choices is not None else "float"


def typed_params(parameters: Sequence[ParameterSpec], params: Mapping[str, Any]) -> Params:
    """``params`` with each value of the type of its parameter: a float parameter's a
    ``float`` (the server writes 4.0 as the JSON integer 4), an int parameter's an ``int``
    (when whole), a categorical one's a ``str``. Names the session does not declare are
    kept as they are."""
    kinds = {p.name: param_kind(p) for p in parameters}
    out: Params = {}
    for name, value in params.items():
        kind = kinds.get(name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind == "float" and number:
            value = float(value)
        elif kind == "int" and isinstance(value, float) and value.is_integer():
            value = int(value)
        elif kind == "categorical" and not isinstance(value, str):
            value = str(value)
        out[name] = value
    return out


def typed(parameters: Sequence[ParameterSpec], item: HasParams) -> HasParams:
    """``item`` (a frozen dataclass with ``params``: a suggestion, an observation, a
    prediction, ...) with :func:`typed_params`."""
    params = getattr(item, "params", None)
    if params is None:
        return item
    replaced: HasParams = dataclasses.replace(
        cast(Any, item), params=typed_params(parameters, params)
    )
    return replaced


def typed_info(info: models.SessionInfo) -> models.SessionInfo:
    """``info`` with its arms' settings typed (:func:`typed_params`)."""
    if not info.arms:
        return info
    arms = [typed(info.parameters, arm) for arm in info.arms]
    return dataclasses.replace(info, arms=arms)


def typed_timeline(
    parameters: Sequence[ParameterSpec], timeline: models.Timeline
) -> models.Timeline:
    """``timeline`` with the settings of its observations and ended runs typed."""
    return dataclasses.replace(
        timeline,
        observations=[typed(parameters, o) for o in timeline.observations],
        ended_runs=[typed(parameters, r) for r in timeline.ended_runs],
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
            "arms": None if arms is None else [arm_json(i, a) for i, a in enumerate(arms)],
            "seed": seed,
            "resume": True if resume else None,
        }
    )


def arm_json(index: int, arm: ArmSpec) -> Dict[str, Any]:
    """One arm of a create request."""
    params = {k: param_value(f"arms[{index}].params.{k}", v) for k, v in arm.params.items()}
    return _drop_none({"params": params, "name": arm.name})


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
    count: int, t: Optional[float], fixed: Optional[Mapping[str, ParamValue]] = None
) -> Dict[str, Any]:
    return _drop_none(
        {
            "count": count,
            "t": None if t is None else finite("t", t),
            "fixed": None if fixed is None else fixed_json(fixed),
        }
    )


def fixed_json(fixed: Mapping[str, ParamValue]) -> Dict[str, Any]:
    """Parameters held at given values (a suggest's or ``best``'s ``fixed``), for JSON."""
    if isinstance(fixed, str) or not isinstance(fixed, Mapping):
        raise ValueError(f"fixed: a mapping of parameter names to values, not {fixed!r}")
    return {k: param_value(f"fixed.{k}", v) for k, v in fixed.items()}


def best_query(
    t: Optional[float], fixed: Optional[Mapping[str, ParamValue]]
) -> Optional[Dict[str, str]]:
    """The query of ``GET …/best``: ``t`` exactly, and ``fixed`` as a JSON object (httpx
    URL-encodes it); None when neither is given."""
    query: Dict[str, str] = {}
    if t is not None:
        query["t"] = fmt_float(t)
    if fixed is not None:
        query["fixed"] = json.dumps(fixed_json(fixed), separators=(",", ":"))
    return query or None


Fixed = Union[Mapping[str, ParamValue], Callable[[int], Mapping[str, ParamValue]]]
"""What ``optimize(fixed=...)`` holds at each suggest: the same values every round, or a
function of the round (0, 1, …, in the order the evaluations start) returning them."""


def fixed_at(fixed: Optional[Fixed], number: int) -> Optional[Mapping[str, ParamValue]]:
    """The ``fixed`` values of ``optimize``'s evaluation (round) ``number``."""
    if fixed is None or not callable(fixed):
        return fixed
    values = fixed(number)
    if isinstance(values, str) or not isinstance(values, Mapping):
        raise TypeError(
            f"optimize(fixed=...): the function returned {values!r} for round {number}, "
            "not a mapping of parameter names to values"
        )
    return values


def pending_call(session_path: str) -> Call:
    """The listing of a session's pending suggestions, oldest first."""
    return Call("GET", f"{session_path}/suggestions", params={"status": "pending"})


def resume_body(name: str) -> Dict[str, Any]:
    """The body of a create that resumes the tenant's newest session of ``name`` as it
    is (no configuration: a 422 naming ``parameters`` when there is none)."""
    if not isinstance(name, str):
        raise ValueError(f"name: a session's name (a string), not {name!r}")
    return {"name": name, "resume": True}


def ended_meanwhile(error: ApiError) -> bool:
    """Whether an abandon's error says the suggestion ended otherwise since it was listed
    (observed or failed by its worker: 409 ``conflict``): nothing left to abandon."""
    return error.status == 409 and error.kind == "conflict"


def predict_body(points: Sequence[Mapping[str, ParamValue]], t: Optional[float]) -> Dict[str, Any]:
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
    read and the message being built are held, never the stream.

    :attr:`last_event_id` is the stream's last event id as the standard keeps it, set when
    a message that has an ``id:`` line is dispatched, with or without data: a server may
    send ``id:`` alone to say where the stream stands before any event."""

    def __init__(self, max_line: int = 16 * 1024 * 1024) -> None:
        self.retry: Optional[float] = None
        self.last_event_id: Optional[str] = None
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
        if id_ is not None:
            self.last_event_id = id_
        if not data:
            return None
        return SseMessage(event, "\n".join(data), id_)


def server_time(response: httpx.Response) -> datetime:
    """The server's clock at an answer: its ``Date`` header (whole seconds, so at most
    the true time), else this machine's clock less 5 s."""
    value = response.headers.get("date")
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None and when.tzinfo is not None:
            return when
    return datetime.now(timezone.utc) - timedelta(seconds=5)


WatchItem = Union[models.Event, models.SessionChanged]
"""What :meth:`Client.watch` yields: events, and with ``changes=True`` session changes."""


class Watch:
    """The state of one :meth:`Client.watch` across its connections (the sync and async
    clients do the I/O): the request of each attempt, the parsing and deduplication of
    what arrives, and the wait before a reconnect.

    Resuming: each reconnect sends ``Last-Event-ID`` (and ``after``) set to the cursor:
    the last event id yielded, or seen (an ``id:`` the server sent alone, the newest id
    of a gap filled from the listings), or the ``after`` given; an event whose id is not
    above it is dropped, so no id is yielded twice. A watch started without ``after``
    starts from the server's newest event at its first connection, which the stream does
    not name: if that connection is lost before any event came, the next one starts from
    the server's newest again, and the events committed in between are read from the
    listings (``GET /v1/sessions/{id}/events``: the watched session's, or every session's
    of the key) and yielded first: those committed since the first connection (their
    ``at`` not before the ``Date`` of its answer), of the kinds asked for, in id order
    (:meth:`missed`).

    Waiting: after a connection that delivered something ended, the server's ``retry:``
    delay, or the policy's first back-off if longer; after failed attempts (refused,
    reset, a 5xx or 429), the policy's back-off growing with each one, the answer's
    ``Retry-After`` when it gives one, until the server has been unreachable for the
    policy's ``deadline`` (its ``connect_deadline`` while the client never had an
    answer): then the error is raised (:class:`ConnectionFailed`, or the last
    :class:`ApiError`); an error no retry can fix (:meth:`Link.failure`) is raised at
    once."""

    path = "/v1/events"

    def __init__(
        self,
        retry: RetryPolicy,
        configured: httpx.Timeout,
        link: Union[Link, str],
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
        self.link = link if isinstance(link, Link) else Link(link, None)
        self.base_url = self.link.base_url
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
        #: Without ``after``: the server's time at the first connection (the ``Date`` of
        #: its answer), from which events count as new; None once a cursor is known.
        self.since: Optional[datetime] = None

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
        self.link.answered = True
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
        if self.connections == 1 and self.last_id is None:
            self.since = server_time(response)

    def gap(self) -> bool:
        """Whether this connection follows one lost before any event came, on a watch
        started without ``after``: the events committed in between are to be read from
        the listings (:meth:`missed`) before the stream's."""
        return self.connections > 1 and self.last_id is None and self.since is not None

    def missed(self, listed: Iterable[models.Event]) -> List[models.Event]:
        """Of ``listed`` (every event the watch may see, read after this connection
        opened), those to yield before the stream's: committed since the first connection
        (``at`` not before :attr:`since`), of the kinds asked for, in id order. The
        newest listed id, yielded or not, becomes the cursor: the stream's events up to it
        are dropped (they were listed)."""
        events = list(listed)
        if not events or self.since is None:
            return []
        since = self.since
        self.last_id = max(e.id for e in events)
        self.since = None
        kinds = self.kinds
        new = [e for e in events if e.at >= since and (not kinds or e.kind in kinds)]
        return sorted(new, key=lambda e: e.id)

    def refused(self, response: httpx.Response) -> float:
        """The wait before reconnecting after an error answer (its body read); raises the
        :class:`ApiError` when it is not retried (a 4xx but 429) or the retries are spent."""
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        self.link.answered = True
        error = api_error(
            response.status_code, body, retry_after(response), response.headers.get("x-request-id")
        )
        if not (response.status_code >= 500 or response.status_code == 429):
            raise error
        return self._wait(error.retry_after, error, lambda attempts, outage: error)

    def lost(self, error: BaseException) -> float:
        """The wait before reconnecting after the connection failed or broke (``error``,
        an httpx error); raises :class:`ConnectionFailed` at once for an error no retry
        can fix, else once the retries are spent."""
        failure = self.link.failure(error, self.configured)
        what = f"GET {self.path}"

        def given_up(attempts: int, outage: float) -> TvboError:
            return self.link.given_up(what, failure, attempts, outage, self.retry, error)

        if failure.stage == "fatal":
            raise given_up(1, 0.0)
        return self._wait(None, failure.text, given_up, self.link.deadline(self.retry))

    def ended(self) -> float:
        """The wait before reconnecting after the server ended the stream."""

        def given_up(attempts: int, outage: float) -> TvboError:
            return ConnectionFailed(
                f"GET {self.path}: the stream of {self.link.hostport} ended "
                f"({attempts} attempts over {outage:.1f} s)"
            )

        return self._wait(None, "the stream ended", given_up)

    def _wait(
        self,
        retry_after: Optional[float],
        reason: object,
        error: Callable[[int, float], TvboError],
        deadline: Optional[float] = None,
    ) -> float:
        now = time.monotonic()
        if self.received:
            # The connection delivered something: the outage starts now, back-off anew.
            self.attempt, self.outage, self.received = 0, None, False
        if self.outage is None:
            self.outage = now
        wait = self.retry.delay(self.attempt, retry_after, now - self.outage, deadline)
        if wait is not None and retry_after is None and self.parser.retry is not None:
            wait = max(wait, min(self.parser.retry, self.retry.max_retry_after))
        if wait is None:
            raise error(self.attempt + 1, now - self.outage)
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
            self.last_id, self.since = event.id, None
            out.append(event)
        told = self.parser.last_event_id
        if told is not None and told.isascii() and told.isdigit():
            # An id the server sent alone: where the stream stands (a cursor, no event).
            if self.last_id is None or int(told) > self.last_id:
                self.last_id, self.since = int(told), None
        return out

    def _json(self, message: SseMessage) -> Any:
        try:
            return json.loads(message.data)
        except ValueError as e:
            raise models.DecodeError(
                f"GET {self.path}: the data of an {message.event!r} message is not JSON"
            ) from e
