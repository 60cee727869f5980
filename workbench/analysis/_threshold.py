"""The "no drafting above N running requests" threshold of a speculative variant, from measurements.

N is the highest measured concurrency up to which the variant's mean is ahead of plain decoding at every
level (:func:`find_threshold`); of several variants, the one whose policy scores best against the envelope
(:func:`best_threshold`). Each threshold carries its crossover with the interval over repeats
(:func:`workbench.analysis.crossover_interval`) and says, in one sentence, how sure the switch is. The ratios
and the envelope it reads are :mod:`workbench.analysis._policy`'s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Literal

import pandas as pd

from workbench.analysis._policy import envelope, higher_is_better, spec_ratio_table
from workbench.analysis._repeats import CrossoverInterval, crossover_interval, repeat_table
from workbench.errors import ConfigError

__all__ = ["Threshold", "best_threshold", "find_threshold"]

ThresholdKind = Literal["threshold", "always", "never"]


@dataclasses.dataclass(frozen=True)
class Threshold:
    """ "No drafting above N running requests" for one speculative variant.

    Attributes:
        spec: the speculative variant that drafts at or below the threshold.
        baseline: the plain-decoding variant it stands against above it.
        metric: the level column judged.
        kind: ``threshold`` (spec ahead up to ``no_draft_above``, behind at the next level),
            ``always`` (spec ahead at every measured level: no threshold in range),
            ``never`` (spec behind already at the lowest level).
        no_draft_above: N: the highest measured concurrency up to which the spec's mean is ahead at
            every level (None for ``always``; 0 for ``never``).
        levels: the concurrency levels measured.
        crossover: the crossover with its interval on log concurrency
            (:func:`workbench.analysis.crossover_interval`; claimed only where the intervals separate).
        description: one sentence with n and the interval.
    """

    spec: str
    baseline: str
    metric: str
    kind: ThresholdKind
    no_draft_above: int | None
    levels: tuple[int, ...]
    crossover: CrossoverInterval
    description: str

    def choice(self) -> dict[int, str]:
        """Concurrency -> the variant this policy runs there."""
        limit = math.inf if self.no_draft_above is None else self.no_draft_above
        return {c: (self.spec if c <= limit else self.baseline) for c in self.levels}


def find_threshold(
    levels: pd.DataFrame, *, baseline: str, spec: str, metric: str, confidence: float = 0.95
) -> Threshold:
    """The "no drafting above N" threshold of ``spec`` against ``baseline`` on ``metric``.

    N is the highest measured level up to which ``spec``'s mean is better than the baseline's at
    every level. Between N and the next measured level the data cannot place the
    switch more finely; the crossover interval says how sure the switch is at all (with n >= 2
    repeats it is claimed only where the intervals separate).

    Raises:
        ConfigError: as :func:`spec_ratio_table`.
    """
    ratios = spec_ratio_table(levels, baseline=baseline, metric=metric, specs=[spec], confidence=confidence)
    ratios = ratios.sort_values("concurrency").reset_index(drop=True)
    means = (
        repeat_table(levels[levels["variant"].isin([baseline, spec])], [metric])
        .pivot(index="concurrency", columns="variant", values=metric)
        .dropna()
    )
    measured = tuple(int(c) for c in means.index)
    ahead = list(means[spec] > means[baseline]) if higher_is_better(metric) else list(means[spec] < means[baseline])
    lead = 0
    while lead < len(ahead) and ahead[lead]:
        lead += 1
    finite = ratios.dropna(subset=["ratio"])
    crossover = crossover_interval(finite if len(finite) else ratios.fillna({"n": 1}), metric=metric)
    n = int(levels[levels["variant"].isin([baseline, spec])].groupby(["variant", "concurrency"]).size().min())
    kind: Literal["threshold", "always", "never"]
    limit: int | None
    if lead == len(ahead):
        kind, limit = "always", None
        text = (
            f"{spec} is ahead of {baseline} on {metric} at every measured level ({', '.join(map(str, measured))}): "
            f"no threshold in range; keep drafting (n={n} repeats)."
        )
    elif lead == 0:
        kind, limit = "never", 0
        text = (
            f"{spec} is behind {baseline} on {metric} already at concurrency {measured[0]}: do not draft "
            f"(n={n} repeats)."
        )
    else:
        kind, limit = "threshold", measured[lead - 1]
        text = (
            f"No drafting above {limit} running requests: {spec} is ahead of {baseline} on {metric} up to "
            f"concurrency {limit} and behind at {measured[lead]} (means over n={n} repeats). "
            f"{crossover.description}"
        )
        if crossover.kind != "claimed":  # the switch point may move between runs of the same sweep
            at = ratios.set_index("concurrency")
            text += (
                f" Not stable across runs until tested: the ratio is {_ratio_cell(at, limit)} at {limit} and "
                f"{_ratio_cell(at, measured[lead])} at {measured[lead]}, so another run of the same sweep may "
                "put N at another level (two runs of the defaults, one repeat each, gave 4 and 16)."
            )
    return Threshold(spec, baseline, metric, kind, limit, measured, crossover, text)


def _ratio_cell(ratios: pd.DataFrame, concurrency: int) -> str:
    """``"1.05x [0.98, 1.12]"`` (the paired ratio and its 95% interval), or ``"1.05x (n=1, no interval)"``."""
    row = ratios.loc[concurrency]
    if row["ratio_lo"] == row["ratio_lo"]:
        return f"{row['ratio']:.2f}x [{row['ratio_lo']:.2f}, {row['ratio_hi']:.2f}]"
    return f"{row['ratio']:.2f}x (n={int(row['n'])}, no interval)"


def best_threshold(
    levels: pd.DataFrame, *, baseline: str, specs: Sequence[str], metric: str, confidence: float = 0.95
) -> Threshold:
    """Of the thresholds of ``specs`` (:func:`find_threshold`), the one whose policy scores best.

    Score: the geometric mean over levels of the policy's mean (its chosen variant's) divided by the
    envelope's mean (the best of ``baseline`` and ``specs``), inverted for a latency; ties go to the
    earlier variant in ``specs``.

    Raises:
        ConfigError: ``specs`` empty, or as :func:`find_threshold`.
    """
    if not specs:
        raise ConfigError("best_threshold needs at least one speculative variant")
    env = envelope(levels, metric=metric, variants=[baseline, *specs], confidence=confidence)
    best = env.set_index("concurrency")[metric]
    means = repeat_table(levels[levels["variant"].isin([baseline, *specs])], [metric]).set_index(
        ["variant", "concurrency"]
    )[metric]
    sign = 1.0 if higher_is_better(metric) else -1.0
    scored = []
    for spec in specs:
        t = find_threshold(levels, baseline=baseline, spec=spec, metric=metric, confidence=confidence)
        logs = [
            sign * math.log(max(means[(v, c)], 1e-12) / best[c])
            for c, v in t.choice().items()
            if (v, c) in means and best[c] > 0
        ]
        scored.append((sum(logs) / len(logs) if logs else -math.inf, t))
    return max(scored, key=lambda s: s[0])[1]
