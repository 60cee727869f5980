"""A spec-versus-baseline study over measured runs: tables, crossovers, policy, charts.

:class:`Study` gathers the per-level tables of several runs (one run per variant)
and answers the investigation's questions with the pure functions of
:mod:`workbench.analysis` and :mod:`workbench.charts._tradeoff`: where each
speculative variant stops beating the baseline (the crossover concurrency), which
variant is best at each concurrency (the policy), and the charts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from workbench import charts
from workbench.analysis import Crossover, best_policy, find_crossover, per_request_ratio_ci, ratio_table
from workbench.errors import ConfigError

#: Level metrics compared between variants (higher is better for both).
COMPARED = ("output_throughput_tok_s", "mean_per_request_tok_s")

#: Columns of the compact per-level table shown in reports.
SUMMARY_COLUMNS = (
    "variant", "concurrency", "completed", "failed", "output_throughput_tok_s", "request_throughput_req_s",
    "mean_per_request_tok_s", "mean_ttft_ms", "p90_ttft_ms", "mean_tpot_ms", "p50_itl_ms", "p99_itl_ms",
    "mean_e2e_ms", "accept_length", "server_accept_length",
)


@dataclasses.dataclass
class Study:
    """Runs of several variants on one workload, compared against a baseline.

    Attributes:
        levels: per-level rows of every run (``variant``, ``concurrency``, metrics).
        requests: per-request rows of every run.
        manifests: the runs' manifests (dicts), in run order.
        baseline: the baseline variant's name.
    """

    levels: pd.DataFrame
    requests: pd.DataFrame
    manifests: list[dict[str, Any]]
    baseline: str
    #: (spec, confidence) -> the bootstrap of :meth:`per_request_ci`, computed once per study.
    _ci_cache: dict[tuple[str, float], pd.DataFrame] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = list(dict.fromkeys(self.levels["variant"])) if len(self.levels) else []
        if self.baseline not in names:
            raise ConfigError(f"baseline variant {self.baseline!r} has no runs; runs cover {names}")
        keys = ["variant", "concurrency", *(["repeat"] if "repeat" in self.levels else [])]
        dupes = self.levels.groupby(keys).size()
        if (dupes > 1).any():
            raise ConfigError(
                "several runs measure the same variant and concurrency: "
                f"{list(dupes[dupes > 1].index)}; pass one run per variant"
            )

    @property
    def variants(self) -> list[str]:
        """Variant names in run order."""
        return list(dict.fromkeys(self.levels["variant"]))

    @property
    def spec_variants(self) -> list[str]:
        """Every variant but the baseline."""
        return [v for v in self.variants if v != self.baseline]

    @property
    def simulated(self) -> bool:
        """True when any figure comes from the simulated engine."""
        return bool(self.levels.get("simulated", pd.Series([False])).fillna(False).astype(bool).any())

    @property
    def subtitle(self) -> str:
        """Provenance text for every chart (SIMULATED when any run is), as one line."""
        return "; ".join(self.subtitle_lines)

    @property
    def subtitle_lines(self) -> list[str]:
        """Provenance as chart subtitle lines: where the figures come from, then each stand-in."""
        sims = [m.get("simulation") or {} for m in self.manifests]
        profile = next((s.get("profile") for s in sims if s.get("profile")), None)
        scale = next((s.get("time_scale") for s in sims if s.get("time_scale")), None)
        text = charts.provenance_subtitle(self.levels, profile=profile, time_scale=scale)
        stand_ins = [f"{m.get('variant')} = {m['sim_stand_in']}" for m in self.manifests if m.get("sim_stand_in")]
        return [text, *stand_ins]

    # -- tables -------------------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """Compact per-level table (variant, concurrency, throughput, latencies, accept length), rounded for reading."""
        cols = [c for c in SUMMARY_COLUMNS if c in self.levels.columns]
        table = self.levels[cols].sort_values(["variant", "concurrency"]).reset_index(drop=True)
        digits = {c: (2 if "accept" in c or c.endswith("_req_s") else 1) for c in cols
                  if pd.api.types.is_float_dtype(table[c])}
        return table.round(digits)

    def ratios(self, spec: str) -> pd.DataFrame:
        """Spec/baseline ratios of :data:`COMPARED` at each shared level."""
        return ratio_table(self.levels, baseline=self.baseline, spec=spec, metrics=COMPARED)

    def per_request_ci(self, spec: str, *, confidence: float = 0.95) -> pd.DataFrame:
        """Bootstrap CI of the per-request tok/s ratio of ``spec`` over the baseline, per level.

        The bootstrap (2000 resamples per level) runs once per (``spec``, ``confidence``)
        for this study; later calls (:meth:`charts`, :meth:`findings`, again) get a copy
        of that result. A study's rows are not meant to change after it is built.
        """
        key = (spec, confidence)
        if key not in self._ci_cache:
            self._ci_cache[key] = per_request_ratio_ci(self.requests, baseline=self.baseline, spec=spec,
                                                       confidence=confidence)  # fmt: skip
        return self._ci_cache[key].copy()

    def crossovers(self, spec: str) -> dict[str, Crossover]:
        """Crossover concurrency of ``spec`` against the baseline, per compared metric."""
        table = self.ratios(spec)
        return {m: find_crossover(table["concurrency"], table[f"{m}_ratio"], metric=m) for m in COMPARED}

    def crossover_table(self) -> pd.DataFrame:
        """One row per (speculative variant, metric): crossover kind, concurrency, description."""
        rows = []
        for spec in self.spec_variants:
            for metric, c in self.crossovers(spec).items():
                rows.append({"variant": spec, "metric": metric, "kind": c.kind,
                             "crossover_concurrency": c.concurrency, "description": c.description})
        return pd.DataFrame(rows)

    def policy(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """Best variant per concurrency on ``metric`` (what to run at each load)."""
        return best_policy(self.levels, metric=metric)

    # -- charts -------------------------------------------------------------
    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """Every chart of the study, by file stem."""
        out: dict[str, alt.TopLevelMixin] = {
            "throughput": charts.throughput_chart(self.levels, subtitle=self.subtitle_lines, variants=self.variants),
            "per_request": charts.per_request_chart(self.levels, subtitle=self.subtitle_lines, variants=self.variants),
        }
        for spec in self.spec_variants:
            out[f"ratio_{spec}"] = charts.ratio_chart(self.ratios(spec), self.crossovers(spec), spec=spec,
                                                        subtitle=self.subtitle_lines, ci=self.per_request_ci(spec))
        if self.levels.get("accept_length", pd.Series(dtype=float)).notna().any():
            out["accept_length"] = charts.accept_length_chart(self.levels, subtitle=self.subtitle_lines, variants=self.variants)
        return out

    def save_charts(self, out_dir: str | Path) -> dict[str, dict[str, Path]]:
        """Write every chart as PNG and SVG into ``out_dir``; returns stem -> {format: path}."""
        return {stem: charts.save_chart(chart, out_dir, stem) for stem, chart in self.charts().items()}

    # -- words --------------------------------------------------------------
    def findings(self) -> str:
        """A short markdown summary: crossovers, best policy, accept length vs model."""
        lines = []
        if self.simulated:
            lines.append(f"**{self.subtitle}.**\n")
        for spec in self.spec_variants:
            for metric, c in self.crossovers(spec).items():
                lines.append(f"- **{spec}**, {metric}: {c.description}")
            ci = self.per_request_ci(spec)
            for row in ci.itertuples():
                if row.ratio > 1.0:
                    verdict = "significant" if row.significant else "not significant at this sample size"
                    lines.append(
                        f"  - at concurrency {row.concurrency}, {spec} is {row.ratio - 1:+.1%} per request "
                        f"(95% CI {row.ratio_lo - 1:+.1%} to {row.ratio_hi - 1:+.1%}, "
                        f"{'paired ' if row.paired else ''}bootstrap over {row.n_spec} requests): {verdict}."
                    )
        pol = self.policy()
        runs = []
        for variant, group in pol.groupby((pol["best_variant"] != pol["best_variant"].shift()).cumsum()):
            levels = list(group["concurrency"])
            span = f"{levels[0]}" if levels[0] == levels[-1] else f"{levels[0]}–{levels[-1]}"
            runs.append(f"{group['best_variant'].iloc[0]} at concurrency {span}")
        lines.append(f"- Best total output throughput: {'; '.join(runs)}.")
        for m in self.manifests:
            sim = m.get("simulation") or {}
            expected = sim.get("expected_accept_length")
            name = m.get("variant")
            got = self.levels.loc[self.levels["variant"] == name, "accept_length"].dropna()
            if expected and len(got):
                lines.append(
                    f"- {name}: measured accept length {got.min():.2f}–{got.max():.2f} across levels; "
                    f"the simulator's acceptance model expects {expected:.2f} per verify step (before the "
                    "prefill token and output-length truncation)."
                )
        return "\n".join(lines)
