"""Typed models of the tvbo API, mirroring the schemas of ``openapi/openapi.json``.

Each dataclass or TypedDict below carries the name of its OpenAPI schema in
:data:`SCHEMAS`; ``tests/test_openapi_drift.py`` checks every one against the schema of
that name, field by field and both ways (names, required-ness, nullability, JSON types),
so that a field added to or removed from either side fails the test. A dataclass field
without a default is a required property; one with a default is optional.

Responses are decoded with :func:`decode`, which ignores properties the client does not
know (the API may add fields) and fails loudly on a missing required one.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from datetime import datetime
from typing import (
    Any,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypedDict,
    TypeVar,
    Union,
)

from .errors import TvboError

Goal = Literal["maximize", "minimize"]
ParameterType = Literal["float", "int", "categorical"]
Scale = Literal["linear", "log"]
KernelKind = Literal["matern12", "matern32", "matern52", "rbf"]
TimeSource = Literal["wall", "client"]
FitStart = Literal["fixed", "previous"]
Hyperpriors = Literal["none", "robust"]
Failures = Literal["impute", "ignore"]
Lengthscales = Literal["per_parameter", "shared"]
Warping = Literal["half_rank", "log", "none"]
Level = Literal["drifting", "none"]
RunEnd = Literal["failed", "abandoned"]
TrackingStatus = Literal["tracking", "lagging", "no-recent-data"]
AlgorithmName = str
"""An algorithm's API name (``"bolt"``, ``"w-dbo"``, ...): :meth:`Client.algorithms` lists
the server's, with what each does."""
PriorUse = Literal["none", "optional", "required"]

SessionSort = Literal["created", "name", "observations", "last_activity", "regret"]
"""The orders of :meth:`Client.sessions` (the listing's ``sort``)."""
SortOrder = Literal["asc", "desc"]
"""A listing's direction (``order``)."""

ParamValue = Union[float, int, str]
"""One parameter's value: a ``float`` for a :func:`Float` parameter, an ``int`` for an
:func:`Int` one, a ``str`` (one of its choices) for a :func:`Categorical` one. A session's
methods give each value the type of its parameter (the server writes a whole float as a
JSON integer: ``4.0`` reads back as ``4.0``, not ``4``). Narrow it where you compute:
``float(p["x"])``, ``int(p["threads"])``, ``str(p["codec"])``."""

Params = Dict[str, ParamValue]
"""A setting: parameter name → value (:data:`ParamValue`)."""


# ---------------------------------------------------------------- request parts


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One parameter: a number with its bounds (``low < high``; a log scale needs
    ``low > 0``), or a categorical one with its ``choices``.

    The same schema is sent in a create request and echoed, filled in, by the server.
    :func:`Float`, :func:`Int` and :func:`Categorical` build one.
    """

    name: str
    low: Optional[float] = None
    high: Optional[float] = None
    type: Optional[ParameterType] = None
    scale: Optional[Scale] = None
    step: Optional[float] = None
    context: Optional[bool] = None
    choices: Optional[List[str]] = None


def _parameter(
    name: str,
    low: float,
    high: float,
    kind: ParameterType,
    log: bool,
    step: Optional[float],
    context: bool,
) -> ParameterSpec:
    return ParameterSpec(
        name,
        float(low),
        float(high),
        kind,
        "log" if log else "linear",
        None if step is None else float(step),
        True if context else None,
    )


def Float(
    name: str,
    low: float,
    high: float,
    *,
    log: bool = False,
    step: Optional[float] = None,
    context: bool = False,
) -> ParameterSpec:
    """A real-valued parameter in ``[low, high]``, searched on a log scale if ``log``;
    with ``step``, only the values ``low + k * step`` (linear scale only). A ``context``
    parameter is measured, not chosen: every ``suggest`` gives its value in ``fixed``."""
    return _parameter(name, low, high, "float", log, step, context)


def Int(
    name: str,
    low: int,
    high: int,
    *,
    log: bool = False,
    step: Optional[int] = None,
    context: bool = False,
) -> ParameterSpec:
    """An integer parameter in ``[low, high]`` (the server rounds its suggestions); with
    ``step``, only the values ``low + k * step`` (linear scale only); ``context`` as for
    :func:`Float`."""
    return _parameter(name, low, high, "int", log, step, context)


def Categorical(name: str, choices: Sequence[str], *, context: bool = False) -> ParameterSpec:
    """A categorical parameter: one of ``choices`` (2 to 64 distinct strings), modelled
    with an overlap kernel of its own; ``context`` as for :func:`Float`."""
    return ParameterSpec(
        name,
        type="categorical",
        choices=[str(c) for c in choices],
        context=True if context else None,
    )


@dataclasses.dataclass(frozen=True)
class ArmSpec:
    """An arm of a finite arm set as sent by a client (``name`` defaults to ``arm-<i>``)."""

    params: Mapping[str, ParamValue]
    name: Optional[str] = None


class ModelOptions(TypedDict, total=False):
    """The surrogate model's settings (schema ``ModelRequest``); absent keys take defaults."""

    spatial_kernel: Optional[KernelKind]
    temporal_kernel: Optional[KernelKind]
    noise: Optional[float]
    warmup: Optional[int]
    fit_start: Optional[FitStart]
    hyperpriors: Optional[Hyperpriors]
    failures: Optional[Failures]
    lengthscales: Optional[Lengthscales]
    warping: Optional[Warping]
    level: Optional[Level]


