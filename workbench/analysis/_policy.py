"""How speculation compares with plain decoding, and what a policy gains, from measurements.

Pure functions on the per-level table (one row per variant, concurrency and repeat, as
``levels.parquet`` stores it) and, for goodput, the per-request table. They answer, with the
intervals over repeats of :mod:`workbench.analysis._repeats`:

- how each speculative variant compares with the baseline (:func:`spec_ratio_table`): on a
  throughput metric the ratio is spec / baseline, on a latency (``*_ms``) metric baseline / spec,
  so a ratio above 1 always means "speculation is better";
- which variant is best at each concurrency under an objective (:func:`envelope`): per-request
  tok/s, total output tok/s, or goodput (:func:`goodput_levels`: requests per second that meet a
  TPOT and/or E2E target);
- what a policy is predicted to gain over always-on and always-off (:func:`policy_rows`,
  :func:`policy_gains`), and how a measured run of it compares (:func:`predicted_vs_measured`).

The policies themselves are derived beside it from the same readings: the "no drafting above N"
threshold in :mod:`workbench.analysis._threshold` (:func:`~workbench.analysis._threshold.find_threshold`),
and the per-batch-size schedule of num_steps, written for SGLang and vLLM, in
:mod:`workbench.analysis._schedule` (:func:`~workbench.analysis._schedule.step_tiers`).

A policy's prediction is assembled from the measured levels of the variants it switches between
(:func:`policy_rows`): at each concurrency, the rows (every repeat) of the variant it would run.
Closed-loop concurrency ``c`` keeps about ``c`` requests running, so a concurrency level stands for
a running batch size. The prediction leaves out what switching costs: an iteration of a
speculative server that does not draft is not free (see ``workbench.sim``'s ``SpecOffCost``), which
is why the policy is then run and measured as one server.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from workbench.analysis._crossover import best_policy
from workbench.analysis._repeats import ratio_intervals, repeat_table
from workbench.errors import ConfigError

__all__ = [
    "OBJECTIVES",
    "envelope",
    "goodput_levels",
    "higher_is_better",
    "pareto_points",
    "policy_gains",
    "policy_rows",
    "predicted_vs_measured",
    "spec_ratio_table",
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
