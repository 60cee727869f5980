"""Request records as a pandas table (the one place records become a DataFrame).

Kept apart from :mod:`workbench.bench._record`, whose measuring core needs only the
standard library, so the host-side load generator runs without pandas.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from workbench.bench._record import REQUEST_DTYPES, RequestRecord

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
        frame.insert(i, name, pd.Series([value] * len(frame), index=frame.index, dtype=_dtype_for(value)))
    return frame


def _dtype_for(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, float):
        return "float64"
    if value is None:
        return "object"
    return "str"