class TimeOptions(TypedDict, total=False):
    """Time settings (schema ``TimeRequest``): ``source`` ``wall`` (default) or ``client``."""

    source: Optional[TimeSource]
    lead: Optional[float]
    pending_timeout: Optional[float]


class OptimumMovedOptions(TypedDict, total=False):
    """The thresholds of ``optimum-moved`` (schema ``OptimumMovedRequest``): ``distance``
    in the unit cube (default 0.2), ``persistence`` in suggests (default 3),
    ``relative_value`` (default None: the distance alone)."""

    distance: Optional[float]
    persistence: Optional[int]
    relative_value: Optional[float]


class TrackingOptions(TypedDict, total=False):
    """The thresholds of ``tracking-lost`` and ``tracking-regained`` (schema
    ``TrackingRequest``): ``window`` regrets (default 32), ``rise`` and ``hysteresis`` in
    standard errors (defaults 4 and 1)."""

    window: Optional[int]
    rise: Optional[float]
    hysteresis: Optional[float]


class EventsOptions(TypedDict, total=False):
    """The thresholds of the drift events (schema ``EventsRequest``; docs/events.md);
    absent keys take defaults. ``idle_seconds`` (default 3600) is the one key where
    None is not the default: ``{"idle_seconds": None}`` switches ``session-idle`` off."""

    optimum_moved: Optional[OptimumMovedOptions]
    tracking: Optional[TrackingOptions]
    drift_rate_factor: Optional[float]
    idle_seconds: Optional[float]


@dataclasses.dataclass(frozen=True)
class ObservationInput:
    """One measured value for a batch observe: for a suggestion (``suggestion_id``) or for
    a setting of the client's own (``params``). ``t`` replaces ``measured_at`` in
    client-time sessions; ``regret`` (≥ 0) only when the client knows it. A failed
    measurement has ``failed=True``, no value, and optionally a ``reason``."""

    value: Optional[float] = None
    suggestion_id: Optional[str] = None
    params: Optional[Mapping[str, ParamValue]] = None
    measured_at: Optional[datetime] = None
    t: Optional[float] = None
    regret: Optional[float] = None
    failed: Optional[bool] = None
    reason: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None


# ---------------------------------------------------------------- responses


