"""How far to trust a prediction: the held-out error a profile was checked to, by regime.

A profile may list ``[[held_out]]`` entries: for one regime (``plain``, ``chain`` or ``tree``: how the predicted
server decodes) over a batch range, the mean and worst absolute error of predictions that were never fitted,
the metric they were measured on, how many points and where from. Every prediction the what-if and ``sim
predict`` show names the entries of its regime that cover its levels, or says that none does (:func:`trust`, the
line ``sim predict`` prints; :func:`check_prediction`, the value the what-if's and the policy study's rows carry)::

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
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.sim._spec import SpecConfig

if TYPE_CHECKING:
    from workbench.sim._profiles import SimProfile

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
            f"not checked: this profile holds no real-engine error for {regime_of(spec)}{v2} decoding at batch "
            f"{min(levels)}-{max(levels)}, so the prediction is unchecked there"
        )
    return "checked: " + "; ".join(h.sentence() for h in found)


#: What a prediction says where no ``[[held_out]]`` entry covers its regime and batch.
UNCHECKED = "not checked against a real engine"


@dataclasses.dataclass(frozen=True)
class HeldOutCheck:
    """How far one prediction (or one recommendation built of several) is trusted: its regime and the entry that
    checked it.

    Attributes:
        regime: the regime in words: the model's kind (dense or MoE), how it decodes and, for speculation, which
            worker (``"dense chain (spec v2)"``); several joined by ``" + "`` for a recommendation.
        batches: the batches (concurrency levels) predicted.
        entry: the entry it is trusted by: of the metric asked for where one covers it, else of the other metric;
            for several parts, the one with the largest worst error (trust a recommendation as far as its least
            trusted part). None: no entry covers any of it.
        unchecked: ``(regime, batch)`` for each batch that no entry of its part's regime covers.
    """

    regime: str
    batches: tuple[int, ...]
    entry: HeldOut | None
    unchecked: tuple[tuple[str, int], ...] = ()

    @property
    def checked(self) -> bool:
        """True when an entry covers some of the prediction."""
        return self.entry is not None

    def kind(self) -> str:
        """``"held out"``, ``"in-sample"`` (an entry of the points the profile was fitted on) or ``"not checked"``."""
        if self.entry is None:
            return "not checked"
        return "in-sample" if self.entry.fitted else "held out"

    def source(self) -> str:
        """Where the error was measured (the batches left unchecked after it), or :data:`UNCHECKED`."""
        if self.entry is None:
            return UNCHECKED
        text = self.entry.source
        regimes = dict.fromkeys(r for r, _ in self.unchecked)
        for regime in regimes:  # the regime named only where it is not this check's own
            batches = ", ".join(str(b) for r, b in self.unchecked if r == regime)
            text += f"; {'' if regime == self.regime else f'{regime} at '}batch {batches} {UNCHECKED}"
        return text

    def columns(self) -> dict[str, Any]:
        """The check as table columns: ``held_out_kind`` (:meth:`kind`), ``held_out_mean_pct`` and
        ``held_out_worst_pct`` (absolute error, %; NaN unchecked), ``held_out_n`` (points; None unchecked),
        ``held_out_metric`` (what the error was measured on; ``""`` unchecked) and ``held_out_source``
        (:meth:`source`)."""
        e = self.entry
        return {
            "held_out_kind": self.kind(),
            "held_out_mean_pct": float("nan") if e is None else e.mean_abs_pct,
            "held_out_worst_pct": float("nan") if e is None else e.worst_abs_pct,
            "held_out_n": None if e is None else e.n,
            "held_out_metric": "" if e is None else e.metric,
            "held_out_source": self.source(),
        }

    def figures(self) -> str:
        """``"4.2% mean, 6.7% worst held-out error on output tok/s (n=21)"`` (``in-sample error`` for an entry of
        fitted points), or :data:`UNCHECKED`."""
        e = self.entry
        if e is None:
            return UNCHECKED
        what = "in-sample error" if e.fitted else "held-out error"
        return f"{e.mean_abs_pct:g}% mean, {e.worst_abs_pct:g}% worst {what} on {e.metric} (n={e.n})"

    def words(self) -> str:
        """One phrase: ``"dense chain (spec v2) at batch 1-64: 4.2% mean, 6.7% worst held-out error on output tok/s
        (n=21; SOURCE)"``, or the regime and batches followed by :data:`UNCHECKED`."""
        where = f"{self.regime} at batch {_batches_text(self.batches)}"
        if self.entry is None:
            return f"{where}: {UNCHECKED}"
        return f"{where}: {self.figures()[:-1]}; {self.source()})"


