"""A spec-versus-baseline study over measured runs: tables, crossovers, policy, charts.

:class:`Study` gathers the per-level tables of several runs (one run per variant)
and answers the investigation's questions with the pure functions of
:mod:`workbench.analysis` and :mod:`workbench.charts._tradeoff`: where each
speculative variant stops beating the baseline (the crossover concurrency), which
variant is best at each concurrency (the policy), and the charts.

Levels measured in several repeats are reported as the mean over repeats with a 95%
Student t interval and their n (:func:`workbench.analysis.repeat_table`); ratios pair
repeats (:func:`workbench.analysis.ratio_intervals`), and a crossover is claimed only
where the intervals separate (:func:`workbench.analysis.crossover_interval`); elsewhere
the text says "not distinguishable at this level". With one repeat the figures say
``n=1`` and carry no interval.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from workbench import charts
from workbench.analysis import (MIN_TEST_REPEATS, SIGNIFICANCE_RULE, Crossover, CrossoverInterval, best_policy,
                                crossover_interval, find_crossover, levels_text, not_tested_text, per_request_ratio_ci,
                                queued_requests, ratio_intervals, ratio_spans, repeat_table, round_sig,
                                round_to_interval, settings_differences)
from workbench.errors import ConfigError

#: Level metrics compared between variants (higher is better for both).
COMPARED = ("output_throughput_tok_s", "mean_per_request_tok_s")

#: Level metrics reported with their interval over repeats (summary, charts, the bench CLI).
INTERVAL_METRICS = (
    "output_throughput_tok_s", "mean_per_request_tok_s", "mean_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "p90_tpot_ms", "p99_tpot_ms", "accept_length",
)

#: Latency percentiles drawn and tabled (ms), beyond :data:`INTERVAL_METRICS`.
LATENCY_METRICS = ("p50_ttft_ms", "p90_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p90_tpot_ms", "p99_tpot_ms",
                   "p50_e2e_ms", "p90_e2e_ms", "p99_e2e_ms")

#: The report's narrow tables: name -> [(level column, shown column with its unit)].
TABLES = {
    "throughput": [("output_throughput_tok_s", "output tok/s"), ("mean_per_request_tok_s", "per-request tok/s"),
                   ("accept_length", "accept length (tok/verify)")],
    "latency": [("p50_ttft_ms", "TTFT p50 ms"), ("p99_ttft_ms", "TTFT p99 ms"), ("p50_tpot_ms", "TPOT p50 ms"),
                ("p99_tpot_ms", "TPOT p99 ms"), ("p50_e2e_ms", "E2E p50 ms"), ("p99_e2e_ms", "E2E p99 ms")],
}

#: Columns of the compact per-level table shown in reports (one repeat).
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

    @property
    def max_repeats(self) -> int:
        """The most repeats any level has (1 for runs without repeats)."""
        if "repeat" not in self.levels or not len(self.levels):
            return 1
        return int(self.levels.groupby(["variant", "concurrency"]).size().max())

    # -- fairness -----------------------------------------------------------
    @property
    def server_infos(self) -> dict[str, dict[str, Any]]:
        """Variant -> the ``/server_info`` its server reported (the resolved settings), from the manifests."""
        out: dict[str, dict[str, Any]] = {}
        for m in self.manifests:
            info = m.get("server_info") or {}
            if m.get("variant") and info:
                out.setdefault(m["variant"], info)
        return out

    @property
    def caps(self) -> dict[str, int]:
        """Variant -> the ``max_running_requests`` its server reported (variants whose server said)."""
        out = {}
        for name, info in self.server_infos.items():
            cap = info.get("max_running_requests")
            if cap is None:
                cap = (info.get("internal_states") or [{}])[0].get("effective_max_running_requests_per_dp")
            if cap is not None:
                out[name] = int(cap)
        return out

    def comparability(self) -> pd.DataFrame:
        """Server settings in which each speculative variant differs from the baseline, beyond speculation.

        One row per (variant, setting) (:func:`workbench.analysis.settings_differences` on the
        ``/server_info`` both servers reported), plus the pre-flight and effective-settings
        warnings the runs' manifests recorded (``setting`` ``"preflight: <flag>"``). Empty when
        the pairs are like-for-like or the manifests carry no server info.
        """
        infos = self.server_infos
        frames = []
        for spec in self.spec_variants:
            if self.baseline in infos and spec in infos:
                frames.append(settings_differences(infos[self.baseline], infos[spec], spec=spec,
                                                   baseline=self.baseline))
        rows = []
        for m in self.manifests:
            for f in [*(m.get("preflight_findings") or []), *(m.get("effective_findings") or [])]:
                if f.get("severity") in ("warning", "error") and m.get("variant") != self.baseline:
                    rows.append({"variant": m.get("variant"), "setting": f"preflight: {f.get('flag')}",
                                 "baseline_value": "", "spec_value": "", "effect": f.get("problem", ""),
                                 "equalise": f.get("fix", "")})
        frames.append(pd.DataFrame(rows, columns=["variant", "setting", "baseline_value", "spec_value", "effect",
                                                  "equalise"]))
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame(columns=["variant", "setting", "baseline_value", "spec_value", "effect", "equalise"])
        return pd.concat(frames, ignore_index=True).drop_duplicates(subset=["variant", "setting"])

    def comparability_text(self) -> str:
        """Markdown for the report's *Comparability* section: per speculative variant, each setting that
        differs from the baseline beyond speculation with what it does and how (or whether) it can be
        equalised, and the levels where a server's queue held requests."""
        unfair, held = self.comparability(), self.queued()
        if not self.server_infos:
            return "No server settings were recorded in these runs' manifests: comparability cannot be checked."
        lines = []
        for spec in self.spec_variants:
            rows = unfair[unfair["variant"] == spec]
            if not len(rows):
                lines.append(f"- **{spec}**: like-for-like with {self.baseline} (the servers reported the same "
                             "settings beyond speculation).")
                continue
            lines.append(f"- **{spec}** differs from {self.baseline}:")
            for r in rows.itertuples():
                values = f" ({self.baseline}: {r.baseline_value}, {spec}: {r.spec_value})" if r.baseline_value else ""
                lines.append(f"  - `{r.setting}`{values}: {r.effect}. To equalise: {r.equalise}.")
        if len(held):
            at = "; ".join(f"{r.variant} at concurrency {r.concurrency}: {r.queued_requests} queued (cap {r.cap})"
                           for r in held.itertuples())
            lines.append(f"- **Queued requests** (ringed in red in the charts): {at}.")
        else:
            lines.append("- **Queued requests**: none; every level's concurrency is within each server's "
                         "max-running-requests.")
        return "\n".join(lines)

    def queued(self) -> pd.DataFrame:
        """Levels where a server's queue held requests: ``variant``, ``concurrency``, ``queued_requests``, ``cap``."""
        means = self.means()
        held = means[means["queued_requests"] > 0][["variant", "concurrency", "queued_requests"]].copy()
        held["cap"] = held["variant"].map(self.caps)
        return held.reset_index(drop=True)

    # -- tables -------------------------------------------------------------
    def means(self) -> pd.DataFrame:
        """One row per (variant, concurrency): ``n`` repeats, and each of :data:`INTERVAL_METRICS`
        (and :data:`COMPARED`) as mean, ``_lo``, ``_hi`` (95% t interval; NaN for n=1), ``_n``."""
        metrics = [m for m in dict.fromkeys([*COMPARED, *INTERVAL_METRICS, *LATENCY_METRICS, "server_accept_length"])
                   if m in self.levels.columns]
        table = repeat_table(self.levels, metrics)
        order = {v: i for i, v in enumerate(self.variants)}
        for col in [c for c in self.levels.columns if c in {"simulated", "engine"}]:
            if col in self.levels:
                table[col] = table["variant"].map(self.levels.groupby("variant")[col].first())
        caps = self.caps
        table["queued_requests"] = [queued_requests(c, caps.get(v)) for v, c in zip(table["variant"],
                                                                                    table["concurrency"])]
        return table.sort_values(["variant", "concurrency"], key=lambda s: s.map(order) if s.name == "variant"
                                 else s).reset_index(drop=True)

    def summary(self) -> pd.DataFrame:
        """Compact per-level table, rounded for reading.

        One repeat: variant, concurrency, throughput, latencies, accept length (each n=1).
        Several: one row per (variant, concurrency) with ``n`` (repeats) and, for each of
        :data:`INTERVAL_METRICS`, the mean over repeats and its 95% interval (``_lo``, ``_hi``).
        """
        if self.max_repeats == 1:
            cols = [c for c in SUMMARY_COLUMNS if c in self.levels.columns]
            table = self.levels[cols].sort_values(["variant", "concurrency"]).reset_index(drop=True)
            table.insert(2, "n", 1)
        else:
            means = self.means()
            cols = ["variant", "concurrency", "n"] + [f"{m}{s}" for m in INTERVAL_METRICS if m in means
                                                      for s in ("", "_lo", "_hi")]
            table = means[cols]
        digits = {c: (2 if "accept" in c or "_req_s" in c else 1) for c in table.columns
                  if pd.api.types.is_float_dtype(table[c])}
        return table.round(digits)

    def ratio_intervals(self, spec: str, metric: str) -> pd.DataFrame:
        """:func:`workbench.analysis.ratio_intervals` of ``spec`` over the baseline on ``metric``."""
        return ratio_intervals(self.levels, baseline=self.baseline, spec=spec, metric=metric)

    def ratios(self, spec: str) -> pd.DataFrame:
        """Spec/baseline ratios of :data:`COMPARED` at each shared level: ``<m>_ratio`` (geometric
        mean over paired repeats; the plain ratio for one), ``<m>_ratio_lo``, ``<m>_ratio_hi``
        (NaN for n=1), ``<m>_n`` and ``<m>_verdict``; ``queued_requests``: requests waiting in either
        server's queue at that level (:meth:`caps`)."""
        out = None
        for m in COMPARED:
            t = self.ratio_intervals(spec, m).rename(columns={
                "ratio": f"{m}_ratio", "ratio_lo": f"{m}_ratio_lo", "ratio_hi": f"{m}_ratio_hi", "n": f"{m}_n",
                "verdict": f"{m}_verdict"})
            out = t if out is None else out.merge(t, on="concurrency", how="outer")
        caps = self.caps
        out["queued_requests"] = [max(queued_requests(c, caps.get(self.baseline)), queued_requests(c, caps.get(spec)))
                                  for c in out["concurrency"]]
        return out.sort_values("concurrency").reset_index(drop=True)

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

    def crossover_intervals(self, spec: str) -> dict[str, CrossoverInterval]:
        """Per compared metric, the crossover of ``spec`` with its interval, claimed only where the
        intervals separate (:func:`workbench.analysis.crossover_interval`)."""
        return {m: crossover_interval(self.ratio_intervals(spec, m), metric=m) for m in COMPARED}

    def crossovers(self, spec: str) -> dict[str, Crossover]:
        """Crossover concurrency of ``spec`` against the baseline, per compared metric, as charts draw it.

        Fewer than 3 repeats: the point estimate (:func:`workbench.analysis.find_crossover`), its
        description saying ``not tested: <n> repeat(s)``. Enough: a claimed crossover is the point
        ratio's crossing with the interval's words; one that cannot be claimed has no
        concurrency and says "not distinguishable at this level" where that applies.
        """
        table = self.ratios(spec)
        out = {}
        for m, interval in self.crossover_intervals(spec).items():
            point = find_crossover(table["concurrency"], table[f"{m}_ratio"], metric=m)
            if interval.kind == "not_tested":
                out[m] = dataclasses.replace(point, description=f"{point.description} ({not_tested_text(interval.n)}: no crossover interval)")
            elif interval.kind == "claimed":
                out[m] = Crossover(m, "interpolated", interval.concurrency, None, None, interval.description,
                                   ((0, 0, interval.concurrency),))
            else:
                out[m] = Crossover(m, "none_in_range", None, None, None, interval.description)
        return out

    def crossover_table(self) -> pd.DataFrame:
        """One row per (speculative variant, metric): crossover kind, concurrency, its interval, n, description."""
        rows = []
        for spec in self.spec_variants:
            intervals = self.crossover_intervals(spec)
            for metric, c in self.crossovers(spec).items():
                iv = intervals[metric]
                rows.append({"variant": spec, "metric": metric, "kind": c.kind if iv.kind == "not_tested"
                             else iv.kind, "crossover_concurrency": c.concurrency, "crossover_lo": iv.lo,
                             "crossover_hi": iv.hi, "n": iv.n, "description": c.description})
        return pd.DataFrame(rows)

    def policy(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """Best variant per concurrency on ``metric`` (mean over repeats; what to run at each load)."""
        return best_policy(self.means(), metric=metric)

    # -- charts -------------------------------------------------------------
    @property
    def repeats_line(self) -> str:
        """The chart subtitle line saying what a point is: n repeats and the interval drawn."""
        n = self.max_repeats
        if n == 1:
            return "n=1 repeat per level: points are single measurements, no interval"
        return f"points: mean over n={n} repeats per level; bars: 95% interval (Student t, n-1 df)"

    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """Every chart of the study, by file stem (means over repeats, with interval bars when n > 1)."""
        means = self.means()
        lines = [*self.subtitle_lines, self.repeats_line]
        kw = {"variants": self.variants, "baseline": self.baseline}
        out: dict[str, alt.TopLevelMixin] = {
            "throughput": charts.throughput_chart(means, subtitle=lines, **kw),
            "per_request": charts.per_request_chart(means, subtitle=lines, **kw),
        }
        for metric in charts.LATENCIES:
            if any(f"{p}_{metric}" in means for p in ("p50", "p90", "p99")):
                out[f"latency_{metric.removesuffix('_ms')}"] = charts.latency_chart(means, metric, subtitle=lines, **kw)
        unfair = self.comparability()
        for spec in self.spec_variants:
            ratios = self.ratios(spec)
            differs = unfair[(unfair["variant"] == spec) & ~unfair["setting"].str.startswith("preflight")]
            fairness = ([f"NOT LIKE-FOR-LIKE: " + "; ".join(
                f"{r.setting} {r.baseline_value} (baseline) vs {r.spec_value}" for r in differs.itertuples())]
                if len(differs) else [])
            if self.max_repeats > 1:
                m = "mean_per_request_tok_s"
                ci = ratios[["concurrency", f"{m}_ratio_lo", f"{m}_ratio_hi"]].rename(
                    columns={f"{m}_ratio_lo": "ratio_lo", f"{m}_ratio_hi": "ratio_hi"}).dropna()
                ratio_lines = [*self.subtitle_lines, f"bars: 95% interval over n={self.max_repeats} paired repeats"
                               + ("" if self.max_repeats >= MIN_TEST_REPEATS else
                                  f" ({not_tested_text(self.max_repeats)}: {MIN_TEST_REPEATS} needed)")]
            else:
                ci = self.per_request_ci(spec)
                ratio_lines = [*self.subtitle_lines, f"{not_tested_text(self.max_repeats)}; bars: spread of the requests "
                               "of that one repeat (bootstrap 95%), not a test"]
            out[f"ratio_{spec}"] = charts.ratio_chart(ratios, self.crossovers(spec), spec=spec,
                                                        subtitle=[*ratio_lines, *fairness], ci=ci)
        if self.levels.get("accept_length", pd.Series(dtype=float)).notna().any():
            out["accept_length"] = charts.accept_length_chart(means, subtitle=lines, **kw)
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
        lines.append(f"- {self.repeats_line}.")
        for spec in self.spec_variants:
            for metric, c in self.crossovers(spec).items():
                lines.append(f"- **{spec}**, {metric}: {c.description}")
            if self.max_repeats > 1:
                for row in self.ratio_intervals(spec, "mean_per_request_tok_s").itertuples():
                    interval = ("no interval" if row.n < 2 else
                                f"95% CI {row.ratio_lo - 1:+.0%} to {row.ratio_hi - 1:+.0%}")
                    lines.append(f"  - at concurrency {row.concurrency}, {spec} is {row.ratio - 1:+.0%} per request "
                                 f"({interval}, n={row.n} paired repeats): {row.verdict}.")
                continue
            ci = self.per_request_ci(spec).merge(self.ratios(spec)[["concurrency", "queued_requests"]],
                                                  on="concurrency", how="left")
            for row in ci.itertuples():
                if row.ratio > 1.0:
                    queued = (f"; {int(row.queued_requests)} of {row.concurrency} requests queued in a server, so "
                              "not like-for-like" if row.queued_requests > 0 else "")
                    lines.append(
                        f"  - at concurrency {row.concurrency}, {spec} is {row.ratio - 1:+.0%} per request "
                        f"(requests' spread: {row.ratio_lo - 1:+.0%} to {row.ratio_hi - 1:+.0%}, "
                        f"{'paired ' if row.paired else ''}bootstrap over {row.n_spec} requests of one repeat; "
                        f"{not_tested_text(self.max_repeats)}{queued})."
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
                    f"- {name}: measured accept length {got.min():.2f}–{got.max():.2f} across levels and repeats "
                    f"(n={len(got)} level measurements); "
                    f"the simulator's acceptance model expects {expected:.2f} per verify step (before the "
                    "prefill token and output-length truncation)."
                )
        return "\n".join(lines)

    # -- the answer first ------------------------------------------------------
    def provenance_line(self) -> str:
        """Where the figures come from: measured or simulated, engine, SGLang and workbench versions, host, n."""
        import workbench

        sims = [m.get("simulation") or {} for m in self.manifests]
        profile = next((s.get("profile") for s in sims if s.get("profile")), None)
        versions = sorted({str(m.get("sglang_version")) for m in self.manifests if m.get("sglang_version")})
        hosts = sorted({str(m.get("host")) for m in self.manifests if m.get("host")})
        engines = sorted(set(self.levels["engine"].dropna())) if "engine" in self.levels else []
        counts = self.levels["num_requests"] if "num_requests" in self.levels else pd.Series(dtype=float)
        what = "SIMULATED (a model, not a GPU measurement)" if self.simulated else "Measured"
        parts = [what, f"engine {', '.join(engines) or 'unknown'}" + (f" (profile {profile})" if profile else "")]
        if versions:
            parts.append(f"SGLang {', '.join(versions)}" + (" rules" if self.simulated else ""))
        parts.append(f"workbench {workbench.__version__}")
        if hosts:
            parts.append(f"host {', '.join(hosts)}")
        n = self.max_repeats
        parts.append(f"n={n} repeat{'' if n == 1 else 's'} per level")
        if len(counts):
            lo, hi = int(counts.min()), int(counts.max())
            parts.append(f"{lo if lo == hi else f'{lo}–{hi}'} requests per level")
        return ", ".join(parts) + "."

    def _metric_sentence(self, spec: str, metric: str, crossover: Crossover, interval: CrossoverInterval) -> str:
        """``"ahead at 1 (1.03x), behind at 2–64 (0.46x–0.91x); crossover between concurrency 1 and 2 (≈ 1.2)"``."""
        ratios = self.ratios(spec)
        measured = list(ratios["concurrency"])
        spans = ratio_spans(ratios["concurrency"], ratios[f"{metric}_ratio"])
        by_level = dict(zip(ratios["concurrency"], ratios[f"{metric}_ratio"]))
        parts = []
        for side in ("ahead", "even", "behind"):
            levels = spans[side]
            if not levels:
                continue
            values = sorted(f"{by_level[c]:.2f}" for c in levels)
            shown = f"{values[0]}x" if values[0] == values[-1] else f"{values[0]}x–{values[-1]}x"
            parts.append(f"{side} at {levels_text(levels, measured)} ({shown})")
        text = ", ".join(parts)
        if self.max_repeats >= MIN_TEST_REPEATS:
            words = {"spec ahead": "speculation ahead", "baseline ahead": "baseline ahead",
                     "not distinguishable at this level": "not distinguishable"}
            tested = [f"{words.get(v, v)} at {levels_text(list(g['concurrency']), measured)}"
                      for v, g in ratios.groupby(f"{metric}_verdict", sort=False)]
            text += f" (tested: {', '.join(tested)})"
        if interval.kind == "claimed":
            lower = max(c for c in measured if c <= interval.concurrency)
            upper = min(c for c in measured if c >= interval.concurrency)
            text += (f"; crossover between concurrency {lower} and {upper} (≈ {interval.concurrency:.1f}, 95% "
                     f"interval {interval.lo:.1f}–{interval.hi:.1f}, n={interval.n} repeats)")
        elif interval.kind == "not_claimed":
            text += "; no crossover can be claimed (the 95% intervals do not separate on both sides)"
        elif crossover.kind == "interpolated":
            first = "first " if len(crossover.crossings) > 1 else ""
            text += (f"; {first}crossover between concurrency {crossover.lower} and {crossover.upper} "
                     f"(≈ {crossover.concurrency:.1f})")
            if len(crossover.crossings) > 1:
                text += f", {len(crossover.crossings)} crossings in all"
        elif crossover.kind == "below_range":
            text += f"; crossover below concurrency {min(measured)}, the lowest level"
        elif crossover.kind == "none_in_range":
            text += f"; no crossover up to concurrency {max(measured)}"
        return text

    def verdict(self) -> str:
        """The report's answer, as markdown, written from the data: it opens the report.

        What it says, in order: the recommended policy (the variant with the highest total
        output throughput at each level, :meth:`policy`); per speculative variant, where it is
        ahead of and behind the baseline on total and per-request throughput (ratios to 3
        significant figures) and its crossover, said as the two measured levels that bracket it
        (the interpolated point only as "≈ concurrency", with its 95% interval when tested);
        then the caveats that limit the conclusion: settings that differ beyond speculation
        (:meth:`comparability`), levels where a server's queue held requests (:meth:`queued`),
        the significance rule (:data:`workbench.analysis.SIGNIFICANCE_RULE`: with fewer than 3
        repeats, "not tested"), and, for the simulated engine, that the figures are a model's;
        last, the provenance (:meth:`provenance_line`).
        """
        lines = [f"**Verdict** — {self.provenance_line()}", ""]
        pol = self.policy()
        measured = list(pol["concurrency"])
        spans = [f"**{v}** at concurrency {levels_text(list(g['concurrency']), measured)}"
                 for v, g in pol.groupby("best_variant", sort=False)]
        lines.append(f"- **Recommended policy** (highest total output throughput at each level): {'; '.join(spans)}.")
        names = {"output_throughput_tok_s": "total output throughput", "mean_per_request_tok_s": "per request"}
        unfair = self.comparability()
        held = self.queued()
        alike: dict[str, list[str]] = {}
        for spec in self.spec_variants:
            crossovers, intervals = self.crossovers(spec), self.crossover_intervals(spec)
            said = "; ".join(f"{names[m]}: {self._metric_sentence(spec, m, crossovers[m], intervals[m])}"
                             for m in COMPARED)
            lines.append(f"- **{spec}** against {self.baseline} — {said}.")
            for text in self._queue_sentences(spec, held):
                if text.endswith("like-for-like there.") and not text.startswith("Not"):
                    alike.setdefault(text, []).append(spec)  # said once, among the caveats
                else:
                    lines.append(f"  - {text}")
        caveats = [text.replace("both servers queue", "every server queues").replace(
                       "both are full, so the pair is", "all are full, so the pairs are")
                   if len(specs) == len(self.spec_variants) > 1 else
                   text.replace("like-for-like there.", f"like-for-like there ({', '.join(specs)}).")
                   if len(self.spec_variants) > 1 else text for text, specs in alike.items()]
        differs = unfair[~unfair["setting"].str.startswith("preflight")]
        for spec, group in differs.groupby("variant", sort=False):
            settings = ", ".join(f"{r.setting} {r.baseline_value} (baseline) vs {r.spec_value}"
                                 for r in group.itertuples())
            caveats.append(f"Not like-for-like: {spec} differs from {self.baseline} beyond speculation in {settings} "
                           "(*Comparability* below says what each does and what can be equalised).")
        n = self.max_repeats
        if n < MIN_TEST_REPEATS:
            caveats.append(f"Nothing here is tested for significance ({not_tested_text(n)} per level); the rule: "
                           f"{SIGNIFICANCE_RULE}. Run with `-p repeats {MIN_TEST_REPEATS}` to test.")
        else:
            caveats.append(f"Significance rule: {SIGNIFICANCE_RULE}.")
        if self.simulated:
            caveats.append("The figures are the simulated engine's: a model calibrated to a few GPU measurements "
                           "(docs/SIMULATOR.md), to choose what to measure, not a measurement.")
        stand_ins = [m.get("variant") for m in self.manifests if m.get("sim_stand_in")]
        if stand_ins:
            caveats.append(f"{', '.join(stand_ins)}: the simulator runs a stand-in for the patch, not the patch.")
        lines.append("- **Caveats**:")
        lines += [f"  - {c}" for c in caveats]
        return "\n".join(lines)

    def _queue_sentences(self, spec: str, held: pd.DataFrame) -> list[str]:
        """Per level where either server of the pair queued: like-for-like when both queued alike, else not."""
        out = []
        caps = self.caps
        pair = held[held["variant"].isin([spec, self.baseline])]
        for c, group in pair.groupby("concurrency"):
            q = dict(zip(group["variant"], group["queued_requests"]))
            qb, qs = q.get(self.baseline, 0), q.get(spec, 0)
            if qb == qs:
                out.append(f"At concurrency {c} both servers queue {qs} of {c} requests (max-running-requests "
                           f"{caps.get(spec)} each): both are full, so the pair is like-for-like there.")
                continue
            who = [f"{q_} of {c} requests wait in {v}'s queue (max-running-requests {caps.get(v)})"
                   for v, q_ in ((spec, qs), (self.baseline, qb)) if q_]
            others = [f"{v} (max-running-requests {caps.get(v, 'unknown')}) admits {'all' if not q_ else c - q_}"
                      for v, q_ in ((spec, qs), (self.baseline, qb)) if not q_]
            out.append(f"Not like-for-like at concurrency {c}: {' and '.join(who)}"
                       f"{', while ' + ' and '.join(others) if others else ''}; the figures there compare a full "
                       "server with one that is not.")
        return out

    def table(self, kind: str = "throughput") -> pd.DataFrame:
        """A narrow table for reading: one row per (variant, concurrency), units in the column names.

        Args:
            kind: ``"throughput"`` (output tok/s, per-request tok/s, accept length) or
                ``"latency"`` (TTFT, TPOT and E2E p50 and p99 in ms); :data:`TABLES`.

        Returns:
            ``variant``, ``concurrency``, ``n`` (repeats), ``queued`` (requests in the server's
            queue), then each metric as text: the mean rounded to its interval's first
            significant digit with the 95% interval, ``"812 (790–835)"``, or three significant
            figures without one (n=1).

        Raises:
            ConfigError: an unknown ``kind``.
        """
        if kind not in TABLES:
            raise ConfigError(f"table kind {kind!r} is not one of {sorted(TABLES)}")
        means = self.means()
        out = means[["variant", "concurrency", "n", "queued_requests"]].rename(columns={"queued_requests": "queued"})
        for col, shown in TABLES[kind]:
            if col not in means or means[col].isna().all():
                continue
            cells = []
            for row in means.itertuples():
                value, lo, hi = getattr(row, col), getattr(row, f"{col}_lo"), getattr(row, f"{col}_hi")
                if value != value:
                    cells.append("")
                    continue
                half = (hi - lo) / 2 if lo == lo and hi == hi else None
                point = round_to_interval(value, half)
                cells.append(f"{point:g}" if half is None else
                             f"{point:g} ({round_to_interval(lo, half):g}–{round_to_interval(hi, half):g})")
            out[shown] = cells
        return out.reset_index(drop=True)
