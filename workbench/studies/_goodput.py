"""Goodput's latency targets as one value, and the one way a study adds goodput to its levels.

A request counts toward goodput when it completed without error and met every target set: its TTFT,
its TPOT and its end-to-end latency, each at most so many milliseconds
(:func:`workbench.analysis.goodput_levels`). :class:`GoodputTargets` holds the targets (the same three
names as the request columns they bound), checks them once, and says them in words; :func:`with_goodput`
puts ``goodput_req_s``, ``goodput_fraction`` and ``goodput_requests`` on a level table. Both
:class:`workbench.studies.Study` (``ttft_target_ms`` and ``tpot_target_ms`` in the spec-versus-baseline
notebook) and :class:`workbench.studies.PolicyStudy` (``tpot_ms`` and ``e2e_ms`` in the dynamic-disable
notebook) hold one.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from workbench.analysis import goodput_levels
from workbench.errors import ConfigError

__all__ = ["GOODPUT_COLUMNS", "GoodputTargets", "with_goodput"]

#: The level columns :func:`with_goodput` adds (and replaces when they are there already).
GOODPUT_COLUMNS = ("goodput_fraction", "goodput_req_s", "goodput_requests")

#: The request columns goodput is computed from (besides the level's own columns).
_REQUEST_COLUMNS = frozenset({"variant", "error", "ttft_ms", "tpot_ms", "e2e_ms", "start_s", "end_s"})


@dataclasses.dataclass(frozen=True)
class GoodputTargets:
    """Latency targets for goodput, in milliseconds; None: that latency is not bounded.

    Attributes:
        ttft_ms: time to first token at most this.
        tpot_ms: time per output token at most this (a request of one output token has none and passes).
        e2e_ms: end-to-end latency at most this.

    A value without any target is false (``if targets:``): no goodput is computed.

    Raises:
        ConfigError: a target that is not a number of milliseconds above 0.
    """

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None

    def __post_init__(self) -> None:
        for name, value in self._pairs():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
                raise ConfigError(
                    f"goodput target {name} must be a number of milliseconds > 0 (or None: no target), got {value!r}"
                )

    def _pairs(self) -> tuple[tuple[str, float | None], ...]:
        return (("ttft_ms", self.ttft_ms), ("tpot_ms", self.tpot_ms), ("e2e_ms", self.e2e_ms))

    def given(self) -> dict[str, float]:
        """The targets set, ``{"ttft_ms": 500.0, ...}``: :func:`workbench.analysis.goodput_levels`' keyword arguments."""
        return {name: float(value) for name, value in self._pairs() if value is not None}

    def __bool__(self) -> bool:
        return bool(self.given())

    @property
    def words(self) -> str:
        """``"TTFT ≤ 500 ms and TPOT ≤ 50 ms"``: the targets as a report says them (``""`` for none)."""
        return " and ".join(
            f"{name.removesuffix('_ms').upper()} ≤ {value:g} ms" for name, value in self.given().items()
        )


def with_goodput(
    levels: pd.DataFrame, requests: pd.DataFrame, targets: GoodputTargets, *, load: str = "concurrency"
) -> pd.DataFrame:
    """``levels`` with :data:`GOODPUT_COLUMNS` computed from ``requests`` under ``targets``.

    Each level row (variant, ``load`` level, repeat: 0 for a table without repeats) gets its level's
    figures from :func:`workbench.analysis.goodput_levels`; a level without request rows gets NaN. The
    columns are NaN throughout when the requests lack the timings goodput needs (an imported summary
    without per-request rows). Without a target, ``levels`` is returned as it is.

    Args:
        levels: one row per (variant, level[, repeat]).
        requests: the request rows of those levels.
        targets: the latency targets.
        load: the level column (``"request_rate_req_s"`` for open-loop levels).
    """
    if not targets:
        return levels
    out = levels.drop(columns=[c for c in GOODPUT_COLUMNS if c in levels])
    if (_REQUEST_COLUMNS | {load}) - set(requests.columns) or not len(requests):
        return out.assign(**{c: float("nan") for c in GOODPUT_COLUMNS})
    good = goodput_levels(requests, load=load, **targets.given())
    keyed = out.assign(repeat=out["repeat"] if "repeat" in out else 0)
    merged = keyed.merge(
        good[["variant", load, "repeat", *GOODPUT_COLUMNS]], on=["variant", load, "repeat"], how="left"
    )
    return merged if "repeat" in levels else merged.drop(columns=["repeat"])
