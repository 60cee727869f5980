"""Request records as a pandas table (the one place records become a DataFrame).

Kept apart from :mod:`workbench.bench._record`, whose measuring core needs only the
standard library, so the host-side load generator runs without pandas.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from workbench.bench._request_record import REQUEST_DTYPES, RequestRecord

__all__ = ["records_to_frame"]


def records_to_frame(records: Iterable[RequestRecord], constants: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Tidy table of records: one row per request, columns in :data:`REQUEST_DTYPES` order.

    Args:
        records: the measured requests.
        constants: extra columns with one value for every row (e.g. ``concurrency``),
            placed first.

    Returns:
        DataFrame with ``len(records)`` rows (empty with the same columns when none).
    """
    rows = [dataclasses.asdict(r) for r in records]
    frame = pd.DataFrame(rows, columns=list(REQUEST_DTYPES))
    frame = frame.astype(REQUEST_DTYPES)
    for i, (name, value) in enumerate((constants or {}).items()):
        if value is None and LEVEL_COLUMN_DTYPES.get(name) == "float64":
            value = float("nan")
        frame.insert(i, name, pd.Series([value] * len(frame), index=frame.index, dtype=_dtype_for(value, name)))
    return frame


#: dtypes of level columns whose value may be missing (None), so every level's rows agree.
LEVEL_COLUMN_DTYPES: dict[str, str] = {
    "input_len": "Int64",
    "sweep": "str",
    "sweep_value": "float64",
    "temperature": "float64",
    "backend": "str",
}


def _dtype_for(value: Any, name: str = "") -> str:
    if name in LEVEL_COLUMN_DTYPES:
        return LEVEL_COLUMN_DTYPES[name]
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, float):
        return "float64"
    if value is None:
        return "object"
    return "str"
