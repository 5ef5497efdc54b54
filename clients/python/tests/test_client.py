"""Every method of the synchronous client against a live server."""

from __future__ import annotations

import math
import signal
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Dict, List, Tuple

import httpx
import pytest

import tvbo

from .server import Server


def make_session(client: tvbo.Client, **kwargs: object) -> tvbo.Session:
    return client.create_session(
        [tvbo.Float("x", 0, 10), tvbo.Int("size", 1, 1024, log=True)],
        name="test",
        model={"warmup": 3},
        seed=7,
        **kwargs,  # type: ignore[arg-type]
    )


def objective(p: tvbo.Params) -> float:
    x, size = float(p["x"]), float(p["size"])
    return -((x - 3.0) ** 2) - (math.log2(size) - 5.0) ** 2


def test_create_session_echoes_the_typed_configuration(client: tvbo.Client) -> None:
    s = client.create_session(
        [tvbo.Float("x", 0, 10), tvbo.Int("size", 1, 1024, log=True)],
        name="typed",
        goal="minimize",
        algorithm={"name": "w-dbo", "alpha": 0.5},
        model={"warmup": 4, "spatial_kernel": "rbf"},
        time={"pending_timeout": 120},
        seed=11,
    )
    info = s.info
    assert info.name == "typed" and info.goal == "minimize" and info.seed == 11
    assert info.parameters == [
        tvbo.ParameterSpec("x", 0.0, 10.0, "float", "linear"),
        tvbo.ParameterSpec("size", 1.0, 1024.0, "int", "log"),
    ]
    assert info.algorithm["name"] == "w-dbo" and info.algorithm["alpha"] == 0.5
    assert info.model.warmup == 4 and info.model.spatial_kernel == "rbf"
    assert info.time.pending_timeout == 120 and info.time.source == "wall"
    assert info.observation_count == 0 and info.pending_count == 0
    assert s.dashboard_url == f"{client.base_url}/sessions/{s.id}"
    assert httpx.get(s.dashboard_url).status_code == 200


def test_create_session_takes_the_events_thresholds(client: tvbo.Client) -> None:
    default = client.create_session([tvbo.Float("x", 0, 1)]).info.events
    assert default == tvbo.EventsConfig()  # the client's defaults are the server's
    assert default.idle_seconds == 3600 and default.tracking.window == 32
    s = client.create_session(
        [tvbo.Float("x", 0, 1)],
        events={
            "optimum_moved": {"distance": 0.5, "relative_value": 0.25},
            "tracking": {"window": 16, "rise": 3.0},
            "drift_rate_factor": 4.0,
            "idle_seconds": None,  # no session-idle events
        },
    )
    assert s.info.events == tvbo.EventsConfig(
        tvbo.OptimumMovedConfig(0.5, 3, 0.25), tvbo.TrackingConfig(16, 3.0, 1.0), 4.0, None
    )
    assert client.session(s.id).info.events == s.info.events
    # a None other than idle_seconds's is the default, as an absent key is
    nulls = client.create_session(
        [tvbo.Float("x", 0, 1)], events={"tracking": None, "drift_rate_factor": None}
    )
    assert nulls.info.events == tvbo.EventsConfig()
    with pytest.raises(tvbo.InvalidField) as raised:
        client.create_session([tvbo.Float("x", 0, 1)], events={"tracking": {"window": 4}})
    assert raised.value.field == "events.tracking.window"


def test_algorithm_by_name_and_arms(client: tvbo.Client) -> None:
    s = client.create_session(
        [tvbo.Float("x", 0, 1)],
        algorithm="gp-ucb",
        arms=[tvbo.ArmSpec({"x": 0.1}, "low"), tvbo.ArmSpec({"x": 0.9})],
    )
    assert s.info.algorithm["name"] == "gp-ucb"
    assert s.info.arms is not None and [a.name for a in s.info.arms] == ["low", "arm-1"]
    (suggestion,) = s.suggest()
    assert suggestion.arm in ("low", "arm-1")