@dataclasses.dataclass(frozen=True)
class Arm:
    """An arm of a session, named."""

    name: str
    params: Params


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The surrogate model's settings, filled in."""

    spatial_kernel: KernelKind
    warmup: int
    temporal_kernel: Optional[KernelKind] = None
    noise: Optional[float] = None
    fit_start: Optional[FitStart] = None
    hyperpriors: Optional[Hyperpriors] = None
    failures: Optional[Failures] = None
    lengthscales: Optional[Lengthscales] = None
    warping: Optional[Warping] = None
    level: Optional[Level] = None


@dataclasses.dataclass(frozen=True)
class TimeConfig:
    """Time settings, filled in (``lead`` None: learned)."""

    source: TimeSource
    pending_timeout: float
    lead: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class OptimumMovedConfig:
    """The thresholds of ``optimum-moved``, filled in (``relative_value`` None: the
    distance alone)."""

    distance: float = 0.2
    persistence: int = 3
    relative_value: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class TrackingConfig:
    """The thresholds of ``tracking-lost`` and ``tracking-regained``, filled in."""

    window: int = 32
    rise: float = 4.0
    hysteresis: float = 1.0


@dataclasses.dataclass(frozen=True)
class EventsConfig:
    """The thresholds of a session's drift events, filled in (docs/events.md);
    ``idle_seconds`` None: no ``session-idle`` events. The defaults are the server's."""

    optimum_moved: OptimumMovedConfig = dataclasses.field(default_factory=OptimumMovedConfig)
    tracking: TrackingConfig = dataclasses.field(default_factory=TrackingConfig)
    drift_rate_factor: float = 2.0
    idle_seconds: Optional[float] = 3600.0


@dataclasses.dataclass(frozen=True)
class SessionInfo:
    """A session as the server describes it: its filled-in configuration and counts
    (schema ``Session``). ``algorithm`` is the filled-in algorithm configuration
    (``{"name": ..., options...}``)."""

    id: str
    name: str
    goal: Goal
    parameters: List[ParameterSpec]
    algorithm: Dict[str, Any]
    model: ModelConfig
    time: TimeConfig
    events: EventsConfig
    seed: int
    status: str
    created_at: datetime
    observation_count: int
    dataset_size: int
    pending_count: int
    version: int
    arms: Optional[List[Arm]] = None
    max_dataset_size: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Suggestion:
    """A setting to evaluate: ``params`` targets session time ``t``."""

    id: str
    params: Params
    t: float
    created_at: datetime
    arm: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class SuggestionList:
    """Suggestions: a suggest's answer, or a session's pending ones, oldest first
    (:meth:`Session.pending`)."""

    suggestions: List[Suggestion]


@dataclasses.dataclass(frozen=True)
class Observation:
    """An observation as stored (``active`` False once forgotten, with the reason)."""

    seq: int
    params: Params
    value: float
    t: float
    active: bool
    recorded_at: datetime
    suggestion_id: Optional[str] = None
    measured_at: Optional[datetime] = None
    regret: Optional[float] = None
    estimated_regret: Optional[float] = None
    removed_at: Optional[datetime] = None
    removed_reason: Optional[str] = None
    removed_t: Optional[float] = None
    metadata: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class EndedRun:
    """A run that ended without a value: ``failed`` (reported by :meth:`Session.fail`)
    or ``abandoned`` (:meth:`Session.abandon`). Recorded, never part of the model."""

    kind: RunEnd
    params: Params
    t: float
    created_at: datetime
    suggestion_id: Optional[str] = None
    reason: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class ObservationList:
    """A page of observations (``next_after`` None on the last page); an observe call's
    failed runs in ``failed``."""

    observations: List[Observation]
    next_after: Optional[int] = None
    total: Optional[int] = None
    failed: List[EndedRun] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class UnreadableSession:
    """A session whose stored row does not read back (``tvbo check`` says why)."""

    id: str
    unreadable: bool


