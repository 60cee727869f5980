"""How far to trust a prediction: the held-out error a profile was checked to, by regime.

A profile may list ``[[held_out]]`` entries: for one regime (``plain``, ``chain`` or ``tree``: how the predicted
server decodes) over a batch range, the mean and worst absolute error of predictions that were never fitted,
the metric they were measured on, how many points and where from. Every prediction the what-if and ``sim
predict`` show names the entries of its regime that cover its levels, or says that none does::

    [[held_out]]
    regime = "chain"
    batch = [1, 64]
    metric = "output tok/s"          # or "spec/baseline ratio"
    mean_abs_pct = 4.2
    worst_abs_pct = 6.7
    n = 21
    source = "real SGLang 0.5.17, one H100, triton attention (data/calibration/h100-sglang-0.5.17-2026-12-06-real)"
    spec_v2 = true                   # optional: only for spec v2 (true) or v1 (false) servers; absent: either
    fitted = false                   # optional: true for the points the profile was fitted on (an in-sample error)

The figures are the ones docs/SIMULATOR.md's tables state; tests check the real-engine ones against
``accuracy.json``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from workbench.errors import ConfigError
from workbench.sim._spec import SpecConfig

#: How a server decodes, as the held-out tables split it.
REGIMES = ("plain", "chain", "tree")
METRICS = ("output tok/s", "spec/baseline ratio")


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """One checked regime of a profile (see the module docstring)."""

    regime: str
    batch_min: int
    batch_max: int
    metric: str
    mean_abs_pct: float
    worst_abs_pct: float
    n: int
    source: str
    spec_v2: bool | None = None
    fitted: bool = False

    def covers(self, spec: SpecConfig, levels: Sequence[int]) -> bool:
        """True when this entry is of the decoding ``spec`` runs and its batch range meets the levels'."""
        if self.regime != regime_of(spec) or not levels:
            return False
        if spec.enabled and self.spec_v2 is not None and self.spec_v2 != spec.spec_v2:
            return False
        return min(levels) <= self.batch_max and max(levels) >= self.batch_min

    def sentence(self) -> str:
        what = "in-sample error (the points fitted)" if self.fitted else "held-out error"
        v2 = "" if self.spec_v2 is None else (" spec v2" if self.spec_v2 else " spec v1")
        return (
            f"{self.regime}{v2}, batch {self.batch_min}-{self.batch_max}, {self.metric}: {self.mean_abs_pct:g}% "
            f"mean, {self.worst_abs_pct:g}% worst {what} (n={self.n}; {self.source})"
        )


def parse_held_out(entries: Any, where: str) -> tuple[HeldOut, ...]:
    """The ``[[held_out]]`` entries of a profile file, checked."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: held_out must be a list of tables ([[held_out]])")
    out = []
    for i, e in enumerate(entries):
        try:
            lo, hi = (int(x) for x in e["batch"])
            v2 = e.get("spec_v2")
            item = HeldOut(
                str(e["regime"]),
                lo,
                hi,
                str(e["metric"]),
                float(e["mean_abs_pct"]),
                float(e["worst_abs_pct"]),
                int(e["n"]),
                str(e["source"]),
                None if v2 is None else bool(v2),
                bool(e.get("fitted", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{where}: [[held_out]] entry {i + 1} needs regime, batch = [lo, hi], metric, "
                f"mean_abs_pct, worst_abs_pct, n and source ({exc})"
            ) from exc
        if item.regime not in REGIMES or item.metric not in METRICS or not 1 <= lo <= hi:
            raise ConfigError(
                f"{where}: [[held_out]] entry {i + 1}: regime one of {REGIMES}, metric one of "
                f"{METRICS}, 1 <= batch[0] <= batch[1]; got {item.regime!r}, {item.metric!r}, {lo}-{hi}"
            )
        out.append(item)
    return tuple(out)


def regime_of(spec: SpecConfig) -> str:
    """``plain``, ``chain`` (topk 1) or ``tree`` (topk > 1)."""
    if not spec.enabled:
        return "plain"
    return "chain" if spec.topk <= 1 else "tree"


def trust(held_out: Sequence[HeldOut], spec: SpecConfig, levels: Sequence[int]) -> str:
    """One line: the held-out errors that cover a prediction of this decoding at these levels, or that none does."""
    found = [h for h in held_out if h.covers(spec, levels)]
    if not found:
        v2 = "" if not spec.enabled else (" spec v2" if spec.spec_v2 else " spec v1")
        return (
            f"checked: never for {regime_of(spec)}{v2} decoding at batch {min(levels)}-{max(levels)} on this "
            "profile; the prediction is unchecked there"
        )
    return "checked: " + "; ".join(h.sentence() for h in found)
