"""When to stop speculating, read from a sweep: derive the policies, compare them with their measurement.

:class:`PolicyStudy` is the notebook's façade over a policy study's tables
(:class:`workbench.studies._policy_tables.PolicyTables`, computed once from a sweep of a baseline and speculative
variants, topk 4 and topk 1 over num_steps): the "no drafting above N" threshold, SGLang's
``--speculative-adaptive-config`` batch-size tiers and vLLM's ``num_speculative_tokens_per_batch_size``, each
policy's predicted gain over always-on and always-off beside its measured one with intervals over repeats, and how
far each recommendation is trusted (on the simulated engine, the held-out error of the regimes it drafts with). It
writes the words and draws the charts (:mod:`workbench.charts._policy`); in JupyterLab an ipywidgets panel redraws
them from the same functions (``_policy_panel``). It never launches or writes anything: sweeping, writing the
policies as variant files and running them is :func:`workbench.sweeps.dynamic_disable`
(``workbench/sweeps/_policy_sweep.py``: ``write_policies``, ``measure_policies``, each returning a new study).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from workbench import charts, paths
from workbench.analysis import (
    SglangPolicy,
    Threshold,
    Tier,
    higher_is_better,
    pareto_points,
    repeat_table,
    spec_ratio_table,
)
from workbench.charts import METRIC_TITLES
from workbench.releases import ADAPTIVE_TIERS_SINCE
from workbench.report import progress_bars
from workbench.studies._assemble import read_tables
from workbench.studies._goodput import GoodputTargets, with_goodput
from workbench.studies._policy_index import INDEX_NAME, PolicyRun, read_policy_runs, variant_settings
from workbench.studies import _policy_words
from workbench.studies._policy_tables import PolicyTables, policy_tables
from workbench.errors import ConfigError
from workbench.variants import Variant

#: The release whose adaptive batch-size tiers the derived config is written for and run under: the first with tiers.
DEFAULT_ADAPTIVE_VERSION = ADAPTIVE_TIERS_SINCE


@dataclasses.dataclass(frozen=True)
class PolicyStudy:
    """A sweep of a baseline and speculative variants, and the policies derived from it
    (:func:`load_policy_study`, :func:`load_dynamic_disable`).

    Attributes:
        tables: the study's tables, every figure the words and charts use
            (:class:`~workbench.studies._policy_tables.PolicyTables`).
    """

    tables: PolicyTables

    @classmethod
    def from_frames(
        cls,
        levels: pd.DataFrame,
        requests: pd.DataFrame,
        manifests: Sequence[dict[str, Any]],
        baseline: str,
        settings: Mapping[str, Mapping[str, Any]],
        *,
        objective: str = "throughput",
        goodput: GoodputTargets = GoodputTargets(),
        adaptive_version: str = DEFAULT_ADAPTIVE_VERSION,
        bench: Mapping[str, Any] | None = None,
        runs: Mapping[str, PolicyRun] | None = None,
    ) -> PolicyStudy:
        """A study of a sweep's rows at hand (level rows, request rows, manifests; ``settings``: variant ->
        ``topk``, ``num_steps``, ``gpus``), its tables computed once
        (:func:`~workbench.studies._policy_tables.policy_tables`).

        Raises:
            ConfigError: a bad objective, goodput without a target, or a baseline without levels.
        """
        return cls(
            policy_tables(
                levels,
                requests,
                manifests,
                baseline,
                settings,
                objective=objective,
                goodput=goodput,
                adaptive_version=adaptive_version,
                bench=bench,
                runs=runs,
            )
        )

    def with_runs(self, runs: Mapping[str, PolicyRun]) -> PolicyStudy:
        """This study with ``runs`` as its written (and measured) policies (:func:`workbench.sweeps.write_policies`,
        :func:`workbench.sweeps.measure_policies`)."""
        return PolicyStudy(self.tables.with_runs(runs))

    def with_measured(self, policy: str, levels: pd.DataFrame) -> PolicyStudy:
        """This study with ``levels`` (rows of a stored run of ``policy``'s variant) as that policy's measurement.

        Raises:
            ConfigError: no such policy was written.
        """
        if policy not in self.runs:
            raise ConfigError(f"no policy {policy!r} written; have {sorted(self.runs)}")
        return self.with_runs({**self.runs, policy: dataclasses.replace(self.runs[policy], levels=levels.copy())})

    def with_goodput(self, levels: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
        """``levels`` with ``goodput_req_s``, ``goodput_fraction`` and ``goodput_requests`` from ``requests`` under
        the study's targets (:func:`workbench.studies._goodput.with_goodput`; unchanged when there is none)."""
        return with_goodput(levels, requests, self.goodput)

    # -- the sweep (the tables' own fields) ---------------------------------------------------------
    @property
    def levels(self) -> pd.DataFrame:
        """Level rows of the sweep (one per variant, concurrency and repeat), goodput columns with a target."""
        return self.tables.levels

    @property
    def requests(self) -> pd.DataFrame:
        """Request rows of the sweep."""
        return self.tables.requests

    @property
    def manifests(self) -> tuple[dict[str, Any], ...]:
        """The sweep runs' manifests."""
        return self.tables.manifests

    @property
    def baseline(self) -> str:
        """The plain-decoding variant."""
        return self.tables.baseline

    @property
    def settings(self) -> Mapping[str, Mapping[str, Any]]:
        """Variant -> ``topk``, ``num_steps``, ``gpus``."""
        return self.tables.settings

    @property
    def objective(self) -> str:
        """``"per_request"``, ``"throughput"`` or ``"goodput"`` (:data:`workbench.analysis.OBJECTIVES`)."""
        return self.tables.objective

    @property
    def goodput(self) -> GoodputTargets:
        """The goodput targets (none: no goodput columns)."""
        return self.tables.goodput

    @property
    def adaptive_version(self) -> str:
        """The SGLang release the adaptive config is written for."""
        return self.tables.adaptive_version

    @property
    def bench(self) -> Mapping[str, Any]:
        """The keyword arguments of the sweep (the policies are run with the same)."""
        return self.tables.bench

    @property
    def runs(self) -> Mapping[str, PolicyRun]:
        """Policy -> its :class:`PolicyRun` (after :func:`workbench.sweeps.write_policies`)."""
        return self.tables.runs

    @property
    def tpot_ms(self) -> float | None:
        """The TPOT target of :attr:`goodput` (ms; None: not set), as the study's index records it."""
        return self.goodput.tpot_ms

    @property
    def e2e_ms(self) -> float | None:
        """The E2E target of :attr:`goodput` (ms; None: not set), as the study's index records it."""
        return self.goodput.e2e_ms

    @property
    def metric(self) -> str:
        """The objective's level column."""
        return self.tables.metric

    @property
    def variants(self) -> list[str]:
        """The swept variants, baseline first."""
        return self.tables.variants

    @property
    def spec_variants(self) -> list[str]:
        """The swept speculative variants."""
        return self.tables.spec_variants

    def topk_variants(self, topk: int) -> dict[str, int]:
        """Swept variants with this topk -> their num_steps, by num_steps."""
        return self.tables.topk_variants(topk)

    @property
    def simulated(self) -> bool:
        """True when any figure of the sweep comes from the simulated engine."""
        return self.tables.simulated

    @property
    def repeats(self) -> int:
        """The fewest repeats of any level."""
        return self.tables.repeats

    @property
    def subtitle(self) -> list[str]:
        """Chart subtitle lines: provenance (SIMULATED when so, stand-ins included), the SGLang rules of the sweep,
        n (the charts add :meth:`trust_subtitle`)."""
        return list(self.tables.subtitle)

    # -- tables (PolicyTables) ----------------------------------------------------------------------
    def means(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """:meth:`PolicyTables.means`: mean, interval and n over repeats per (variant, concurrency)."""
        return self.tables.means(metrics)

    def ratios(self, metric: str | None = None) -> pd.DataFrame:
        """:meth:`PolicyTables.ratios`: oriented spec/baseline ratios with intervals."""
        return self.tables.ratios(metric)

    def ratio_summary(
        self,
        metrics: Sequence[str] = ("output_throughput_tok_s", "mean_per_request_tok_s", "mean_ttft_ms", "mean_tpot_ms"),
    ) -> pd.DataFrame:
        """:meth:`ratios` of several metrics in one table (throughputs spec/baseline, latencies baseline/spec)."""
        return pd.concat([self.ratios(m) for m in metrics if m in self.levels], ignore_index=True)

    def envelope(self, metric: str | None = None, variants: Sequence[str] | None = None) -> pd.DataFrame:
        """:meth:`PolicyTables.envelope`: the best variant per concurrency."""
        return self.tables.envelope(metric, variants)

    def threshold(self, metric: str | None = None, *, specs: Sequence[str] | None = None) -> Threshold:
        """The recommended "no drafting above N" over the speculative variants (default: all swept, on the
        objective; :meth:`PolicyTables.threshold_on`)."""
        return self.tables.threshold_on(metric, specs=specs)

    def threshold_gains(self, specs: Sequence[str], no_draft_above: int, metric: str | None = None) -> pd.DataFrame:
        """:meth:`PolicyTables.threshold_gains`: the predicted gain of "no drafting above ``no_draft_above``"."""
        return self.tables.threshold_gains(specs, no_draft_above, metric)

    def tiers(self, metric: str | None = None, *, tolerance: float = 0.0) -> list[Tier]:
        """num_steps per batch-size tier from the topk-1 sweep (:meth:`PolicyTables.tiers_on`).

        Raises:
            ConfigError: no topk-1 variant was swept.
        """
        return self.tables.tiers_on(metric, tolerance=tolerance)

    def sglang_policy(self, sglang_version: str | None = None) -> SglangPolicy:
        """SGLang's adaptive config (0.5.16+) or the threshold policy (older releases) for ``sglang_version``."""
        return self.tables.sglang_policy(sglang_version)

    def vllm_schedule(self, max_batch_size: int | None = None) -> list[list[int]]:
        """vLLM's ``num_speculative_tokens_per_batch_size`` (default last end: the highest level measured)."""
        return self.tables.vllm_schedule(max_batch_size)

    def policy_table(self) -> pd.DataFrame:
        """The recommended policies in each output format, one row per format, each with its held-out error
        (:meth:`PolicyTables.policy_table`)."""
        return self.tables.policy_table()

    def policy_files(self) -> str:
        """Markdown: each written policy's variant name, what the name means, and its file
        (:func:`workbench.studies._policy_words.policy_files`); ``""`` before :func:`workbench.sweeps.write_policies`."""
        return _policy_words.policy_files(self.tables)

    # -- predicted versus measured ------------------------------------------------------------------
    def gains(self, metric: str | None = None) -> pd.DataFrame:
        """Each policy's predicted gain over always-off (baseline) and always-on, and its measured gain
        (:attr:`PolicyTables.gains` on the objective; :meth:`PolicyTables.gains_on` for another metric).

        One row per (policy, against, concurrency): ``predicted_gain`` and ``measured_gain`` with
        ``_lo``/``_hi`` (95% t intervals over paired repeats; NaN for n < 2), ``n``, and
        ``measured_over_predicted`` with its interval and ``agreement``
        (:func:`workbench.analysis.predicted_vs_measured`). Without a measured run the measured
        columns are NaN and ``agreement`` says "not run".
        """
        return self.tables.gains_on(metric)

    def gains_long(self, metric: str | None = None) -> pd.DataFrame:
        """:meth:`gains` as rows per source (predicted, measured), for :func:`workbench.charts.gain_chart`."""
        g = self.gains(metric)
        frames = []
        for source in ("predicted", "measured"):
            if f"{source}_gain" not in g:
                continue
            part = g[
                ["policy", "against", "concurrency", "n", f"{source}_gain", f"{source}_gain_lo", f"{source}_gain_hi"]
            ].rename(columns={f"{source}_gain": "gain", f"{source}_gain_lo": "gain_lo", f"{source}_gain_hi": "gain_hi"})
            frames.append(part.dropna(subset=["gain"]).assign(source=source))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    # -- words (_policy_words) ----------------------------------------------------------------------
    def trust_line(self) -> str:
        """The verdict's line on how far to trust the recommendations (:func:`workbench.studies._policy_words.trust_line`)."""
        return _policy_words.trust_line(self.tables)

    def trust_subtitle(self) -> list[str]:
        """The charts' line on how far to trust the recommendations (none for a sweep measured on a real engine)."""
        return _policy_words.trust_subtitle(self.tables)

    def verdict(self) -> str:
        """The answer first (threshold, adaptive config, vLLM schedule, gains), then how far to trust it, the caveats
        and provenance (markdown; :func:`workbench.studies._policy_words.verdict`)."""
        return _policy_words.verdict(self.tables)

    # -- charts -------------------------------------------------------------------------------------
    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """Every chart by file stem, on the objective's metric, every swept variant, the recommended threshold
        drawn: ``envelope``, ``ratios``, ``pareto``, ``gains`` (when policies are written). The panel redraws
        the envelope for other choices (:meth:`envelope_chart`)."""
        metric = self.metric
        names = [self.baseline, *self.spec_variants]
        sub = self.subtitle
        trusted = self.trust_subtitle()
        limit = self.threshold(metric).no_draft_above
        out: dict[str, alt.TopLevelMixin] = {
            "envelope": self.envelope_chart(metric=metric, variants=names, no_draft_above=limit)
        }
        if len(names) > 1:
            out["ratios"] = charts.spec_ratio_chart(
                spec_ratio_table(self.levels, baseline=self.baseline, metric=metric, specs=names[1:]),
                baseline=self.baseline,
                variants=self.variants,
                subtitle=[*sub, *trusted],
                no_draft_above=limit,
                y_title=("spec / baseline" if higher_is_better(metric) else "baseline / spec") + f", {metric}",
            )
        both = repeat_table(
            self.levels[self.levels["variant"].isin(names)], ["output_throughput_tok_s", "mean_per_request_tok_s"]
        )
        points = pareto_points(both, gpus={v: self.settings[v]["gpus"] for v in names})
        out["pareto"] = charts.pareto_chart(
            points,
            baseline=self.baseline,
            variants=self.variants,
            subtitle=[*sub[:-1], sub[-1].split("; bars")[0] + "; points: means", *trusted],
        )
        if self.runs:
            stand_ins = [
                f"{run.variant.name} = {run.variant.sim_stand_in()}"
                for run in self.runs.values()
                if run.variant.sim_stand_in() and self.simulated
            ]
            out["gains"] = charts.gain_chart(
                self.gains_long(metric),
                subtitle=[*sub, *stand_ins, *trusted],
                y_title=f"gain ({metric}; above 1: the policy is better)",
            )
        return out

    def envelope_chart(
        self, *, metric: str | None = None, variants: Sequence[str] | None = None, no_draft_above: int | None = None
    ) -> alt.LayerChart | alt.FacetChart:
        """The envelope chart of ``variants`` (the baseline always kept) with a threshold rule at ``no_draft_above``."""
        metric = metric or self.metric
        names = [self.baseline, *[v for v in (variants or self.spec_variants) if v != self.baseline]]
        means = repeat_table(self.levels[self.levels["variant"].isin(names)], [metric])
        return charts.policy_envelope_chart(
            means,
            self.envelope(metric, names),
            metric=metric,
            y_title=METRIC_TITLES.get(metric, metric),
            baseline=self.baseline,
            variants=self.variants,
            subtitle=[*self.subtitle, *self.trust_subtitle()],
            no_draft_above=no_draft_above,
        )

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart as PNG and SVG into ``out_dir`` (relative: to the project root); one row per chart."""
        return charts.save_charts(self.charts(), paths.resolve(out_dir), prefix="dynamic_disable_")


def load_policy_study(
    runs: Sequence[str | Path],
    *,
    baseline: str = "baseline",
    objective: str = "throughput",
    tpot_ms: float | None = None,
    e2e_ms: float | None = None,
    adaptive_version: str = DEFAULT_ADAPTIVE_VERSION,
    bench: Mapping[str, Any] | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> PolicyStudy:
    """A :class:`PolicyStudy` over stored runs of the sweep (run directories or ids).

    Args:
        settings: variant -> ``topk``, ``num_steps``, ``gpus`` over those read from the runs' variant definitions
            (:func:`~workbench.studies.variant_settings`).

    Raises:
        ConfigError: the baseline has no runs, a bad objective, or goodput without a target.
    """
    tables = read_tables(runs, baseline=baseline)
    read: dict[str, Mapping[str, Any]] = {}
    for m in tables.manifests:
        name = m["variant"]
        definition = m.get("variant_definition") or {}
        read[name] = variant_settings(Variant.from_dict(definition, name=name))
    return PolicyStudy.from_frames(
        tables.levels,
        tables.requests,
        tables.manifests,
        baseline,
        {**read, **(settings or {})},
        objective=objective,
        goodput=GoodputTargets(tpot_ms=tpot_ms, e2e_ms=e2e_ms),
        adaptive_version=adaptive_version,
        bench=bench,
    )


def load_dynamic_disable(
    index: str | Path,
    *,
    objective: str | None = None,
    tpot_ms: float | None = None,
    e2e_ms: float | None = None,
    progress: bool | None = None,
) -> PolicyStudy:
    """The :class:`PolicyStudy` a :func:`dynamic_disable` run recorded (its ``study.json``), measured policies included.

    Args:
        index: the ``study.json`` file or the folder holding it.
        objective, tpot_ms, e2e_ms: override the recorded objective and goodput targets.
        progress: a progress bar over the runs read (a widget in JupyterLab, text elsewhere);
            None (default): a bar, except in a notebook run by ``workbench report`` (whose
            exported page would keep the bar's first frame).

    Raises:
        ConfigError: no index there, or a run it names is missing.
    """
    from tqdm.auto import tqdm

    from workbench.store import load_runs

    bars = progress_bars(progress)
    path = paths.resolve(index)
    path = path / INDEX_NAME if path.is_dir() else path
    if not path.is_file():
        raise ConfigError(f"no study index at {path}: run dynamic_disable(...) first, or pass its policy folder")
    data = json.loads(path.read_text())
    folder = path.parent
    sweep = [folder / r for r in data["sweep_runs"]]
    missing = [str(r) for r in sweep if not r.is_dir()]
    if missing:
        raise ConfigError(f"{path} names runs that are not there: {missing}")
    has_goodput = tpot_ms is not None or e2e_ms is not None
    study = load_policy_study(
        list(tqdm(sweep, desc="reading sweep runs", disable=not bars)),
        baseline=data["baseline"],
        objective=objective or data["objective"],
        tpot_ms=tpot_ms if has_goodput else data.get("tpot_ms"),
        e2e_ms=e2e_ms if has_goodput else data.get("e2e_ms"),
        adaptive_version=data.get("adaptive_version", DEFAULT_ADAPTIVE_VERSION),
        settings=data.get("settings", {}),
    )
    policies = read_policy_runs(data, folder)
    runs: dict[str, PolicyRun] = {}
    for name, (run, run_dir) in tqdm(list(policies.items()), desc="reading policy runs", disable=not bars):
        if run_dir is not None:
            requests, levels = load_runs([run_dir])
            run = dataclasses.replace(run, levels=study.with_goodput(levels, requests), run_dir=run_dir)
        runs[name] = run
    return study.with_runs(runs)
