"""Intervals over repeats: what a sweep measured more than once can claim, and what it cannot.

A level measured in ``n`` repeats (each with its own seed and prompt order, and, between
alternated variants, another server start) gives ``n`` level values of each metric. Their
mean's two-sided confidence interval is Student's t with ``n - 1`` degrees of freedom
(:func:`mean_interval`): ``mean ± t(1 - α/2, n - 1) · s / √n``, ``s`` the sample standard
deviation of the repeat values. It covers run-to-run effects that the per-request
bootstrap (:mod:`workbench.analysis._uncertainty`) does not. With ``n = 1`` there is no
interval: it is reported as NaN and said so, never invented.

The spec/baseline ratio pairs repeats by index (repeat ``r`` of both variants ran the
same seed and prompt order): its interval is the t interval of the per-repeat log ratios,
exponentiated (:func:`ratio_intervals`), so it is multiplicative and never negative; the
point is the geometric mean of the paired ratios. A level's verdict is ``"spec ahead"``
when the ratio's interval lies above 1, ``"baseline ahead"`` when below, else ``"not
distinguishable at this level"``: the two variants' intervals are said to separate only
when the interval of their ratio excludes 1 (the paired comparison; checking whether two
separate intervals overlap would ignore the pairing and be needlessly conservative).

A crossover is claimed only where one verdict gives way to the other
(:func:`crossover_interval`); its interval on log2 concurrency runs from the first to the
last crossing of 1 by the ratio interval's lower and upper curves between those levels,
each interpolated linearly in log2(concurrency) (a pointwise band, not a simultaneous
one: read it as the range of concurrency where the data cannot tell the variants apart).

Most level metrics cannot be negative (latencies, throughputs, counts, token usage, accept
length) and some are shares with an upper bound too; a t interval of three spread-out repeats
can still reach below 0 (``TTFT p50 3000 (-1000–6000)``). :func:`mean_interval` takes the
quantity's support and keeps the interval inside it: the t interval where it stays inside;
where it would cross 0 and every value is above 0 (a strictly positive quantity, skewed: that
is when the crossing happens), the log-scale t interval of the mean (the modified Cox method,
Olsson 2005, J. Stat. Educ. 13(1): ``exp(ȳ + s²/2 ± t(1 - α/2, n - 1) · √(s²/n + s⁴/(2(n - 1))))``,
ȳ and s of the logs); otherwise (a zero among the values, or a share's upper bound) the t
interval clipped at the bounds, which keeps its coverage since the mean lies inside them.
:func:`repeat_table` reads each metric's support from its name (:func:`metric_support`).

The t quantile comes from :mod:`workbench.analysis._student_t` (no SciPy).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from workbench.analysis._load import LOAD_AXES
from workbench.analysis._student_t import t_quantile
from workbench.analysis._verdict import MIN_TEST_REPEATS, not_tested_text
from workbench.errors import ConfigError

__all__ = [
    "NON_NEGATIVE",
    "UNBOUNDED",
    "CrossoverInterval",
    "Interval",
    "IntervalMethod",
    "Support",
    "crossover_interval",
    "mean_interval",
    "metric_support",
    "ratio_intervals",
    "repeat_table",
]

Verdict = str  # "spec ahead", "baseline ahead", "not distinguishable at this level", "not tested: <n> repeat(s)"
NOT_DISTINGUISHABLE = "not distinguishable at this level"


#: Where a quantity can lie: ``(lower, upper)``, either end infinite.
Support = tuple[float, float]

#: A quantity of either sign (a difference, a log ratio, a residual).
UNBOUNDED: Support = (-math.inf, math.inf)

#: A quantity that cannot be negative (a latency, a throughput, a count, an accept length, a ratio).
NON_NEGATIVE: Support = (0.0, math.inf)

#: How an interval was made: Student t, the t interval clipped at the support's bounds, or the
#: log-scale t interval of the mean (the module docstring).
IntervalMethod = Literal["t", "t clipped", "log t"]

_SIGNED = re.compile(r"(^|_)(margin|residual|error|delta|diff|difference|change|log)$|^(gain_over|log)_")
_SHARE = re.compile(r"(^|_)(share|fraction|usage|util|utilisation|utilization|efficiency)$")


def metric_support(name: str) -> Support:
    """The support of a level column, from its name (the names the workbench writes, STYLE.md rule 7).

    Signed quantities (``margin``, ``residual``, ``error``, ``delta``, ``diff``, ``change``, ``log``
    at the end, ``gain_over_*``) are :data:`UNBOUNDED`; shares (``share``, ``fraction``, ``usage``,
    ``util``, ``efficiency`` at the end) lie in 0..1, or 0..100 with a ``_pct`` suffix
    (``mean_token_usage_pct``); every other level column (latencies, throughputs, counts, accept
    length, ratios) is :data:`NON_NEGATIVE`. Examples: ``"p50_ttft_ms"`` -> ``(0, inf)``;
    ``"token_usage"`` -> ``(0, 1)``; ``"error_pct"`` -> ``(-inf, inf)``.
    """
    stem = name.lower().removesuffix("_pct")
    if _SIGNED.search(stem):
        return UNBOUNDED
    if _SHARE.search(stem):
        return (0.0, 100.0 if name.lower().endswith("_pct") else 1.0)
    return NON_NEGATIVE


@dataclasses.dataclass(frozen=True)
class Interval:
    """A mean over repeats and its two-sided confidence interval.

    Attributes:
        n: how many (non-NaN) values.
        mean: their mean (NaN when ``n`` is 0).
        lo, hi: the interval's bounds (NaN when ``n`` < 2: no interval).
        confidence: the two-sided confidence level.
        method: how the bounds were made (:data:`IntervalMethod`; ``"t"`` without an interval).
    """

    n: int
    mean: float
    lo: float
    hi: float
    confidence: float = 0.95
    method: IntervalMethod = "t"

    @property
    def half_width(self) -> float:
        """``(hi - lo) / 2`` (NaN without an interval)."""
        return (self.hi - self.lo) / 2.0

    def text(self, digits: int = 1) -> str:
        """``"812.3 (95% CI 790.1–834.5, n=3)"``, or ``"812.3 (n=1, no interval)"``."""
        if self.n < 2 or math.isnan(self.lo):
            return f"{self.mean:.{digits}f} (n={self.n}, no interval)"
        return (
            f"{self.mean:.{digits}f} ({self.confidence:.0%} CI {self.lo:.{digits}f}–{self.hi:.{digits}f}, n={self.n})"
        )


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")


def mean_interval(values: Iterable[float], *, confidence: float = 0.95, support: Support = UNBOUNDED) -> Interval:
    """Mean of ``values`` (NaN dropped) and its confidence interval, inside the quantity's ``support``.

    The Student t interval with ``n - 1`` degrees of freedom where it lies inside ``support``;
    where it does not, the log-scale t interval of the mean for a quantity bounded only below at
    0 whose values are all above 0, else the t interval clipped at the bounds (the module
    docstring; :attr:`Interval.method` says which).

    Examples: ``[10, 12, 14]`` -> mean 12, s = 2, half width 4.302653 · 2 / √3 = 4.968275,
    interval 7.031725–16.968275 (inside any support: ``"t"``). ``[1500, 3000, 4500]`` with
    :data:`NON_NEGATIVE`: the t interval -726–6726 crosses 0, so the logs (ȳ = 7.9102, s = 0.5555)
    give exp(7.9105 + 0.1543 ± 4.302653 · 0.3559) = 687.7–14,710 (``"log t"``).

    Args:
        values: the repeats' values.
        confidence: two-sided confidence level in (0, 1).
        support: ``(lower, upper)`` the quantity can take (default :data:`UNBOUNDED`).

    Raises:
        ConfigError: ``confidence`` not in (0, 1), or ``support``'s lower end above its upper.
    """
    _check_confidence(confidence)
    lower, upper = float(support[0]), float(support[1])
    if not lower < upper:
        raise ConfigError(f"support must be (lower, upper) with lower < upper, got {support}")
    arr = np.asarray([float(v) for v in values], dtype=float)
    arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan, confidence)
    mean = float(arr.mean())
    if n == 1:
        return Interval(1, mean, math.nan, math.nan, confidence)
    t = t_quantile(0.5 + confidence / 2.0, n - 1)
    half = t * float(arr.std(ddof=1)) / math.sqrt(n)
    lo, hi = mean - half, mean + half
    if lower <= lo and hi <= upper:
        return Interval(n, mean, lo, hi, confidence, "t")
    if lower == 0.0 and math.isinf(upper) and bool((arr > 0).all()):
        logs = np.log(arr)
        centre, var = float(logs.mean()) + float(logs.var(ddof=1)) / 2.0, float(logs.var(ddof=1))
        spread = t * math.sqrt(var / n + var * var / (2.0 * (n - 1)))
        return Interval(n, mean, math.exp(centre - spread), math.exp(centre + spread), confidence, "log t")
    return Interval(n, mean, min(max(lo, lower), upper), max(min(hi, upper), lower), confidence, "t clipped")


def repeat_table(
    levels: pd.DataFrame,
    metrics: Sequence[str],
    *,
    by: Sequence[str] = ("variant", "concurrency"),
    confidence: float = 0.95,
    support: Mapping[str, Support] | None = None,
) -> pd.DataFrame:
    """Mean and interval of each metric over the repeats of each level.

    Each interval stays inside its metric's support (:func:`mean_interval`): a latency, a
    throughput or a count never gets a negative bound, a share none above 1 (100 in ``_pct``).

    Args:
        levels: one row per (level, repeat) (``levels.parquet``, or several runs'), with
            the ``by`` columns and ``metrics``.
        metrics: level columns to summarise.
        by: the columns that name a level.
        confidence: two-sided confidence level.
        support: metric -> its support, for those the name does not say
            (default: :func:`metric_support` of each name).

    Returns:
        One row per ``by`` group, sorted by it: the ``by`` columns, ``n`` (rows in the
        group), and for each metric ``<m>`` (mean), ``<m>_lo``, ``<m>_hi`` (NaN when
        fewer than 2 values) and ``<m>_n`` (its non-NaN values).

    Raises:
        ConfigError: a missing column, or a bad ``confidence``.
    """
    missing = [c for c in [*by, *metrics] if c not in levels.columns]
    if missing:
        raise ConfigError(f"level table lacks columns {missing}")
    supports = {m: (support or {}).get(m) or metric_support(m) for m in metrics}
    rows = []
    for key, group in levels.groupby(list(by), sort=True):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row["n"] = len(group)
        for m in metrics:
            iv = mean_interval(group[m], confidence=confidence, support=supports[m])
            row.update({m: iv.mean, f"{m}_lo": iv.lo, f"{m}_hi": iv.hi, f"{m}_n": iv.n})
        rows.append(row)
    return pd.DataFrame(rows, columns=[*by, "n", *[f"{m}{s}" for m in metrics for s in ("", "_lo", "_hi", "_n")]])


def _verdict(n: int, lo: float, hi: float) -> Verdict:
    if n < MIN_TEST_REPEATS or math.isnan(lo):
        return not_tested_text(n)
    if lo > 1.0:
        return "spec ahead"
    if hi < 1.0:
        return "baseline ahead"
    return NOT_DISTINGUISHABLE


def ratio_intervals(
    levels: pd.DataFrame,
    *,
    baseline: str,
    spec: str,
    metric: str,
    confidence: float = 0.95,
    load: str = "concurrency",
) -> pd.DataFrame:
    """The spec/baseline ratio of ``metric`` at each shared level, with its interval over repeats.

    Repeats are paired by their ``repeat`` index (a table without the column is one
    repeat). Example: paired ratios 1.1, 1.2, 1.0 -> log ratios with mean 0.092543 and
    s = 0.091192; ratio exp(0.092543) = 1.0970, interval exp(0.092543 ± 4.302653 ·
    0.091192 / √3) = 0.8746–1.3759: "not distinguishable at this level".

    Args:
        levels: one row per (variant, concurrency, repeat) with ``metric``.
        baseline, spec: variant names.
        metric: the level column compared (higher or lower is better: the verdict only
            says which is larger).
        confidence: two-sided confidence level.
        load: the level column (``"concurrency"``, or ``"request_rate_req_s"`` for open-loop
            levels: :func:`workbench.analysis.load_axis`).

    Returns:
        One row per level both variants measured: the ``load`` column, ``n`` (paired
        repeats), ``ratio`` (geometric mean of the paired ratios), ``ratio_lo``,
        ``ratio_hi`` (NaN when ``n`` < 2), ``verdict`` (``"spec ahead"``, ``"baseline
        ahead"``, ``"not distinguishable at this level"``, or ``"not tested: <n> repeat(s)"`` below
        :data:`~workbench.analysis._verdict.MIN_TEST_REPEATS` paired repeats, whose interval is
        still given for n >= 2).

    Raises:
        ConfigError: a variant or column is missing, the variants share no level, or a
            ratio is not positive.
    """
    _check_confidence(confidence)
    need = {"variant", load, metric}
    if need - set(levels.columns):
        raise ConfigError(f"level table lacks columns {sorted(need - set(levels.columns))}")
    for name in (baseline, spec):
        if name not in set(levels["variant"]):
            raise ConfigError(f"variant {name!r} not in the level table; have {sorted(set(levels['variant']))}")
    table = levels.assign(repeat=levels["repeat"] if "repeat" in levels else 0)
    base = table[table["variant"] == baseline].set_index([load, "repeat"])[metric]
    other = table[table["variant"] == spec].set_index([load, "repeat"])[metric]
    paired = pd.concat({"b": base, "s": other}, axis=1, join="inner").dropna()
    if paired.empty:
        raise ConfigError(f"{baseline!r} and {spec!r} share no ({LOAD_AXES[load].words}, repeat) with a {metric} value")
    if ((paired["b"] <= 0) | (paired["s"] <= 0)).any():
        raise ConfigError(f"{metric} must be positive to take a ratio; found values <= 0")
    rows = []
    for c, group in paired.groupby(level=load, sort=True):
        logs = np.log(group["s"].to_numpy(float) / group["b"].to_numpy(float))
        iv = mean_interval(logs, confidence=confidence)
        lo, hi = math.exp(iv.lo) if iv.n > 1 else math.nan, math.exp(iv.hi) if iv.n > 1 else math.nan
        rows.append(
            {
                load: LOAD_AXES[load].value(c),
                "n": iv.n,
                "ratio": math.exp(iv.mean),
                "ratio_lo": lo,
                "ratio_hi": hi,
                "verdict": _verdict(iv.n, lo, hi),
            }
        )
    return pd.DataFrame(rows)


CrossoverIntervalKind = Literal["claimed", "not_claimed", "not_tested"]


@dataclasses.dataclass(frozen=True)
class CrossoverInterval:
    """Where speculation stops (or starts) beating the baseline, with its interval on log concurrency.

    Attributes:
        metric: the compared level column.
        kind: ``claimed`` (one verdict gives way to the other between two levels),
            ``not_claimed`` (the intervals do not separate on both sides), or
            ``not_tested`` (fewer than :data:`~workbench.analysis._verdict.MIN_TEST_REPEATS` paired
            repeats at some level: nothing claimed).
        concurrency: where the point ratio crosses 1 between those levels (None unless claimed),
            in the table's load (a concurrency, or a request rate in req/s for open-loop levels).
        lo, hi: the interval's bounds in that load (``2 ** log2_lo``; None unless claimed).
        log2_lo, log2_hi: the same on log2 of the load.
        n: the fewest paired repeats at the levels it rests on.
        description: one sentence for people, with n and the interval.
    """

    metric: str
    kind: CrossoverIntervalKind
    concurrency: float | None
    lo: float | None
    hi: float | None
    log2_lo: float | None
    log2_hi: float | None
    n: int
    description: str


def _no_crossover(metric: str, kind: CrossoverIntervalKind, n: int, description: str) -> CrossoverInterval:
    """A :class:`CrossoverInterval` that claims no crossing (``not_tested`` or ``not_claimed``)."""
    return CrossoverInterval(metric, kind, None, None, None, None, None, n, description)


def _crossings(x: Sequence[float], y: Sequence[float]) -> list[float]:
    """Every x where the piecewise-linear ``y(x)`` crosses 1 (touching counts)."""
    out = []
    for (x0, y0), (x1, y1) in zip(zip(x, y), zip(x[1:], y[1:])):
        if y0 == 1.0:
            out.append(x0)
        elif (y0 - 1.0) * (y1 - 1.0) < 0:
            out.append(x0 + (1.0 - y0) / (y1 - y0) * (x1 - x0))
    if len(y) and y[-1] == 1.0:
        out.append(x[-1])
    return out


def _levels_text(values: Iterable[float], load: str = "concurrency") -> str:
    return ", ".join(f"{LOAD_AXES[load].value(c):g}" for c in values)


def crossover_interval(ratios: pd.DataFrame, *, metric: str, load: str = "concurrency") -> CrossoverInterval:
    """The crossover of a :func:`ratio_intervals` table, claimed only where the intervals separate.

    Claimed when a level whose verdict is ``spec ahead`` (or ``baseline ahead``) is followed,
    at a higher concurrency, by one with the other verdict; levels between them may be not
    distinguishable. The point is where the geometric-mean ratio crosses 1 between the last
    such level and the first opposite one, and the interval on log2(concurrency) spans
    every crossing of 1 by the lower and upper interval curves there (see the module
    docstring). Example: ratio (lo, hi) 1.05 (1.02, 1.08) at concurrency 1 and 0.95 (0.92,
    0.98) at 4 -> crossover at log2 1.0 (concurrency 2.0); the lower curve crosses 1 at
    log2 0.4, the upper at log2 1.6: interval 2**0.4 = 1.32 to 2**1.6 = 3.03.

    ``load="request_rate_req_s"`` reads a ratio table of open-loop levels: the same on log2 of
    the request rate, the crossover then being the rate at which speculation stops paying.

    Raises:
        ConfigError: an empty table or a missing column.
    """
    need = {load, "n", "ratio", "ratio_lo", "ratio_hi", "verdict"}
    if need - set(ratios.columns) or ratios.empty:
        raise ConfigError(f"need a ratio_intervals table (columns {sorted(need)}), got {list(ratios.columns)}")
    axis = LOAD_AXES[load]
    table = ratios.sort_values(load).reset_index(drop=True)
    n_min = int(table["n"].min())
    if n_min < MIN_TEST_REPEATS:
        return _no_crossover(
            metric,
            "not_tested",
            n_min,
            f"On {metric}: {not_tested_text(n_min)} at some level, so no crossover is claimed; "
            f"measure {MIN_TEST_REPEATS} or more repeats (repeats={MIN_TEST_REPEATS}) to test one.",
        )
    verdicts = list(table["verdict"])
    signs = {"spec ahead": 1, "baseline ahead": -1}
    found = None
    for i, v in enumerate(verdicts):
        if v not in signs:
            continue
        for j in range(i + 1, len(verdicts)):
            if signs.get(verdicts[j]) == -signs[v]:
                found = (max(k for k in range(i, j) if verdicts[k] == v), j)
                break
        if found:
            break
    words = {
        "spec ahead": "speculation ahead",
        "baseline ahead": "baseline ahead",
        NOT_DISTINGUISHABLE: NOT_DISTINGUISHABLE,
    }
    parts = [
        f"{words[v]} at {axis.words} {_levels_text(table.loc[table['verdict'] == v, load], load)}{axis.unit}"
        for v in words
        if (table["verdict"] == v).any()
    ]
    summary = f"{'; '.join(parts)} (95% intervals over n>={n_min} repeats)"
    if found is None:
        return _no_crossover(
            metric,
            "not_claimed",
            n_min,
            f"No crossover can be claimed on {metric}: {summary}.",
        )
    i, j = found
    seg = table.iloc[i : j + 1]
    x = [math.log2(c) for c in seg[load]]
    point = _crossings(x, list(seg["ratio"]))
    band = _crossings(x, list(seg["ratio_lo"])) + _crossings(x, list(seg["ratio_hi"]))
    x_point = point[0] if point else (x[0] + x[-1]) / 2.0
    log2_lo, log2_hi = min(band + [x_point]), max(band + [x_point])
    c_point, c_lo, c_hi = 2.0**x_point, 2.0**log2_lo, 2.0**log2_hi
    direction = "stops beating" if verdicts[i] == "spec ahead" else "starts beating"
    n_seg = int(seg["n"].min())
    return CrossoverInterval(
        metric,
        "claimed",
        c_point,
        c_lo,
        c_hi,
        log2_lo,
        log2_hi,
        n_seg,
        f"Speculation {direction} the baseline on {metric} near {axis.words} {c_point:.1f}{axis.unit} (95% interval "
        f"{c_lo:.1f}–{c_hi:.1f}, on log {axis.words} between {_levels_text([seg[load].iloc[0]], load)} and "
        f"{_levels_text([seg[load].iloc[-1]], load)}{axis.unit}; n={n_seg} repeats); {summary}.",
    )