def test_algorithms_are_the_servers_and_each_one_creates(client: tvbo.Client) -> None:
    algorithms = client.algorithms()
    names = [a.name for a in algorithms]
    assert "bolt" in names and len(set(names)) == len(names)
    assert all(a.summary and a.priors in ("none", "optional", "required") for a in algorithms)
    # Each name listed is one a session takes (those that need priors take them too).
    for a in algorithms:
        if a.priors == "required":
            continue
        s = client.create_session([tvbo.Float("x", 0, 1)], algorithm=a.name)
        assert s.info.algorithm["name"] == a.name
        assert [x.id for x in client.sessions(algorithm=a.name)][:1] == [s.id]
        s.delete()


def test_suggest_observe_and_batch(client: tvbo.Client) -> None:
    s = make_session(client)
    suggestions = s.suggest(count=3)
    assert len({sg.id for sg in suggestions}) == 3
    for sg in suggestions:
        x, size = sg.params["x"], sg.params["size"]
        assert isinstance(x, float) and isinstance(size, int)
        assert 0 <= x <= 10 and 1 <= size <= 1024
    assert s.refresh().pending_count == 3

    measured = datetime.now(timezone.utc)  # after the session was created: same clock
    first = s.observe(suggestions[0], objective(suggestions[0].params), measured)
    assert first.suggestion_id == suggestions[0].id and first.active
    assert first.measured_at is not None and abs(first.measured_at - measured) < timedelta(
        milliseconds=1
    )
    by_id = s.observe(suggestions[1].id, 1.5)
    assert by_id.suggestion_id == suggestions[1].id and by_id.value == 1.5
    own = s.observe({"x": 3.0, "size": 32}, 0.0, regret=0.0)
    assert own.suggestion_id is None and own.params == {"x": 3.0, "size": 32.0}
    assert own.regret == 0.0

    batch = s.observe_many(
        [
            (suggestions[2], -1.0),
            tvbo.ObservationInput(value=-2.0, params={"x": 9.0, "size": 2}),
        ]
    )
    assert [o.value for o in batch] == [-1.0, -2.0]
    assert [o.seq for o in batch] == [batch[0].seq, batch[0].seq + 1]
    info = s.refresh()
    assert info.observation_count == 5 and info.pending_count == 0


def test_batch_is_all_or_nothing_and_the_error_names_the_field(client: tvbo.Client) -> None:
    s = make_session(client)
    with pytest.raises(tvbo.InvalidField) as raised:
        s.observe_many([({"x": 1.0, "size": 4}, 1.0), ({"x": 2.0, "size": 4}, 1e101)])
    e = raised.value
    assert e.status == 422 and e.field == "observations[1].value"
    assert e.detail.startswith("observations[1].value") and e.kind == "invalid-field"
    assert list(s.observations()) == []


def test_errors_carry_field_and_detail(client: tvbo.Client, server: Server) -> None:
    s = make_session(client)
    with pytest.raises(tvbo.InvalidField) as raised:
        s.suggest(count=65)
    assert raised.value.field == "count" and "between 1 and 64" in raised.value.detail
    with pytest.raises(tvbo.InvalidField) as bad_bounds:
        client.create_session([tvbo.Float("x", 1, 0)])
    assert bad_bounds.value.field is not None and bad_bounds.value.field.startswith("parameters[0]")
    (sg,) = s.suggest()
    s.observe(sg, 1.0)
    with pytest.raises(tvbo.Conflict) as twice:
        s.observe(sg, 2.0)
    assert twice.value.status == 409
    # The server's id of the request, for its logs (32 hex digits when none was sent).
    assert twice.value.request_id is not None and len(twice.value.request_id) == 32
    with pytest.raises(tvbo.NotFound):
        client.session("00000000-0000-4000-8000-000000000000")
    with tvbo.Client(server.url, "tvbo_not_a_key") as stranger:
        with pytest.raises(tvbo.Unauthorized):
            stranger.session(s.id)
    with pytest.raises(ValueError, match="timezone"):
        s.observe({"x": 1.0, "size": 2}, 1.0, datetime.now())


def test_best_predict_regret_model(client: tvbo.Client) -> None:
    s = make_session(client, algorithm="gp-ucb")
    s.optimize(objective, iterations=6)
    best = s.best()
    assert set(best.params) == {"x", "size"} and math.isfinite(best.mean) and best.std >= 0
    later = s.best(t=best.t + 5.0)
    assert later.t == pytest.approx(best.t + 5.0)
    predicted = s.predict([{"x": 3.0, "size": 32}, {"x": 9.0, "size": 2}])
    assert [p.params for p in predicted.predictions] == [
        {"x": 3.0, "size": 32.0},
        {"x": 9.0, "size": 2.0},
    ]
    assert all(p.std >= 0 for p in predicted.predictions)
    regret = s.regret()
    assert len(regret.points) == 6
    assert regret.cumulative_regret == pytest.approx(
        sum(p.regret for p in regret.points if p.regret is not None)
    )
    model = s.model()
    assert model.dataset_size == 6
    assert model.hyperparameters is not None and model.hyperparameters.spatial_lengthscale > 0
    assert {c.kind for c in model.compute_time} == {"suggest", "observe"}


