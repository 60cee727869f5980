"""The per-batch-size schedule of num_steps at topk 1, from a sweep over num_steps, for SGLang and vLLM.

:func:`step_tiers` reads batch-size tiers from the measured levels (the baseline as steps 0), turning drafting
back on above a level where plain decoding won only when the return is separated from the baseline; the tiers
are written as SGLang's ``--speculative-adaptive-config`` JSON, or the threshold policy for a release without
tiers (:func:`sglang_policy`), and as vLLM's ``num_speculative_tokens_per_batch_size``
(:func:`vllm_schedule`). A concurrency level stands for a running batch size (closed-loop concurrency ``c``
keeps about ``c`` requests running).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pandas as pd

from workbench.analysis._policy import higher_is_better, spec_ratio_table
from workbench.analysis._repeats import repeat_table
from workbench.analysis._threshold import Threshold
from workbench.errors import ConfigError
from workbench.releases import ADAPTIVE_SINCE, ADAPTIVE_TIERS_SINCE, release_at_least, release_number

__all__ = ["SglangPolicy", "Tier", "sglang_policy", "step_tiers", "vllm_schedule"]


@dataclasses.dataclass(frozen=True)
class Tier:
    """Batch sizes from ``start`` (inclusive) run ``candidate_steps`` (0: no drafting).

    Attributes:
        start: the smallest batch size of the tier: 1 for the first, else one above the last level measured
            with the tier before it (:func:`step_tiers`).
        best_steps: the best num_steps measured at ``start``'s level (0: the baseline).
        candidate_steps: ``best_steps`` and any other within the tolerance, sorted.
        variant: the variant measured best there.
        note: why the tier is not simply the best measured there ('' when it is): a speculative
            variant measured ahead again after drafting lost at a lower level, left off (see
            :func:`step_tiers`), with its ratio and interval.
    """

    start: int
    best_steps: int
    candidate_steps: tuple[int, ...]
    variant: str
    note: str = ""


def step_tiers(
    levels: pd.DataFrame, *, baseline: str, steps: Mapping[str, int], metric: str, tolerance: float = 0.0
) -> list[Tier]:
    """Batch-size tiers of num_steps from a sweep over num_steps (topk 1), the baseline as steps 0.

    At each measured concurrency the best of ``baseline`` and ``steps``' variants (mean over
    repeats) sets the tier's steps; variants within ``tolerance`` (relative, on the mean) join its
    candidates. Consecutive levels with the same candidates merge into one tier. The first tier
    starts at batch size 1 even when the lowest level is higher (an extrapolation); every later tier
    starts just above the last level measured with the tier before it (a tier best from level 32 on,
    after one best up to 16, starts at 17), the rule of :func:`find_threshold`'s "no drafting above N":
    between two measured levels the switch is placed at the lower one, never extrapolated upward. Once plain
    decoding is best at a level, a speculative variant best at a higher level turns drafting on
    again only when its paired ratio's 95% interval excludes 1; otherwise drafting stays off and the
    tier's ``note`` says what was measured (:func:`_reentry`), so the tiers agree with the sweep's
    "no drafting above N".

    Args:
        levels: one row per (variant, concurrency, repeat).
        baseline: plain decoding (steps 0).
        steps: speculative variant -> its num_steps (topk 1).
        metric: the objective's column.
        tolerance: e.g. 0.02 lets variants within 2% of the best into the candidates.

    Raises:
        ConfigError: ``steps`` empty, a steps value < 1, a negative tolerance.
    """
    if not steps:
        raise ConfigError("step_tiers needs at least one speculative variant with its num_steps")
    if any(int(s) < 1 for s in steps.values()):
        raise ConfigError(f"num_steps of the speculative variants must be >= 1, got {dict(steps)}")
    if tolerance < 0:
        raise ConfigError(f"tolerance must be >= 0, got {tolerance}")
    of = {baseline: 0, **{v: int(s) for v, s in steps.items()}}
    rows = levels[levels["variant"].isin(list(of))].dropna(subset=[metric])
    means = repeat_table(rows, [metric])
    up = higher_is_better(metric)
    tiers: list[Tier] = []
    off_at: int | None = None  # the first level where plain decoding was best
    previous = 0  # the level measured before this one: a new tier starts just above it
    for c, group in means.groupby("concurrency", sort=True):
        ordered = group.sort_values(metric, ascending=not up)
        best = ordered.iloc[0]
        near = ordered[
            (ordered[metric] >= best[metric] * (1 - tolerance))
            if up
            else (ordered[metric] <= best[metric] * (1 + tolerance))
        ]
        cands = tuple(sorted({of[v] for v in near["variant"]}))
        note = ""
        if off_at is not None and of[best["variant"]] > 0:
            note = _reentry(
                rows, baseline=baseline, spec=str(best["variant"]), concurrency=int(c), off_at=off_at, metric=metric
            )
            if note:  # not separated from the baseline: drafting stays off, as below this level
                best, cands = ordered[ordered["variant"] == baseline].iloc[0], (0,)
        if of[best["variant"]] == 0 and off_at is None:
            off_at = int(c)
        start, previous = (1 if not tiers else previous + 1), int(c)
        if tiers and tiers[-1].candidate_steps == cands:
            if note:
                tiers[-1] = dataclasses.replace(tiers[-1], note="; ".join(filter(None, (tiers[-1].note, note))))
            continue
        tiers.append(Tier(start, of[best["variant"]], cands, best["variant"], note))
    return tiers


def _reentry(rows: pd.DataFrame, *, baseline: str, spec: str, concurrency: int, off_at: int, metric: str) -> str:
    """Why ``spec``, measured ahead at ``concurrency`` after plain decoding won at ``off_at``, is left off
    there: its paired ratio to the baseline with the interval (or that it was measured once); '' when the
    ratio's 95% interval excludes 1 (the return is real, and the tier keeps it).

    Speculation's gain falls as the batch grows (more tokens per step leave less idle compute to
    draft with), so drafting that loses at one batch size and wins again at a larger one is
    most likely the run-to-run spread; a policy that turns drafting off and on again on it would
    contradict the "no drafting above N" the same sweep gives.
    """
    at = rows[rows["concurrency"] == concurrency]
    ratio = spec_ratio_table(at, baseline=baseline, metric=metric, specs=[spec]).iloc[0]
    lo, hi, n = ratio["ratio_lo"], ratio["ratio_hi"], int(ratio["n"])
    if n >= 2 and lo == lo and (lo > 1.0 or hi < 1.0):
        return ""
    spread = f"95% interval {lo:.2f}-{hi:.2f}, n={n}" if n >= 2 and lo == lo else f"n={n}, no interval"
    return (
        f"{spec} measured {ratio['ratio']:.2f}x the baseline at {concurrency} ({spread}) after plain decoding "
        f"won at {off_at}: not separated from it, so drafting stays off there; measure with 3 or more repeats "
        "to test whether the return is real"
    )


@dataclasses.dataclass(frozen=True)
class SglangPolicy:
    """What to give an SGLang release to switch speculation with the batch size.

    Attributes:
        sglang_version: the target release.
        kind: ``adaptive_tiers`` (0.5.16+: ``--speculative-adaptive-config`` with batch-size tiers),
            ``threshold`` (no tiers in that release: no drafting above N, which needs the
            workbench's patch or an equivalent), or ``none`` (no speculation pays anywhere).
        config: the adaptive config JSON object (``adaptive_tiers``), else None.
        flags: the ``launch_server`` flags that go with it (the config's path as ``CONFIG.json``).
        no_draft_above: N for the threshold policy, else None.
        note: how the config is read and what it leaves out.
    """

    sglang_version: str
    kind: Literal["adaptive_tiers", "threshold", "none"]
    config: dict[str, dict[str, Any]] | None
    flags: tuple[str, ...]
    no_draft_above: int | None
    note: str


def sglang_policy(
    tiers: Sequence[Tier],
    threshold: Threshold | None,
    *,
    sglang_version: str,
    up_hysteresis: float = 0.0,
    down_hysteresis: float = 0.0,
) -> SglangPolicy:
    """The schedule for ``sglang_version``: adaptive tiers from 0.5.16, else the threshold policy.

    The config's shape is SGLang 0.5.16-0.5.23's (``srt/speculative/adaptive_spec_params.py``
    ``_load_adaptive_config``): digit-string batch-size keys, each ``{"candidate_steps": [ints >=
    0], "up_hysteresis", "down_hysteresis"}``; 0 turns drafting off. SGLang pads a batch up to the
    next captured CUDA-graph batch size and routes it to the largest tier key at or below that
    size, and within a tier its EMA of accepted drafts picks among the candidates: a tier with one
    candidate pins the steps. ``--speculative-num-steps`` must be one of the union of the candidates
    (0.5.16 ``_init_adaptive_speculative_params``); the flags give the largest.

    Args:
        tiers: from :func:`step_tiers`.
        threshold: the threshold policy for releases without tiers (None: none found).
        sglang_version: e.g. ``"0.5.23"``.
        up_hysteresis, down_hysteresis: written into every tier (SGLang's defaults for tiers
            above 1 are 0.0).

    Raises:
        ConfigError: no tiers, or an unparseable version.
    """
    if not tiers:
        raise ConfigError("sglang_policy needs at least one tier (step_tiers)")
    if not release_number(sglang_version):
        raise ConfigError(f"not an SGLang version: {sglang_version!r} (e.g. '0.5.23')")
    steps = sorted({s for t in tiers for s in t.candidate_steps})
    if steps == [0]:
        return SglangPolicy(
            sglang_version,
            "none",
            None,
            (),
            0,
            "plain decoding was best at every measured level: launch without speculation",
        )
    if release_at_least(sglang_version, ADAPTIVE_TIERS_SINCE):
        config = {
            str(t.start): {
                "candidate_steps": list(t.candidate_steps),
                "up_hysteresis": up_hysteresis,
                "down_hysteresis": down_hysteresis,
            }
            for t in tiers
        }
        flags = (
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-adaptive",
            "--speculative-adaptive-config",
            "CONFIG.json",
            "--speculative-num-steps",
            str(max(steps)),
        )
        left_off = "; ".join(t.note for t in tiers if t.note)
        return SglangPolicy(
            sglang_version,
            "adaptive_tiers",
            config,
            flags,
            None,
            "batch sizes are padded to the next CUDA-graph size, then routed to the largest tier "
            "key at or below it; each tier after the first starts one above the last level measured "
            "with the tier before it, as the threshold's N does" + (f". Left off: {left_off}" if left_off else ""),
        )
    limit = None if threshold is None else threshold.no_draft_above
    why = (
        f"--speculative-adaptive arrived in {ADAPTIVE_SINCE} without batch-size tiers (a single EMA over candidate "
        "steps >= 1, which cannot turn drafting off)"
        if release_at_least(sglang_version, ADAPTIVE_SINCE)
        else "this release has no adaptive speculation"
    )
    if threshold is None or threshold.kind == "always":
        return SglangPolicy(
            sglang_version,
            "threshold",
            None,
            (),
            None,
            f"{why}; speculation was ahead at every measured level, so keep it on",
        )
    return SglangPolicy(
        sglang_version,
        "threshold",
        None,
        ("SGLANG_SPEC_OFF_ABOVE=" + str(limit),),
        limit,
        f"{why}: no drafting above {limit} running requests ({threshold.spec}), which needs a patched "
        "build (data/patches/eagle-spec-off-above.patch covers spec v1 of 0.5.9)",
    )


def vllm_schedule(tiers: Sequence[Tier], *, max_batch_size: int) -> list[list[int]]:
    """The tiers as vLLM's ``num_speculative_tokens_per_batch_size``: ``[[start, end, K], ...]``.

    vLLM (Dynamic SD, ``vllm/v1/spec_decode/dynamic/utils.py``) reads inclusive batch-size ranges,
    each with its number of speculative tokens K (0: no speculation), inside
    ``--speculative-config``. K is the tier's best num_steps (a topk-1 chain of K draft tokens);
    the last range ends at ``max_batch_size``.

    Raises:
        ConfigError: no tiers, or ``max_batch_size`` below the last tier's start.
    """
    if not tiers:
        raise ConfigError("vllm_schedule needs at least one tier (step_tiers)")
    if max_batch_size < tiers[-1].start:
        raise ConfigError(f"max_batch_size {max_batch_size} is below the last tier's start {tiers[-1].start}")
    out: list[list[int]] = []
    for i, t in enumerate(tiers):
        end = tiers[i + 1].start - 1 if i + 1 < len(tiers) else max_batch_size
        if out and out[-1][2] == t.best_steps:
            out[-1][1] = end
        else:
            out.append([t.start, end, t.best_steps])
    return out