def regime_words(profile: SimProfile, spec: SpecConfig) -> str:
    """``"dense chain (spec v2)"``, ``"MoE tree (spec v1)"``, ``"dense plain decoding"``: the model's kind (when the
    profile describes it) and :func:`regime_of`, with the worker for speculation."""
    kind = "" if profile.physics is None else ("MoE " if profile.physics.target.is_moe else "dense ")
    if not spec.enabled:
        return f"{kind}plain decoding"
    return f"{kind}{regime_of(spec)} (spec {'v2' if spec.spec_v2 else 'v1'})"


def check_prediction(
    profile: SimProfile, spec: SpecConfig, batches: Sequence[int], *, metric: str = "output tok/s"
) -> HeldOutCheck:
    """The held-out error a prediction of ``spec`` at ``batches`` (concurrency levels) on ``profile`` carries.

    Each batch is matched to the profile's entries of its regime (:meth:`HeldOut.covers`); of those, an entry on
    ``metric`` (``"output tok/s"`` or ``"spec/baseline ratio"``) is preferred, then a held-out one over an in-sample
    one, then the one with the largest worst error.

    Raises:
        ConfigError: ``metric`` is not one of :data:`METRICS`, or no batch is given.
    """
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {METRICS}, got {metric!r}")
    wanted = tuple(sorted({int(b) for b in batches}))
    if not wanted:
        raise ConfigError("a held-out check needs at least one batch (concurrency level)")
    regime = regime_words(profile, spec)
    found: list[HeldOut] = []
    unchecked: list[tuple[str, int]] = []
    for b in wanted:
        covering = [h for h in profile.held_out if h.covers(spec, [b])]
        if covering:
            found.append(min(covering, key=lambda h: (h.metric != metric, h.fitted, -h.worst_abs_pct)))
        else:
            unchecked.append((regime, b))
    entry = max(found, key=lambda h: (h.metric == metric, h.worst_abs_pct)) if found else None
    return HeldOutCheck(regime, wanted, entry, tuple(unchecked))


def combine_checks(checks: Iterable[HeldOutCheck], *, metric: str = "output tok/s") -> HeldOutCheck:
    """One check for a recommendation made of several predictions: their regimes joined, their batches together,
    the least trusting of their entries (one on ``metric`` first, then a held-out one over an in-sample one, then
    the largest worst error), and every batch one of them leaves unchecked.

    Raises:
        ConfigError: no check is given.
    """
    parts = list(checks)
    if not parts:
        raise ConfigError("combine_checks needs at least one check")
    entries = [c.entry for c in parts if c.entry is not None]
    entry = max(entries, key=lambda e: (e.metric == metric, not e.fitted, e.worst_abs_pct)) if entries else None
    return HeldOutCheck(
        " + ".join(dict.fromkeys(c.regime for c in parts)),
        tuple(sorted({b for c in parts for b in c.batches})),
        entry,
        tuple(dict.fromkeys(u for c in parts for u in c.unchecked)),
    )


def _batches_text(batches: Sequence[int]) -> str:
    """``"4"``, ``"1-64"`` (the lowest and highest), as the held-out tables write batch ranges."""
    lo, hi = min(batches), max(batches)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"