def test_observations_iterate_over_pages(client: tvbo.Client) -> None:
    s = make_session(client, algorithm={"name": "r-gp-ucb", "reset_every": 4})
    s.observe_many([({"x": float(i), "size": 8}, float(i)) for i in range(7)])
    every = list(s.observations(include_pruned=True, page_size=2))
    assert [o.seq for o in every] == sorted(o.seq for o in every) and len(every) == 7
    assert [o.value for o in every] == [float(i) for i in range(7)]
    active = list(s.observations(page_size=3))
    assert 0 < len(active) <= 7 and all(o.active for o in active)
    pruned = [o for o in every if not o.active]
    assert len(pruned) == 7 - len(active)
    assert all(o.removed_reason == "reset" and o.removed_at is not None for o in pruned)
    tail = list(s.observations(include_pruned=True, after=every[4].seq))
    assert [o.seq for o in tail] == [o.seq for o in every[5:]]


def test_reattach_list_and_delete(client: tvbo.Client, server: Server) -> None:
    s = make_session(client)
    (sg,) = s.suggest()
    with tvbo.Client(server.url, server.api_key) as other:  # as after a restart
        again = other.session(s.id)
        assert again.info.id == s.id and again.info.pending_count == 1
        again.observe(sg, 4.0)
        listed = [info.id for info in other.sessions(page_size=2)]  # every page
        assert s.id in listed and len(listed) > 2 and len(set(listed)) == len(listed)
    assert s.refresh().observation_count == 1
    s.delete()
    with pytest.raises(tvbo.NotFound):
        s.refresh()


def test_fail_and_abandon_release_suggestions_and_skip_the_model(client: tvbo.Client) -> None:
    s = make_session(client)
    first, second, third = s.suggest(3)
    kept = s.observe(first, 1.0, metadata={"host": "db-3", "flags": ["jit"]})
    assert kept.metadata == {"host": "db-3", "flags": ["jit"]}
    run = s.fail(second, "timed out", metadata={"exit": 137})
    assert run.metadata == {"exit": 137}
    assert (run.kind, run.reason, run.suggestion_id) == ("failed", "timed out", second.id)
    s.abandon(third)
    s.abandon(third.id)  # twice is harmless
    with pytest.raises(tvbo.Conflict):
        s.observe(third, 2.0)
    with pytest.raises(tvbo.Conflict):
        s.abandon(first)
    (batch,) = s.observe_many(
        [
            tvbo.ObservationInput(params={"x": 1.0, "size": 8}, failed=True),
            ({"x": 2.0, "size": 4}, 3.0),
        ]
    )
    assert batch.value == 3.0
    info = s.refresh()
    assert (info.pending_count, info.observation_count, s.model().dataset_size) == (0, 2, 2)


def test_context_parameters_are_given_at_every_suggest(client: tvbo.Client) -> None:
    s = client.create_session(
        [tvbo.Float("level", 0, 1), tvbo.Float("load", 0, 1, context=True)],
        model={"warmup": 2},
        seed=3,
    )
    assert s.info.parameters[1].context is True
    with pytest.raises(tvbo.InvalidField) as raised:
        s.suggest()
    assert raised.value.field == "fixed.load"
    for load in (0.2, 0.9, 0.5):
        (sg,) = s.suggest(fixed={"load": load})
        assert sg.params["load"] == load
        s.observe(sg, -((float(sg.params["level"]) - load) ** 2))


