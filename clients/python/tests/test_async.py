"""Every method of the asyncio client against a live server (one event loop per test,
run with ``asyncio.run``: no pytest plugin needed)."""

from __future__ import annotations

import asyncio
import math
from typing import List

import pytest

import tvbo

from .server import Server


def objective(p: tvbo.Params) -> float:
    return -((float(p["x"]) - 3.0) ** 2)


def test_async_client_covers_every_method(server: Server) -> None:
    async def main() -> None:
        async with tvbo.AsyncClient(server.url, server.api_key, timeout=30) as client:
            s = await client.create_session(
                [tvbo.Float("x", 0, 10), tvbo.Int("n", 1, 100, log=True)],
                name="async",
                algorithm={"name": "gp-ucb"},
                model={"warmup": 2},
                seed=3,
            )
            assert s.info.parameters[1] == tvbo.ParameterSpec("n", 1.0, 100.0, "int", "log")
            assert s.info.events == tvbo.EventsConfig()
            quiet = await client.create_session(
                [tvbo.Float("x", 0, 1)], events={"idle_seconds": None, "tracking": {"window": 8}}
            )
            assert quiet.info.events.idle_seconds is None
            assert quiet.info.events.tracking == tvbo.TrackingConfig(window=8)
            await quiet.delete()
            suggestions = await s.suggest(count=2)
            assert len({sg.id for sg in suggestions}) == 2
            first = await s.observe(suggestions[0], objective(suggestions[0].params))
            assert first.suggestion_id == suggestions[0].id
            batch = await s.observe_many(
                [(suggestions[1], 0.5), tvbo.ObservationInput(1.0, params={"x": 3.0, "n": 7})]
            )
            assert [o.value for o in batch] == [0.5, 1.0]

            async def evaluate(p: tvbo.Params) -> float:
                await asyncio.sleep(0.01)
                return objective(p)

            stored = await s.optimize(evaluate, iterations=4, workers=2)
            assert len(stored) == 4 and len({o.suggestion_id for o in stored}) == 4

            best = await s.best()
            assert set(best.params) == {"x", "n"} and math.isfinite(best.mean)
            assert (await s.best(t=best.t + 1.0)).t == pytest.approx(best.t + 1.0)
            predicted = await s.predict([{"x": 3.0, "n": 7}])
            assert predicted.predictions[0].std >= 0
            regret = await s.regret()
            assert len(regret.points) == 7
            model = await s.model()
            assert model.dataset_size == 7
            seen: List[int] = [o.seq async for o in s.observations(page_size=2)]
            assert [e.seq async for e in s.events()] == []
            assert len(seen) == 7 and seen == sorted(seen)
            frame = await s.to_pandas()
            assert list(frame["seq"]) == seen

            again = await client.session(s.id)
            assert (await again.refresh()).observation_count == 7
            assert any([x.id == s.id async for x in client.sessions()])
            with pytest.raises(tvbo.InvalidField) as raised:
                await s.suggest(count=0)
            assert raised.value.field == "count"
            await s.delete()
            with pytest.raises(tvbo.NotFound):
                await client.session(s.id)

    asyncio.run(main())


def test_async_optimize_raises_the_first_error(server: Server) -> None:
    async def main() -> None:
        async with tvbo.AsyncClient(server.url, server.api_key) as client:
            s = await client.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 2})

            async def failing(p: tvbo.Params) -> float:
                raise ValueError("sensor offline")

            with pytest.raises(ValueError, match="sensor offline"):
                await s.optimize(failing, iterations=5, workers=2)
            info = await s.refresh()
            assert info.observation_count == 0
            assert info.pending_count == 0  # the suggestions it failed on, abandoned

    asyncio.run(main())


def test_async_optimize_stops_when_the_callback_raises(server: Server) -> None:
    async def main() -> None:
        async with tvbo.AsyncClient(server.url, server.api_key) as client:
            s = await client.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 2})
            seen: List[int] = []

            async def evaluate(p: tvbo.Params) -> float:
                return float(p["x"])

            def callback(sg: tvbo.Suggestion, obs: tvbo.Observation) -> None:
                seen.append(obs.seq)
                raise RuntimeError("the logger failed")

            with pytest.raises(RuntimeError, match="logger failed"):
                await s.optimize(evaluate, iterations=10, workers=2, callback=callback)
            # Each worker stopped at its first failing callback: no work went on behind.
            assert len(seen) <= 2
            assert (await s.refresh()).observation_count == len(seen)

    asyncio.run(main())


