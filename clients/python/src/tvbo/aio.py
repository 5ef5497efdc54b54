"""The asyncio client: :class:`AsyncClient` and its :class:`AsyncSession` handles,
method for method the same as the synchronous ones."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
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


class AsyncClient:
    """The asyncio twin of :class:`tvbo.Client` (same arguments, same retries)."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: "float | httpx.Timeout" = _core.DEFAULT_TIMEOUT,
        retry: Optional[RetryPolicy] = None,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        self.base_url, headers, key = _core.client_settings(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._timeout = httpx.Timeout(timeout)
        self._link = _core.Link(self.base_url, key)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    async def request(self, call: Call, *, retry: Optional[RetryPolicy] = None) -> Any:
        """Send ``call`` with retries (``retry``, default the client's policy); the decoded
        JSON answer (None for 204)."""
        policy = retry or self.retry
        attempt, lost_answer = 0, False
        started = time.monotonic()

        def elapsed() -> float:
            return time.monotonic() - started

        while True:
            timeout = policy.attempt_timeout(self._timeout, elapsed())
            try:
                response = await self._http.request(
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
            await asyncio.sleep(wait)
            attempt += 1

    async def create_session(
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
    ) -> "AsyncSession":
        """Create a session; see :meth:`tvbo.Client.create_session`."""
        body = _core.create_session_body(
            parameters, name, goal, algorithm, model, time, arms, seed, resume, events
        )
        data = await self.request(_core.post("/v1/sessions", body, idempotency_key))
        return AsyncSession(self, decode(SessionInfo, data))

    async def session(self, id: str) -> "AsyncSession":
        """Reattach to an existing session by id (raises :class:`tvbo.NotFound`)."""
        data = await self.request(Call("GET", _core.session_path(id)))
        return AsyncSession(self, decode(SessionInfo, data))

    async def resume_session(self, name: str) -> "AsyncSession":
        """See :meth:`tvbo.Client.resume_session`."""
        data = await self.request(_core.post("/v1/sessions", _core.resume_body(name)))
        return AsyncSession(self, decode(SessionInfo, data))

    async def sessions(
        self,
        page_size: int = 50,
        *,
        name: Optional[str] = None,
        algorithm: Optional[AlgorithmName] = None,
        sort: Optional[SessionSort] = None,
        order: Optional[SortOrder] = None,
    ) -> AsyncIterator["AsyncSession"]:
        """See :meth:`tvbo.Client.sessions`."""
        cursor: Optional[str] = None
        while True:
            params = _core.sessions_query(page_size, cursor, name, algorithm, sort, order)
            data = await self.request(Call("GET", "/v1/sessions", params=params))
            page = decode(SessionList, data)
            for info in page.sessions:
                yield AsyncSession(self, info)
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def _pages(
        self,
        cls: Type[_core.PageT],
        path: str,
        after: Optional[int],
        page_size: int,
        **params: str,
    ) -> AsyncIterator[_core.PageT]:
        """See :meth:`tvbo.Client._pages`."""
        while True:
            call = _core.page_call(path, after, page_size, **params)
            page = decode(cls, await self.request(call))
            yield page
            if page.next_after is None:
                return
            after = page.next_after

    # ------------------------------------------------------------ events

    @overload
    def watch(
        self,
        after: Optional[int] = None,
        session: Union[str, "AsyncSession", None] = None,
        kinds: Optional[Sequence[str]] = None,
        *,
        changes: Literal[False] = False,
        timeout: Optional[float] = None,
    ) -> AsyncGenerator[Event, None]: ...

    @overload
    def watch(
        self,
        after: Optional[int] = None,
        session: Union[str, "AsyncSession", None] = None,
        kinds: Optional[Sequence[str]] = None,
        *,
        changes: bool,
        timeout: Optional[float] = None,
    ) -> AsyncGenerator[Union[Event, SessionChanged], None]: ...

    async def watch(
        self,
        after: Optional[int] = None,
        session: Union[str, "AsyncSession", None] = None,
        kinds: Optional[Sequence[str]] = None,
        *,
        changes: bool = False,
        timeout: Optional[float] = None,
    ) -> AsyncGenerator[Union[Event, SessionChanged], None]:
        """See :meth:`tvbo.Client.watch`. Cancelling the task that iterates ends it too.
        After a ``break``, the connection is closed when the generator is: ``await
        it.aclose()`` (or ``contextlib.aclosing``) closes it at once."""
        state = _core.Watch(
            self.retry,
            self._timeout,
            self._link,
            after,
            session.id if isinstance(session, AsyncSession) else session,
            kinds,
            changes,
            timeout,
        )
        while not state.expired():
            try:
                async with self._http.stream(
                    "GET",
                    state.path,
                    params=state.params(),
                    headers=state.headers(),
                    timeout=state.timeout(),
                ) as response:
                    if response.status_code == 204:
                        return  # the server says: do not reconnect
                    if not 200 <= response.status_code < 300:
                        await response.aread()
                        wait = state.refused(response)
                    else:
                        state.opened(response)
                        if state.gap():
                            for missed in state.missed(await self._visible_events(state.session)):
                                yield missed
                        async for chunk in response.aiter_bytes():
                            for item in state.feed(chunk):
                                yield item
                            if state.expired():
                                return
                        wait = state.ended()
            except httpx.HTTPError as e:
                if state.expired():
                    return
                wait = state.lost(e)
            if state.expired(wait):
                return
            await asyncio.sleep(wait)

    async def _visible_events(self, session: Optional[str]) -> List[Event]:
        """See :meth:`tvbo.Client._visible_events`."""
        if session is not None:
            return await self._session_events(session)
        out: List[Event] = []
        async for listed in self.sessions(page_size=1000):
            try:
                out.extend(await self._session_events(listed.id))
            except NotFound:
                continue  # deleted since it was listed
        return out

    async def _session_events(self, session: str) -> List[Event]:
        path = f"{_core.session_path(session)}/events"
        return [e async for page in self._pages(EventList, path, 0, 10_000) for e in page.events]

    # ------------------------------------------------------------ webhooks

    async def create_webhook(
        self,
        url: str,
        events: Optional[Sequence[str]] = None,
        secret: Optional[str] = None,
    ) -> Webhook:
        """See :meth:`tvbo.Client.create_webhook`."""
        body = _core.create_webhook_body(url, events, secret)
        return decode(Webhook, await self.request(_core.post("/v1/webhooks", body)))

    async def algorithms(self) -> List[AlgorithmInfo]:
        """The algorithms this server runs, in its order: each one's name (what
        ``algorithm`` takes) and what it does."""
        return decode(AlgorithmList, await self.request(Call("GET", "/v1/algorithms"))).algorithms

    async def webhooks(self) -> List[Webhook]:
        """The tenant's webhooks (without their secrets)."""
        return decode(WebhookList, await self.request(Call("GET", "/v1/webhooks"))).webhooks

    async def webhook(self, id: Union[str, Webhook]) -> Webhook:
        """One webhook (without its secret); raises :class:`tvbo.NotFound`."""
        data = await self.request(Call("GET", _core.webhook_path(_webhook_id(id))))
        return decode(Webhook, data)

    async def delete_webhook(self, id: Union[str, Webhook]) -> None:
        """See :meth:`tvbo.Client.delete_webhook`."""
        await self.request(Call("DELETE", _core.webhook_path(_webhook_id(id))))

    async def ping_webhook(self, id: Union[str, Webhook]) -> WebhookPing:
        """See :meth:`tvbo.Client.ping_webhook`."""
        path = f"{_core.webhook_path(_webhook_id(id))}/ping"
        return decode(WebhookPing, await self.request(_core.post(path, {})))

    async def webhook_deliveries(
        self, id: Union[str, Webhook], after: Optional[int] = None, page_size: int = 1000
    ) -> AsyncIterator[Delivery]:
        """See :meth:`tvbo.Client.webhook_deliveries`."""
        path = f"{_core.webhook_path(_webhook_id(id))}/deliveries"
        async for page in self._pages(DeliveryList, path, after, page_size):
            for delivery in page.deliveries:
                yield delivery


def _webhook_id(webhook: Union[str, Webhook]) -> str:
    return webhook.id if isinstance(webhook, Webhook) else webhook


class AsyncSession:
    """The asyncio twin of :class:`tvbo.Session`."""

    def __init__(self, client: AsyncClient, info: SessionInfo) -> None:
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
        return f"<tvbo.AsyncSession {self.info.id} {self.info.name!r}>"

    async def refresh(self) -> SessionInfo:
        """Re-read the session into :attr:`info` and return it."""
        data = await self.client.request(Call("GET", self.path))
        self.info = _core.typed_info(decode(SessionInfo, data))
        return self.info

    async def suggest(
        self,
        count: int = 1,
        *,
        t: Optional[float] = None,
        fixed: Optional[Mapping[str, ParamValue]] = None,
    ) -> List[Suggestion]:
        """See :meth:`tvbo.Session.suggest`."""
        body = _core.suggest_body(count, t, fixed)
        data = await self.client.request(_core.post(f"{self.path}/suggestions", body))
        return [self._typed(decode(Suggestion, s)) for s in data["suggestions"]]

    def _typed(self, item: _core.HasParams) -> _core.HasParams:
        """``item`` with its setting's values of their parameters' types."""
        return _core.typed(self.info.parameters, item)

    async def observe(
        self,
        suggestion: SuggestionRef,
        value: float,
        measured_at: Optional[datetime] = None,
        *,
        t: Optional[float] = None,
        regret: Optional[float] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> Observation:
        """See :meth:`tvbo.Session.observe`."""
        body = _core.observation_json(suggestion, value, measured_at, t, regret, metadata=metadata)
        data = await self.client.request(_core.post(f"{self.path}/observations", body))
        return self._typed(decode(ObservationList, data).observations[0])

    async def fail(
        self,
        suggestion: SuggestionRef,
        reason: Optional[str] = None,
        measured_at: Optional[datetime] = None,
        *,
        t: Optional[float] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> EndedRun:
        """See :meth:`tvbo.Session.fail`."""
        body = _core.observation_json(
            suggestion, None, measured_at, t, None, True, reason, metadata
        )
        data = await self.client.request(_core.post(f"{self.path}/observations", body))
        return self._typed(decode(ObservationList, data).failed[0])

    async def abandon(self, suggestion: Union[Suggestion, str]) -> None:
        """See :meth:`tvbo.Session.abandon`."""
        await self.client.request(Call("DELETE", _core.suggestion_path(self.path, suggestion)))

    async def pending(self) -> List[Suggestion]:
        """See :meth:`tvbo.Session.pending`."""
        data = await self.client.request(_core.pending_call(self.path))
        return [self._typed(s) for s in decode(SuggestionList, data).suggestions]

    async def abandon_pending(self) -> int:
        """See :meth:`tvbo.Session.abandon_pending`."""
        abandoned = 0
        for suggestion in await self.pending():
            try:
                await self.abandon(suggestion)
            except ApiError as e:
                if not _core.ended_meanwhile(e):
                    raise
            else:
                abandoned += 1
        return abandoned

    async def observe_many(self, items: Sequence[ObservationItem]) -> List[Observation]:
        """See :meth:`tvbo.Session.observe_many`."""
        body = _core.batch_json(items)
        data = await self.client.request(_core.post(f"{self.path}/observations", body))
        return [self._typed(o) for o in decode(ObservationList, data).observations]

    async def best(
        self, t: Optional[float] = None, fixed: Optional[Mapping[str, ParamValue]] = None
    ) -> Best:
        """See :meth:`tvbo.Session.best`."""
        params = _core.best_query(t, fixed)
        data = await self.client.request(Call("GET", f"{self.path}/best", params=params))
        return self._typed(decode(Best, data))

    async def predict(
        self, points: Sequence[Mapping[str, ParamValue]], t: Optional[float] = None
    ) -> PredictResponse:
        """See :meth:`tvbo.Session.predict`."""
        body = _core.predict_body(points, t)
        data = await self.client.request(_core.post(f"{self.path}/predict", body))
        response = decode(PredictResponse, data)
        return PredictResponse(response.t, [self._typed(p) for p in response.predictions])

    async def regret(self) -> RegretReport:
        """See :meth:`tvbo.Session.regret`."""
        return decode(RegretReport, await self.client.request(Call("GET", f"{self.path}/regret")))

    async def model(self) -> ModelView:
        """See :meth:`tvbo.Session.model`."""
        return decode(ModelView, await self.client.request(Call("GET", f"{self.path}/model")))

    async def _pages(
        self,
        cls: Type[_core.PageT],
        listing: str,
        after: Optional[int],
        page_size: int,
        **params: str,
    ) -> AsyncIterator[_core.PageT]:
        """See :meth:`tvbo.Session._pages`."""
        path = f"{self.path}/{listing}"
        async for page in self.client._pages(cls, path, after, page_size, **params):
            yield page

    async def observations(
        self, *, include_pruned: bool = False, page_size: int = 1000, after: Optional[int] = None
    ) -> AsyncIterator[Observation]:
        """See :meth:`tvbo.Session.observations`."""
        pruned = str(include_pruned).lower()
        async for page in self._pages(
            ObservationList, "observations", after, page_size, include_pruned=pruned
        ):
            for observation in page.observations:
                yield self._typed(observation)

    async def steps(self, page_size: int = 1000) -> AsyncIterator[Step]:
        """See :meth:`tvbo.Session.steps`."""
        async for page in self._pages(StepList, "steps", 0, page_size):
            for step in page.steps:
                yield step

    async def events(self, after: int = 0, page_size: int = 1000) -> AsyncIterator[Event]:
        """See :meth:`tvbo.Session.events`."""
        async for page in self._pages(EventList, "events", after, page_size):
            for event in page.events:
                yield event

    async def timeline(self, points: Optional[int] = None) -> Timeline:
        """See :meth:`tvbo.Session.timeline`."""
        params = None if points is None else {"points": str(points)}
        data = await self.client.request(Call("GET", f"{self.path}/timeline", params=params))
        return _core.typed_timeline(self.info.parameters, decode(Timeline, data))

    async def delete(self) -> None:
        """Delete the session and everything in it."""
        await self.client.request(Call("DELETE", self.path))

    async def to_pandas(self, *, include_pruned: bool = True) -> "pandas.DataFrame":
        """The observations as a DataFrame (needs ``pip install tvbo[pandas]``)."""
        from ._pandas import observations_frame

        rows = [o async for o in self.observations(include_pruned=include_pruned)]
        return observations_frame(rows, [p.name for p in self.info.parameters])

    async def optimize(
        self,
        fn: Callable[[Params], Awaitable[float]],
        iterations: int,
        *,
        workers: int = 1,
        callback: Optional[Callable[[Suggestion, Observation], None]] = None,
        catch: Tuple[Type[BaseException], ...] = (),
        timeout: Optional[float] = None,
        progress: bool = False,
        fixed: Optional[_core.Fixed] = None,
    ) -> List[Observation]:
        """:meth:`tvbo.Session.optimize` with ``workers`` tasks awaiting ``fn``;
        ``callback(suggestion, observation)`` (a plain function) is called in the event
        loop after each value is stored. The first exception stops new work (the other
        tasks finish the evaluation in hand and store it) and is raised at the end, the
        suggestion it was for abandoned, with the values measured but not stored in its
        ``unstored``. Cancelled (the task cancelled, or Ctrl-C under ``asyncio.run``),
        each task abandons the suggestion in hand before the cancellation goes on (a
        suggest or a store in flight is awaited a few seconds at most, and what the
        suggest hands out is abandoned too). ``catch``, ``timeout`` and ``progress`` as
        there; ``fixed`` too (a function of the round is called in the event loop)."""
        if iterations < 0 or workers < 1:
            raise ValueError("iterations must be >= 0 and workers >= 1")
        left = iterations
        errors: List[BaseException] = []
        stored: List[Observation] = []
        unstored: List[Tuple[Suggestion, float]] = []
        ends = None if timeout is None else time.monotonic() + timeout
        bar = _core.Progress(iterations, self.info.goal == "minimize", progress)

        async def work() -> None:
            nonlocal left
            while left > 0 and not errors and (ends is None or time.monotonic() < ends):
                left -= 1
                number = iterations - left - 1
                try:
                    asking = asyncio.ensure_future(
                        self.suggest(1, fixed=_core.fixed_at(fixed, number))
                    )
                    try:
                        (suggestion,) = await asyncio.shield(asking)
                    except asyncio.CancelledError:
                        late = await _outcome(asking)  # handed out all the same: give it back
                        if late:
                            await self._release(late)
                        raise
                    try:
                        value = await fn(dict(suggestion.params))
                    except catch as e:
                        await self.fail(suggestion, repr(e)[:500])
                        bar.update(None)
                        continue
                    except BaseException:  # an error or a cancellation: it will not be measured
                        await self._release([suggestion])
                        raise
                    storing = asyncio.ensure_future(self.observe(suggestion, value))
                    try:
                        observation = await asyncio.shield(storing)
                    except asyncio.CancelledError:
                        await _outcome(storing)  # the value being stored: let it land
                        raise
                    except Exception:
                        unstored.append((suggestion, value))
                        raise
                    stored.append(observation)
                    bar.update(value)
                    if callback is not None:
                        callback(suggestion, observation)
                except Exception as e:  # noqa: BLE001 - re-raised below (cancellation is not caught)
                    errors.append(e)
                    return

        # Every task ends before this does, its suggestion abandoned when cancelled (a
        # plain gather would end at the first task's cancellation, and the program with it).
        tasks = (work() for _ in range(min(workers, max(iterations, 1))))
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, BaseException):
                raise outcome
        if errors:
            raise _core.with_unstored(errors[0], unstored)
        return sorted(stored, key=lambda o: o.seq)

    async def _release(self, suggestions: Sequence[Suggestion]) -> None:
        """See :meth:`tvbo.Session._release`."""
        for suggestion in suggestions:
            call = Call("DELETE", _core.suggestion_path(self.path, suggestion))
            try:
                await self.client.request(call, retry=_core.RELEASE_RETRY)
            except TvboError as e:
                _core.log.warning(
                    "suggestion %s not abandoned (%s): it expires after time.pending_timeout",
                    suggestion.id,
                    e,
                )


T = TypeVar("T")


async def _outcome(request: "asyncio.Future[T]") -> Optional[T]:
    """The result of ``request``, in flight when its task was cancelled, awaited for
    ``RELEASE_GRACE`` seconds at most (None if it failed or took longer)."""
    try:
        return await asyncio.wait_for(asyncio.shield(request), _core.RELEASE_GRACE)
    except Exception:  # noqa: BLE001 - a failed request handed nothing out
        return None
