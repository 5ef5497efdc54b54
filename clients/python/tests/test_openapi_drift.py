"""The client's models against openapi/openapi.json: a field added to or removed from
either side, a change of required-ness, nullability or JSON type, an enum value added or
dropped, or an operation's body changing, fails here."""

from __future__ import annotations

import copy
import inspect
import json
import typing
from typing import Any, Dict, List, Set

import pytest

import tvbo
from tvbo import models

from .conftest import repo_root
from .drift import differences


@pytest.fixture(scope="module")
def spec() -> Dict[str, Any]:
    with open(repo_root() / "openapi" / "openapi.json", encoding="utf-8") as f:
        return dict(json.load(f))


@pytest.mark.parametrize("name", sorted(models.SCHEMAS))
def test_model_matches_its_schema(spec: Dict[str, Any], name: str) -> None:
    assert differences(spec, name, models.SCHEMAS[name]) == []


@pytest.mark.parametrize("name", sorted(models.ENUMS))
def test_enum_matches_its_schema(spec: Dict[str, Any], name: str) -> None:
    schema = spec["components"]["schemas"][name]
    assert set(typing.get_args(models.ENUMS[name])) == set(schema["enum"])


def test_the_session_listing_takes_every_query_parameter(spec: Dict[str, Any]) -> None:
    """``sessions()`` filters and orders as ``GET /v1/sessions`` does (its ``limit`` is
    ``page_size``, its ``cursor`` the paging), with the same values."""
    query = {p["name"]: p["schema"] for p in spec["paths"]["/v1/sessions"]["get"]["parameters"]}
    assert set(query) - {"limit", "cursor"} == {"name", "algorithm", "sort", "order"}
    for owner in (tvbo.Client, tvbo.AsyncClient):
        assert parameters(owner.sessions) == {"page_size", "name", "algorithm", "sort", "order"}
    assert set(typing.get_args(models.SessionSort)) == set(query["sort"]["enum"])
    assert set(typing.get_args(models.SortOrder)) == set(query["order"]["enum"])
    # The algorithms' names are the server's (``Client.algorithms``), not a list here.
    assert query["algorithm"]["type"] == "string"


def parameters(fn: Any) -> Set[str]:
    return {p for p in inspect.signature(fn).parameters if p not in ("self", "idempotency_key")}


def body_properties(spec: Dict[str, Any], name: str) -> Set[str]:
    return set(spec["components"]["schemas"][name]["properties"])


@pytest.mark.parametrize(
    "schema, method, renamed",
    [
        ("CreateSession", "create_session", {}),
        ("SuggestRequest", "suggest", {}),
        ("PredictRequest", "predict", {}),
        # ``suggestion`` is the suggestion_id, or the params of the client's own setting;
        # ``fail`` sends ``failed`` with its ``reason``.
        (
            "ObservationInput",
            "observe fail",
            {"suggestion": {"suggestion_id", "params"}, "reason": {"failed", "reason"}},
        ),
    ],
)
def test_operations_take_every_property_of_their_body(
    spec: Dict[str, Any], schema: str, method: str, renamed: Dict[str, Set[str]]
) -> None:
    owners = (
        [tvbo.Client, tvbo.AsyncClient]
        if method == "create_session"
        else [
            tvbo.Session,
            tvbo.AsyncSession,
        ]
    )
    for owner in owners:
        names: Set[str] = set()
        for name in method.split():
            for p in parameters(getattr(owner, name)):
                names |= renamed.get(p, {p})
        assert names == body_properties(spec, schema), owner.__name__


def test_sync_and_async_methods_agree() -> None:
    for sync, asynchronous in [(tvbo.Client, tvbo.AsyncClient), (tvbo.Session, tvbo.AsyncSession)]:
        public = {n for n in vars(sync) if not n.startswith("_")}
        assert public == {n for n in vars(asynchronous) if not n.startswith("_")} - {"aclose"} | (
            {"close"} if "close" in public else set()
        )
        for name in public - {"close", "optimize", "request"}:
            member = vars(sync)[name]
            if callable(member):
                assert parameters(member) == parameters(vars(asynchronous)[name]), name


# The drift check itself must catch drift: each mutation of the document below is a
# change the server could make, and must be reported.
def mutations(spec: Dict[str, Any]) -> List[Dict[str, Any]]:
    out = []
    added = copy.deepcopy(spec)
    added["components"]["schemas"]["Suggestion"]["properties"]["score"] = {"type": "number"}
    out.append(added)
    removed = copy.deepcopy(spec)
    del removed["components"]["schemas"]["Observation"]["properties"]["removed_t"]
    out.append(removed)
    now_required = copy.deepcopy(spec)
    now_required["components"]["schemas"]["Best"]["required"].append("arm")
    out.append(now_required)
    retyped = copy.deepcopy(spec)
    retyped["components"]["schemas"]["Session"]["properties"]["seed"] = {"type": "string"}
    out.append(retyped)
    nullable = copy.deepcopy(spec)
    nullable["components"]["schemas"]["Prediction"]["properties"]["std"] = {
        "type": ["number", "null"]
    }
    out.append(nullable)
    return out


def test_the_check_reports_drift(spec: Dict[str, Any]) -> None:
    for mutated in mutations(spec):
        found = [d for name, m in models.SCHEMAS.items() for d in differences(mutated, name, m)]
        assert len(found) == 1, found