@dataclasses.dataclass(frozen=True)
class SessionList:
    """A page of sessions, newest first; those whose rows do not read back apart."""

    sessions: List[SessionInfo]
    unreadable: List[UnreadableSession] = dataclasses.field(default_factory=list)
    next_cursor: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Best:
    """The recommendation: the posterior mean's best setting at time ``t``."""

    t: float
    params: Params
    mean: float
    std: float
    arm: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The posterior of the objective at one point, in its own units."""

    params: Params
    mean: float
    std: float


@dataclasses.dataclass(frozen=True)
class PredictResponse:
    """Predictions at session time ``t``."""

    t: float
    predictions: List[Prediction]


@dataclasses.dataclass(frozen=True)
class RegretPoint:
    """One point of the regret curve (``regret`` None when no model exists yet)."""

    seq: int
    t: float
    value: float
    estimated: bool
    active: bool
    cumulative_regret: float
    regret: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class RegretReport:
    """The regret of every observation, reported or estimated under the current model."""

    points: List[RegretPoint]
    cumulative_regret: float
    average_regret: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class FittedHyperparameters:
    """Hyperparameters of the last fit (variances on standardised values)."""

    signal_variance: float
    spatial_lengthscale: float
    noise_variance: float
    temporal_lengthscale: Optional[float] = None
    epsilon: Optional[float] = None
    categorical_lengthscale: Optional[float] = None
    lengthscales: Optional[Dict[str, float]] = None
    level_variance: Optional[float] = None
    level_lengthscale: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class ResponseTimeSample:
    """Mean seconds between consecutive suggests at dataset size ``n``."""

    n: int
    seconds: float
    count: int


@dataclasses.dataclass(frozen=True)
class ResponseTime:
    """The response-time model R(n): samples and the cubic fit's coefficients."""

    samples: List[ResponseTimeSample]
    coefficients: Optional[List[float]] = None


@dataclasses.dataclass(frozen=True)
class Step:
    """A suggest or observe call: its session time, the dataset size, the server's compute
    seconds, and ``snapshot``, the model it left (as the API gives it: hyperparameters,
    the recorded optimum, n* or budget, the priors' standing)."""

    id: int
    kind: str
    t: float
    dataset_size: int
    compute_seconds: float
    snapshot: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class StepList:
    """A page of steps (``next_after`` None on the last page)."""

    steps: List[Step]
    next_after: Optional[int] = None


EventKind = Literal[
    "optimum-moved",
    "model-reset",
    "dataset-full",
    "prior-eliminated",
    "tracking-lost",
    "tracking-regained",
    "drift-rate-changed",
    "session-idle",
    "ping",
]
"""The kinds of event this client knows (``ping``: a webhook's test delivery only).
:attr:`Event.kind` is a plain ``str``: a newer server may send others, which pass
through as they are; skip those you do not know."""


@dataclasses.dataclass(frozen=True)
class Event:
    """Something a step found worth telling an operator (``optimum-moved``,
    ``model-reset``, ``dataset-full``, ``prior-eliminated``, …: :data:`EventKind`; a newer
    server may add kinds: skip those you do not know), with the kind's ``data`` as the API
    gives it (docs/events.md in the tvbo repository).

    ``seq`` counts the session's events from 1; ``id`` numbers every event of the server
    (all sessions, all tenants) in commit order: it is the cursor of
    :meth:`Client.watch`, the SSE ``id`` and a webhook delivery's ``Tvbo-Event-Id``.
    ``session`` is the session's id."""

    seq: int
    kind: str
    step: int
    t: float
    at: datetime
    data: Dict[str, Any]
    id: int
    session: str


@dataclasses.dataclass(frozen=True)
class SessionChanged:
    """What :meth:`Client.watch` yields, with ``changes=True``, when the watched session
    changed (an observe, a suggest, …): its new ``version`` (as
    :attr:`SessionInfo.version`). Re-read what you show of it."""

    session: str
    version: int


@dataclasses.dataclass(frozen=True)
class EventList:
    """A page of events (``next_after`` None on the last page)."""

    events: List[Event]
    next_after: Optional[int] = None


DeliveryState = Literal["pending", "delivered", "failed"]
WebhookState = Literal["active", "paused"]


