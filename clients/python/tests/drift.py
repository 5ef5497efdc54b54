"""Comparing the client's models with the schemas of openapi/openapi.json.

:func:`differences` lists every disagreement between a model (a dataclass or a TypedDict)
and the object schema of the same name: a property missing on either side, a property
required on one side only, nullability, and the JSON types a value may take.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import typing
from datetime import datetime
from typing import Any, Dict, List, Literal, Set, Union

JsonTypes = Set[str]


def resolve(spec: Dict[str, Any], schema: Dict[str, Any]) -> Dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return dict(spec["components"]["schemas"][ref.rsplit("/", 1)[-1]])
    return schema


def schema_types(spec: Dict[str, Any], schema: Dict[str, Any]) -> JsonTypes:
    """The JSON types a value of ``schema`` may take (``integer`` also counts as number)."""
    schema = resolve(spec, schema)
    if "oneOf" in schema:
        out: JsonTypes = set()
        for alternative in schema["oneOf"]:
            out |= schema_types(spec, alternative)
        return out
    kind = schema.get("type")
    if kind is None:
        return {"object"} if "properties" in schema else {"any"}
    kinds = {kind} if isinstance(kind, str) else set(kind)
    if "integer" in kinds:
        kinds.add("number")
    return kinds


def model_types(tp: Any) -> JsonTypes:
    """The JSON types a Python annotation accepts."""
    origin = typing.get_origin(tp)
    if origin is Union:
        out: JsonTypes = set()
        for arg in typing.get_args(tp):
            out |= model_types(arg)
        return out
    if origin is Literal:
        return {"string"}
    if tp is type(None):
        return {"null"}
    if tp is Any:
        return {"any"}
    if origin in (list, List):
        return {"array"}
    mappings = (dict, Dict, collections.abc.Mapping)
    if origin in mappings or dataclasses.is_dataclass(tp) or hasattr(tp, "__required_keys__"):
        return {"object"}
    if tp is int:
        return {"integer", "number"}
    if tp is float:
        return {"number"}
    if tp is bool:
        return {"boolean"}
    if tp in (str, datetime):
        return {"string"}
    raise TypeError(f"no JSON type for {tp!r}")


def model_fields(model: Any) -> Dict[str, tuple[Any, bool]]:
    """Field name → (annotation, required) of a dataclass or TypedDict."""
    hints = typing.get_type_hints(model)
    if dataclasses.is_dataclass(model):
        return {
            f.name: (
                hints[f.name],
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(model)
        }
    required: "frozenset[str]" = getattr(model, "__required_keys__", frozenset())
    return {name: (hints[name], name in required) for name in hints}


def differences(spec: Dict[str, Any], name: str, model: Any) -> List[str]:
    """Every disagreement between ``model`` and the schema ``name``; empty if none."""
    schemas = spec["components"]["schemas"]
    if name not in schemas:
        return [f"{name}: no such schema in the OpenAPI document"]
    schema = schemas[name]
    properties: Dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields = model_fields(model)
    out: List[str] = []
    for prop in sorted(set(properties) - set(fields)):
        out.append(f"{name}.{prop}: in the schema, not in {model.__name__}")
    for field in sorted(set(fields) - set(properties)):
        out.append(f"{name}.{field}: in {model.__name__}, not in the schema")
    for field in sorted(set(fields) & set(properties)):
        annotation, is_required = fields[field]
        if is_required != (field in required):
            out.append(
                f"{name}.{field}: required in the {'client' if is_required else 'schema'} only"
            )
        theirs = schema_types(spec, properties[field])
        ours = model_types(annotation)
        if "any" in ours or "any" in theirs:
            continue
        # An optional field may be absent: its model says None, the schema need not.
        ours_cmp = ours - ({"null"} if field not in required and "null" not in theirs else set())
        if theirs != ours_cmp and not (theirs == {"number"} and ours_cmp == {"number"}):
            out.append(f"{name}.{field}: schema types {sorted(theirs)}, client {sorted(ours_cmp)}")
    return out
