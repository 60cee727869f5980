"""The pure parts of a report's verdict: where a ratio says ahead or behind, rounding, the test rule.

A verdict names the levels where a speculative variant is ahead of the baseline and where
behind (:func:`ratio_spans`), as runs of consecutive measured levels (``"2–64"``,
:func:`levels_text`); numbers are rounded to what one measurement supports
(:func:`round_sig`: three significant figures) or to the interval's width
(:func:`round_to_interval`); a crossover is said as the two measured levels that bracket it
(:func:`bracket_text`), the interpolated point only as a concurrency label.

Nothing is called significant unless it was tested (:data:`SIGNIFICANCE_RULE`): at least
:data:`MIN_TEST_REPEATS` paired repeats per level and a 95% Student t interval of the
spec/baseline ratio that excludes 1 (:func:`workbench.analysis.ratio_intervals`). Fewer
repeats are "not tested", whatever the requests' spread says: requests of one repeat share
its server start, its prompt order and its host's state, so their bootstrap interval is
narrower than the run-to-run spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from workbench.analysis._load import LOAD_AXES

__all__ = [
    "MIN_TEST_REPEATS",
    "SIGNIFICANCE_RULE",
    "bracket_levels",
    "bracket_text",
    "interval_text",
    "level_number",
    "levels_text",
    "not_tested_text",
    "ratio_spans",
    "round_sig",
    "round_to_interval",
]

#: The fewest paired repeats per level with which a difference is tested.
MIN_TEST_REPEATS = 3

#: The rule, as reports state it.
SIGNIFICANCE_RULE = (
    f"a difference is called significant only with at least {MIN_TEST_REPEATS} paired repeats per "
    "level and a 95% Student t interval of the spec/baseline ratio that excludes 1"
)


def not_tested_text(n: int) -> str:
    """``"not tested: 1 repeat"`` (``n`` < :data:`MIN_TEST_REPEATS`)."""
    return f"not tested: {n} repeat{'' if n == 1 else 's'}"


def round_sig(value: float, digits: int = 3) -> float:
    """``value`` rounded to ``digits`` significant figures (NaN and 0 unchanged).

    Example: ``round_sig(773.46) = 773.0``, ``round_sig(1.22849) = 1.23``, ``round_sig(12345.0) = 12300.0``.
    """
    if value == 0 or math.isnan(value) or math.isinf(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def round_to_interval(value: float, half_width: float | None) -> float:
    """``value`` rounded to the first significant digit of its interval's half width.

    Without an interval (None or NaN) three significant figures (:func:`round_sig`).
    Example: 812.345 ± 23.1 -> 810.0; 1.2345 ± 0.012 -> 1.23.
    """
    if half_width is None or math.isnan(half_width) or half_width <= 0:
        return round_sig(value)
    return round(value, -int(math.floor(math.log10(half_width))))


def interval_text(value: float, lo: float | None = None, hi: float | None = None) -> str:
    """A mean and its interval as a table cell: ``"812 (790–835)"``.

    The bounds are rounded to the first significant digit of the interval's half width
    (:func:`round_to_interval`), and so is the mean, but never to fewer than two significant figures of
    its own: an interval wider than the mean (one slow repeat of three) would otherwise round the mean to 0
    (a TTFT of 250 ms shown ``"0 (0–40000)"``) or round two means apart in the wrong order (a p99 of
    14,000 ms shown below its p50). Without an interval (None or NaN bounds: n=1) the mean alone to three
    significant figures; a NaN mean is ``""``. Examples: ``interval_text(812.345, 789.6, 835.1)`` ->
    ``"810 (790–840)"``; ``interval_text(250.0, -39500.0, 40000.0)`` -> ``"250 (-40000–40000)"``;
    ``interval_text(1.2345)`` -> ``"1.23"``.
    """
    if value is None or value != value:
        return ""
    if lo is None or hi is None or lo != lo or hi != hi:
        return f"{round_sig(value):g}"
    half = (hi - lo) / 2
    mean = round_to_interval(value, half)
    if value != 0 and (mean == 0 or abs(mean - value) > 0.05 * abs(value)):  # keep two figures of the mean
        mean = round_sig(value, 2)
    shown = [mean + 0.0, *(round_to_interval(v, half) + 0.0 for v in (lo, hi))]  # + 0.0: no "-0"
    return f"{shown[0]:g} ({shown[1]:g}–{shown[2]:g})"


def level_number(value: float) -> float | int:
    """A level as written: an int when whole (a concurrency, ``4`` req/s), else the float (``0.5`` req/s)."""
    value = float(value)
    return int(value) if value.is_integer() else value


def levels_text(levels: Sequence[float], measured: Sequence[float]) -> str:
    """``levels`` as runs of consecutive ``measured`` levels: ``"1"``, ``"2–64"``, ``"1, 4–8 and 32"``.

    Args:
        levels: a subset of ``measured``.
        measured: every level of the sweep (order does not matter).
    """
    order = sorted(set(level_number(c) for c in measured))
    chosen = set(level_number(c) for c in levels)
    runs: list[list[float]] = []
    for c in order:
        if c not in chosen:
            continue
        if runs and order.index(c) == order.index(runs[-1][-1]) + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    parts = [str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1] if parts else ""


def bracket_levels(concurrency: float, measured: Sequence[float]) -> tuple[float, float]:
    """The measured levels either side of an interpolated ``concurrency`` (equal when it is one of them).

    Outside the measured range, the nearest level twice. Example: 1.228 in [1, 2, 4] -> (1, 2);
    4.0 -> (4, 4).
    """
    order = sorted(level_number(c) for c in measured)
    lower = max([c for c in order if c <= concurrency] or [order[0]])
    upper = min([c for c in order if c >= concurrency] or [order[-1]])
    return lower, upper


def bracket_text(concurrency: float, measured: Sequence[float], *, load: str = "concurrency") -> str:
    """Where a crossover lies, in measured levels, the point only as a concurrency label.

    Example: 1.228 in [1, 2, 4] -> ``"between concurrency 1 and 2 (≈ 1.2)"``; 4.0 -> ``"at concurrency 4"``;
    with ``load="request_rate_req_s"``, ``"between request rate 1 and 2 req/s (≈ 1.2)"``.
    """
    axis = LOAD_AXES[load]
    lower, upper = bracket_levels(concurrency, measured)
    if lower == upper:
        return f"at {axis.words} {lower}{axis.unit}"
    return f"between {axis.words} {lower} and {upper}{axis.unit} (≈ {concurrency:.1f})"


def ratio_spans(concurrency: Sequence[float], ratio: Sequence[float], *, digits: int = 2) -> dict[str, list[float]]:
    """The levels where a spec/baseline ratio, rounded to ``digits`` decimals as reported, is above 1
    (``"ahead"``), below (``"behind"``) or 1 (``"even"``).

    NaN ratios are left out. Example: ratios 1.03, 1.004, 0.91, 0.46 at 1, 2, 4, 64 ->
    ``{"ahead": [1], "behind": [4, 64], "even": [2]}`` (1.004 is reported as 1.00).
    """
    out: dict[str, list[float]] = {"ahead": [], "behind": [], "even": []}
    for c, r in sorted(zip((level_number(c) for c in concurrency), ratio)):
        if r != r:
            continue
        shown = round(float(r), digits)
        out["ahead" if shown > 1.0 else "behind" if shown < 1.0 else "even"].append(c)
    return out
