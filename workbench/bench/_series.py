"""A level's observations as one long table: what the server and the host showed over time.

Columns (:data:`SERIES_COLUMNS`): ``level_index``, ``repeat``, ``source`` (``metrics``,
``log``, ``gpu``), ``t_epoch_s`` (Unix seconds), ``t_s`` (wall seconds since the level's
first request started; log points have whole seconds unless ``SGLANG_LOG_MS`` is set),
``rank`` (``"DP1 TP0"``, ``"gpu0"``, ``""``), ``name``, ``value``, ``batch`` (log
points: ``decode``/``prefill``; else None). A run stores them as ``server_series.parquet``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from workbench.bench._batchlog import parse_batch_log

__all__ = ["SERIES_COLUMNS", "add_log_series", "series_frame"]

SERIES_COLUMNS: dict[str, str] = {
    "level_index": "Int64",
    "repeat": "Int64",
    "source": "str",
    "t_epoch_s": "float64",
    "t_s": "float64",
    "rank": "str",
    "name": "str",
    "value": "float64",
    "batch": "str",
}


def series_frame(
    points: Iterable[Mapping[str, Any]], *, level_index: int, repeat: int, start_epoch_s: float
) -> pd.DataFrame:
    """The long table of ``points`` for one level (empty with the same columns when none)."""
    rows = [
        {
            "level_index": level_index,
            "repeat": repeat,
            "source": p["source"],
            "t_epoch_s": float(p["t_epoch_s"]),
            "t_s": float(p["t_epoch_s"]) - start_epoch_s if math.isfinite(start_epoch_s) else math.nan,
            "rank": p.get("rank", ""),
            "name": p["name"],
            "value": float(p["value"]),
            "batch": p.get("batch"),
        }
        for p in points
    ]
    return pd.DataFrame(rows, columns=list(SERIES_COLUMNS)).astype(SERIES_COLUMNS)


def add_log_series(level: Any, log_text: str) -> Any:
    """``level`` (a :class:`~workbench.bench._sweep.LevelResult`) with the batch log lines stamped
    within its requests' time window added to its ``series``.

    Args:
        level: the measured level (its requests give the window: first start to last end).
        log_text: the server's log (or its tail covering the level).
    """
    req = level.requests
    if not len(req):
        return level
    start, end = float(req["start_epoch_s"].min()), float(req["end_epoch_s"].max())
    points = parse_batch_log(log_text, start_epoch_s=start, end_epoch_s=end)
    if not points:
        return level
    added = series_frame(points, level_index=level.index, repeat=level.repeat, start_epoch_s=start)
    frames = [f for f in (level.series, added) if f is not None and len(f)]
    return dataclasses.replace(level, series=pd.concat(frames, ignore_index=True))
