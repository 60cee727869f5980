"""When to stop speculating, read from a sweep: derive the policies, compare them with their measurement.

:class:`PolicyStudy` derives from a sweep of a baseline and speculative variants (topk 4 and topk 1
over num_steps; through :mod:`workbench.analysis`) the "no drafting above N" threshold, SGLang's
``--speculative-adaptive-config`` batch-size tiers and vLLM's ``num_speculative_tokens_per_batch_size``,
and reports each policy's predicted gain over always-on and always-off beside its measured one,
with intervals over repeats. It holds the tables, the charts (:mod:`workbench.charts._policy`) and,
in JupyterLab, an ipywidgets panel that redraws them from the same functions (``_policy_panel``). It never launches or
writes anything: sweeping, writing the policies as variant files and running them is
:func:`workbench.sweeps.dynamic_disable` (``workbench/sweeps/_policy_sweep.py``: ``write_policies``,
``measure_policies``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from workbench import charts, paths
from workbench.analysis import (
    OBJECTIVES,
    SglangPolicy,
    Threshold,
    Tier,
    best_threshold,
    envelope,
    higher_is_better,
    pareto_points,
    policy_gains,
    policy_rows,
    predicted_vs_measured,
    repeat_table,
    sglang_policy,
    spec_ratio_table,
    step_tiers,
    vllm_schedule,
)
from workbench.studies._assemble import assemble_tables, read_tables
from workbench.studies._goodput import GoodputTargets, with_goodput
from workbench.studies._policy_index import INDEX_NAME, PolicyRun, read_policy_runs, variant_settings
from workbench.charts import METRIC_TITLES
from workbench.errors import ConfigError
from workbench.markup import code, literal
from workbench.releases import ADAPTIVE_TIERS_SINCE
from workbench.report import progress_bars
from workbench.variants import Variant

#: The release whose adaptive batch-size tiers the derived config is written for and run under: the first with tiers.
DEFAULT_ADAPTIVE_VERSION = ADAPTIVE_TIERS_SINCE


@dataclasses.dataclass
class PolicyStudy:
    """A sweep of a baseline and speculative variants, and the policies derived from it.

    Attributes:
        levels: level rows of the sweep (one per variant, concurrency and repeat), with
            ``goodput_req_s`` when a goodput target is set.
        requests: request rows of the sweep.
        manifests: the runs' manifests.
        baseline: the plain-decoding variant.
        settings: variant -> ``topk``, ``num_steps``, ``gpus``.
        objective: ``"per_request"``, ``"throughput"`` or ``"goodput"`` (see
            :data:`workbench.analysis.OBJECTIVES`).
        goodput: the goodput targets (the dynamic-disable notebook sets ``tpot_ms`` and ``e2e_ms``; none:
            no goodput columns).
        adaptive_version: the SGLang release the adaptive config is written for.
        bench: the keyword arguments of the sweep (the policies are run with the same).
        runs: policy -> its :class:`PolicyRun` (after :func:`workbench.sweeps.write_policies`).
    """

    levels: pd.DataFrame
    requests: pd.DataFrame
    manifests: list[dict[str, Any]]
    baseline: str
    settings: dict[str, dict[str, Any]]
    objective: str = "throughput"
    goodput: GoodputTargets = GoodputTargets()
    adaptive_version: str = DEFAULT_ADAPTIVE_VERSION
    bench: dict[str, Any] = dataclasses.field(default_factory=dict)
    runs: dict[str, PolicyRun] = dataclasses.field(default_factory=dict)
    #: Thresholds and tiers computed once per (metric, variants); the rows are not meant to change.
    _cache: dict[tuple[Any, ...], Any] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ConfigError(f"objective must be one of {sorted(OBJECTIVES)}, got {self.objective!r}")
        if self.objective == "goodput" and not self.goodput:
            raise ConfigError("objective 'goodput' needs a target: set tpot_ms and/or e2e_ms (milliseconds)")
        if self.baseline not in set(self.levels["variant"]):
            raise ConfigError(f"baseline {self.baseline!r} has no levels; have {sorted(set(self.levels['variant']))}")
        self.levels = self.with_goodput(self.levels, self.requests)

    def with_goodput(self, levels: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
        """``levels`` with ``goodput_req_s``, ``goodput_fraction`` and ``goodput_requests`` from ``requests`` under
        the study's targets (:func:`workbench.studies._goodput.with_goodput`; unchanged when there is none)."""
        return with_goodput(levels, requests, self.goodput)

    @property
    def tpot_ms(self) -> float | None:
        """The TPOT target of :attr:`goodput` (ms; None: not set), as the study's index records it."""
        return self.goodput.tpot_ms

    @property
    def e2e_ms(self) -> float | None:
        """The E2E target of :attr:`goodput` (ms; None: not set), as the study's index records it."""
        return self.goodput.e2e_ms

    # -- who is who ---------------------------------------------------------------------------------
    @property
    def metric(self) -> str:
        """The objective's level column."""
        return OBJECTIVES[self.objective]

    @property
    def variants(self) -> list[str]:
        """The swept variants, baseline first."""
        rest = [v for v in dict.fromkeys(self.levels["variant"]) if v != self.baseline]
        return [self.baseline, *rest]

    @property
    def spec_variants(self) -> list[str]:
        return self.variants[1:]

    def topk_variants(self, topk: int) -> dict[str, int]:
        """Swept variants with this topk -> their num_steps, by num_steps."""
        found = {v: self.settings[v]["num_steps"] for v in self.spec_variants if self.settings[v]["topk"] == topk}
        return dict(sorted(found.items(), key=lambda kv: kv[1]))

    @property
    def simulated(self) -> bool:
        """True when any figure of the sweep comes from the simulated engine."""
        return bool(self.levels.get("simulated", pd.Series([False])).fillna(False).astype(bool).any())

    @property
    def repeats(self) -> int:
        """The fewest repeats of any level."""
        if "repeat" not in self.levels:
            return 1
        return int(self.levels.groupby(["variant", "concurrency"]).size().min())

    @property
    def subtitle(self) -> list[str]:
        """Chart subtitle lines: provenance (SIMULATED when so; :attr:`workbench.Study.subtitle_lines`, stand-ins
        included), the SGLang rules of the sweep, n."""
        if ("subtitle",) not in self._cache:
            first = assemble_tables(self.levels, self.requests, self.manifests, self.baseline).subtitle_lines
            versions = sorted(
                {str((m.get("variant_definition") or {}).get("sglang_version") or "?") for m in self.manifests}
            )
            n = self.repeats
            rep = f"n={n} repeats per level; bars: 95% t intervals" if n > 1 else "n=1 repeat: no intervals"
            self._cache[("subtitle",)] = [*first, f"SGLang rules {', '.join(versions)} (sweep); {rep}"]
        return list(self._cache[("subtitle",)])

    # -- tables -------------------------------------------------------------------------------------
    def means(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """Mean, interval and n over repeats per (variant, concurrency) (:func:`workbench.analysis.repeat_table`)."""
        wanted = metrics or [
            m for m in dict.fromkeys([self.metric, *OBJECTIVES.values(), *METRIC_TITLES]) if m in self.levels
        ]
        return repeat_table(self.levels, list(wanted))

    def ratios(self, metric: str | None = None) -> pd.DataFrame:
        """Oriented spec/baseline ratios with intervals (:func:`workbench.analysis.spec_ratio_table`)."""
        return spec_ratio_table(self.levels, baseline=self.baseline, metric=metric or self.metric)

    def ratio_summary(
        self,
        metrics: Sequence[str] = ("output_throughput_tok_s", "mean_per_request_tok_s", "mean_ttft_ms", "mean_tpot_ms"),
    ) -> pd.DataFrame:
        """:meth:`ratios` of several metrics in one table (throughputs spec/baseline, latencies baseline/spec)."""
        return pd.concat([self.ratios(m) for m in metrics if m in self.levels], ignore_index=True)

    def envelope(self, metric: str | None = None, variants: Sequence[str] | None = None) -> pd.DataFrame:
        """Best variant per concurrency (:func:`workbench.analysis.envelope`)."""
        return envelope(self.levels, metric=metric or self.metric, variants=variants)

    def threshold(self, metric: str | None = None, *, specs: Sequence[str] | None = None) -> Threshold:
        """The recommended "no drafting above N" over the speculative variants (default: all swept;
        :func:`workbench.analysis.best_threshold`)."""
        key = ("threshold", metric or self.metric, tuple(specs or self.spec_variants))
        if key not in self._cache:
            self._cache[key] = best_threshold(self.levels, baseline=self.baseline, specs=list(key[2]), metric=key[1])
        return self._cache[key]

    def threshold_gains(self, specs: Sequence[str], no_draft_above: int, metric: str | None = None) -> pd.DataFrame:
        """Predicted gain of "no drafting above ``no_draft_above``" over always-off and always-on.

        It drafts with the best of ``specs`` at the lowest level (mean of ``metric``). The table's
        ``attrs["spec"]`` names it. Columns as :func:`workbench.analysis.policy_gains`.
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

    def tiers(self, metric: str | None = None, *, tolerance: float = 0.0) -> list[Tier]:
        """num_steps per batch-size tier from the topk-1 sweep (:func:`workbench.analysis.step_tiers`).

        Raises:
            ConfigError: no topk-1 variant was swept.
        """
        steps = self.topk_variants(1)
        if not steps:
            raise ConfigError(
                "no topk-1 variant in the sweep: the adaptive tiers need a sweep over num_steps at topk 1"
            )
        key = ("tiers", metric or self.metric, tolerance)
        if key not in self._cache:
            self._cache[key] = step_tiers(
                self.levels, baseline=self.baseline, steps=steps, metric=key[1], tolerance=tolerance
            )
        return list(self._cache[key])

    def sglang_policy(self, sglang_version: str | None = None) -> SglangPolicy:
        """SGLang's adaptive config (0.5.16+) or the threshold policy (older releases) for ``sglang_version``."""
        return sglang_policy(self.tiers(), self.threshold(), sglang_version=sglang_version or self.adaptive_version)

    def vllm_schedule(self, max_batch_size: int | None = None) -> list[list[int]]:
        """vLLM's ``num_speculative_tokens_per_batch_size`` (default last end: the highest level measured)."""
        top = max_batch_size or int(self.levels["concurrency"].max())
        return vllm_schedule(self.tiers(), max_batch_size=top)

    def policy_table(self) -> pd.DataFrame:
        """The recommended policies in each output format, one row per format."""
        t = self.threshold()
        rows = [
            {
                "format": "threshold (no drafting above N)",
                "for": f"{t.spec}; any engine with a switch",
                "setting": "keep drafting (no threshold in range)"
                if t.kind == "always"
                else f"no drafting above {t.no_draft_above} running requests",
                "note": t.description,
            }
        ]
        for version in ("0.5.12", self.adaptive_version, "0.5.23"):
            p = self.sglang_policy(version)
            setting = json.dumps(p.config) if p.config else (", ".join(p.flags) or p.kind)
            rows.append({"format": f"SGLang {version}", "for": p.kind, "setting": setting, "note": p.note})
        rows.append(
            {
                "format": "vLLM",
                "for": "--speculative-config num_speculative_tokens_per_batch_size",
                "setting": json.dumps(self.vllm_schedule()),
                "note": "K = the best num_steps at topk 1; inclusive batch-size ranges",
            }
        )
        return pd.DataFrame(rows)

    def policy_files(self) -> str:
        """Markdown: each written policy's variant name, what the name means, and its file (relative to the project
        or ``~``, :func:`workbench.paths.shown`: a shared report prints no absolute path of the machine).

        Names are generated: ``<spec>-off-above-<N>`` is ``<spec>`` with no drafting above N running requests;
        ``adaptive-tiers-<hash>`` runs SGLang's ``--speculative-adaptive-config``, ``<hash>`` being the first 8 hex
        digits of the config's SHA-256 (the same config always gets the same name). ``""`` before
        :func:`workbench.sweeps.write_policies`.
        """
        lines = []
        for run in self.runs.values():
            name = run.variant.name
            if run.policy == "threshold":  # N as the file says it (what the name was made from)
                what = (
                    f"{code(run.always_on)} with no drafting above {run.variant.sim_policy.get('spec_off_above')} "
                    "running requests (the name ends in the threshold)"
                )
            else:
                what = (
                    f"SGLang's adaptive num_steps per batch-size tier; the name ends in the first 8 hex digits of "
                    f"its config's SHA-256 ({code(paths.shown(run.config_path)) if run.config_path else 'no file'})"
                )
            lines.append(
                f"- **{literal(run.policy)}**: variant {code(name)}, {what}; file {code(paths.shown(run.path))}"
            )
        if not lines:
            return ""
        return "\n".join(
            [
                "The policies as variant files, each measured below as one server (measure one yourself "
                "with `workbench bench FILE`):",
                "",
                *lines,
            ]
        )

    # -- policies measured -------------------------------------------------------------------------
    def attach_policy_levels(self, policy: str, levels: pd.DataFrame) -> None:
        """Use ``levels`` (rows of a stored run of ``policy``'s variant) as its measurement."""
        if policy not in self.runs:
            raise ConfigError(f"no policy {policy!r} written; have {sorted(self.runs)}")
        self.runs[policy].levels = levels.copy()

    # -- predicted versus measured ------------------------------------------------------------------
    def _combined(self, metric: str) -> pd.DataFrame:
        """Sweep levels plus each policy's predicted rows (``<policy> (predicted)``) and measured rows."""
        frames = [self.levels]
        for name, run in self.runs.items():
            frames.append(policy_rows(self.levels, run.choice, name=f"{name} (predicted)"))
            if run.levels is not None and len(run.levels):
                measured = run.levels.assign(variant=f"{name} (measured)")
                if "repeat" not in measured:
                    measured = measured.assign(repeat=0)
                frames.append(measured)
        return pd.concat(frames, ignore_index=True)

    def gains(self, metric: str | None = None) -> pd.DataFrame:
        """Each policy's predicted gain over always-off (baseline) and always-on, and its measured gain.

        One row per (policy, against, concurrency): ``predicted_gain`` and ``measured_gain`` with
        ``_lo``/``_hi`` (95% t intervals over paired repeats; NaN for n < 2), ``n``, and
        ``measured_over_predicted`` with its interval and ``agreement``
        (:func:`workbench.analysis.predicted_vs_measured`). Without a measured run the measured
        columns are NaN and ``agreement`` says "not run".
        """
        metric = metric or self.metric
        combined = self._combined(metric)
        frames = []
        for name, run in self.runs.items():
            against = [self.baseline, run.always_on]
            if run.levels is not None and len(run.levels):
                t = predicted_vs_measured(
                    combined,
                    predicted=f"{name} (predicted)",
                    measured=f"{name} (measured)",
                    against=against,
                    metric=metric,
                )
            else:
                g = policy_gains(combined, policy=f"{name} (predicted)", against=against, metric=metric)
                t = g.rename(
                    columns={"gain": "predicted_gain", "gain_lo": "predicted_gain_lo", "gain_hi": "predicted_gain_hi"}
                ).drop(columns="verdict")
                t = t.assign(agreement="not run")
            t["against"] = t["against"].map(
                lambda a, on=run.always_on: "always-off (baseline)" if a == self.baseline else f"always-on ({on})"
            )
            frames.append(t.assign(policy=name))
        if not frames:
            return pd.DataFrame()
        out = pd.concat(frames, ignore_index=True)
        return out[["policy", *[c for c in out.columns if c != "policy"]]]

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

    # -- words --------------------------------------------------------------------------------------
    def verdict(self) -> str:
        """The answer first (threshold, adaptive config, vLLM schedule, gains), then the caveats and provenance (markdown)."""
        m = self.metric
        t = self.threshold()
        lines = [f"**Verdict ({literal(self.subtitle[0])}).** Objective: {self.objective} ({m})."]
        if t.kind == "always":
            lines.append(f"- **Keep drafting**: {literal(t.description)}")
        elif t.kind == "never":
            lines.append(f"- **Do not draft**: {literal(t.description)}")
        else:  # the description opens with the rule itself: said once, in bold
            said = t.description.removeprefix(f"No drafting above {t.no_draft_above} running requests: ")
            lines.append(
                f"- **No drafting above {t.no_draft_above} running requests**, drafting with "
                f"{literal(t.spec)}: {literal(said)}"
            )
        if self.topk_variants(1):
            p = self.sglang_policy()
            if p.config:
                lines.append(
                    f"- SGLang {self.adaptive_version}+ `--speculative-adaptive-config`: `{json.dumps(p.config)}`"
                )
            lines.append(f"- vLLM `num_speculative_tokens_per_batch_size`: `{json.dumps(self.vllm_schedule())}`")
        g = self.gains(m)
        for (policy, against), part in g.groupby(["policy", "against"], sort=False) if len(g) else []:
            if (part["predicted_gain"] == 1.0).all():
                lines.append(
                    f"- {literal(policy)} runs the same variant as {literal(against)} at every level: predicted gain 0; "
                    + (
                        "measured "
                        + ", ".join(
                            f"{_pct(r, 'measured_gain')} at {int(r['concurrency'])}" for _, r in part.iterrows()
                        )
                        if "measured_gain" in part and part["measured_gain"].notna().any()
                        else "not run"
                    )
                    + f" (n={int(part['n'].min())} repeats)."
                )
                continue
            best = part.loc[part["predicted_gain"].idxmax()]
            text = (
                f"- {literal(policy)} over {literal(against)}: predicted up to {_pct(best, 'predicted_gain')} at concurrency "
                f"{int(best['concurrency'])}"
            )
            if "measured_gain" in part and part["measured_gain"].notna().any():
                text += f", measured {_pct(best, 'measured_gain')} there ({best['agreement']})"
            lines.append(text + f"; n={int(best['n'])} repeats.")
        lines.append(
            f"- Caveats: {literal('; '.join(self.subtitle))}. Levels "
            f"{', '.join(str(int(c)) for c in sorted(set(self.levels['concurrency'])))} only: the switch "
            "lies somewhere between the last level ahead and the next; a policy's prediction is assembled "
            "from static variants and leaves out what switching costs (measured: the policy run as one "
            f"server). Adaptive tiers run under SGLang {literal(self.adaptive_version)}'s rules, the sweep under its "
            "variants' own."
        )
        return "\n".join(lines)

    # -- charts -------------------------------------------------------------------------------------
    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """Every chart by file stem, on the objective's metric, every swept variant, the recommended threshold
        drawn: ``envelope``, ``ratios``, ``pareto``, ``gains`` (when policies are written). The panel redraws
        the envelope for other choices (:meth:`envelope_chart`)."""
        metric = self.metric
        names = [self.baseline, *self.spec_variants]
        sub = self.subtitle
        limit = self.threshold(metric).no_draft_above
        out: dict[str, alt.TopLevelMixin] = {
            "envelope": self.envelope_chart(metric=metric, variants=names, no_draft_above=limit)
        }
        if len(names) > 1:
            out["ratios"] = charts.spec_ratio_chart(
                spec_ratio_table(self.levels, baseline=self.baseline, metric=metric, specs=names[1:]),
                baseline=self.baseline,
                variants=self.variants,
                subtitle=sub,
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
            subtitle=[*sub[:-1], sub[-1].split("; bars")[0] + "; points: means"],
        )
        if self.runs:
            stand_ins = [
                f"{run.variant.name} = {run.variant.sim_stand_in()}"
                for run in self.runs.values()
                if run.variant.sim_stand_in() and self.simulated
            ]
            out["gains"] = charts.gain_chart(
                self.gains_long(metric),
                subtitle=[*sub, *stand_ins],
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
            subtitle=self.subtitle,
            no_draft_above=no_draft_above,
        )

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart as PNG and SVG into ``out_dir`` (relative: to the project root); one row per chart."""
        return charts.save_charts(self.charts(), paths.resolve(out_dir), prefix="dynamic_disable_")


def _pct(row: pd.Series, col: str) -> str:
    value, lo, hi = row[col], row.get(f"{col}_lo"), row.get(f"{col}_hi")
    text = f"{value - 1:+.1%}"
    if lo is not None and not (isinstance(lo, float) and math.isnan(lo)):
        text += f" (95% CI {lo - 1:+.1%} to {hi - 1:+.1%})"
    return text


def load_policy_study(
    runs: Sequence[str | Path],
    *,
    baseline: str = "baseline",
    objective: str = "throughput",
    tpot_ms: float | None = None,
    e2e_ms: float | None = None,
    adaptive_version: str = DEFAULT_ADAPTIVE_VERSION,
    bench: Mapping[str, Any] | None = None,
) -> PolicyStudy:
    """A :class:`PolicyStudy` over stored runs of the sweep (run directories or ids).

    Raises:
        ConfigError: the baseline has no runs, a bad objective, or goodput without a target.
    """
    tables = read_tables(runs, baseline=baseline)
    settings = {}
    for m in tables.manifests:
        name = m["variant"]
        definition = m.get("variant_definition") or {}
        settings[name] = variant_settings(Variant.from_dict(definition, name=name))
    return PolicyStudy(
        levels=tables.levels,
        requests=tables.requests,
        manifests=list(tables.manifests),
        baseline=baseline,
        settings=settings,
        objective=objective,
        goodput=GoodputTargets(tpot_ms=tpot_ms, e2e_ms=e2e_ms),
        adaptive_version=adaptive_version,
        bench=dict(bench or {}),
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
    )
    study.settings = {**study.settings, **data.get("settings", {})}
    policies = read_policy_runs(data, folder)
    for name, (run, run_dir) in tqdm(list(policies.items()), desc="reading policy runs", disable=not bars):
        if run_dir is not None:
            requests, levels = load_runs([run_dir])
            run.levels = study.with_goodput(levels, requests)
        study.runs[name] = run
    return study