@dataclasses.dataclass(frozen=True)
class Webhook:
    """A tenant's webhook: the server POSTs each event of the ``events`` kinds (empty:
    every kind) of the tenant's sessions to ``url``, signed with its secret
    (:func:`tvbo.verify_signature`). ``secret`` is in the answer of
    :meth:`Client.create_webhook` only (None in listings): keep it then.

    Its health: ``consecutive_failures`` (attempts failed in a row since the last
    delivered one, the first at ``failing_since``), and ``state``: ``active``, or
    ``paused`` (since ``paused_at``, for ``paused_reason``) once its attempts kept failing
    (10 in a row, for an hour): it then takes no new deliveries until a delivered
    :meth:`Client.ping_webhook` resumes it."""

    id: str
    url: str
    events: List[str]
    created_at: datetime
    state: WebhookState
    consecutive_failures: int
    secret: Optional[str] = None
    failing_since: Optional[datetime] = None
    paused_at: Optional[datetime] = None
    paused_reason: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class AlgorithmInfo:
    """One of the server's algorithms (:meth:`Client.algorithms`): its API ``name`` (the
    ``algorithm`` of :meth:`Client.create_session`), what it does in a line, whether it
    ever removes observations from its dataset (``forgets``), whether its model has time
    (``temporal``), and whether it takes priors over arms (``priors``: ``none``,
    ``optional`` or ``required``)."""

    name: str
    summary: str
    forgets: bool
    temporal: bool
    priors: PriorUse


@dataclasses.dataclass(frozen=True)
class AlgorithmList:
    """The server's algorithms."""

    algorithms: List[AlgorithmInfo]


@dataclasses.dataclass(frozen=True)
class WebhookList:
    """The tenant's webhooks."""

    webhooks: List[Webhook]


@dataclasses.dataclass(frozen=True)
class WebhookPing:
    """The result of a test delivery (:meth:`Client.ping_webhook`): whether the receiver
    answered 2xx, the ``status`` of a delivered ping (None otherwise), the ``error`` when
    it failed in a few words (``not-allowed``, ``unreachable``, ``timeout``,
    ``answered-5xx``, ...: never the receiver's text), how long the attempt took, and
    whether it ``resumed`` a paused webhook (its pending deliveries go out again)."""

    delivered: bool
    duration_ms: float
    resumed: bool
    status: Optional[int] = None
    error: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Delivery:
    """One event's delivery to a webhook: ``event`` is the event's global id
    (:attr:`Event.id`), ``state`` ``pending`` (retries to come, at ``next_attempt_at``),
    ``delivered`` or ``failed`` (the retries gave up), with the last attempt's HTTP
    status or error."""

    event: int
    session: str
    seq: int
    kind: str
    state: DeliveryState
    attempts: int
    created_at: datetime
    last_status: Optional[int] = None
    last_error: Optional[str] = None
    next_attempt_at: Optional[datetime] = None
    delivered_at: Optional[datetime] = None


@dataclasses.dataclass(frozen=True)
class DeliveryList:
    """A page of a webhook's deliveries (``next_after`` None on the last page)."""

    deliveries: List[Delivery]
    next_after: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class TimelineObservation:
    """An observation on the timeline, with its regret (reported, or ``estimated``)."""

    seq: int
    t: float
    value: float
    params: Params
    estimated: bool
    active: bool
    regret: Optional[float] = None
    removed_t: Optional[float] = None
    removed_reason: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class ForgetEvent:
    """``count`` observations forgotten for ``reason`` at a step (or over a span)."""

    t: float
    t_end: float
    reason: str
    count: int


@dataclasses.dataclass(frozen=True)
class RollingRegret:
    """The mean of ``observations`` regrets ending at session time ``t``."""

    t: float
    regret: float
    observations: int


