"""The synchronous client: :class:`Client` and its :class:`Session` handles."""

from __future__ import annotations

import threading
import time as _time
from datetime import datetime
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Generator,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
    overload,
)

import httpx

from . import _core
from ._core import Algorithm, Call, ObservationItem, RetryPolicy, SuggestionRef
from .errors import ApiError, NotFound, TvboError
from .models import (
    AlgorithmInfo,
    AlgorithmList,
    AlgorithmName,
    ArmSpec,
    Best,
    Delivery,
    DeliveryList,
    EndedRun,
    Event,
    EventList,
    EventsOptions,
    Goal,
    ModelOptions,
    ModelView,
    Observation,
    ObservationList,
    ParameterSpec,
    Params,
    ParamValue,
    PredictResponse,
    RegretReport,
    SessionChanged,
    SessionInfo,
    SessionList,
    SessionSort,
    SortOrder,
    Step,
    StepList,
    Suggestion,
    SuggestionList,
    Timeline,
    TimeOptions,
    Webhook,
    WebhookList,
    WebhookPing,
    decode,
)

if TYPE_CHECKING:  # pandas is optional
    import pandas


class Client:
    """A connection to a tvbo server.

    ``base_url`` defaults to ``$TVBO_URL`` or ``http://127.0.0.1:8080`` (it needs its
    ``http://`` or ``https://``); ``api_key`` to ``$TVBO_API_KEY`` (every ``/v1`` request
    needs one unless the server runs with ``TVBO_AUTH=off``), surrounding whitespace
    removed (a key read from a file ends in a newline); a URL or key that cannot work
    raises :class:`tvbo.ConfigError` here. ``timeout`` is per attempt, in seconds or as an
    ``httpx.Timeout``; the default waits 10 s to connect and 130 s for an answer, longer
    than the server's own limit of 120 s on a request. Failed attempts are retried as
    :class:`RetryPolicy` says (a server never reached for 10 s only; a wrong host name or
    TLS at once); every POST carries an ``Idempotency-Key`` that its retries repeat, so a
    retried write acts once. The client is thread-safe; close it (or use ``with``) to
    release its connections.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: "float | httpx.Timeout" = _core.DEFAULT_TIMEOUT,
        retry: Optional[RetryPolicy] = None,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self.base_url, headers, key = _core.client_settings(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._timeout = httpx.Timeout(timeout)
        self._link = _core.Link(self.base_url, key)
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def request(self, call: Call, *, retry: Optional[RetryPolicy] = None) -> Any:
        """Send ``call`` with retries (``retry``, default the client's policy); the decoded
        JSON answer (None for 204)."""
        policy = retry or self.retry
        attempt, lost_answer = 0, False
        started = _time.monotonic()

        def elapsed() -> float:
            return _time.monotonic() - started

        while True:
            timeout = policy.attempt_timeout(self._timeout, elapsed())
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.json,
                    headers=_core.headers(call),
                    timeout=timeout,
                )
            except httpx.HTTPError as e:
                wait = self._link.wait_after_transport_error(
                    policy, attempt, elapsed(), call, e, timeout
                )
                lost_answer = True
            else:
                self._link.answered = True
                try:
                    return _core.check(call, response, lost_answer)
                except ApiError as e:
                    wait = _core.wait_after_error(policy, attempt, elapsed(), call, e)
            _time.sleep(wait)
            attempt += 1

    def create_session(
        self,
        parameters: Sequence[ParameterSpec],
        *,
        name: Optional[str] = None,
        goal: Optional[Goal] = None,
        algorithm: Optional[Algorithm] = None,
        model: Optional[ModelOptions] = None,
        time: Optional[TimeOptions] = None,
        events: Optional[EventsOptions] = None,
        arms: Optional[Sequence[ArmSpec]] = None,
        seed: Optional[int] = None,
        resume: bool = False,
        idempotency_key: Optional[str] = None,
    ) -> "Session":
        """Create a session (``POST /v1/sessions``); None leaves the server's default.

        ``parameters`` are built with :func:`tvbo.Float` and :func:`tvbo.Int`;
        ``algorithm`` is a name (``"bolt"``, the default) or a mapping with options
        (``{"name": "w-dbo", "alpha": 0.5}``); ``model`` and ``time`` take the options of
        the API guide (``{"warmup": 5}``, ``{"source": "client"}``); ``events`` the
        thresholds of the drift events (``{"tracking": {"window": 16}}``,
        ``{"idle_seconds": None}`` for no ``session-idle``), echoed filled in as
        :attr:`SessionInfo.events`.

        With ``resume=True`` (and a ``name``) it answers the key's session of that name
        when there is one, and creates it only when there is none: workers that start
        together get one session (as Optuna's ``create_study(load_if_exists=True)``). An
        existing session with another configuration raises :class:`tvbo.Conflict` naming
        the field that differs. To take a session of the name as it is, without its
        configuration, use :meth:`resume_session`.
        """
        body = _core.create_session_body(
            parameters, name, goal, algorithm, model, time, arms, seed, resume, events
        )
        info = decode(SessionInfo, self.request(_core.post("/v1/sessions", body, idempotency_key)))
        return Session(self, info)

    def session(self, id: str) -> "Session":
        """Reattach to an existing session by id (raises :class:`tvbo.NotFound`)."""
        return Session(self, decode(SessionInfo, self.request(Call("GET", _core.session_path(id)))))

    def resume_session(self, name: str) -> "Session":
        """Reattach to the key's session named ``name`` as it is, by the name alone (as
        Optuna's ``load_study``): its newest, when older sessions share the name. Nothing
        is created: when there is none it raises :class:`tvbo.InvalidField` with
        ``field`` ``"parameters"`` (a new session needs its configuration; pass it to
        :meth:`create_session` with ``resume=True`` to make it when missing)."""
        data = self.request(_core.post("/v1/sessions", _core.resume_body(name)))
        return Session(self, decode(SessionInfo, data))

    def sessions(
        self,
        page_size: int = 50,
        *,
        name: Optional[str] = None,
        algorithm: Optional[AlgorithmName] = None,
        sort: Optional[SessionSort] = None,
        order: Optional[SortOrder] = None,
    ) -> Iterator["Session"]:
        """The sessions the key can see, fetched a page at a time (``GET /v1/sessions``):
        those whose name contains ``name`` (ignoring case), of ``algorithm`` (a name,
        ``"bolt"``), in the order of ``sort`` (``"created"``, the default, ``"name"``,
        ``"observations"``, ``"last_activity"``, ``"regret"``) and ``order`` (``"asc"``,
        ``"desc"``; default the sort's own: newest, largest, most recent, worst average
        regret first, names A to Z)."""
        cursor: Optional[str] = None
        while True:
            params = _core.sessions_query(page_size, cursor, name, algorithm, sort, order)
            page = decode(SessionList, self.request(Call("GET", "/v1/sessions", params=params)))
            for info in page.sessions:
                yield Session(self, info)
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _pages(
        self,
        cls: Type[_core.PageT],
        path: str,
        after: Optional[int],
        page_size: int,
        **params: str,
    ) -> Iterator[_core.PageT]:
        """The pages of the listing ``GET {path}`` past ``after``, fetched as they are
        consumed."""
        while True:
            page = decode(cls, self.request(_core.page_call(path, after, page_size, **params)))
            yield page
            if page.next_after is None:
                return
            after = page.next_after

    # ------------------------------------------------------------ events

    @overload
    def watch(
        self,
        after: Optional[int] = None,
        session: Union[str, "Session", None] = None,
        kinds: Optional[Sequence[str]] = None,
        *,
        changes: Literal[False] = False,
        timeout: Optional[float] = None,
    ) -> Generator[Event, None, None]: ...

    @overload
    def watch(
        self,
        after: Optional[int] = None,
        session: Union[str, "Session", None] = None,
        kinds: Optional[Sequence[str]] = None,
        *,
        changes: bool,
        timeout: Optional[float] = None,
    ) -> Generator[Union[Event, SessionChanged], None, None]: ...

    def watch(
        self,
        after: Optional[int] = None,
        session: Union[str, "Session", None] = None,
        kinds: Optional[Sequence[str]] = None,
        *,
        changes: bool = False,
        timeout: Optional[float] = None,
    ) -> Generator[Union[Event, SessionChanged], None, None]:
        """The key's events as they are committed, from the stream ``GET /v1/events``
        (Server-Sent Events): those with an :attr:`Event.id` above ``after`` (None: those
        committed from now on; 0: every one the key can see), of one ``session`` (a
        :class:`Session` or its id) or all the key's sessions, of the ``kinds`` listed or
        every kind (an unknown kind raises :class:`tvbo.InvalidField`).

        With ``changes=True`` it also yields a :class:`SessionChanged` each time the
        ``session`` changes (without a ``session``: each time any of the key's sessions
        changes: created, suggested, observed).

        The connection is kept: a lost one, a 5xx or a 429 is reconnected with back-off
        (the server's ``retry:`` and ``Retry-After`` honoured) and resumed after the last
        event yielded (``Last-Event-ID``), never yielding an id twice and missing none,
        however it started: a watch started without ``after`` whose connection is lost
        before its first event reads what was committed in between from the sessions'
        event listings (the watched session's, or every session's of the key: one request
        each) and yields it first. The retry policy's ``deadline`` bounds how long the
        server may stay unreachable before :class:`tvbo.ConnectionFailed` (or the last
        error answer) is raised. Any other error answer raises at once
        (:class:`tvbo.NotFound` for another tenant's session). The iteration ends after
        ``timeout`` seconds if given, when you ``break`` out of it, or when you
        ``close()`` the generator (either closes the connection); otherwise it does not
        end. Keep the last :attr:`Event.id` to resume later with ``after``.
        """
        state = _core.Watch(
            self.retry,
            self._timeout,
            self._link,
            after,
            _session_id(session),
            kinds,
            changes,
            timeout,
        )
        while not state.expired():
            try:
                with self._http.stream(
                    "GET",
                    state.path,
                    params=state.params(),
                    headers=state.headers(),
                    timeout=state.timeout(),
                ) as response:
                    if response.status_code == 204:
                        return  # the server says: do not reconnect
                    if not 200 <= response.status_code < 300:
                        response.read()
                        wait = state.refused(response)
                    else:
                        state.opened(response)
                        if state.gap():
                            yield from state.missed(self._visible_events(state.session))
                        for chunk in response.iter_bytes():
                            yield from state.feed(chunk)
                            if state.expired():
                                return
                        wait = state.ended()
            except httpx.HTTPError as e:
                if state.expired():
                    return
                wait = state.lost(e)
            if state.expired(wait):
                return
            _time.sleep(wait)

    def _visible_events(self, session: Optional[str]) -> List[Event]:
        """Every event the key can see: of ``session``, or of each of its sessions (what
        fills a watch's gap: :meth:`tvbo._core.Watch.missed`)."""
        if session is not None:
            return self._session_events(session)
        out: List[Event] = []
        for listed in self.sessions(page_size=1000):
            try:
                out.extend(self._session_events(listed.id))
            except NotFound:
                continue  # deleted since it was listed
        return out

    def _session_events(self, session: str) -> List[Event]:
        path = f"{_core.session_path(session)}/events"
        return [e for page in self._pages(EventList, path, 0, 10_000) for e in page.events]

    # ------------------------------------------------------------ webhooks

    def create_webhook(
        self,
        url: str,
        events: Optional[Sequence[str]] = None,
        secret: Optional[str] = None,
    ) -> Webhook:
        """Register a webhook (``POST /v1/webhooks``): the server will POST each event of
        the key's tenant whose kind is in ``events`` (None or empty: every kind) to
        ``url``, signed with ``secret`` (16 to 256 characters; None: the server makes
        one). The answer carries the secret, the only time it is shown: keep it for
        :func:`tvbo.verify_signature`. A ``url`` whose host is not in the server's allow
        list (``TVBO_WEBHOOK_ALLOW``) raises :class:`tvbo.InvalidField` with ``field``
        ``url``."""
        body = _core.create_webhook_body(url, events, secret)
        return decode(Webhook, self.request(_core.post("/v1/webhooks", body)))

    def algorithms(self) -> List[AlgorithmInfo]:
        """The algorithms this server runs, in its order: each one's name (what
        ``algorithm`` takes) and what it does."""
        return decode(AlgorithmList, self.request(Call("GET", "/v1/algorithms"))).algorithms

    def webhooks(self) -> List[Webhook]:
        """The tenant's webhooks (without their secrets)."""
        return decode(WebhookList, self.request(Call("GET", "/v1/webhooks"))).webhooks

    def webhook(self, id: Union[str, Webhook]) -> Webhook:
        """One webhook (without its secret); raises :class:`tvbo.NotFound`."""
        return decode(Webhook, self.request(Call("GET", _core.webhook_path(_webhook_id(id)))))

    def delete_webhook(self, id: Union[str, Webhook]) -> None:
        """Delete a webhook: no delivery is attempted after it (its pending ones are
        dropped)."""
        self.request(Call("DELETE", _core.webhook_path(_webhook_id(id))))

    def ping_webhook(self, id: Union[str, Webhook]) -> WebhookPing:
        """Send the webhook a signed test event (kind ``ping``) now, once, and say how
        its receiver answered."""
        path = f"{_core.webhook_path(_webhook_id(id))}/ping"
        return decode(WebhookPing, self.request(_core.post(path, {})))

    def webhook_deliveries(
        self, id: Union[str, Webhook], after: Optional[int] = None, page_size: int = 1000
    ) -> Iterator[Delivery]:
        """The webhook's deliveries in event order, those of events with an id above
        ``after``, fetched ``page_size`` at a time as the iterator is consumed."""
        path = f"{_core.webhook_path(_webhook_id(id))}/deliveries"
        for page in self._pages(DeliveryList, path, after, page_size):
            yield from page.deliveries


def _session_id(session: Union[str, "Session", None]) -> Optional[str]:
    return session.id if isinstance(session, Session) else session


def _webhook_id(webhook: Union[str, Webhook]) -> str:
    return webhook.id if isinstance(webhook, Webhook) else webhook


class Session:
    """A handle on one session. ``info`` is the session as last read (see
    :meth:`refresh`); every method is one or a few API calls."""

    def __init__(self, client: Client, info: SessionInfo) -> None:
        self.client = client
        self.info = _core.typed_info(info)

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def path(self) -> str:
        return _core.session_path(self.info.id)

    @property
    def dashboard_url(self) -> str:
        """The session's page on the server's dashboard."""
        return f"{self.client.base_url}/sessions/{self.info.id}"

    def __repr__(self) -> str:
        return f"<tvbo.Session {self.info.id} {self.info.name!r}>"

    def refresh(self) -> SessionInfo:
        """Re-read the session (counts, status) into :attr:`info` and return it."""
        data = self.client.request(Call("GET", self.path))
        self.info = _core.typed_info(decode(SessionInfo, data))
        return self.info

    def suggest(
        self,
        count: int = 1,
        *,
        t: Optional[float] = None,
        fixed: Optional[Mapping[str, ParamValue]] = None,
    ) -> List[Suggestion]:
        """Ask for ``count`` (1 to 64) settings to evaluate. They stay pending until
        observed (or until ``time.pending_timeout``), so concurrent callers get distinct
        points. ``t`` is required in client-time sessions and refused otherwise.
        ``fixed`` holds parameters at given values (every context parameter's is
        required): the suggestions are the best settings of the others given them. Each
        value has its parameter's type (a float parameter's a ``float``, even when
        whole)."""
        data = self.client.request(
            _core.post(f"{self.path}/suggestions", _core.suggest_body(count, t, fixed))
        )
        return [self._typed(decode(Suggestion, s)) for s in data["suggestions"]]

    def _typed(self, item: _core.HasParams) -> _core.HasParams:
        """``item`` with its setting's values of their parameters' types."""
        return _core.typed(self.info.parameters, item)

    def observe(
        self,
        suggestion: SuggestionRef,
        value: float,
        measured_at: Optional[datetime] = None,
        *,
        t: Optional[float] = None,
        regret: Optional[float] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> Observation:
        """Record ``value`` measured for ``suggestion`` (a :class:`Suggestion`, its id, or
        a setting of your own as a mapping). ``measured_at`` (timezone-aware) defaults to
        when the server receives it; ``t`` replaces it in client-time sessions;
        ``metadata`` (a JSON object, at most 4096 bytes) is kept with the run and
        returned, never modelled. Retried safely: a retry after a lost answer stores
        nothing twice."""
        body = _core.observation_json(suggestion, value, measured_at, t, regret, metadata=metadata)
        data = self.client.request(_core.post(f"{self.path}/observations", body))
        return self._typed(decode(ObservationList, data).observations[0])

    def fail(
        self,
        suggestion: SuggestionRef,
        reason: Optional[str] = None,
        measured_at: Optional[datetime] = None,
        *,
        t: Optional[float] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> EndedRun:
        """Report that measuring ``suggestion`` failed (a timeout, a crash): recorded
        and shown, the suggestion no longer pending, nothing added to the model.
        ``reason`` says why in your words (at most 500 characters)."""
        body = _core.observation_json(
            suggestion, None, measured_at, t, None, True, reason, metadata
        )
        data = self.client.request(_core.post(f"{self.path}/observations", body))
        return self._typed(decode(ObservationList, data).failed[0])

    def abandon(self, suggestion: Union[Suggestion, str]) -> None:
        """Give ``suggestion`` up without measuring it: it stops counting as pending
        and is recorded as abandoned. Abandoning twice is harmless; an observed or
        failed suggestion raises :class:`tvbo.Conflict`."""
        self.client.request(Call("DELETE", _core.suggestion_path(self.path, suggestion)))

    def pending(self) -> List[Suggestion]:
        """The session's pending suggestions, oldest first: handed out to any worker and
        not yet observed, failed, abandoned or expired (at most the server's cap on
        pending suggestions, 256 by default)."""
        data = self.client.request(_core.pending_call(self.path))
        return [self._typed(s) for s in decode(SuggestionList, data).suggestions]

    def abandon_pending(self) -> int:
        """Abandon every pending suggestion of the session (:meth:`pending`, then
        :meth:`abandon` each), and say how many were: what a worker that was killed left
        pending, so that it stops counting as pending before its ``time.pending_timeout``.
        It abandons any worker's: call it when none is running. One that ended meanwhile
        (its worker observed or failed it) is left as it is and not counted."""
        abandoned = 0
        for suggestion in self.pending():
            try:
                self.abandon(suggestion)
            except ApiError as e:
                if not _core.ended_meanwhile(e):
                    raise
            else:
                abandoned += 1
        return abandoned

    def observe_many(self, items: Sequence[ObservationItem]) -> List[Observation]:
        """Record several observations in one request, all or nothing (1 to 1000 items:
        :class:`tvbo.ObservationInput` or ``(suggestion, value)`` pairs)."""
        data = self.client.request(_core.post(f"{self.path}/observations", _core.batch_json(items)))
        return [self._typed(o) for o in decode(ObservationList, data).observations]

    def best(
        self, t: Optional[float] = None, fixed: Optional[Mapping[str, ParamValue]] = None
    ) -> Best:
        """The setting with the best posterior mean at session time ``t`` (default: now, or
        the latest observation's time in a client-time session), given the parameters
        ``fixed`` holds at the values it maps them to: the best setting of the others for
        them. A context parameter ``fixed`` does not give is held at the newest
        observation's value (where the system is now); an unknown name or a value out of
        bounds raises :class:`tvbo.InvalidField` naming ``fixed.<name>``."""
        params = _core.best_query(t, fixed)
        data = self.client.request(Call("GET", f"{self.path}/best", params=params))
        return self._typed(decode(Best, data))

    def predict(
        self, points: Sequence[Mapping[str, ParamValue]], t: Optional[float] = None
    ) -> PredictResponse:
        """Posterior mean and standard deviation of the objective at each point."""
        body = _core.predict_body(points, t)
        data = self.client.request(_core.post(f"{self.path}/predict", body))
        response = decode(PredictResponse, data)
        predictions = [self._typed(p) for p in response.predictions]
        return PredictResponse(response.t, predictions)

    def regret(self) -> RegretReport:
        """The regret of every observation (reported, or estimated by the current model)."""
        return decode(RegretReport, self.client.request(Call("GET", f"{self.path}/regret")))

    def model(self) -> ModelView:
        """The model: dataset size, hyperparameters, response time, relevance, state."""
        return decode(ModelView, self.client.request(Call("GET", f"{self.path}/model")))

    def _pages(
        self,
        cls: Type[_core.PageT],
        listing: str,
        after: Optional[int],
        page_size: int,
        **params: str,
    ) -> Iterator[_core.PageT]:
        """The pages of ``GET …/{listing}`` past ``after``, fetched as they are consumed."""
        return self.client._pages(cls, f"{self.path}/{listing}", after, page_size, **params)

    def observations(
        self, *, include_pruned: bool = False, page_size: int = 1000, after: Optional[int] = None
    ) -> Iterator[Observation]:
        """Every observation in order (active ones only unless ``include_pruned``),
        fetched ``page_size`` at a time as the iterator is consumed."""
        pruned = str(include_pruned).lower()
        for page in self._pages(
            ObservationList, "observations", after, page_size, include_pruned=pruned
        ):
            for observation in page.observations:
                yield self._typed(observation)

    def steps(self, page_size: int = 1000) -> Iterator[Step]:
        """The session's steps (each suggest and observe call, with the model it left),
        oldest first, fetched a page at a time."""
        for page in self._pages(StepList, "steps", 0, page_size):
            yield from page.steps

    def events(self, after: int = 0, page_size: int = 1000) -> Iterator[Event]:
        """The session's events with ``seq`` above ``after`` (what its steps found worth
        telling: the optimum moved, a model reset, a prior eliminated), oldest first, a
        page at a time. Keep the last ``seq`` seen and pass it as ``after`` to read only
        newer ones."""
        for page in self._pages(EventList, "events", after, page_size):
            yield from page.events

    def timeline(self, points: Optional[int] = None) -> Timeline:
        """What the dashboard draws (``GET …/timeline``): observations, steps,
        forgetting, failed and abandoned runs, at most about ``points`` of each series
        (default 2000)."""
        params = None if points is None else {"points": str(points)}
        data = self.client.request(Call("GET", f"{self.path}/timeline", params=params))
        return _core.typed_timeline(self.info.parameters, decode(Timeline, data))

    def delete(self) -> None:
        """Delete the session and everything in it."""
        self.client.request(Call("DELETE", self.path))

    def to_pandas(self, *, include_pruned: bool = True) -> "pandas.DataFrame":
        """The observations as a DataFrame (needs ``pip install tvbo[pandas]``)."""
        from ._pandas import observations_frame

        return observations_frame(
            self.observations(include_pruned=include_pruned),
            [p.name for p in self.info.parameters],
        )

    def optimize(
        self,
        fn: Callable[[Params], float],
        iterations: int,
        *,
        workers: int = 1,
        callback: Optional[Callable[[Suggestion, Observation], None]] = None,
        catch: Tuple[Type[BaseException], ...] = (),
        timeout: Optional[float] = None,
        progress: bool = False,
        fixed: Optional[_core.Fixed] = None,
    ) -> List[Observation]:
        """Ask, evaluate, tell ``iterations`` times in all, ``workers`` at a time.

        Each of ``workers`` threads loops: suggest one setting, compute ``fn(params)``,
        observe the value. Suggestions in flight are pending on the server, so the workers
        get distinct points. ``callback(suggestion, observation)``, if given, is called
        from the worker threads after each value is stored, with the suggestion and its
        stored :class:`Observation` (not for failed runs). Returns the stored
        observations in order.

        ``fn`` raising one of ``catch`` is a failed run: reported with :meth:`fail` (the
        exception's ``repr`` as its reason), counted as an evaluation, and the workers go
        on. With ``timeout`` (seconds), no evaluation starts after it; the ones in hand
        finish and are stored. ``progress`` draws a bar on stderr.

        ``fixed`` is passed to each :meth:`suggest`: parameters held at given values, the
        same every round (``{"load": 0.7}``), or a function of the round (0, 1, …, in the
        order the evaluations start; called from the worker threads) returning them, e.g.
        the load measured now. A session with context parameters needs it (every context
        parameter's value, every round); the suggestions, and so the observations, carry
        the values given.

        If ``fn``, ``callback`` or a request raises, the suggestion it was for is
        abandoned (:meth:`abandon`) unless its value was measured, the workers take no new
        work, the others finish the evaluation each has in hand and store it, and the
        first exception is raised; the values measured but not stored (the server gone
        past the retries' deadline) are in its ``unstored``. An interrupt (Ctrl-C, or
        ``KeyboardInterrupt`` raised by ``fn`` or ``callback``) is raised at once, once
        the suggestions in hand are abandoned: the values being measured are dropped
        (their ``fn`` calls go on in their threads and store nothing), and the requests
        in flight are waited for a few seconds at most. So ``optimize`` leaves no
        suggestion of its own pending, unless the server cannot be reached to abandon it
        (it then expires after ``time.pending_timeout``). For wall-clock sessions: a
        client-time session needs ``t`` on every call, so drive it with :meth:`suggest`
        and :meth:`observe`.
        """
        if iterations < 0 or workers < 1:
            raise ValueError("iterations must be >= 0 and workers >= 1")
        lock = threading.Condition()
        left = [iterations]
        errors: List[BaseException] = []  # the first one is raised
        stored: List[Observation] = []
        unstored: List[Tuple[Suggestion, float]] = []
        held: Dict[str, Suggestion] = {}  # suggested; not observed, failed nor abandoned
        busy = [0]  # requests in flight: a suggest, or a claimed suggestion's observe or fail
        stopping = [False]  # interrupted: take nothing, release what comes
        ends = None if timeout is None else _time.monotonic() + timeout
        bar = _core.Progress(iterations, self.info.goal == "minimize", progress)

        def take() -> Optional[int]:
            """The round of another evaluation to start (its suggest then counts as
            busy); None: start none."""
            with lock:
                if stopping[0] or errors or left[0] <= 0:
                    return None
                if ends is not None and _time.monotonic() >= ends:
                    return None
                left[0] -= 1
                busy[0] += 1
                return iterations - left[0] - 1

        def claim(suggestion: Suggestion) -> bool:
            """Take ``suggestion`` back from ``held`` to store its outcome (busy until
            :func:`done`); False: an interrupt released it."""
            with lock:
                if held.pop(suggestion.id, None) is None:
                    return False
                busy[0] += 1
                return True

        def done() -> None:
            with lock:
                busy[0] -= 1
                lock.notify_all()

        def work() -> None:
            try:
                while True:
                    number = take()
                    if number is None:
                        break
                    try:
                        (suggestion,) = self.suggest(1, fixed=_core.fixed_at(fixed, number))
                        with lock:
                            interrupted = stopping[0]
                            if not interrupted:
                                held[suggestion.id] = suggestion
                        if interrupted:  # answered after the interrupt: give it back
                            self._release([suggestion])
                            return
                    finally:
                        done()
                    try:
                        value = fn(dict(suggestion.params))
                    except catch as e:
                        if claim(suggestion):
                            try:
                                self.fail(suggestion, repr(e)[:500])
                            finally:
                                done()
                        with lock:
                            bar.update(None)
                        continue
                    except BaseException:
                        if claim(suggestion):  # it will not be measured
                            try:
                                self._release([suggestion])
                            finally:
                                done()
                        raise
                    if not claim(suggestion):
                        return  # released by an interrupt: the value is dropped
                    try:
                        observation = self.observe(suggestion, value)
                    except BaseException:
                        with lock:
                            unstored.append((suggestion, value))
                        raise
                    finally:
                        done()
                    with lock:
                        stored.append(observation)
                        bar.update(value)
                    if callback is not None:
                        callback(suggestion, observation)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                with lock:
                    if not errors:
                        errors.append(e)
                    lock.notify_all()

        threads = [
            threading.Thread(target=work, name=f"tvbo-optimize-{i}", daemon=True)
            for i in range(min(workers, max(iterations, 1)))
        ]
        for thread in threads:
            thread.start()
        try:
            # Waited for in short waits: an interrupt (Ctrl-C) reaches this thread at once
            # on every platform, and one raised in a worker is raised here as one.
            while True:
                alive = [thread for thread in threads if thread.is_alive()]
                if not alive:
                    break
                alive[0].join(0.1)
                with lock:
                    first = errors[0] if errors else None
                if first is not None and not isinstance(first, Exception):
                    raise first
        except BaseException as e:
            # Interrupted: no new work; the suggestions in hand are abandoned, what the
            # workers measure from now on is dropped, and the requests in flight (a
            # suggest, whose answer the worker then abandons; a value being stored) are
            # waited for, a few seconds at most, so that a program that exits now leaves
            # nothing of its own pending.
            with lock:
                stopping[0] = True
                if not errors:
                    errors.append(e)
                in_hand = list(held.values())
                held.clear()
            self._release(in_hand)
            with lock:
                lock.wait_for(lambda: busy[0] == 0, timeout=_core.RELEASE_GRACE)
            raise
        if errors:
            raise _core.with_unstored(errors[0], unstored)
        return sorted(stored, key=lambda o: o.seq)

    def _release(self, suggestions: Sequence[Suggestion]) -> None:
        """Abandon ``suggestions``, which will not be measured, each with a short retry
        (an interrupt must not wait a minute); one the server cannot be told of is logged
        and expires after ``time.pending_timeout``.

        These are the suggestions :meth:`optimize` holds. Those of a process that died
        are not known to it: :meth:`abandon_pending` (on the server's listing of the
        session's pending suggestions) is the place for them."""
        for suggestion in suggestions:
            call = Call("DELETE", _core.suggestion_path(self.path, suggestion))
            try:
                self.client.request(call, retry=_core.RELEASE_RETRY)
            except TvboError as e:
                _core.log.warning(
                    "suggestion %s not abandoned (%s): it expires after time.pending_timeout",
                    suggestion.id,
                    e,
                )