def test_async_values_have_the_types_of_their_parameters(
    default_server: Server, own_key: str
) -> None:
    async def main() -> None:
        async with tvbo.AsyncClient(default_server.url, own_key) as client:
            s = await client.create_session(
                [tvbo.Float("buffer_kb", 0, 8, step=4), tvbo.Float("load", 0, 2, context=True)],
                model={"warmup": 2},
            )
            (sg,) = await s.suggest(fixed={"load": 1.0})
            assert type(sg.params["buffer_kb"]) is float and type(sg.params["load"]) is float
            stored = await s.observe(sg, 1.0)
            assert type(stored.params["load"]) is float
            assert all([type(o.params["buffer_kb"]) is float async for o in s.observations()])
            assert type((await s.best()).params["buffer_kb"]) is float
            listed = [x.info.name async for x in client.sessions(sort="name", order="asc")]
            assert listed == [""]

    asyncio.run(main())


def test_a_cancelled_async_optimize_leaves_nothing_pending(
    default_server: Server, own_key: str
) -> None:
    """Cancelled (as Ctrl-C under asyncio.run cancels the main task) while its tasks
    measure: the suggestions in hand are abandoned before the cancellation goes on."""

    async def main() -> None:
        async with tvbo.AsyncClient(default_server.url, own_key) as client:
            s = await client.create_session([tvbo.Float("x", 0, 1)], model={"warmup": 100})
            measuring = asyncio.Event()

            async def slow(p: tvbo.Params) -> float:
                measuring.set()
                await asyncio.sleep(30)
                return 1.0

            run = asyncio.ensure_future(s.optimize(slow, iterations=100, workers=4))
            await measuring.wait()
            await asyncio.sleep(0.3)  # every task measuring
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            info = await s.refresh()
            assert (info.pending_count, info.observation_count) == (0, 0)
            timeline = await s.timeline()
            assert len([r for r in timeline.ended_runs if r.kind == "abandoned"]) == 4

    asyncio.run(main())


def test_async_pending_best_given_fixed_optimize_with_fixed_and_resume_by_name(
    default_server: Server, own_key: str
) -> None:
    async def main() -> None:
        async with tvbo.AsyncClient(default_server.url, own_key) as client:
            with pytest.raises(tvbo.InvalidField) as raised:
                await client.resume_session("by load")
            assert raised.value.field == "parameters"
            s = await client.create_session(
                [tvbo.Float("level", 0, 1), tvbo.Float("load", 0, 1, context=True)],
                name="by load",
                model={"warmup": 2},
            )
            assert (await client.resume_session("by load")).id == s.id

            async def evaluate(p: tvbo.Params) -> float:
                await asyncio.sleep(0.01)
                return -((float(p["level"]) - float(p["load"])) ** 2)

            held = await s.optimize(evaluate, 3, workers=2, fixed={"load": 0.3})
            assert [o.params["load"] for o in held] == [0.3] * 3
            loads = [0.1, 0.8, 0.45, 0.6]
            measured = await s.optimize(
                evaluate, len(loads), workers=2, fixed=lambda number: {"load": loads[number]}
            )
            assert sorted(float(o.params["load"]) for o in measured) == sorted(loads)
            newest = max(measured, key=lambda o: o.seq).params["load"]
            assert (await s.best()).params["load"] == newest
            assert (await s.best(fixed={"load": 0.75})).params["load"] == 0.75

            first, second = await s.suggest(2, fixed={"load": 0.5})
            assert [p.id for p in await s.pending()] == [first.id, second.id]
            await s.observe(first, 0.0)
            assert await s.abandon_pending() == 1
            assert await s.pending() == []
            info = await s.refresh()
            assert (info.pending_count, info.observation_count) == (0, 8)

    asyncio.run(main())
