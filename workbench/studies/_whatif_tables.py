"""The tables of a what-if: one frozen value, computed once from the simulator's predictions.

:func:`whatif_tables` takes the predicted level rows of a baseline and a grid of speculative configurations
(:func:`workbench.sim.predict`) and answers the what-if's questions with :mod:`workbench.analysis`: each
configuration's ratios to the baseline and its crossover, the best configuration per concurrency, the threshold
policy simulated as one server, the policies compared, and how far each prediction is trusted (the held-out
error of its regime on the profile, :func:`workbench.sim.check_prediction`). The words and charts
(:mod:`workbench.studies._whatif`) and the grid files (:mod:`workbench.studies._whatif_grids`) read it; nothing
changes it after.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.analysis import best_policy, best_threshold, find_crossover
from workbench.sim import HeldOutCheck, SpecConfig, check_prediction, combine_checks, load_profile

__all__ = [
    "CROSSOVER_WORDS",
    "HELD_OUT_COLUMNS",
    "POLICY_TOLERANCE",
    "ThresholdPolicy",
    "WhatIfTables",
    "whatif_tables",
]

#: Within this fraction of the best configuration at every level, the simpler policy is recommended.
POLICY_TOLERANCE = 0.02

#: A crossover's kind (:func:`workbench.analysis.find_crossover`) as the tables say it.
CROSSOVER_WORDS = {
    "interpolated": "crosses between two levels",
    "at_level": "even at a level",
    "none_in_range": "ahead at every level",
    "below_range": "behind at every level",
}

#: The columns a held-out check adds to a table (:meth:`workbench.sim.HeldOutCheck.columns`).
HELD_OUT_COLUMNS = (
    "held_out_kind",
    "held_out_mean_pct",
    "held_out_worst_pct",
    "held_out_n",
    "held_out_metric",
    "held_out_source",
)

#: The held-out metric of a throughput prediction and of a ratio to the baseline (the profile's table's words).
THROUGHPUT, RATIO = "output tok/s", "spec/baseline ratio"


@dataclasses.dataclass(frozen=True)
class ThresholdPolicy:
    """The best (configuration, threshold) pair, simulated as one server that stops drafting above the threshold.

    Attributes:
        variant: the configuration it drafts with (the what-if's label).
        threshold: the running-request count above which it decodes plainly (the highest level when it drafts at
            every level).
        name: the simulated server's configuration name.
        max_running_requests: its request cap.
        levels: its predicted level rows (:func:`workbench.sim.predict`'s columns).
    """

    variant: str
    threshold: int
    name: str
    max_running_requests: int
    levels: pd.DataFrame


@dataclasses.dataclass(frozen=True, eq=False)
class WhatIfTables:
    """Predicted sweeps of a baseline and a grid of speculative configurations, and what they answer.

    Built by :func:`whatif_tables`; every table is computed there, once.

    Attributes:
        profile: the profile's name.
        baseline: the baseline variant's name.
        template: the variant whose flags the grid configurations keep.
        levels: one row per (configuration, concurrency): :func:`workbench.sim.predict`'s columns.
        grid: one row per grid combination asked: settings, ``name``, ``status``, ``reason``.
        settings: the workload options given (None: the profile's).
        ratios: each configuration's ``output_ratio`` and ``per_request_ratio`` to the baseline per level, with the
            held-out check of a ratio there (:data:`HELD_OUT_COLUMNS`).
        crossovers: one row per configuration: settings, ratio at the lowest level, best ratio, the crossover on
            each metric in words (:data:`CROSSOVER_WORDS`), and the held-out check of its ratios at every level.
        best: the best configuration per concurrency on output throughput and per-request speed, its gain over the
            baseline, and the held-out check of the best throughput.
        threshold: the threshold policy simulated as one server; None when every configuration is behind already
            at the lowest level.
        policy: the recommended policy and its alternatives (:func:`whatif_tables` says how it is chosen), each
            with the held-out check of the configurations it drafts with where it drafts.
        held_out: one row per regime of the grid (plain decoding first): ``regime``, ``levels`` and the held-out
            check of its predictions at every level (a ratio's for speculation, a throughput's for plain decoding).
    """

    profile: str
    baseline: str
    template: str
    levels: pd.DataFrame
    grid: pd.DataFrame
    settings: Mapping[str, Any]
    ratios: pd.DataFrame
    crossovers: pd.DataFrame
    best: pd.DataFrame
    threshold: ThresholdPolicy | None
    policy: pd.DataFrame
    held_out: pd.DataFrame

    @property
    def configurations(self) -> list[str]:
        """The speculative configurations predicted, in grid order."""
        return configurations(self.levels, self.baseline)

    @property
    def concurrency(self) -> list[int]:
        """The predicted concurrency levels, ascending."""
        return sorted(int(c) for c in set(self.levels["concurrency"]))

    def highlights(self, n: int = 4) -> list[str]:
        """The configurations best at some level (output throughput), then the best at the lowest level, up to ``n``."""
        best = [v for v in dict.fromkeys(self.best["best_variant"]) if v != self.baseline]
        ranked = list(self.crossovers.sort_values("ratio_at_lowest_level", ascending=False)["variant"])
        return list(dict.fromkeys([*best, *ranked]))[:n]

    def tiers(self, variants: Sequence[str] | None = None) -> list[tuple[int, int, str]]:
        """Contiguous level ranges with the same best configuration: (first level, last level, name)."""
        return _tiers(self.levels, self.baseline, variants)

    def recommended(self) -> str:
        """The recommended policy's name (``"threshold"``, ``"adaptive tiers"``) or ``"none"`` (plain decoding)."""
        chosen = self.policy[self.policy["recommended"].astype(bool)]
        return str(chosen["policy"].iloc[0]) if len(chosen) else "none"


def configurations(levels: pd.DataFrame, baseline: str) -> list[str]:
    """The speculative configurations of predicted ``levels``, in grid order."""
    return [v for v in dict.fromkeys(levels["variant"]) if v != baseline]


def whatif_tables(
    profile: str,
    *,
    baseline: str,
    template: str,
    levels: pd.DataFrame,
    grid: pd.DataFrame,
    settings: Mapping[str, Any],
) -> WhatIfTables:
    """Every table of a what-if from its predicted ``levels`` (see :class:`WhatIfTables`).

    The threshold pair is :func:`workbench.analysis.best_threshold`'s on output throughput, the rule the
    dynamic_disable notebook applies to measurements: each configuration's threshold is the highest level up to
    which it beats the baseline at every level, scored by the geometric mean over levels of its policy's throughput
    over the best configuration's. A prediction is one point per level (n=1), so the point values decide alone; the
    pair is then simulated as one server (drafting switched per iteration). The threshold policy is recommended
    when it is within :data:`POLICY_TOLERANCE` of the best configuration at every level; otherwise adaptive tiers
    (the best configuration per level); none when the baseline is best everywhere and no threshold drafts.

    Raises:
        ConfigError: unknown profile.
    """
    checks = _Checks(profile, levels, baseline)
    ratios = _ratios(levels, baseline)
    ratios = _with_checks(ratios, [checks.of(v, [c], RATIO) for v, c in zip(ratios["variant"], ratios["concurrency"])])
    crossovers = _crossovers(ratios.drop(columns=list(HELD_OUT_COLUMNS)))
    crossovers = _with_checks(crossovers, [checks.of(v, checks.all_levels, RATIO) for v in crossovers["variant"]])
    best = _best(levels, baseline)
    best = _with_checks(
        best, [checks.of(v, [c], THROUGHPUT) for v, c in zip(best["best_variant"], best["concurrency"])]
    )
    threshold = _threshold_policy(profile, template, levels, baseline, settings)
    policy = _policy(levels, baseline, best, threshold, checks)
    return WhatIfTables(
        profile=checks.profile.name,
        baseline=baseline,
        template=template,
        levels=levels,
        grid=grid,
        settings=dict(settings),
        ratios=ratios,
        crossovers=crossovers,
        best=best,
        threshold=threshold,
        policy=policy,
        held_out=checks.by_regime(),
    )


class _Checks:
    """The held-out checks of a what-if's predictions: one per (configuration, levels, metric), from the profile."""

    def __init__(self, profile: str, levels: pd.DataFrame, baseline: str) -> None:
        self.profile = load_profile(profile)
        self.baseline = baseline
        self.all_levels = sorted(int(c) for c in set(levels["concurrency"]))
        first = levels.drop_duplicates("variant").set_index("variant")
        self.specs = {str(v): _spec(r, v == baseline) for v, r in first.iterrows()}

    def of(self, variant: str, batches: Sequence[int], metric: str) -> HeldOutCheck:
        """The check of ``variant``'s predictions at ``batches`` (a plain decoding one on throughput always)."""
        spec = self.specs[variant]
        return check_prediction(self.profile, spec, batches, metric=metric if spec.enabled else THROUGHPUT)

    def by_regime(self) -> pd.DataFrame:
        """One row per regime of the grid, plain decoding first (see :attr:`WhatIfTables.held_out`)."""
        rows: dict[str, dict[str, Any]] = {}
        for variant, spec in self.specs.items():
            check = self.of(variant, self.all_levels, RATIO)
            if check.regime in rows:
                continue
            rows[check.regime] = {
                "regime": check.regime,
                "levels": f"{self.all_levels[0]}-{self.all_levels[-1]}",
                **check.columns(),
            }
        return pd.DataFrame(list(rows.values())).astype({"held_out_n": "Int64"})


def _spec(row: pd.Series, plain: bool) -> SpecConfig:
    """The decoding a predicted row ran: its configuration's topk and worker (plain decoding for the baseline)."""
    if plain or not bool(row.get("speculative", True)):
        return SpecConfig()
    return SpecConfig(
        "EAGLE3",
        num_steps=int(row["num_steps"]),
        topk=int(row["topk"]),
        num_draft_tokens=int(row["num_draft_tokens"]),
        spec_v2=bool(row["spec_v2"]),
    )


def _with_checks(table: pd.DataFrame, checks: Sequence[HeldOutCheck]) -> pd.DataFrame:
    """``table`` with the :data:`HELD_OUT_COLUMNS` of one check per row."""
    cols = pd.DataFrame([c.columns() for c in checks], index=table.index, columns=list(HELD_OUT_COLUMNS))
    return pd.concat([table, cols.astype({"held_out_n": "Int64"})], axis=1)


def _ratios(levels: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Each configuration's output-throughput and per-request ratios to the baseline, per level."""
    base = levels[levels["variant"] == baseline].set_index("concurrency")
    spec = levels[levels["variant"] != baseline]
    out = spec[
        [
            "variant",
            "topk",
            "num_steps",
            "num_draft_tokens",
            "spec_v2",
            "concurrency",
            "output_throughput_tok_s",
            "mean_per_request_tok_s",
        ]
    ].copy()
    out["output_ratio"] = out["output_throughput_tok_s"] / out["concurrency"].map(base["output_throughput_tok_s"])
    out["per_request_ratio"] = out["mean_per_request_tok_s"] / out["concurrency"].map(base["mean_per_request_tok_s"])
    return out.reset_index(drop=True)


def _crossovers(ratios: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: settings, ratio at the lowest level, and the crossover on each metric."""
    rows: list[dict[str, Any]] = []
    for name, group in ratios.groupby("variant", sort=False):
        group = group.sort_values("concurrency")
        out_x = find_crossover(group["concurrency"], group["output_ratio"], metric="output_throughput_tok_s")
        per_x = find_crossover(group["concurrency"], group["per_request_ratio"], metric="mean_per_request_tok_s")
        first = group.iloc[0]
        rows.append(
            {
                "variant": name,
                "topk": int(first["topk"]),
                "num_steps": int(first["num_steps"]),
                "num_draft_tokens": int(first["num_draft_tokens"]),
                "spec_v2": bool(first["spec_v2"]),
                "ratio_at_lowest_level": first["output_ratio"],
                "best_ratio": group["output_ratio"].max(),
                "crossover_concurrency": out_x.concurrency,
                "crossover_kind": CROSSOVER_WORDS.get(out_x.kind, out_x.kind),
                "per_request_crossover_concurrency": per_x.concurrency,
                "per_request_crossover_kind": CROSSOVER_WORDS.get(per_x.kind, per_x.kind),
            }
        )
    table = pd.DataFrame(rows)
    table["_sort"] = table["crossover_concurrency"].fillna(-1.0)
    return (
        table.sort_values(["_sort", "ratio_at_lowest_level"], ascending=False)
        .drop(columns="_sort")
        .reset_index(drop=True)
    )


def _best(levels: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The best configuration (baseline included) per concurrency, on output throughput and on per-request speed."""
    out = best_policy(levels, metric="output_throughput_tok_s")
    base = levels[levels["variant"] == baseline].set_index("concurrency")
    out["baseline_output_tok_s"] = out["concurrency"].map(base["output_throughput_tok_s"])
    out["gain_over_baseline"] = out["best_output_throughput_tok_s"] / out["baseline_output_tok_s"] - 1.0
    per = best_policy(levels, metric="mean_per_request_tok_s").set_index("concurrency")
    out["best_per_request_variant"] = out["concurrency"].map(per["best_variant"])
    out["best_mean_per_request_tok_s"] = out["concurrency"].map(per["best_mean_per_request_tok_s"])
    return out


def _threshold_policy(
    profile: str, template: str, levels: pd.DataFrame, baseline: str, settings: Mapping[str, Any]
) -> ThresholdPolicy | None:
    """The best (configuration, threshold) pair simulated as one server (see :func:`whatif_tables`); None when
    every configuration is behind already at the lowest level; one ahead at every level drafts up to the highest."""
    from workbench.sim import configuration, predict

    prof = load_profile(profile)
    pick = best_threshold(
        levels, baseline=baseline, specs=configurations(levels, baseline), metric="output_throughput_tok_s"
    )
    if pick.kind == "never":
        return None
    row = levels[levels["variant"] == pick.spec].iloc[0]
    top = int(levels["concurrency"].max())
    limit = top if pick.no_draft_above is None else pick.no_draft_above
    cfg = configuration(
        prof,
        template,
        topk=int(row["topk"]),
        num_steps=int(row["num_steps"]),
        num_draft_tokens=int(row["num_draft_tokens"]),
        spec_v2=bool(row["spec_v2"]),
        spec_off_above=limit,
        max_running_requests=max(top, 48),
    )
    predicted = predict(
        prof,
        [cfg],
        concurrency_levels=sorted(set(levels["concurrency"])),
        requests_per_level=settings.get("requests_per_level"),
        max_new_tokens=settings.get("max_new_tokens"),
        seed=settings.get("seed"),
    )
    return ThresholdPolicy(str(pick.spec), int(limit), cfg.name, int(cfg.max_running_requests), pd.DataFrame(predicted))


def _tiers(levels: pd.DataFrame, baseline: str, variants: Sequence[str] | None = None) -> list[tuple[int, int, str]]:
    """Contiguous level ranges with the same best configuration: (first level, last level, name)."""
    rows = levels if variants is None else levels[levels["variant"].isin([baseline, *variants])]
    best = best_policy(rows, metric="output_throughput_tok_s")
    tiers: list[tuple[int, int, str]] = []
    for row in best.itertuples():
        if tiers and tiers[-1][2] == row.best_variant:
            tiers[-1] = (tiers[-1][0], int(row.concurrency), row.best_variant)
        else:
            tiers.append((int(row.concurrency), int(row.concurrency), row.best_variant))
    return tiers


def _policy(
    levels: pd.DataFrame, baseline: str, best: pd.DataFrame, threshold: ThresholdPolicy | None, checks: _Checks
) -> pd.DataFrame:
    """The recommended policy, and the alternatives it was chosen over, one row each.

    Columns: ``policy``, ``recommended``, ``settings`` (what to run), ``worst_shortfall`` (the largest fraction of
    the best configuration's predicted throughput it gives up at any level), ``note``, and the held-out check of
    the configurations it drafts with at the levels it drafts (a ratio's; plain decoding's throughput where it
    never drafts). A threshold policy (one configuration, drafting off above a running-request count: a patched
    scheduler such as ``eagle-spec-off-above.patch``, or ``--sim-spec-off-above`` here) is recommended when it is
    within :data:`POLICY_TOLERANCE` of the best configuration at every level; otherwise adaptive tiers.
    """
    envelope = best.set_index("concurrency")["best_output_throughput_tok_s"]
    rows: list[dict[str, Any]] = []
    parts: list[HeldOutCheck] = []
    if threshold is not None:
        sim = threshold.levels.set_index("concurrency")["output_throughput_tok_s"]
        rows.append(
            {
                "policy": "threshold",
                "settings": f"{threshold.variant} while at most {threshold.threshold} requests run, plain decoding "
                f"above (--max-running-requests {threshold.max_running_requests})",
                "worst_shortfall": float((1.0 - sim / envelope).max()),
                "note": "simulated as one server (drafting switched per iteration)",
            }
        )
        drafted = [c for c in checks.all_levels if c <= threshold.threshold]
        parts.append(checks.of(threshold.variant, drafted, RATIO))
    tiers = _tiers(levels, baseline)
    rows.append(
        {
            "policy": "adaptive tiers",
            "settings": "; ".join(f"{a}-{b}: {v}" if a != b else f"{a}: {v}" for a, b, v in tiers),
            "worst_shortfall": 0.0,
            "note": "the envelope of the grid (switching costs not modelled); needs a scheduler that changes settings "
            "with the batch size",
        }
    )
    parts.append(_tiers_check(tiers, baseline, checks))
    topk1 = [v for v in configurations(levels, baseline) if v.startswith("topk1-")]
    if topk1:
        t1 = _tiers(levels, baseline, topk1)
        env = best_policy(
            levels[levels["variant"].isin([baseline, *topk1])], metric="output_throughput_tok_s"
        ).set_index("concurrency")
        rows.append(
            {
                "policy": "adaptive tiers, topk 1",
                "settings": "; ".join(f"{a}-{b}: {v}" if a != b else f"{a}: {v}" for a, b, v in t1),
                "worst_shortfall": float((1.0 - env["best_output_throughput_tok_s"] / envelope).max()),
                "note": "num_steps per batch-size tier at topk 1, what --speculative-adaptive (SGLang >= 0.5.11) "
                "varies; a baseline tier still needs the threshold patch",
            }
        )
        parts.append(_tiers_check(t1, baseline, checks))
    table = pd.DataFrame(rows)
    pick = "threshold" if threshold is not None and rows[0]["worst_shortfall"] <= POLICY_TOLERANCE else "adaptive tiers"
    if threshold is None and len(tiers) == 1 and tiers[0][2] == baseline:
        pick = "none"
    table.insert(1, "recommended", table["policy"] == pick)
    return _with_checks(table, parts)


def _tiers_check(tiers: Sequence[tuple[int, int, str]], baseline: str, checks: _Checks) -> HeldOutCheck:
    """The check of a tiered policy: each drafting tier's configuration at its levels (plain decoding's at every
    level when no tier drafts)."""
    drafting = [(a, b, v) for a, b, v in tiers if v != baseline]
    if not drafting:
        return checks.of(baseline, checks.all_levels, THROUGHPUT)
    return combine_checks(
        [checks.of(v, [c for c in checks.all_levels if a <= c <= b], RATIO) for a, b, v in drafting], metric=RATIO
    )