def test_categorical_parameters_and_int_values(client: tvbo.Client) -> None:
    s = client.create_session(
        [
            tvbo.Categorical("codec", ["lz4", "zstd"]),
            tvbo.Int("level", 1, 9),
            tvbo.Categorical("data", ["logs", "json"], context=True),
        ],
        model={"warmup": 2},
        seed=5,
    )
    assert s.info.parameters[0].choices == ["lz4", "zstd"]
    assert s.info.parameters[0].low is None
    for data in ("logs", "json", "logs", "json"):
        (sg,) = s.suggest(fixed={"data": data})
        codec, level = sg.params["codec"], sg.params["level"]
        assert codec in ("lz4", "zstd") and sg.params["data"] == data
        assert isinstance(level, int) and 1 <= level <= 9
        observed = s.observe(sg, (1.0 if codec == "zstd" else 0.0) - level / 10)
        assert observed.params["codec"] == codec and isinstance(observed.params["level"], int)
    with pytest.raises(tvbo.InvalidField) as raised:
        s.observe({"codec": "gzip", "level": 3, "data": "logs"}, 0.0)
    assert raised.value.field == "params.codec"
    assert s.model().hyperparameters is not None


def test_optimize_catches_failures_stops_at_its_timeout_and_draws_progress(
    client: tvbo.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    s = make_session(client)

    def flaky(p: tvbo.Params) -> float:
        if float(p["x"]) > 5.0:
            raise TimeoutError("the benchmark hung")
        return objective(p)

    stored = s.optimize(flaky, 12, catch=(TimeoutError,), progress=True)
    timeline = s.timeline()
    failed = [r for r in timeline.ended_runs if r.kind == "failed"]
    assert len(stored) + len(failed) == 12 and failed, (len(stored), len(failed))
    assert all("the benchmark hung" in (r.reason or "") for r in failed)
    assert timeline.observation_count == len(stored) == s.refresh().observation_count
    assert "12/12" in capsys.readouterr().err
    steps = list(s.steps(page_size=5))
    assert len(steps) == timeline.step_count and steps[0].kind == "suggest"

    def slow(p: tvbo.Params) -> float:
        time.sleep(0.2)
        return objective(p)

    started = time.monotonic()
    more = s.optimize(slow, 1000, timeout=1.0)
    assert time.monotonic() - started < 2.5 and 2 <= len(more) <= 8


def test_resume_by_name(client: tvbo.Client) -> None:
    space = [tvbo.Float("x", 0, 10)]
    results: List[str] = []

    def start_worker() -> None:
        s = client.create_session(space, name="resumed worker", resume=True)
        results.append(s.id)

    workers = [threading.Thread(target=start_worker) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(results) == 8 and len(set(results)) == 1
    with pytest.raises(tvbo.Conflict) as raised:
        client.create_session([tvbo.Float("x", 0, 20)], name="resumed worker", resume=True)
    assert raised.value.field == "parameters[0].high"


def test_client_time_session(client: tvbo.Client) -> None:
    s = client.create_session(
        [tvbo.Float("x", 0, 1)], time={"source": "client"}, model={"warmup": 2}, algorithm="bolt"
    )
    assert s.info.time.source == "client"
    for step in range(4):
        (sg,) = s.suggest(t=float(step))
        assert sg.t >= step
        s.observe(sg, -((float(sg.params["x"]) - 0.5) ** 2), t=float(step))
    with pytest.raises(tvbo.InvalidField) as raised:
        s.suggest()
    assert raised.value.field == "t"
    assert s.best(t=4.0).t == 4.0
    assert s.predict([{"x": 0.5}], t=4.0).t == 4.0
    assert [o.t for o in s.observations()] == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.events_api
def test_events_are_read_in_order_and_after_a_seq(client: tvbo.Client) -> None:
    s = client.create_session(
        [tvbo.Float("x", 0, 1)],
        algorithm={"name": "r-gp-ucb", "reset_every": 4},
        time={"source": "client"},
    )
    for step in range(10):
        s.observe_many([tvbo.ObservationInput(float(step), params={"x": step / 10}, t=float(step))])
    events = list(s.events(page_size=1))
    assert [(e.seq, e.kind, e.data["resets"], e.t) for e in events] == [
        (1, "model-reset", 1, 3.0),
        (2, "model-reset", 2, 7.0),
    ]
    assert {e.step for e in events} <= {step.id for step in s.steps()}
    assert [e.seq for e in s.events(after=1)] == [2]
    # the global id (the stream's cursor) grows with seq; each event names its session
    assert {e.session for e in events} == {s.id} and 0 < events[0].id < events[1].id


def test_optimize_runs_workers_on_distinct_pending_points(client: tvbo.Client) -> None:
    s = make_session(client)
    seen: List[tvbo.Suggestion] = []
    in_flight = 0
    most = 0
    lock = threading.Lock()
    overlapping: List[tvbo.Params] = []
    pending_at_gate: List[int] = []
    # Evaluations overlap three at a time; once all three are in, before any goes on, the
    # barrier reads the session's pending count.
    gate = threading.Barrier(
        3, action=lambda: pending_at_gate.append(client.session(s.id).info.pending_count)
    )

    def fn(p: tvbo.Params) -> float:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
            if len(overlapping) < 3:
                overlapping.append(p)
        try:
            gate.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        with lock:
            in_flight -= 1
        return objective(p)

    stored = s.optimize(fn, iterations=9, workers=3, callback=lambda sg, obs: seen.append(sg))
    assert len(stored) == 9 and [o.seq for o in stored] == sorted(o.seq for o in stored)
    assert len({sg.id for sg in seen}) == 9
    assert {o.suggestion_id for o in stored} == {sg.id for sg in seen}
    assert most == 3
    # While the three overlapped, the server held their three suggestions as pending, and
    # they were three different settings.
    assert pending_at_gate and set(pending_at_gate) == {3}
    assert len({tuple(sorted(p.items())) for p in overlapping}) == 3
    assert s.refresh().observation_count == 9 and s.info.pending_count == 0


def test_optimize_raises_the_first_error_and_stops(client: tvbo.Client) -> None:
    s = make_session(client)
    calls = 0

    def fn(p: tvbo.Params) -> float:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("the measurement failed")
        return 1.0

    with pytest.raises(RuntimeError, match="measurement failed"):
        s.optimize(fn, iterations=20)
    assert calls == 3 and s.refresh().observation_count == 2


def test_ctrl_c_stops_the_workers(client: tvbo.Client) -> None:
    """An interrupt is raised at once, and the workers stop at once (before, they went on
    from 80 to 190 observations in the 3 s after it), leaving nothing pending."""
    import _thread

    s = make_session(client)

    def fn(p: tvbo.Params) -> float:
        time.sleep(0.02)
        return 1.0

    # As in a terminal: a shell's background job (CI's) starts with SIGINT ignored, and
    # then Python has no handler for the interrupt to raise through.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            s.optimize(fn, iterations=100_000, workers=4)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    at_interrupt = s.refresh().observation_count
    assert s.info.pending_count == 0
    time.sleep(1.0)
    assert s.refresh().observation_count == at_interrupt
    assert s.info.pending_count == 0


def test_to_pandas(client: tvbo.Client) -> None:
    import pandas  # a dependency of the CI run: this test must not skip

    s = make_session(client)
    s.observe_many([({"x": 1.0, "size": 4}, 1.0), ({"x": 2.0, "size": 8}, 2.0)])
    frame = s.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["value"]) == [1.0, 2.0] and list(frame["x"]) == [1.0, 2.0]
    assert list(frame["size"]) == [4.0, 8.0] and frame["active"].all()
    assert list(frame.columns) == [
        "seq",
        "value",
        "t",
        "active",
        "recorded_at",
        "suggestion_id",
        "measured_at",
        "regret",
        "estimated_regret",
        "removed_at",
        "removed_reason",
        "removed_t",
        "metadata",
        "x",
        "size",
    ]


# ---------------------------------------------------------------- values of their types


def test_values_have_the_types_of_their_parameters(own_client: tvbo.Client) -> None:
    """A whole-valued float reads back as a float (the server writes 4.0 as 4), an int as
    an int, a choice as a string, in every answer that carries a setting."""
    s = own_client.create_session(
        [
            tvbo.Float("buffer_kb", 0, 8, step=4),
            tvbo.Int("threads", 1, 16),
            tvbo.Categorical("codec", ["lz4", "zstd"]),
            tvbo.Float("load", 0, 2, context=True),
        ],
        model={"warmup": 2},
        seed=1,
    )
    kinds = {"buffer_kb": float, "threads": int, "codec": str, "load": float}

    def typed(params: tvbo.Params) -> bool:
        return all(type(params[name]) is kind for name, kind in kinds.items())

    suggestions = [sg for load in (1.0, 2.0, 0.0) for sg in s.suggest(fixed={"load": load})]
    assert all(typed(sg.params) for sg in suggestions)
    assert [sg.params["load"] for sg in suggestions] == [1.0, 2.0, 0.0]
    assert {sg.params["buffer_kb"] for sg in suggestions} <= {0.0, 4.0, 8.0}
    observed = [s.observe(sg, float(i)) for i, sg in enumerate(suggestions[:2])]
    failed = s.fail(suggestions[2], "crashed")
    own = s.observe({"buffer_kb": 4, "threads": 3, "codec": "lz4", "load": 1}, 5.0)
    assert all(typed(o.params) for o in observed + [own]) and typed(failed.params)
    assert own.params == {"buffer_kb": 4.0, "threads": 3, "codec": "lz4", "load": 1.0}
    assert all(typed(o.params) for o in s.observations())
    assert typed(s.best().params)
    predicted = s.predict([{"buffer_kb": 8, "threads": 2, "codec": "zstd", "load": 1}])
    assert all(typed(p.params) for p in predicted.predictions)
    timeline = s.timeline()
    assert all(typed(o.params) for o in timeline.observations)
    assert all(typed(r.params) for r in timeline.ended_runs) and timeline.ended_runs
    arms = own_client.create_session(
        [tvbo.Float("x", 0, 4)], algorithm="gp-ucb", arms=[tvbo.ArmSpec({"x": 2})]
    )
    assert arms.info.arms is not None and type(arms.info.arms[0].params["x"]) is float
    assert type(own_client.session(arms.id).info.arms[0].params["x"]) is float  # type: ignore[index]


def test_sessions_are_filtered_and_ordered(own_client: tvbo.Client) -> None:
    space = [tvbo.Float("x", 0, 1)]
    made: Dict[str, tvbo.Session] = {}
    for name, algorithm in [
        ("Cache west", "bolt"),
        ("cache east", "w-dbo"),
        ("radio", "bolt"),
        ("CACHE north", "bolt"),
    ]:
        made[name] = own_client.create_session(space, name=name, algorithm=algorithm)
    made["radio"].observe({"x": 0.5}, 1.0)

    def names(**kwargs: object) -> List[str]:
        return [s.info.name for s in own_client.sessions(page_size=1, **kwargs)]  # type: ignore[arg-type]

    assert names() == ["CACHE north", "radio", "cache east", "Cache west"]  # newest first
    assert names(name="cache") == ["CACHE north", "cache east", "Cache west"]
    assert names(name="cache", algorithm="bolt") == ["CACHE north", "Cache west"]
    assert names(algorithm="w-dbo") == ["cache east"]
    assert names(sort="name") == ["cache east", "CACHE north", "Cache west", "radio"]
    assert names(sort="name", order="desc") == ["radio", "Cache west", "CACHE north", "cache east"]
    assert names(sort="created", order="asc") == list(made)
    assert names(sort="observations")[0] == "radio"
    assert names(sort="last_activity")[0] == "radio"
    with pytest.raises(tvbo.BadRequest) as raised:
        names(sort="size")
    assert "sort" in raised.value.detail


def test_the_callback_sees_each_suggestion_and_its_stored_observation(
    own_client: tvbo.Client,
) -> None:
    s = make_session(own_client)
    seen: List[Tuple[tvbo.Suggestion, tvbo.Observation]] = []
    stored = s.optimize(objective, 6, workers=2, callback=lambda sg, o: seen.append((sg, o)))
    assert sorted(o.seq for _, o in seen) == [o.seq for o in stored]
    for suggestion, observation in seen:
        assert isinstance(suggestion, tvbo.Suggestion)
        assert isinstance(observation, tvbo.Observation)
        assert observation.suggestion_id == suggestion.id
        assert observation.params == suggestion.params


# ---------------------------------------------------------------- nothing left pending


def slow_session(client: tvbo.Client) -> tvbo.Session:
    return client.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 100})


