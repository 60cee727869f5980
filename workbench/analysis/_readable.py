"""Tables as a person reads them: each number rounded to what it supports, units in column names.

One formatter for every table a report displays (:func:`readable_table`; the notebooks' HTML
display of a DataFrame goes through it, ``workbench.sweeps.setup_notebook``). It changes only what
is shown: the frame it is given, and the stored data behind it, are left as they are.

Rules, by column name (the names the workbench writes, STYLE.md rule 7):

- ``X`` beside ``X_lo`` and ``X_hi``: one column ``X``, ``"mean (lo–hi)"`` rounded to the
  interval (:func:`interval_text`).
- signed fractions (``margin``, ``residual``, ``error``, ``gain_over_*``): percentages with their
  sign, ``"+9.3%"``, one decimal below 10% in size (each bound by its own size: never ``"-0%"``); shares (``*_share``, ``*_fraction``, ``*_efficiency``, ``*_shortfall``):
  ``"37%"``; ``*_pct`` columns (already percent) as other numbers, their name ending ``(%)``.
- ratios (``*ratio*``, ``speedup*``, ``*_over_*``, ``*_gain``): 2 decimals, ``"1.10"``.
- other numbers: three significant figures (:func:`round_sig`); whole numbers as integers.
- booleans ``"yes"``/``"no"``; missing (None, NaN) an em dash.
- units from the name's suffix into brackets: ``ttft_ms`` -> ``"ttft (ms)"``, ``output_tok_s``
  -> ``"output (tok/s)"``; other underscores become spaces.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import pandas as pd

from workbench.analysis._verdict import interval_text, round_sig

__all__ = ["MISSING", "column_kind", "column_title", "readable_html", "readable_table", "readable_value"]

#: What a missing value is shown as.
MISSING = "—"

_UNITS = (
    ("_tok_s", "tok/s"),
    ("_req_s", "req/s"),
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_s", "s"),
    ("_gib", "GiB"),
    ("_mib", "MiB"),
)
_CHANGE = re.compile(r"(^|_)(margin|residual|error)$|^gain_over_")
_FRACTION = re.compile(r"(^|_)(share|fraction|efficiency|shortfall)$")
_RATIO = re.compile(r"ratio|speedup|_over_|(^|_)gain$")


def column_kind(name: str) -> str:
    """``"pct"`` (already percent), ``"change"`` (a signed fraction: shown as ``+x%``), ``"fraction"``
    (shown as ``x%``), ``"ratio"`` or ``"number"``."""
    name = name.lower()
    if name.endswith("_pct"):
        return "pct"
    if _CHANGE.search(name):
        return "change"
    if _FRACTION.search(name):
        return "fraction"
    if _RATIO.search(name):
        return "ratio"
    return "number"


def column_title(name: Any) -> Any:
    """A column name as a heading: ``"ttft_p50_ms"`` -> ``"ttft p50 (ms)"``, ``"error_pct"`` ->
    ``"error (%)"``; a name that is not snake_case text is kept."""
    if not isinstance(name, str) or "_" not in name:
        return name
    base = name
    for suffix, unit in (("_pct", "%"), *_UNITS):
        if base.endswith(suffix) and len(base) > len(suffix):
            return f"{base[: -len(suffix)].replace('_', ' ')} ({unit})"
    return base.replace("_", " ")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT


def _percent(fraction: float, *, signed: bool) -> str:
    """A fraction as a percentage: one decimal below 10% in size, else whole (``+3.2%``, ``+27%``).

    Each number of a cell takes its own precision, so a bound near 0 beside a mean of +12% reads
    ``-0.2%``, never ``-0%``; ``signed`` puts ``+`` before a value above 0 (0 has no sign).
    """
    digits = 1 if abs(fraction) < 0.1 else 0
    sign = "+" if signed and fraction != 0 else ""
    return f"{fraction * 100 + 0.0:{sign}.{digits}f}%"


def readable_value(value: Any, kind: str = "number", lo: Any = None, hi: Any = None) -> str:
    """One cell as text, by its column's kind (:func:`column_kind`), with its interval when given.

    Examples: ``readable_value(0.03227, "change")`` -> ``"+3.2%"``; ``readable_value(1.0956, "ratio",
    0.389, 3.088)`` -> ``"1.10 (0.39–3.09)"``; ``readable_value(float("nan"))`` -> ``"—"``.
    """
    if _missing(value):
        return MISSING
    if isinstance(value, (bool,)) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    if not isinstance(value, numbers.Real):
        return str(value)
    value = float(value)
    bounds = None if _missing(lo) or _missing(hi) else (float(lo), float(hi))
    if kind in ("change", "fraction"):
        text = _percent(value, signed=kind == "change")
        if bounds:
            text += (
                f" ({_percent(bounds[0], signed=kind == 'change')} to {_percent(bounds[1], signed=kind == 'change')})"
            )
        return text
    if kind == "ratio":
        text = f"{value + 0.0:.2f}"
        return text + (f" ({bounds[0] + 0.0:.2f}–{bounds[1] + 0.0:.2f})" if bounds else "")
    if bounds:
        return interval_text(value, *bounds)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{round_sig(value) + 0.0:g}"


def readable_table(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as text cells a person reads without decoding (rules: the module docstring).

    Args:
        frame: any table; its index is kept as it is (hide a plain 0..n-1 index when showing it).

    Returns:
        A new frame of strings, one column per shown quantity (``X_lo``/``X_hi`` folded into ``X``),
        named by :func:`column_title`. ``frame`` is not changed.
    """
    columns = [c for c in frame.columns]
    names = {str(c) for c in columns}
    out: dict[Any, list[str]] = {}
    for c in columns:
        name = str(c)
        if (name.endswith("_lo") and name[:-3] in names) or (name.endswith("_hi") and name[:-3] in names):
            continue  # folded into its mean's column
        kind = column_kind(name)
        values = frame[c].tolist()
        if f"{name}_lo" in names and f"{name}_hi" in names:
            lows, highs = frame[f"{name}_lo"].tolist(), frame[f"{name}_hi"].tolist()
            cells = [readable_value(v, kind, lo, hi) for v, lo, hi in zip(values, lows, highs)]
        else:
            cells = [readable_value(v, kind) for v in values]
        out[column_title(c)] = cells
    return pd.DataFrame(out, index=frame.index)


def readable_html(frame: pd.DataFrame) -> str:
    """:func:`readable_table` as escaped HTML, without a plain 0..n-1 index (a row number decodes nothing)."""
    plain = isinstance(frame.index, pd.RangeIndex) and frame.index.name is None
    return readable_table(frame).to_html(index=not plain, escape=True, classes="dataframe", border=0)