@dataclasses.dataclass(frozen=True)
class Tracking:
    """Whether the session keeps up now: ``status`` and why, the mean regret of the
    newest ``window`` observations and of the ``window`` before, and the rolling regret
    over every observation (docs/dashboard.md, "Is it tracking now?")."""

    status: TrackingStatus
    reason: str
    window: int
    as_of: datetime
    stale_after: float
    rolling: List[RollingRegret]
    recent_regret: Optional[float] = None
    previous_regret: Optional[float] = None
    last_step_at: Optional[datetime] = None


@dataclasses.dataclass(frozen=True)
class Timeline:
    """A session's history as the dashboard draws it, downsampled past a point budget."""

    observation_count: int
    step_count: int
    reported_regrets: int
    estimated_regrets: int
    tracking: Tracking
    observations: List[TimelineObservation]
    steps: List[Step]
    response_time: "ResponseTime"
    forgotten: List[ForgetEvent]
    ended_run_count: int
    ended_runs: List[EndedRun]
    average_regret: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class ComputeTime:
    """The server's own compute time per ``suggest`` or ``observe`` call."""

    kind: str
    count: int
    mean_seconds: float
    max_seconds: float


@dataclasses.dataclass(frozen=True)
class Relevance:
    """How far the posterior would move without the observation ``seq``."""

    seq: int
    relevance: float


@dataclasses.dataclass(frozen=True)
class ModelView:
    """The model behind a session. ``algorithm_state`` and ``prior_selection`` are kept
    as JSON objects (their shape depends on the algorithm)."""

    dataset_size: int
    lead: float
    response_time: ResponseTime
    compute_time: List[ComputeTime]
    relevance: List[Relevance]
    algorithm_state: Dict[str, Any]
    hyperparameters: Optional[FittedHyperparameters] = None
    max_dataset_size: Optional[int] = None
    prior_selection: Optional[Dict[str, Any]] = None
    hyperpriors: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class Problem:
    """An ``application/problem+json`` error body."""

    type: str
    title: str
    status: int
    detail: str
    field: Optional[str] = None


SCHEMAS: Dict[str, Any] = {
    "ParameterSpec": ParameterSpec,
    "ArmSpec": ArmSpec,
    "ModelRequest": ModelOptions,
    "TimeRequest": TimeOptions,
    "EventsRequest": EventsOptions,
    "OptimumMovedRequest": OptimumMovedOptions,
    "TrackingRequest": TrackingOptions,
    "ObservationInput": ObservationInput,
    "Arm": Arm,
    "ModelConfig": ModelConfig,
    "TimeConfig": TimeConfig,
    "EventsConfig": EventsConfig,
    "OptimumMovedConfig": OptimumMovedConfig,
    "TrackingConfig": TrackingConfig,
    "Session": SessionInfo,
    "SessionList": SessionList,
    "UnreadableSession": UnreadableSession,
    "Suggestion": Suggestion,
    "SuggestResponse": SuggestionList,
    "Observation": Observation,
    "ObservationList": ObservationList,
    "EndedRunView": EndedRun,
    "Step": Step,
    "StepList": StepList,
    "TimelineObservation": TimelineObservation,
    "ForgetEvent": ForgetEvent,
    "Timeline": Timeline,
    "Tracking": Tracking,
    "RollingRegret": RollingRegret,
    "Best": Best,
    "Prediction": Prediction,
    "PredictResponse": PredictResponse,
    "RegretPoint": RegretPoint,
    "RegretReport": RegretReport,
    "FittedHyperparameters": FittedHyperparameters,
    "ResponseTimeSampleView": ResponseTimeSample,
    "ResponseTimeView": ResponseTime,
    "ComputeTimeView": ComputeTime,
    "RelevanceView": Relevance,
    "ModelView": ModelView,
    "Event": Event,
    "EventList": EventList,
    "Webhook": Webhook,
    "WebhookList": WebhookList,
    "PingResult": WebhookPing,
    "Delivery": Delivery,
    "DeliveryList": DeliveryList,
    "Problem": Problem,
    "AlgorithmInfo": AlgorithmInfo,
    "AlgorithmList": AlgorithmList,
}
"""OpenAPI schema name → the client's model of it (checked by the drift test)."""