def test_ctrl_c_abandons_the_suggestions_in_hand(own_client: tvbo.Client) -> None:
    """Ctrl-C while four workers measure: raised within a moment (not after the 3 s of
    their measurements), the four suggestions abandoned (before: pending for the hour of
    time.pending_timeout), and the values measured afterwards not stored."""
    import _thread

    s = slow_session(own_client)
    started = threading.Barrier(5)

    def fn(p: tvbo.Params) -> float:
        try:
            started.wait(timeout=10)
        except threading.BrokenBarrierError:
            pass
        time.sleep(3.0)
        return 1.0

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupt() -> None:
        started.wait(10)
        _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            began = time.monotonic()
            s.optimize(fn, iterations=100, workers=4)
        took = time.monotonic() - began
    finally:
        interrupter.join()
        signal.signal(signal.SIGINT, previous)
    assert took < 2.0, took
    info = s.refresh()
    assert (info.pending_count, info.observation_count) == (0, 0)
    abandoned = [r for r in s.timeline().ended_runs if r.kind == "abandoned"]
    assert len(abandoned) == 4
    time.sleep(3.5)  # the measurements end: their values are dropped
    assert (s.refresh().pending_count, s.info.observation_count) == (0, 0)


def test_an_error_abandons_its_suggestion_and_the_others_are_stored(
    own_client: tvbo.Client,
) -> None:
    s = slow_session(own_client)
    calls = [0]
    lock = threading.Lock()

    def fn(p: tvbo.Params) -> float:
        with lock:
            calls[0] += 1
            mine = calls[0]
        if mine == 3:
            time.sleep(0.2)
            raise RuntimeError("the benchmark crashed")
        time.sleep(0.6)
        return float(mine)

    with pytest.raises(RuntimeError, match="crashed"):
        s.optimize(fn, iterations=50, workers=3)
    info = s.refresh()
    assert info.pending_count == 0 and info.observation_count == 2  # the two in hand
    (abandoned,) = [r for r in s.timeline().ended_runs if r.kind == "abandoned"]


