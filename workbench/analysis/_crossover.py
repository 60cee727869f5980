"""Where speculation stops paying: spec/baseline ratios and the crossover concurrency.

Pure functions on per-level tables (one row per variant and concurrency level, or
request rate for open-loop levels: ``load``); no I/O. The crossover is where the spec/baseline ratio of a metric crosses 1,
interpolated linearly in log2(concurrency) between the two measured levels that
bracket it, since levels are swept on a doubling grid.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import pandas as pd

from workbench.analysis._load import LOAD_AXES
from workbench.errors import ConfigError

CrossoverKind = Literal["interpolated", "at_level", "below_range", "none_in_range"]


@dataclasses.dataclass(frozen=True)
class Crossover:
    """The concurrency at which a speculative variant stops beating the baseline.

    Attributes:
        metric: the level column compared (e.g. ``output_tok_s``).
        kind: ``interpolated`` (between two levels), ``at_level`` (ratio exactly 1
            at a level), ``below_range`` (spec behind at every level: the crossover
            lies below the smallest level), ``none_in_range`` (spec ahead or even at
            every level).
        concurrency: the crossover concurrency, or None when not in range.
        lower, upper: the bracketing levels (None when not in range).
        description: one sentence for people.
        crossings: every sign change as (lower level, upper level, concurrency),
            in case the ratio crosses 1 more than once.
    """

    metric: str
    kind: CrossoverKind
    concurrency: float | None
    lower: float | None
    upper: float | None
    description: str
    crossings: tuple[tuple[float, float, float], ...] = ()


def ratio_table(levels: pd.DataFrame, *, baseline: str, spec: str, metrics: tuple[str, ...]) -> pd.DataFrame:
    """Spec/baseline ratio of each metric at each concurrency both variants measured.

    Args:
        levels: per-level rows with columns ``variant``, ``concurrency`` and ``metrics``.
        baseline: baseline variant name.
        spec: speculative variant name.
        metrics: level columns to divide.

    Returns:
        One row per shared concurrency level: ``concurrency``, ``<m>_baseline``,
        ``<m>_spec`` and ``<m>_ratio`` for each metric, sorted by concurrency.

    Raises:
        ConfigError: a variant or metric is missing, or the variants share no level.
    """
    for name in (baseline, spec):
        if name not in set(levels["variant"]):
            raise ConfigError(f"variant {name!r} not in the level table; have {sorted(set(levels['variant']))}")
    missing = [m for m in metrics if m not in levels.columns]
    if missing:
        raise ConfigError(f"level table lacks columns {missing}")
    b = levels[levels["variant"] == baseline].set_index("concurrency")[list(metrics)]
    s = levels[levels["variant"] == spec].set_index("concurrency")[list(metrics)]
    joined = b.merge(s, left_index=True, right_index=True, how="inner", suffixes=("_baseline", "_spec")).sort_index()
    if joined.empty:
        raise ConfigError(f"{baseline!r} and {spec!r} share no concurrency level")
    for m in metrics:
        joined[f"{m}_ratio"] = joined[f"{m}_spec"] / joined[f"{m}_baseline"]
    return joined.reset_index()


def find_crossover(
    concurrency: list[float] | pd.Series, ratio: list[float] | pd.Series, *, metric: str, load: str = "concurrency"
) -> Crossover:
    """Crossover of a spec/baseline ratio series (see :class:`Crossover`).

    Args:
        concurrency: increasing levels (positive): concurrencies, or request rates (req/s)
            with ``load="request_rate_req_s"``.
        ratio: spec/baseline ratio at each level (NaN levels are skipped).
        metric: name of the compared metric, for the description.
        load: which load the levels are (:data:`workbench.analysis.LOAD_AXES`), for the words.

    Raises:
        ConfigError: fewer than one valid level, or a non-positive level.
    """
    axis = LOAD_AXES[load]
    pairs = [(axis.value(c), float(r)) for c, r in zip(concurrency, ratio) if r == r]
    pairs.sort()
    if not pairs:
        raise ConfigError("no level with a valid ratio to locate a crossover")
    if pairs[0][0] <= 0:
        raise ConfigError(f"{axis.words} levels must be positive")
    crossings: list[tuple[float, float, float]] = []
    for (c0, r0), (c1, r1) in zip(pairs, pairs[1:]):
        if (r0 - 1.0) * (r1 - 1.0) < 0:
            frac = (1.0 - r0) / (r1 - r0)
            x = math.log2(c0) + frac * (math.log2(c1) - math.log2(c0))
            crossings.append((c0, c1, 2.0**x))
    exact = [c for c, r in pairs if r == 1.0]
    ahead = [r > 1.0 for _, r in pairs]
    if crossings:
        c0, c1, cx = crossings[0]
        more = f" (it crosses {len(crossings)} times)" if len(crossings) > 1 else ""
        direction = "stops beating" if pairs[0][1] > 1.0 else "starts beating"
        return Crossover(
            metric,
            "interpolated",
            cx,
            c0,
            c1,
            f"Speculation {direction} the baseline on {metric} between {axis.words} {c0:g} and {c1:g}{axis.unit} "
            f"(≈ {cx:.1f}, interpolated on log {axis.words}: nothing was measured in between){more}.",
            tuple(crossings),
        )
    if exact:
        c = exact[0]
        return Crossover(
            metric,
            "at_level",
            float(c),
            c,
            c,
            f"Speculation ties the baseline on {metric} at {axis.words} {c:g}{axis.unit}.",
        )
    lo, hi = pairs[0][0], pairs[-1][0]
    if not any(ahead):
        return Crossover(
            metric,
            "below_range",
            None,
            None,
            None,
            f"Speculation is behind the baseline on {metric} at every level from {lo:g} to {hi:g}{axis.unit}: "
            f"the crossover is below the smallest level ({lo:g}{axis.unit}).",
        )
    return Crossover(
        metric,
        "none_in_range",
        None,
        None,
        None,
        f"Speculation is ahead of the baseline on {metric} at every level from {lo:g} to {hi:g}{axis.unit}: "
        "no crossover in range.",
    )


def best_policy(
    levels: pd.DataFrame, *, metric: str, higher_is_better: bool = True, load: str = "concurrency"
) -> pd.DataFrame:
    """The best variant at each level on one metric (the envelope across variants).

    Args:
        load: the level column (``"concurrency"``, or ``"request_rate_req_s"`` for open-loop levels).

    Returns:
        One row per level: the ``load`` column, ``best_variant``, ``best_<metric>``,
        ``runner_up``, and ``margin`` (best / runner-up - 1; NaN with one variant).
    """
    rows = []
    for c, group in levels.groupby(load):
        ordered = group.sort_values(metric, ascending=not higher_is_better)
        best = ordered.iloc[0]
        second = ordered.iloc[1] if len(ordered) > 1 else None
        rows.append(
            {
                load: LOAD_AXES[load].value(c),
                "best_variant": best["variant"],
                f"best_{metric}": best[metric],
                "runner_up": None if second is None else second["variant"],
                "margin": float("nan")
                if second is None or not second[metric] > 0
                else best[metric] / second[metric] - 1.0,
            }
        )
    return pd.DataFrame(rows)