ENUMS: Dict[str, Any] = {
    "Goal": Goal,
    "ParameterType": ParameterType,
    "Scale": Scale,
    "KernelKind": KernelKind,
    "TimeSource": TimeSource,
    "FitStart": FitStart,
    "Hyperpriors": Hyperpriors,
    "Failures": Failures,
    "Lengthscales": Lengthscales,
    "Warping": Warping,
    "Level": Level,
    "RunEnd": RunEnd,
    "TrackingStatus": TrackingStatus,
    "WebhookState": WebhookState,
    "PriorUse": PriorUse,
}
"""OpenAPI enum schema name → the Literal type listing its values."""


# ---------------------------------------------------------------- decoding

T = TypeVar("T")


class DecodeError(TvboError, ValueError):
    """A response did not match the model the client expected."""


def decode(cls: Type[T], data: Any) -> T:
    """Build the dataclass ``cls`` from decoded JSON, recursively.

    Unknown properties are ignored; a missing required one or a value of the wrong JSON
    type raises :class:`DecodeError`.
    """
    return typing.cast(T, _decode(cls, data, cls.__name__))


@functools.lru_cache(maxsize=None)
def _type_hints(tp: Any) -> Dict[str, Any]:
    """A dataclass's resolved annotations (resolving them is slow: once per class)."""
    return typing.get_type_hints(tp)


def _decode(tp: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin is Union:
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _decode(inner[0], data, where)
        return _decode_scalar(inner, data, where)
    if origin is Literal:
        # A value this client does not know yet (a newer server's) is kept as it is.
        if data not in typing.get_args(tp) and not isinstance(data, str):
            raise DecodeError(f"{where}: unexpected value {data!r}")
        return data
    if origin in (list, List):
        if not isinstance(data, list):
            raise DecodeError(f"{where}: expected an array")
        (item,) = typing.get_args(tp)
        return [_decode(item, x, f"{where}[{i}]") for i, x in enumerate(data)]
    if origin in (dict, Dict):
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: expected an object")
        _, value = typing.get_args(tp)
        return {str(k): _decode(value, v, f"{where}.{k}") for k, v in data.items()}
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: expected an object")
        hints = _type_hints(typing.cast(type, tp))
        kwargs: Dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = _decode(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DecodeError(f"{where}: missing {f.name!r}")
        return typing.cast(Any, tp)(**kwargs)
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise DecodeError(f"{where}: expected a number")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise DecodeError(f"{where}: expected an integer")
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise DecodeError(f"{where}: expected a boolean")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise DecodeError(f"{where}: expected a string")
        return data
    if tp is datetime:
        if not isinstance(data, str):
            raise DecodeError(f"{where}: expected a date-time string")
        return parse_datetime(data)
    raise DecodeError(f"{where}: cannot decode into {tp!r}")  # pragma: no cover


def _decode_scalar(choices: List[Any], data: Any, where: str) -> Any:
    """A value of a union of scalar types (:data:`ParamValue`): a string, an integer or
    a number, each as it is (the session's parameters give it its type later)."""
    if isinstance(data, str) and str in choices:
        return data
    if isinstance(data, int) and not isinstance(data, bool) and int in choices:
        return data
    if isinstance(data, (int, float)) and not isinstance(data, bool) and float in choices:
        return float(data)
    names = " or ".join(getattr(c, "__name__", str(c)) for c in choices)
    raise DecodeError(f"{where}: expected {names}")


def parse_datetime(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or an offset; nanoseconds cut to microseconds)."""
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    # Python < 3.11 takes at most 6 fractional digits.
    if "." in s:
        head, rest = s.split(".", 1)
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        s = f"{head}.{(digits + '000000')[:6]}{rest}"
    return datetime.fromisoformat(s)


def format_datetime(value: datetime) -> str:
    """RFC 3339 for a request; a naive datetime is refused (it has no time zone)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("measured_at must be timezone-aware (e.g. datetime.now(timezone.utc))")
    return value.isoformat()