def test_an_interrupt_raised_by_the_objective_abandons_what_is_in_hand(
    own_client: tvbo.Client,
) -> None:
    s = slow_session(own_client)
    calls = [0]
    lock = threading.Lock()

    def fn(p: tvbo.Params) -> float:
        with lock:
            calls[0] += 1
            mine = calls[0]
        if mine == 4:
            time.sleep(0.3)
            raise KeyboardInterrupt
        time.sleep(3.0)
        return 1.0

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        s.optimize(fn, iterations=50, workers=4)
    assert time.monotonic() - started < 2.0
    info = s.refresh()
    assert (info.pending_count, info.observation_count) == (0, 0)


# ---------------------------------------------------------------- pending, fixed, resume


def context_session(client: tvbo.Client, **kwargs: object) -> tvbo.Session:
    return client.create_session(
        [tvbo.Float("level", 0, 1), tvbo.Float("load", 0, 1, context=True)],
        model={"warmup": 2},
        seed=11,
        **kwargs,  # type: ignore[arg-type]
    )


def test_pending_lists_and_abandon_pending_abandons_what_a_stopped_worker_left(
    own_client: tvbo.Client, default_server: Server, own_key: str
) -> None:
    s = make_session(own_client)
    assert s.pending() == [] and s.abandon_pending() == 0
    first, second, third = s.suggest(3)
    s.observe(first, 1.0)
    (fourth,) = s.suggest()
    listed = s.pending()
    assert [p.id for p in listed] == [second.id, third.id, fourth.id]  # oldest first
    assert [p.params for p in listed] == [second.params, third.params, fourth.params]
    assert all(type(p.params["size"]) is int for p in listed)
    with tvbo.Client(default_server.url, own_key) as restarted:  # the next process
        again = restarted.session(s.id)
        assert [p.id for p in again.pending()] == [second.id, third.id, fourth.id]
        assert again.abandon_pending() == 3
        assert again.pending() == [] and again.abandon_pending() == 0
    info = s.refresh()
    assert (info.pending_count, info.observation_count) == (0, 1)
    abandoned = [r for r in s.timeline().ended_runs if r.kind == "abandoned"]
    assert {r.suggestion_id for r in abandoned} == {second.id, third.id, fourth.id}


