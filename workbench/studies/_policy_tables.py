"""The tables of a policy study: one frozen value, computed once from a sweep and the policies run from it.

:func:`policy_tables` checks a sweep of a baseline and speculative variants (topk 4 and topk 1 over num_steps) and
derives, through :mod:`workbench.analysis`, the "no drafting above N" threshold, the num_steps tiers that SGLang's
``--speculative-adaptive-config`` and vLLM's ``num_speculative_tokens_per_batch_size`` are written from, each
written policy's predicted gain beside its measured one, and how far each recommendation is trusted: on the
simulated engine, the held-out error of the regimes it drafts with on the sweep's profile
(:func:`workbench.sim.check_prediction`); measured on a real engine, no model stands between the sweep and the
recommendation. The words and charts (:mod:`workbench.studies._policy_study`) read it; nothing changes it after:
the policies written and measured make a new value (:meth:`PolicyTables.with_runs`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.analysis import (
    OBJECTIVES,
    SglangPolicy,
    Threshold,
    Tier,
    best_threshold,
    envelope,
    higher_is_better,
    policy_gains,
    policy_rows,
    predicted_vs_measured,
    repeat_table,
    sglang_policy,
    spec_ratio_table,
    step_tiers,
    vllm_schedule,
)
from workbench.charts import METRIC_TITLES
from workbench.errors import ConfigError
from workbench.sim import HeldOutCheck, SpecConfig, check_prediction, combine_checks, load_profile
from workbench.studies._assemble import assemble_tables
from workbench.studies._goodput import GoodputTargets, with_goodput
from workbench.studies._policy_index import PolicyRun

__all__ = ["MEASURED", "PolicyTables", "policy_tables"]

#: What a recommendation of a sweep measured on a real engine says in place of a model's held-out error.
MEASURED = "measured on a real engine: no model error to carry"

#: The held-out metric of the ratios a policy is chosen on, and of plain decoding's own throughput.
_RATIO, _THROUGHPUT = "spec/baseline ratio", "output tok/s"


@dataclasses.dataclass(frozen=True, eq=False)
class PolicyTables:
    """A sweep of a baseline and speculative variants, the policies derived from it and those run as one server.

    Built by :func:`policy_tables` (which checks the sweep), then never changed: the figures with parameters (another
    metric, a subset of the variants) are pure readings of these fields.

    Attributes:
        levels: level rows of the sweep (one per variant, concurrency and repeat), with ``goodput_req_s`` when a
            goodput target is set.
        requests: request rows of the sweep.
        manifests: the runs' manifests.
        baseline: the plain-decoding variant.
        settings: variant -> ``topk``, ``num_steps``, ``gpus``.
        objective: ``"per_request"``, ``"throughput"`` or ``"goodput"`` (:data:`workbench.analysis.OBJECTIVES`).
        goodput: the goodput targets (none: no goodput columns).
        adaptive_version: the SGLang release the adaptive config is written for.
        bench: the keyword arguments of the sweep (the policies are run with the same).
        runs: policy -> its :class:`~workbench.studies.PolicyRun` (written by :func:`workbench.sweeps.write_policies`,
            with its levels once measured).
        subtitle: chart subtitle lines: provenance, the SGLang rules of the sweep, n.
        threshold: the recommended "no drafting above N" on the objective, over every swept speculative variant.
        tiers: num_steps per batch-size tier on the objective from the topk-1 variants; None when none was swept.
        gains: each written policy's predicted and measured gain (:meth:`gains`); empty before any is written.
        held_out: recommendation (``"threshold"``, and ``"adaptive tiers"`` with topk-1 variants) -> the held-out
            error of the regimes it drafts with where it drafts; None when the sweep ran on a real engine.
    """

    levels: pd.DataFrame
    requests: pd.DataFrame
    manifests: tuple[dict[str, Any], ...]
    baseline: str
    settings: Mapping[str, Mapping[str, Any]]
    objective: str
    goodput: GoodputTargets
    adaptive_version: str
    bench: Mapping[str, Any]
    runs: Mapping[str, PolicyRun]
    subtitle: tuple[str, ...]
    threshold: Threshold
    tiers: tuple[Tier, ...] | None
    gains: pd.DataFrame
    held_out: Mapping[str, HeldOutCheck] | None

    # -- who is who ---------------------------------------------------------------------------------
    @property
    def metric(self) -> str:
        """The objective's level column."""
        return OBJECTIVES[self.objective]

    @property
    def variants(self) -> list[str]:
        """The swept variants, baseline first."""
        return _variants(self.levels, self.baseline)

    @property
    def spec_variants(self) -> list[str]:
        """The swept speculative variants."""
        return self.variants[1:]

    def topk_variants(self, topk: int) -> dict[str, int]:
        """Swept variants with this topk -> their num_steps, by num_steps."""
        return _topk_variants(self.settings, self.spec_variants, topk)

    @property
    def simulated(self) -> bool:
        """True when any figure of the sweep comes from the simulated engine."""
        return _simulated(self.levels)

    @property
    def repeats(self) -> int:
        """The fewest repeats of any level."""
        if "repeat" not in self.levels:
            return 1
        return int(self.levels.groupby(["variant", "concurrency"]).size().min())

    # -- readings with parameters --------------------------------------------------------------------
    def means(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """Mean, interval and n over repeats per (variant, concurrency) (:func:`workbench.analysis.repeat_table`)."""
        wanted = metrics or [
            m for m in dict.fromkeys([self.metric, *OBJECTIVES.values(), *METRIC_TITLES]) if m in self.levels
        ]
        return repeat_table(self.levels, list(wanted))

    def ratios(self, metric: str | None = None) -> pd.DataFrame:
        """Oriented spec/baseline ratios with intervals (:func:`workbench.analysis.spec_ratio_table`)."""
        return spec_ratio_table(self.levels, baseline=self.baseline, metric=metric or self.metric)

    def envelope(self, metric: str | None = None, variants: Sequence[str] | None = None) -> pd.DataFrame:
        """Best variant per concurrency (:func:`workbench.analysis.envelope`)."""
        return envelope(self.levels, metric=metric or self.metric, variants=variants)

    def threshold_on(self, metric: str | None = None, *, specs: Sequence[str] | None = None) -> Threshold:
        """The "no drafting above N" on ``metric`` over ``specs`` (default: :attr:`threshold`, the objective's over
        every swept speculative variant; :func:`workbench.analysis.best_threshold`)."""
        if (metric is None or metric == self.metric) and (specs is None or list(specs) == self.spec_variants):
            return self.threshold
        return best_threshold(
            self.levels, baseline=self.baseline, specs=list(specs or self.spec_variants), metric=metric or self.metric
        )

    def tiers_on(self, metric: str | None = None, *, tolerance: float = 0.0) -> list[Tier]:
        """num_steps per batch-size tier from the topk-1 sweep (default: :attr:`tiers`;
        :func:`workbench.analysis.step_tiers`).

        Raises:
            ConfigError: no topk-1 variant was swept.
        """
        if self.tiers is None:
            raise ConfigError(
                "no topk-1 variant in the sweep: the adaptive tiers need a sweep over num_steps at topk 1"
            )
        if (metric is None or metric == self.metric) and tolerance == 0.0:
            return list(self.tiers)
        return step_tiers(
            self.levels,
            baseline=self.baseline,
            steps=self.topk_variants(1),
            metric=metric or self.metric,
            tolerance=tolerance,
        )

    def sglang_policy(self, sglang_version: str | None = None) -> SglangPolicy:
        """SGLang's adaptive config (0.5.16+) or the threshold policy (older releases) for ``sglang_version``."""
        return sglang_policy(self.tiers_on(), self.threshold, sglang_version=sglang_version or self.adaptive_version)

    def vllm_schedule(self, max_batch_size: int | None = None) -> list[list[int]]:
        """vLLM's ``num_speculative_tokens_per_batch_size`` (default last end: the highest level measured)."""
        top = max_batch_size or int(self.levels["concurrency"].max())
        return vllm_schedule(self.tiers_on(), max_batch_size=top)

    def policy_table(self) -> pd.DataFrame:
        """The recommended policies in each output format, one row per format, with how far each is trusted
        (:meth:`trust_columns`)."""
        t = self.threshold
        rows = [
            {
                "format": "threshold (no drafting above N)",
                "for": f"{t.spec}; any engine with a switch",
                "setting": "keep drafting (no threshold in range)"
                if t.kind == "always"
                else f"no drafting above {t.no_draft_above} running requests",
                "note": t.description,
                **self.trust_columns("threshold"),
            }
        ]
        for version in ("0.5.12", self.adaptive_version, "0.5.23"):
            p = self.sglang_policy(version)
            setting = json.dumps(p.config) if p.config else (", ".join(p.flags) or p.kind)
            which = "adaptive tiers" if p.config else "threshold"
            rows.append(
                {"format": f"SGLang {version}", "for": p.kind, "setting": setting, "note": p.note}
                | self.trust_columns(which)
            )
        rows.append(
            {
                "format": "vLLM",
                "for": "--speculative-config num_speculative_tokens_per_batch_size",
                "setting": json.dumps(self.vllm_schedule()),
                "note": "K = the best num_steps at topk 1; inclusive batch-size ranges",
                **self.trust_columns("adaptive tiers"),
            }
        )
        return pd.DataFrame(rows).astype({"held_out_n": "Int64"})

    def trust_columns(self, recommendation: str) -> dict[str, Any]:
        """How far ``recommendation`` (``"threshold"`` or ``"adaptive tiers"``) is trusted, as table columns
        (:meth:`workbench.sim.HeldOutCheck.columns`; a real-engine sweep's say :data:`MEASURED`)."""
        if self.held_out is None:
            return {
                "held_out_kind": "measured",
                "held_out_mean_pct": float("nan"),
                "held_out_worst_pct": float("nan"),
                "held_out_n": None,
                "held_out_metric": "",
                "held_out_source": MEASURED,
            }
        return self.held_out[recommendation].columns()

    def threshold_gains(self, specs: Sequence[str], no_draft_above: int, metric: str | None = None) -> pd.DataFrame:
        """Predicted gain of "no drafting above ``no_draft_above``" over always-off and always-on.

        It drafts with the best of ``specs`` at the lowest level (mean of ``metric``). The table's ``attrs["spec"]``
        names it. Columns as :func:`workbench.analysis.policy_gains`.
        """
        metric = metric or self.metric
        lowest = min(self.levels["concurrency"])
        first = self.levels[(self.levels["concurrency"] == lowest) & self.levels["variant"].isin(list(specs))]
        means = first.groupby("variant")[metric].mean()
        spec = str(means.idxmax() if higher_is_better(metric) else means.idxmin())
        levels = sorted(int(c) for c in set(self.levels["concurrency"]))
        choice = {c: (spec if c <= no_draft_above else self.baseline) for c in levels}
        rows = pd.concat([self.levels, policy_rows(self.levels, choice, name="threshold (slid)")], ignore_index=True)
        out = policy_gains(rows, policy="threshold (slid)", against=[self.baseline, spec], metric=metric)
        out["against"] = out["against"].map(
            lambda a: "always-off (baseline)" if a == self.baseline else f"always-on ({spec})"
        )
        out.attrs["spec"] = spec
        return out

    def gains_on(self, metric: str | None = None) -> pd.DataFrame:
        """Each policy's predicted gain over always-off (baseline) and always-on, and its measured gain (default:
        :attr:`gains`, on the objective; see :func:`_gains`)."""
        if metric is None or metric == self.metric:
            return self.gains.copy()
        return _gains(self.levels, self.runs, self.baseline, metric)

    def with_runs(self, runs: Mapping[str, PolicyRun]) -> PolicyTables:
        """These tables with ``runs`` as the written (and measured) policies, their gains computed again."""
        return dataclasses.replace(self, runs=dict(runs), gains=_gains(self.levels, runs, self.baseline, self.metric))


def policy_tables(
    levels: pd.DataFrame,
    requests: pd.DataFrame,
    manifests: Sequence[dict[str, Any]],
    baseline: str,
    settings: Mapping[str, Mapping[str, Any]],
    *,
    objective: str = "throughput",
    goodput: GoodputTargets = GoodputTargets(),
    adaptive_version: str,
    bench: Mapping[str, Any] | None = None,
    runs: Mapping[str, PolicyRun] | None = None,
) -> PolicyTables:
    """Check a sweep and compute its tables once (see :class:`PolicyTables`); goodput columns are added to
    ``levels`` (and to each measured policy's) under ``goodput``'s targets.

    Raises:
        ConfigError: a bad objective, goodput without a target, or a baseline without levels.
    """
    if objective not in OBJECTIVES:
        raise ConfigError(f"objective must be one of {sorted(OBJECTIVES)}, got {objective!r}")
    if objective == "goodput" and not goodput:
        raise ConfigError("objective 'goodput' needs a target: set tpot_ms and/or e2e_ms (milliseconds)")
    if baseline not in set(levels["variant"]):
        raise ConfigError(f"baseline {baseline!r} has no levels; have {sorted(set(levels['variant']))}")
    levels = with_goodput(levels, requests, goodput)
    metric = OBJECTIVES[objective]
    specs = _variants(levels, baseline)[1:]
    threshold = best_threshold(levels, baseline=baseline, specs=specs, metric=metric)
    steps = _topk_variants(settings, specs, 1)
    tiers = tuple(step_tiers(levels, baseline=baseline, steps=steps, metric=metric, tolerance=0.0)) if steps else None
    runs = dict(runs or {})
    return PolicyTables(
        levels=levels,
        requests=requests,
        manifests=tuple(manifests),
        baseline=baseline,
        settings=dict(settings),
        objective=objective,
        goodput=goodput,
        adaptive_version=adaptive_version,
        bench=dict(bench or {}),
        runs=runs,
        subtitle=_subtitle(levels, requests, manifests, baseline),
        threshold=threshold,
        tiers=tiers,
        gains=_gains(levels, runs, baseline, metric),
        held_out=_held_out(levels, manifests, settings, baseline, threshold, tiers) if _simulated(levels) else None,
    )


def _variants(levels: pd.DataFrame, baseline: str) -> list[str]:
    """The swept variants, baseline first."""
    return [baseline, *(v for v in dict.fromkeys(levels["variant"]) if v != baseline)]


def _topk_variants(settings: Mapping[str, Mapping[str, Any]], specs: Sequence[str], topk: int) -> dict[str, int]:
    """``specs`` with this topk -> their num_steps, by num_steps."""
    found = {v: settings[v]["num_steps"] for v in specs if settings[v]["topk"] == topk}
    return dict(sorted(found.items(), key=lambda kv: kv[1]))


def _simulated(levels: pd.DataFrame) -> bool:
    """True when any level row comes from the simulated engine."""
    return bool(levels.get("simulated", pd.Series([False])).fillna(False).astype(bool).any())


def _subtitle(
    levels: pd.DataFrame, requests: pd.DataFrame, manifests: Sequence[dict[str, Any]], baseline: str
) -> tuple[str, ...]:
    """Chart subtitle lines: provenance (SIMULATED when so; :attr:`workbench.Study.subtitle_lines`, stand-ins
    included), the SGLang rules of the sweep, n."""
    first = assemble_tables(levels, requests, manifests, baseline).subtitle_lines
    versions = sorted({str((m.get("variant_definition") or {}).get("sglang_version") or "?") for m in manifests})
    n = 1 if "repeat" not in levels else int(levels.groupby(["variant", "concurrency"]).size().min())
    rep = f"n={n} repeats per level; bars: 95% t intervals" if n > 1 else "n=1 repeat: no intervals"
    return (*first, f"SGLang rules {', '.join(versions)} (sweep); {rep}")


def _gains(levels: pd.DataFrame, runs: Mapping[str, PolicyRun], baseline: str, metric: str) -> pd.DataFrame:
    """Each policy's predicted gain over always-off (baseline) and always-on, and its measured gain.

    One row per (policy, against, concurrency): ``predicted_gain`` and ``measured_gain`` with ``_lo``/``_hi`` (95% t
    intervals over paired repeats; NaN for n < 2), ``n``, and ``measured_over_predicted`` with its interval and
    ``agreement`` (:func:`workbench.analysis.predicted_vs_measured`). Without a measured run the measured columns
    are NaN and ``agreement`` says "not run". Empty with no policy written.
    """
    frames = [levels]
    for name, run in runs.items():  # the sweep's levels, each policy's predicted rows and its measured rows
        frames.append(policy_rows(levels, run.choice, name=f"{name} (predicted)"))
        if run.levels is not None and len(run.levels):
            measured = run.levels.assign(variant=f"{name} (measured)")
            if "repeat" not in measured:
                measured = measured.assign(repeat=0)
            frames.append(measured)
    combined = pd.concat(frames, ignore_index=True)
    out_frames = []
    for name, run in runs.items():
        against = [baseline, run.always_on]
        if run.levels is not None and len(run.levels):
            t = predicted_vs_measured(
                combined, predicted=f"{name} (predicted)", measured=f"{name} (measured)", against=against, metric=metric
            )
        else:
            g = policy_gains(combined, policy=f"{name} (predicted)", against=against, metric=metric)
            t = g.rename(
                columns={"gain": "predicted_gain", "gain_lo": "predicted_gain_lo", "gain_hi": "predicted_gain_hi"}
            ).drop(columns="verdict")
            t = t.assign(agreement="not run")
        t["against"] = t["against"].map(
            lambda a, on=run.always_on: "always-off (baseline)" if a == baseline else f"always-on ({on})"
        )
        out_frames.append(t.assign(policy=name))
    if not out_frames:
        return pd.DataFrame()
    out = pd.concat(out_frames, ignore_index=True)
    return out[["policy", *[c for c in out.columns if c != "policy"]]]


def _held_out(
    levels: pd.DataFrame,
    manifests: Sequence[dict[str, Any]],
    settings: Mapping[str, Mapping[str, Any]],
    baseline: str,
    threshold: Threshold,
    tiers: tuple[Tier, ...] | None,
) -> dict[str, HeldOutCheck]:
    """How far a simulated sweep's recommendations are trusted: the threshold's drafting variant at the levels it
    drafts (plain decoding's throughput where it never drafts), and each drafting tier's variant at its levels,
    each on the profile its run was simulated with, on the spec/baseline ratio the policy is chosen on."""
    measured = sorted(int(c) for c in set(levels["concurrency"]))
    simulation = {m["variant"]: m.get("simulation") or {} for m in manifests}
    profiles: dict[str, Any] = {}

    def check(variant: str, batches: Sequence[int]) -> HeldOutCheck:
        sim = simulation.get(variant, {})
        name = str(sim.get("profile") or "")
        if name not in profiles:
            try:
                profiles[name] = load_profile(name)
            except ConfigError:  # a stored sweep of a profile this tree no longer has: nothing checked it here
                profiles[name] = None
        topk = settings.get(variant, {}).get("topk")
        spec = (
            SpecConfig()
            if variant == baseline or topk is None
            else SpecConfig("EAGLE3", topk=int(topk), spec_v2=bool(sim.get("spec_v2")))
        )
        if profiles[name] is None:
            return HeldOutCheck(
                f"{variant} on profile {name or '(none recorded)'}, not found here", tuple(batches), None
            )
        return check_prediction(profiles[name], spec, batches, metric=_RATIO if spec.enabled else _THROUGHPUT)

    if threshold.kind == "never":
        out = {"threshold": check(baseline, measured)}
    else:
        limit = measured[-1] if threshold.no_draft_above is None else threshold.no_draft_above
        out = {"threshold": check(threshold.spec, [c for c in measured if c <= limit])}
    if tiers is not None:
        ends = [t.start - 1 for t in tiers[1:]] + [measured[-1]]
        parts = [
            check(t.variant, [c for c in measured if t.start <= c <= end])
            for t, end in zip(tiers, ends)
            if t.best_steps > 0 and any(t.start <= c <= end for c in measured)
        ]
        out["adaptive tiers"] = combine_checks(parts, metric=_RATIO) if parts else check(baseline, measured)
    return out
