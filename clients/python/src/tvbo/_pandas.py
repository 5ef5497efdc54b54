"""``to_pandas``: observations as a DataFrame (pandas is an optional dependency)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Sequence

from .models import Observation

if TYPE_CHECKING:
    import pandas

COLUMNS = [f.name for f in dataclasses.fields(Observation) if f.name != "params"]


def observations_frame(
    observations: Iterable[Observation], parameters: Sequence[str] = ()
) -> "pandas.DataFrame":
    """One row per observation: the :class:`tvbo.Observation` fields (``seq`` first, no
    ``params``), then one column per parameter, named after it (``param.<name>`` when
    the name is one of the fixed columns), in the order of ``parameters`` first."""
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - exercised only without pandas
        raise ImportError("to_pandas needs pandas: pip install 'tvbo[pandas]'") from e
    rows: List[Dict[str, Any]] = []
    names: List[str] = [f"param.{n}" if n in COLUMNS else n for n in parameters]
    for o in observations:
        row: Dict[str, Any] = {c: getattr(o, c) for c in COLUMNS}
        for name, value in o.params.items():
            column = f"param.{name}" if name in COLUMNS else name
            if column not in names:
                names.append(column)
            row[column] = value
        rows.append(row)
    return pandas.DataFrame(rows, columns=COLUMNS + names)
