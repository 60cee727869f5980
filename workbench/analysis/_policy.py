"""When to stop speculating: the envelope, the threshold and the per-batch-size schedule, from measurements.

Pure functions on the per-level table (one row per variant, concurrency and repeat, as
``levels.parquet`` stores it) and, for goodput, the per-request table. They answer, with the
intervals over repeats of :mod:`workbench.analysis._repeats`:

- how each speculative variant compares with the baseline (:func:`spec_ratio_table`): on a
  throughput metric the ratio is spec / baseline, on a latency (``*_ms``) metric baseline / spec,
  so a ratio above 1 always means "speculation is better";
- which variant is best at each concurrency under an objective (:func:`envelope`): per-request
  tok/s, total output tok/s, or goodput (:func:`goodput_levels`: requests per second that meet a
  TPOT and/or E2E target);
- the "no drafting above N" threshold (:func:`find_threshold`, :func:`best_threshold`);
- the per-batch-size schedule of num_steps at topk 1 (:func:`step_tiers`), written as SGLang's
  ``--speculative-adaptive-config`` JSON (:func:`sglang_policy`) and as vLLM's
  ``num_speculative_tokens_per_batch_size`` (:func:`vllm_schedule`);
- what a policy is predicted to gain over always-on and always-off (:func:`policy_rows`,
  :func:`policy_gains`), and how a measured run of it compares (:func:`predicted_vs_measured`).

A policy's prediction is assembled from the measured levels of the variants it switches between
(:func:`policy_rows`): at each concurrency, the rows (every repeat) of the variant it would run.
Closed-loop concurrency ``c`` keeps about ``c`` requests running, so a concurrency level stands for
a running batch size. The prediction leaves out what switching costs: an iteration of a
speculative server that does not draft is not free (see ``workbench.sim``'s ``SpecOffCost``), which
is why the policy is then run and measured as one server.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from workbench.analysis._crossover import best_policy
from workbench.analysis._repeats import CrossoverInterval, crossover_interval, ratio_intervals, repeat_table
from workbench.errors import ConfigError
from workbench.releases import ADAPTIVE_SINCE, ADAPTIVE_TIERS_SINCE, release_at_least, release_number

__all__ = [
    "OBJECTIVES",
    "SglangPolicy",
    "Threshold",
    "Tier",
    "best_threshold",
    "envelope",
    "find_threshold",
    "goodput_levels",
    "higher_is_better",
    "pareto_points",
    "policy_gains",
    "policy_rows",
    "predicted_vs_measured",
    "sglang_policy",
    "spec_ratio_table",
    "step_tiers",
    "vllm_schedule",
]

#: Objective name -> the level column it maximises.
OBJECTIVES: dict[str, str] = {
    "per_request": "mean_per_request_tok_s",
    "throughput": "output_throughput_tok_s",
    "goodput": "goodput_req_s",
}

#: The verdict of a level where a value is 0 or less (no ratio: e.g. no request met the goodput target).
ZERO = "a value is 0: no ratio"


def higher_is_better(metric: str) -> bool:
    """False for latencies (columns ending in ``_ms``), True for throughputs, speeds and goodput."""
    return not metric.endswith("_ms")


def _need(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ConfigError(f"{what} lacks columns {missing}; have {sorted(frame.columns)}")


# -- goodput -------------------------------------------------------------------------------------
def goodput_levels(
    requests: pd.DataFrame,
    *,
    tpot_ms: float | None = None,
    e2e_ms: float | None = None,
    ttft_ms: float | None = None,
    load: str = "concurrency",
) -> pd.DataFrame:
    """Goodput per level: completed requests meeting the targets, per second of the level.

    A request counts when it completed without error, its TTFT is at most ``ttft_ms`` (when
    given), its TPOT at most ``tpot_ms`` (when given; a request with one output token has no
    TPOT and passes) and its E2E latency at most ``e2e_ms`` (when given). The level's duration
    is first start to last end over all its rows, as :func:`workbench.bench.summarize_levels`
    takes it (DistServe's goodput, Zhong et al. 2024; GuideLLM and inference-perf report the
    share of requests meeting TTFT and TPOT targets, our ``goodput_fraction``).

    Args:
        requests: request rows with ``variant``, the ``load`` column, ``error``, ``ttft_ms``
            (with ``ttft_ms``), ``tpot_ms``, ``e2e_ms``, ``start_s``, ``end_s`` and optionally ``repeat``.
        tpot_ms, e2e_ms, ttft_ms: the targets in milliseconds (at least one).
        load: the level column (``"request_rate_req_s"`` for open-loop levels).

    Returns:
        One row per (variant, level, repeat): ``goodput_req_s``, ``goodput_fraction``
        (meeting / all requests) and ``goodput_requests`` (all requests of the level).

    Raises:
        ConfigError: no target, a target not > 0, or missing columns.
    """
    if tpot_ms is None and e2e_ms is None and ttft_ms is None:
        raise ConfigError("goodput needs a target: give ttft_ms, tpot_ms and/or e2e_ms (milliseconds)")
    for name, value in (("ttft_ms", ttft_ms), ("tpot_ms", tpot_ms), ("e2e_ms", e2e_ms)):
        if value is not None and (isinstance(value, bool) or not (isinstance(value, (int, float)) and value > 0)):
            raise ConfigError(f"goodput target {name} must be a number of milliseconds > 0, got {value!r}")
    _need(
        requests,
        [
            "variant",
            load,
            "error",
            "tpot_ms",
            "e2e_ms",
            "start_s",
            "end_s",
            *(["ttft_ms"] if ttft_ms is not None else []),
        ],
        "request table",
    )
    rows = requests.assign(repeat=requests["repeat"] if "repeat" in requests else 0)
    good = rows["error"].isna()
    if ttft_ms is not None:
        good &= rows["ttft_ms"].astype(float) <= ttft_ms
    if tpot_ms is not None:
        good &= rows["tpot_ms"].astype(float).fillna(0.0) <= tpot_ms
    if e2e_ms is not None:
        good &= rows["e2e_ms"].astype(float) <= e2e_ms
    rows = rows.assign(_good=good)
    out = (
        rows.groupby(["variant", load, "repeat"], sort=True)
        .agg(_n=("_good", "size"), _good=("_good", "sum"), _start=("start_s", "min"), _end=("end_s", "max"))
        .reset_index()
    )
    duration = (out["_end"] - out["_start"]).astype(float)
    out["goodput_req_s"] = np.where(duration > 0, out["_good"] / duration.where(duration > 0), np.nan)
    out["goodput_fraction"] = out["_good"] / out["_n"]
    out["goodput_requests"] = out["_n"].astype(int)
    return out.drop(columns=["_n", "_good", "_start", "_end"])


# -- ratios and the envelope ---------------------------------------------------------------------
def spec_ratio_table(
    levels: pd.DataFrame, *, baseline: str, metric: str, specs: Sequence[str] | None = None, confidence: float = 0.95
) -> pd.DataFrame:
    """Each speculative variant against the baseline, oriented so that above 1 means speculation is better.

    Throughput-like metrics: spec / baseline. Latencies (``*_ms``): baseline / spec. Both come
    from :func:`workbench.analysis.ratio_intervals` (paired repeats, t interval of the log
    ratios), so a latency ratio is the throughput-style one of the swapped pair.

    Args:
        levels: one row per (variant, concurrency, repeat).
        baseline: the baseline variant.
        metric: the level column.
        specs: the variants to compare (default: every other variant in ``levels``).
        confidence: two-sided confidence level.

    Returns:
        One row per (variant, concurrency): ``variant``, ``concurrency``, ``n``, ``ratio``,
        ``ratio_lo``, ``ratio_hi`` (NaN for n < 2), ``verdict`` ("spec ahead", "baseline ahead",
        "not distinguishable at this level", "n=1: no interval"), ``metric`` and
        ``orientation`` (``"spec/baseline"`` or ``"baseline/spec"``).

    Raises:
        ConfigError: as :func:`workbench.analysis.ratio_intervals`.
    """
    names = list(specs) if specs is not None else [v for v in dict.fromkeys(levels["variant"]) if v != baseline]
    up = higher_is_better(metric)
    frames = []
    for spec in names:
        pair = levels[levels["variant"].isin([baseline, spec])]
        zero = sorted(set(pair.loc[pair[metric] <= 0, "concurrency"]))  # e.g. goodput 0: no ratio there
        pair = pair[~pair["concurrency"].isin(zero)]
        orient = "spec/baseline" if up else "baseline/spec"
        if pair["variant"].nunique() == 2:
            if up:
                t = ratio_intervals(pair, baseline=baseline, spec=spec, metric=metric, confidence=confidence)
            else:  # baseline / spec: the swapped pair's ratio, whose "spec ahead" now means a shorter latency
                t = ratio_intervals(pair, baseline=spec, spec=baseline, metric=metric, confidence=confidence)
            frames.append(t.assign(variant=spec, metric=metric, orientation=orient))
        if zero:
            frames.append(
                pd.DataFrame(
                    {
                        "concurrency": zero,
                        "n": 0,
                        "ratio": np.nan,
                        "ratio_lo": np.nan,
                        "ratio_hi": np.nan,
                        "verdict": ZERO,
                        "variant": spec,
                        "metric": metric,
                        "orientation": orient,
                    }
                )
            )
    cols = ["variant", "concurrency", "n", "ratio", "ratio_lo", "ratio_hi", "verdict", "metric", "orientation"]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)[cols]
    return out.sort_values(
        ["variant", "concurrency"],
        key=lambda c: c.map({v: i for i, v in enumerate(names)}) if c.name == "variant" else c,
    ).reset_index(drop=True)


def envelope(
    levels: pd.DataFrame, *, metric: str, variants: Sequence[str] | None = None, confidence: float = 0.95
) -> pd.DataFrame:
    """The best variant at each concurrency on ``metric`` (mean over repeats), with its interval.

    Uses :func:`workbench.analysis.repeat_table` for the means and intervals and
    :func:`workbench.analysis.best_policy` to pick (lower is better for ``*_ms`` metrics).

    Args:
        levels: one row per (variant, concurrency, repeat).
        metric: the objective's level column (see :data:`OBJECTIVES`).
        variants: the candidates (default: all).

    Returns:
        One row per concurrency: ``concurrency``, ``best_variant``, ``<metric>``, ``<metric>_lo``,
        ``<metric>_hi``, ``n`` (repeats of the best), ``runner_up``, ``margin`` (best / runner-up - 1,
        on the mean; negative for a latency), ``separated`` (the best's interval and the runner-up's
        do not overlap; False with n < 2 or one candidate).

    Raises:
        ConfigError: no candidate rows, or a missing column.
    """
    _need(levels, ["variant", "concurrency", metric], "level table")
    table = levels if variants is None else levels[levels["variant"].isin(list(variants))]
    table = table.dropna(subset=[metric])
    if table.empty:
        raise ConfigError(f"no level rows with {metric} for variants {list(variants) if variants else 'any'}")
    means = repeat_table(table, [metric], confidence=confidence)
    best = best_policy(means, metric=metric, higher_is_better=higher_is_better(metric))
    keyed = means.set_index(["variant", "concurrency"])
    rows = []
    for row in best.itertuples(index=False):
        b = keyed.loc[(row.best_variant, row.concurrency)]
        second = keyed.loc[(row.runner_up, row.concurrency)] if row.runner_up is not None else None
        separated = bool(
            second is not None
            and not math.isnan(b[f"{metric}_lo"])
            and not math.isnan(second[f"{metric}_lo"])
            and (b[f"{metric}_lo"] > second[f"{metric}_hi"] or b[f"{metric}_hi"] < second[f"{metric}_lo"])
        )
        rows.append(
            {
                "concurrency": int(row.concurrency),
                "best_variant": row.best_variant,
                metric: b[metric],
                f"{metric}_lo": b[f"{metric}_lo"],
                f"{metric}_hi": b[f"{metric}_hi"],
                "n": int(b[f"{metric}_n"]),
                "runner_up": row.runner_up,
                "margin": row.margin,
                "separated": separated,
            }
        )
    return pd.DataFrame(rows)


def pareto_points(means: pd.DataFrame, *, gpus: Mapping[str, int]) -> pd.DataFrame:
    """Per-request tok/s against total output tok/s per GPU, and which points are on the Pareto front.

    Args:
        means: one row per (variant, concurrency) with ``output_throughput_tok_s`` and
            ``mean_per_request_tok_s`` (e.g. :func:`workbench.analysis.repeat_table` means).
        gpus: variant -> GPUs it runs on (TP x DP); every variant of ``means`` needs one.

    Returns:
        ``means``' ``variant``, ``concurrency``, ``n`` (when present), ``output_tok_s_per_gpu``,
        ``mean_per_request_tok_s`` and ``pareto``: no other point is at least as good on both axes
        and better on one.

    Raises:
        ConfigError: a variant without a GPU count, a count < 1, or missing columns.
    """
    _need(means, ["variant", "concurrency", "output_throughput_tok_s", "mean_per_request_tok_s"], "level means")
    missing = sorted(set(means["variant"]) - set(gpus))
    if missing:
        raise ConfigError(f"no GPU count for variants {missing}; pass gpus={{variant: TP x DP}}")
    if any(int(g) < 1 for g in gpus.values()):
        raise ConfigError(f"GPU counts must be >= 1, got {dict(gpus)}")
    cols = ["variant", "concurrency", *(["n"] if "n" in means else [])]
    out = means[cols].copy()
    out["output_tok_s_per_gpu"] = means["output_throughput_tok_s"] / means["variant"].map(gpus).astype(float)
    out["mean_per_request_tok_s"] = means["mean_per_request_tok_s"]
    x, y = out["output_tok_s_per_gpu"].to_numpy(float), out["mean_per_request_tok_s"].to_numpy(float)
    dominated = [bool(((x >= xi) & (y >= yi) & ((x > xi) | (y > yi))).any()) for xi, yi in zip(x, y)]
    out["pareto"] = [not d and not (np.isnan(xi) or np.isnan(yi)) for d, xi, yi in zip(dominated, x, y)]
    return out.reset_index(drop=True)


# -- the threshold -------------------------------------------------------------------------------
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


# -- policies: predicted from measured levels, then measured ---------------------------------------
def policy_rows(levels: pd.DataFrame, choice: Mapping[int, str], *, name: str) -> pd.DataFrame:
    """The level rows a policy is predicted to have: at each concurrency, those of the variant it runs.

    Args:
        levels: one row per (variant, concurrency, repeat).
        choice: concurrency -> variant the policy runs there.
        name: the policy's name (its rows' ``variant``); the source is kept in ``chosen_variant``.

    Returns:
        The chosen rows (every repeat), renamed.

    Raises:
        ConfigError: a chosen (variant, concurrency) that was not measured.
    """
    frames = []
    for c, variant in sorted(choice.items()):
        rows = levels[(levels["variant"] == variant) & (levels["concurrency"] == c)]
        if rows.empty:
            raise ConfigError(f"policy {name!r} runs {variant!r} at concurrency {c}, which was not measured")
        frames.append(rows.assign(chosen_variant=variant, variant=name))
    return pd.concat(frames, ignore_index=True)


def policy_gains(
    levels: pd.DataFrame, *, policy: str, against: Sequence[str], metric: str, confidence: float = 0.95
) -> pd.DataFrame:
    """A policy's gain over each of ``against`` (always-off, always-on, ...) per concurrency, with intervals.

    The gain is the oriented ratio of :func:`spec_ratio_table` (above 1: the policy is better),
    pairing repeats by index.

    Returns:
        One row per (against, concurrency): ``against``, ``concurrency``, ``n``, ``gain``,
        ``gain_lo``, ``gain_hi``, ``verdict`` (in the words of :func:`spec_ratio_table`, the
        policy playing "spec").
    """
    frames = []
    for other in against:
        t = spec_ratio_table(levels, baseline=other, metric=metric, specs=[policy], confidence=confidence)
        frames.append(t.assign(against=other))
    out = pd.concat(frames, ignore_index=True).rename(
        columns={"ratio": "gain", "ratio_lo": "gain_lo", "ratio_hi": "gain_hi"}
    )
    return out[["against", "concurrency", "n", "gain", "gain_lo", "gain_hi", "verdict"]]


def predicted_vs_measured(
    levels: pd.DataFrame,
    *,
    predicted: str,
    measured: str,
    against: Sequence[str],
    metric: str,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """A policy's predicted gain (from :func:`policy_rows`) beside its measured gain (a run of it).

    Args:
        levels: level rows holding ``predicted`` (the assembled rows), ``measured`` (the policy's
            own run) and each of ``against``.
        predicted, measured: the two variant names of the policy.
        against: what the gain is over (e.g. the baseline, the always-on spec variant).

    Returns:
        One row per (against, concurrency): ``predicted_gain`` (+ ``_lo``, ``_hi``),
        ``measured_gain`` (+ ``_lo``, ``_hi``), ``n``, and ``measured_over_predicted`` with its
        interval (the measured policy over the predicted one, paired by repeat) and ``agreement``:
        "agrees" when that interval contains 1, "measured gain above the prediction" / "measured gain
        below the prediction" when it excludes 1 (a gain below the prediction can still be a gain),
        "n=1: no interval" for one repeat,
        and the significance rule's "not tested: <n> repeats" below
        :data:`~workbench.analysis.MIN_TEST_REPEATS` paired repeats.
    """
    pred = policy_gains(levels, policy=predicted, against=against, metric=metric, confidence=confidence)
    meas = policy_gains(levels, policy=measured, against=against, metric=metric, confidence=confidence)
    both = pred.merge(meas, on=["against", "concurrency"], suffixes=("_p", "_m"))
    out = pd.DataFrame(
        {
            "against": both["against"],
            "concurrency": both["concurrency"],
            "predicted_gain": both["gain_p"],
            "predicted_gain_lo": both["gain_lo_p"],
            "predicted_gain_hi": both["gain_hi_p"],
            "measured_gain": both["gain_m"],
            "measured_gain_lo": both["gain_lo_m"],
            "measured_gain_hi": both["gain_hi_m"],
            "n": both[["n_p", "n_m"]].min(axis=1),
        }
    )
    check = spec_ratio_table(levels, baseline=predicted, metric=metric, specs=[measured], confidence=confidence)
    words = {
        "spec ahead": "measured gain above the prediction",
        "baseline ahead": "measured gain below the prediction",
        "not distinguishable at this level": "agrees",
        "n=1: no interval": "n=1: no interval",
    }
    check = check.assign(agreement=check["verdict"].map(lambda v: words.get(v, v))).rename(
        columns={
            "ratio": "measured_over_predicted",
            "ratio_lo": "measured_over_predicted_lo",
            "ratio_hi": "measured_over_predicted_hi",
        }
    )
    return out.merge(
        check[
            [
                "concurrency",
                "measured_over_predicted",
                "measured_over_predicted_lo",
                "measured_over_predicted_hi",
                "agreement",
            ]
        ],
        on="concurrency",
        how="left",
    )


# -- the per-batch-size schedule -----------------------------------------------------------------
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
