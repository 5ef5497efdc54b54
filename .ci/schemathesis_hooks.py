"""Schemathesis hooks of the API fuzzing step (.ci/api-fuzz).

Generated session ids name no session, so without help every request on a session would
stop at 404. These hooks point most of them at the sessions `.ci/api-fuzz` created first
(`TVBO_FUZZ_SESSIONS`, comma-separated ids; every seeded session tunes the parameters
named in `TVBO_FUZZ_PARAMETERS`), and rename the keys of generated parameter maps to
those names, so bodies reach the validation and the model of a real session. The choice
is a function of the generated value, so a run is reproduced by its seed. DELETE keeps
its generated id: the stateful phase deletes the sessions it creates itself.
"""

import os
import zlib

import schemathesis

SESSIONS = [s for s in os.environ.get("TVBO_FUZZ_SESSIONS", "").split(",") if s]
PARAMETERS = [p for p in os.environ.get("TVBO_FUZZ_PARAMETERS", "").split(",") if p]


def _pick(value):
    """A seeded session for most generated values; None (keep the value) for one in five."""
    index = zlib.crc32(repr(value).encode()) % (len(SESSIONS) * 4 + 1)
    return SESSIONS[index % len(SESSIONS)] if SESSIONS and index < len(SESSIONS) * 4 else None


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    operation = getattr(context, "operation", None)
    if operation is None or operation.method.upper() == "DELETE":
        return path_parameters
    if path_parameters and "id" in path_parameters:
        chosen = _pick(path_parameters["id"])
        if chosen is not None:
            path_parameters["id"] = chosen
    return path_parameters


def _rename(values):
    """A generated parameter map with its values under the seeded sessions' names."""
    if not isinstance(values, dict) or not PARAMETERS:
        return values
    return dict(zip(PARAMETERS, values.values()))


@schemathesis.hook
def map_body(context, body):
    if not isinstance(body, dict):
        return body
    if isinstance(body.get("params"), dict):
        body["params"] = _rename(body["params"])
    points = body.get("points")
    if isinstance(points, list):
        body["points"] = [_rename(point) for point in points]
    observations = body.get("observations")
    if isinstance(observations, list):
        for observation in observations:
            if isinstance(observation, dict) and isinstance(observation.get("params"), dict):
                observation["params"] = _rename(observation["params"])
    return body