def test_abandon_pending_leaves_a_suggestion_that_ended_meanwhile(
    own_client: tvbo.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listed, then observed or failed by its worker before the abandon: skipped, not
    counted (409 conflict); the others are abandoned."""
    s = make_session(own_client)
    observed, failed, left = s.suggest(3)
    listed = s.pending()
    s.observe(observed, 2.0)
    s.fail(failed, "crashed")
    monkeypatch.setattr(s, "pending", lambda: listed)
    assert s.abandon_pending() == 1
    info = s.refresh()
    assert (info.pending_count, info.observation_count) == (0, 1)
    runs = {r.suggestion_id: r.kind for r in s.timeline().ended_runs}
    assert runs == {failed.id: "failed", left.id: "abandoned"}


def test_best_holds_the_values_fixed_gives_and_else_the_newest_context(
    own_client: tvbo.Client,
) -> None:
    s = context_session(own_client)
    for level, load in [(0.2, 0.2), (0.9, 0.9), (0.5, 0.6), (0.4, 0.35)]:
        s.observe({"level": level, "load": load}, -((level - load) ** 2))
    assert s.best().params["load"] == 0.35  # the newest observation's
    given = s.best(fixed={"load": 0.8})
    assert given.params["load"] == 0.8 and 0 <= float(given.params["level"]) <= 1
    assert type(given.params["load"]) is float
    held = s.best(t=given.t, fixed={"level": 0.25})  # an ordinary parameter held too
    assert held.params == {"level": 0.25, "load": 0.35}
    both = s.best(fixed={"level": 0.5, "load": 0.1})
    assert both.params == {"level": 0.5, "load": 0.1}
    wrong: List[Tuple[Dict[str, tvbo.ParamValue], str]] = [
        ({"load": 2.0}, "fixed.load"),
        ({"speed": 1}, "fixed.speed"),
    ]
    for fixed, field in wrong:
        with pytest.raises(tvbo.InvalidField) as raised:
            s.best(fixed=fixed)
        assert raised.value.field == field
    with pytest.raises(ValueError, match="fixed.load"):
        s.best(fixed={"load": math.nan})


def test_optimize_runs_a_context_session_with_fixed_values_or_a_function_of_the_round(
    own_client: tvbo.Client,
) -> None:
    s = context_session(own_client)
    with pytest.raises(tvbo.InvalidField) as raised:  # what it did before fixed=
        s.optimize(lambda p: 0.0, 2)
    assert raised.value.field == "fixed.load"
    seen: List[float] = []
    lock = threading.Lock()

    def fn(p: tvbo.Params) -> float:
        with lock:
            seen.append(float(p["load"]))
        return -((float(p["level"]) - float(p["load"])) ** 2)

    held = s.optimize(fn, 4, workers=2, fixed={"load": 0.3})
    assert len(held) == 4 and all(o.params["load"] == 0.3 for o in held)
    assert seen == [0.3] * 4
    loads = [0.1, 0.5, 0.9, 0.2, 0.7, 0.4]
    rounds: List[int] = []

    def load_now(number: int) -> Dict[str, tvbo.ParamValue]:
        with lock:
            rounds.append(number)
        return {"load": loads[number]}

    measured = s.optimize(fn, len(loads), workers=3, fixed=load_now)
    assert sorted(rounds) == list(range(len(loads)))
    assert sorted(float(o.params["load"]) for o in measured) == sorted(loads)
    assert sorted(seen[4:]) == sorted(loads)
    observed = {o.suggestion_id: o.params["load"] for o in s.observations()}
    assert [observed[o.suggestion_id] for o in measured] == [o.params["load"] for o in measured]
    with pytest.raises(TypeError, match="round 0"):
        s.optimize(fn, 2, fixed=lambda number: 0.5)  # type: ignore[arg-type]
    info = s.refresh()
    assert (info.pending_count, info.observation_count) == (0, 10)


def test_resume_by_name_alone(own_client: tvbo.Client, default_server: Server) -> None:
    with pytest.raises(tvbo.InvalidField) as raised:
        own_client.resume_session("nightly cache")
    assert raised.value.field == "parameters"
    made = context_session(own_client, name="nightly cache", resume=True)
    made.observe({"level": 0.5, "load": 0.5}, 1.0)
    again = own_client.resume_session("nightly cache")
    assert again.id == made.id and again.info.parameters == made.info.parameters
    assert again.info.observation_count == 1  # as it is
    newer = context_session(own_client, name="nightly cache")  # a plain create: a duplicate
    assert own_client.resume_session("nightly cache").id == newer.id  # the newest
    stranger_key = default_server.make_key(f"t-{uuid.uuid4().hex[:12]}")
    with tvbo.Client(default_server.url, stranger_key) as stranger:  # another tenant's
        with pytest.raises(tvbo.InvalidField) as raised:
            stranger.resume_session("nightly cache")
        assert raised.value.field == "parameters"
