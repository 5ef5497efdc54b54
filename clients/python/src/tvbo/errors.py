"""Exceptions raised by the tvbo client.

Every answer of the server outside 2xx becomes an :class:`ApiError` (a subclass by
status) carrying the problem+json fields: ``status``, ``type``, ``title``, ``detail`` and
``field`` (the dotted path of the offending field, e.g. ``observations[1].value``, or
None). A request that never got an answer after every retry, or that no retry could
help (an unknown host, TLS or HTTP spoken wrongly), raises :class:`ConnectionFailed`; a
client configured so that no request can work (a base URL without ``http://``, an API
key with a control character) raises :class:`ConfigError` when it is made. No error's
text carries the API key.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple, Type


class TvboError(Exception):
    """Base class of the client's errors: error answers, lost answers, answers it cannot
    decode, a configuration it cannot use. (Arguments it refuses before sending raise
    ``ValueError``.)

    ``unstored``: when ``optimize`` gives up, the ``(suggestion, value)`` pairs it measured
    but could not store (observe them again later); empty otherwise.
    """

    unstored: Sequence[Tuple[Any, float]] = ()


class ConnectionFailed(TvboError):
    """No answer from the server: after every retry (refused, reset, timed out), or at
    once when no retry can help (the host's name does not resolve, TLS fails, what answers
    does not speak HTTP). The text says what failed, with which host and port, and how
    many attempts were made over how long; the underlying ``httpx`` exception is chained
    as ``__cause__`` (unless its text carried the API key)."""


class ConfigError(TvboError, ValueError):
    """The client's settings cannot work, raised when the client is made: a base URL
    without ``http://`` or ``https://`` (or that does not parse), an API key with a
    control character or a character outside printable ASCII. The text names the setting
    and what is wrong with it, never the key itself."""


class SignatureError(TvboError):
    """A webhook delivery's ``Tvbo-Signature`` is missing, malformed, does not match the
    body, or its timestamp is outside the tolerance (:func:`tvbo.verify_signature`):
    answer it 400 and do not act on it."""


class ApiError(TvboError):
    """The server answered with an error (``application/problem+json``)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        type: str = "about:blank",
        title: str = "",
        field: Optional[str] = None,
        retry_after: Optional[float] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}" if title else f"{status}: {detail}")
        self.status = status
        self.detail = detail
        self.type = type
        self.title = title
        self.field = field
        self.retry_after = retry_after
        #: The answer's ``X-Request-Id``: the server's (and its load balancer's) log lines
        #: of the request carry it; quote it in a report.
        self.request_id = request_id

    def __reduce__(self) -> Any:
        # Pickled by its fields (multiprocessing, joblib): the default would call the
        # class with the message alone.
        return (
            _rebuild,
            (
                type(self),
                self.status,
                self.detail,
                self.type,
                self.title,
                self.field,
                self.retry_after,
                self.request_id,
            ),
        )

    @property
    def kind(self) -> str:
        """The last segment of ``type``, e.g. ``invalid-field`` or ``too-many-pending``."""
        return self.type.rstrip("/").rsplit("/", 1)[-1]


class BadRequest(ApiError):
    """400: malformed JSON, query string or header."""


class Unauthorized(ApiError):
    """401: no API key, or an unknown, revoked or mistyped one."""


class NotFound(ApiError):
    """404: no such session (or another tenant's), or no such route."""


class Conflict(ApiError):
    """409: conflicts with the session's state (e.g. a suggestion observed twice,
    ``too-many-pending``, ``dataset-full``)."""


class InvalidField(ApiError):
    """422: a field's value is wrong; ``field`` names it."""


class RateLimited(ApiError):
    """429: the key's request rate is spent (raised once the retries are spent too)."""


class ServiceUnavailable(ApiError):
    """503: database unavailable, busy or at the connection cap (raised once the retries
    are spent), or ``timeout``: the request outlasted the server's limit (not retried)."""


def _rebuild(
    cls: Type[ApiError],
    status: int,
    detail: str,
    type: str,
    title: str,
    field: Optional[str],
    retry_after: Optional[float],
    request_id: Optional[str] = None,
) -> ApiError:
    """An unpickled :class:`ApiError`."""
    return cls(
        status,
        detail,
        type=type,
        title=title,
        field=field,
        retry_after=retry_after,
        request_id=request_id,
    )


_BY_STATUS: Dict[int, Type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    404: NotFound,
    409: Conflict,
    422: InvalidField,
    429: RateLimited,
    503: ServiceUnavailable,
}


def api_error(
    status: int,
    body: Any,
    retry_after: Optional[float] = None,
    request_id: Optional[str] = None,
) -> ApiError:
    """The exception for an error answer; ``body`` is its decoded JSON, if any."""
    cls = _BY_STATUS.get(status, ApiError)
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        field = body.get("field")
        return cls(
            status,
            body["detail"],
            type=str(body.get("type", "about:blank")),
            title=str(body.get("title", "")),
            field=field if isinstance(field, str) else None,
            retry_after=retry_after,
            request_id=request_id,
        )
    text = body if isinstance(body, str) and body else "no problem details in the answer"
    return cls(status, text[:500], retry_after=retry_after, request_id=request_id)
