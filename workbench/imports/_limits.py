"""Values no benchmark can have measured: an imported level holding one is refused, not stored.

A level whose figures disagree with each other (TTFT above E2E, throughput above what its
rate allows) is kept in quarantine with the reason (:mod:`workbench.imports._checks`): the tool
measured something, and the row says what. A value outside what any measurement can give is
different: the file was edited, cut, or written by something else, and no row built from it
means anything. :func:`impossible` names the first such value of a level:

- a run's ``duration_s`` of 0 or less (every tool divides by it);
- a ``concurrency`` below 1 or above :data:`MAX_CONCURRENCY`;
- an offered ``request_rate_req_s`` of 0 or less, or finite and above :data:`MAX_RATE_REQ_S`
  (``inf``, every request at once, is a rate bench_serving and vLLM write);
- a ``repeat`` that is not a whole number from 0;
- a throughput above :data:`MAX_RATE_REQ_S` requests or :data:`MAX_TOK_S` tokens per second;
- any other figure that is infinite: a number too large for a float (``1e400``, or an integer
  of hundreds of digits) reads as infinity, in the level or in its request rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from workbench.imports._rows import ImportedLevel

__all__ = ["MAX_CONCURRENCY", "MAX_RATE_REQ_S", "MAX_TOK_S", "impossible"]

#: Concurrent requests above which no serving benchmark has run (10x the largest we know of).
MAX_CONCURRENCY = 1_000_000
#: Requests per second above which no offered rate or request throughput is real.
MAX_RATE_REQ_S = 1_000_000.0
#: Tokens per second above which no throughput is real (a whole GPU cluster stays far below).
MAX_TOK_S = 1e9
#: What to do, said after every refusal.
FIX = "correct or remove that record (the file was edited, cut short or not written by the tool), then import again"


def _problem(key: str, value: float) -> str | None:
    """Why ``value`` of column ``key`` cannot have been measured, or None."""
    if math.isinf(value) and not (key == "request_rate_req_s" and value > 0):
        return "no measured figure is infinite (a number too large for a float, such as 1e400, reads as inf)"
    if key == "duration_s":
        return None if value > 0 else "a run's duration must be above 0 s"
    if key == "concurrency":
        return None if 1 <= value <= MAX_CONCURRENCY else f"a concurrency must be from 1 to {MAX_CONCURRENCY:,}"
    if key == "request_rate_req_s":
        return (
            None
            if 0 < value <= MAX_RATE_REQ_S or value == math.inf
            else (
                f"an offered request rate must be above 0 and at most {MAX_RATE_REQ_S:,.0f} req/s (or inf: all at once)"
            )
        )
    if key == "repeat":
        return None if value >= 0 and value == int(value) else "a repeat is a whole number from 0"
    if key.endswith("_req_s") and value > MAX_RATE_REQ_S:
        return f"no request throughput is above {MAX_RATE_REQ_S:,.0f} req/s"
    if key.endswith("_tok_s") and value > MAX_TOK_S:
        return f"no token throughput is above {MAX_TOK_S:,.0f} tok/s"
    return None


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a boolean, not NaN), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _shown(value: float) -> str:
    return "inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:g}"


def _request_problem(rows: pd.DataFrame) -> str | None:
    """The first infinite figure of a level's request rows (a column, or an element of a list column)."""
    for col in rows.columns:
        series = rows[col]
        if is_numeric_dtype(series) and not is_bool_dtype(series):
            infinite = np.isinf(series.to_numpy(dtype=float))
            first = int(infinite.argmax()) if infinite.any() else None
        else:
            first = next(
                (
                    i
                    for i, cell in enumerate(series)
                    if any(
                        math.isinf(x) for x in map(_number, cell if isinstance(cell, list) else [cell]) if x is not None
                    )
                ),
                None,
            )
        if first is not None:
            return (
                f"request {first}'s {col} is infinite: no measured figure is (a number too large for a float, "
                "such as 1e400, reads as inf)"
            )
    return None


def impossible(level: ImportedLevel) -> str | None:
    """The first value of ``level`` no measurement can give, as one sentence naming the file, the record,
    the field and what to do; None when every value is possible.

    Example: ``"/data/a.jsonl line 3: duration_s = 0: a run's duration must be above 0 s and finite;
    correct or remove that record (...), then import again"``.
    """
    where = f"{level.source_file} {level.source_record}"
    for key, value in level.values.items():
        number = _number(value)
        if number is None:
            continue
        problem = _problem(key, number)
        if problem is not None:
            return f"{where}: {key} = {_shown(number)}: {problem}; {FIX}"
    if level.requests is not None and len(level.requests):
        problem = _request_problem(level.requests)
        if problem is not None:
            return f"{where}: {problem}; {FIX}"
    return None
