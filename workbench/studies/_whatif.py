"""What if: predicted sweeps of a grid of speculative settings against the baseline, on one profile.

:func:`what_if` runs the simulator's offline mode (:func:`workbench.sim.predict`, the engine
core on a virtual clock) for the baseline and every configuration of a (topk, num_steps,
num_draft_tokens, spec v1/v2) grid that SGLang 0.5.9 accepts, and computes its tables once
(:class:`workbench.studies._whatif_tables.WhatIfTables`: each configuration's crossover, the best
configuration per concurrency, the recommended policy, and the held-out error each prediction carries).
:class:`WhatIf` is the notebook's façade over those tables, the words written from them, the charts
and the grid files that turn the recommendation into a measurement (``_whatif_grids``). Everything
here is a MODEL PREDICTION of the simulated engine, and every table and chart says so, with how far
the profile was checked against a real engine.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from workbench import charts
from workbench._version import __version__
from workbench.analysis import bracket_text
from workbench.errors import ConfigError
from workbench.markup import literal
from workbench.studies import _whatif_grids
from workbench.studies._whatif_tables import (
    CROSSOVER_WORDS,
    HELD_OUT_COLUMNS,
    POLICY_TOLERANCE,
    WhatIfTables,
    whatif_tables,
)

__all__ = ["CROSSOVER_WORDS", "POLICY_TOLERANCE", "WhatIf", "what_if"]


def what_if(
    profile: str = "seed-pcie-8gpu",
    *,
    baseline: str | None = None,
    template: str | None = None,
    topk: Sequence[int] = (1, 2, 4, 8),
    num_steps: Sequence[int] = (1, 2, 3, 4, 5),
    num_draft_tokens: Sequence[int] = (2, 4, 8, 16, 32),
    spec_v2: Sequence[bool] = (False, True),
    concurrency_levels: Sequence[int] | None = None,
    requests_per_level: int | None = None,
    max_new_tokens: int | None = None,
    seed: int | None = None,
) -> WhatIf:
    """Predict the baseline and every valid grid configuration on a profile.

    Args:
        profile: simulator profile (``data/profiles/<name>.toml``).
        baseline: the plain-decoding variant (default: the profile's calibrated one).
        template: the speculative variant whose other flags (TP, draft model, ...) every grid
            configuration keeps (default: the profile's calibrated one).
        topk, num_steps, num_draft_tokens, spec_v2: the grid; each combination is resolved under
            SGLang 0.5.9's rules, and those it refuses are listed in :attr:`WhatIf.grid`.
        concurrency_levels: concurrency levels (default: the profile's workload levels).
        requests_per_level: requests per level (default: the profile's workload's, else
            ``max(16, 2 x concurrency)``).
        max_new_tokens: output tokens per request (default: the profile's workload's).
        seed: prompt order and acceptance sampling (default: the profile's workload's).

    Raises:
        ConfigError: unknown profile or variant, or a grid with no usable configuration.
    """
    from workbench.sim import grid_configurations, load_profile, predict, profile_variants, spec_grid

    prof = load_profile(profile)
    if baseline is None or template is None:  # the profile's calibrated pair, asked for only when one is missing
        default_base, default_template = profile_variants(prof)
        baseline, template = baseline or default_base, template or default_template
    grid = spec_grid(topk=topk, num_steps=num_steps, num_draft_tokens=num_draft_tokens, spec_v2=spec_v2)
    configs = grid_configurations(prof, template, grid)
    if not configs:
        raise ConfigError("the grid has no configuration SGLang 0.5.9 accepts; see spec_grid's refusals")
    rows = predict(
        prof,
        [baseline, *configs],
        concurrency_levels=concurrency_levels,
        requests_per_level=requests_per_level,
        max_new_tokens=max_new_tokens,
        seed=seed,
    )
    return WhatIf(
        whatif_tables(
            prof.name,
            baseline=baseline,
            template=template,
            levels=pd.DataFrame(rows),
            grid=pd.DataFrame([dataclasses.asdict(p) for p in grid]),
            settings={
                "concurrency_levels": concurrency_levels,
                "requests_per_level": requests_per_level,
                "max_new_tokens": max_new_tokens,
                "seed": seed,
            },
        )
    )


@dataclasses.dataclass(frozen=True)
class WhatIf:
    """Predicted sweeps of a baseline and a grid of speculative configurations (see :func:`what_if`).

    Attributes:
        tables: every table of the what-if, computed once (:class:`~workbench.studies._whatif_tables.WhatIfTables`).
    """

    tables: WhatIfTables

    # -- what was predicted (the tables' own fields) ---------------------------------------------
    @property
    def profile(self) -> str:
        """The profile's name."""
        return self.tables.profile

    @property
    def baseline(self) -> str:
        """The baseline variant's name."""
        return self.tables.baseline

    @property
    def template(self) -> str:
        """The variant whose flags the grid configurations keep."""
        return self.tables.template

    @property
    def levels(self) -> pd.DataFrame:
        """One row per (configuration, concurrency): :func:`workbench.sim.predict`'s columns."""
        return self.tables.levels

    @property
    def grid(self) -> pd.DataFrame:
        """One row per grid combination asked: settings, ``name``, ``status``, ``reason``."""
        return self.tables.grid

    @property
    def settings(self) -> Mapping[str, Any]:
        """The workload options given (None: the profile's)."""
        return self.tables.settings

    @property
    def configurations(self) -> list[str]:
        """The speculative configurations predicted, in grid order."""
        return self.tables.configurations

    # -- provenance -----------------------------------------------------------
    @property
    def subtitle_lines(self) -> list[str]:
        """Chart subtitle: MODEL PREDICTION, the profile and the workload (the charts add :meth:`trust_subtitle`)."""
        first = self.levels.iloc[0]
        reqs = self.settings.get("requests_per_level")
        return [
            f"MODEL PREDICTION (simulator offline, virtual clock; not a measurement): profile {self.profile}",
            f"{reqs or 'max(16, 2c)'} requests per level, {int(first['max_new_tokens'])} output tokens; "
            f"grid on {self.template}'s flags, SGLang 0.5.9 rules",
        ]

    # -- tables -----------------------------------------------------------------
    def grid_table(self) -> pd.DataFrame:
        """How many grid combinations SGLang 0.5.9 takes as asked, adjusts, duplicates or refuses, with an example reason."""
        out = self.grid.groupby("status").agg(combinations=("status", "size"), example=("reason", "first"))
        return out.reset_index()

    def ratios(self) -> pd.DataFrame:
        """Each configuration's output-throughput and per-request ratios to the baseline, per level, with the held-out
        error of a ratio there (:attr:`WhatIfTables.ratios`)."""
        return self.tables.ratios.copy()

    def crossover_table(self) -> pd.DataFrame:
        """One row per configuration: settings, ratio at the lowest level, the crossover on each metric, and the
        held-out error of its ratios (:attr:`WhatIfTables.crossovers`)."""
        return self.tables.crossovers.copy()

    def best_table(self) -> pd.DataFrame:
        """The best configuration (baseline included) per concurrency, on output throughput and on per-request
        speed, with the held-out error of the best throughput (:attr:`WhatIfTables.best`)."""
        return self.tables.best.copy()

    def held_out_table(self) -> pd.DataFrame:
        """How far to trust the what-if: one row per regime of the grid, plain decoding first, with the held-out
        error of its predictions at every level and the table it came from (:attr:`WhatIfTables.held_out`)."""
        return self.tables.held_out.copy()

    def highlights(self, n: int = 4) -> list[str]:
        """The configurations best at some level (output throughput), then the best at the lowest level, up to ``n``."""
        return self.tables.highlights(n)

    def breakdown_table(self, variants: Sequence[str] | None = None) -> pd.DataFrame:
        """Decode-step time by part (ms) at each level's mean running batch, and per output token per request.

        Each kernel group of the step is timed as the larger of its memory reads and its FLOPs (the roofline), and
        its time counts under the one that bounds it: ``step_weights_ms`` is 0 where a batch has made the weight
        matrix multiplications compute-bound (their time is then in ``step_compute_ms``), and
        ``matmuls_bound_by`` says which bound them (``"weight reads"``, ``"FLOPs"``, ``"both (by kernel
        group)"``)."""
        from workbench.sim import STEP_PARTS

        names = [self.baseline, *(variants if variants is not None else self.highlights())]
        cols = [
            "variant",
            "concurrency",
            "step_batch",
            "step_tokens_per_request",
            "step_total_ms",
            *(f"step_{p}_ms" for p in STEP_PARTS),
            "mean_decode_step_ms",
            "prefill_time_share",
        ]
        rows = self.levels[self.levels["variant"].isin(names)][cols].copy()
        rows["ms_per_output_token"] = rows["step_total_ms"] / rows["step_tokens_per_request"]
        rows["matmuls_bound_by"] = [_bound_by(w, c) for w, c in zip(rows["step_weights_ms"], rows["step_compute_ms"])]
        rows["variant"] = pd.Categorical(rows["variant"], categories=names, ordered=True)
        return rows.sort_values(["concurrency", "variant"]).reset_index(drop=True).round(3)

    # -- policy -----------------------------------------------------------------
    def policy_levels(self) -> pd.DataFrame:
        """Output throughput per level of the baseline, the best-per-level envelope (adaptive tiers),
        the topk-1 tiers and the simulated threshold policy (``policy``, ``concurrency``, ``output_throughput_tok_s``)."""
        base = self.levels[self.levels["variant"] == self.baseline]
        frames = [base.assign(policy=f"baseline ({self.baseline})")]
        best = self.tables.best
        frames.append(
            pd.DataFrame(
                {
                    "policy": "best configuration per level (tiers)",
                    "concurrency": best["concurrency"],
                    "output_throughput_tok_s": best["best_output_throughput_tok_s"],
                }
            )
        )
        threshold = self.tables.threshold
        if threshold is not None:
            frames.append(
                threshold.levels.assign(
                    policy=f"threshold: {threshold.variant} up to {threshold.threshold} running, baseline above"
                )
            )
        return pd.concat([f[["policy", "concurrency", "output_throughput_tok_s"]] for f in frames], ignore_index=True)

    def policy(self) -> pd.DataFrame:
        """The recommended policy, and the alternatives it was chosen over, one row each, with the held-out error of
        the configurations each drafts with (:attr:`WhatIfTables.policy`; how it is chosen:
        :func:`~workbench.studies._whatif_tables.whatif_tables`)."""
        return self.tables.policy.copy()

    def verify_policies(
        self, *, num_steps: int = 7, spec_v2: bool = True, context: int = 1024, batches: Sequence[int] | None = None
    ) -> pd.DataFrame:
        """Adaptive verification and a goodput controller beside static speculation (step level).

        A chain of ``num_steps`` drafts on the template's flags (:func:`workbench.sim._verify_budget.policy_table`:
        vLLM PRs #47808 and #52228's verify budget, with a perfect acceptance estimator; the goodput rule of vLLM
        PR #44336), at each batch (default: this what-if's levels), every request at ``context`` cached tokens.

        Returns:
            One row per (batch, policy): ``gain`` over the baseline's tok/s, ``verify_tokens``, ``drafts``, ``tok_s``,
            ``baseline_tok_s``, and ``runs_on`` (which engine can run it, for the profile's SGLang version).
            A MODEL PREDICTION (steady state: no prefill, no queueing).
        """
        from workbench.sim import configuration, load_profile, policy_support, policy_table

        prof = load_profile(self.profile)
        cfg = configuration(
            prof, self.template, topk=1, num_steps=num_steps, num_draft_tokens=num_steps + 1, spec_v2=spec_v2
        )
        levels = batches or sorted(self.levels["concurrency"].unique())
        table = pd.DataFrame(policy_table(prof, cfg, self.baseline, batches=[int(b) for b in levels], context=context))
        support = policy_support(prof.sglang_version)
        return table.assign(configuration=cfg.name, runs_on=table["policy"].map(support))

    def findings(self) -> str:
        """A short markdown summary: crossover range, best per concurrency, recommended policy."""
        xs = self.crossover_table()
        lines = [f"**{literal(self.subtitle_lines[0])}.**", ""]
        n = len(xs)
        ahead = xs[xs["ratio_at_lowest_level"] > 1.0]
        lo_level = int(self.levels["concurrency"].min())
        lines.append(
            f"- {n} configurations predicted ({len(self.grid)} grid combinations asked; "
            f"{int((self.grid['status'] == 'refused').sum())} refused under SGLang 0.5.9's rules). "
            f"{len(ahead)} beat the baseline's output throughput at concurrency {lo_level}."
        )
        crossed = xs.dropna(subset=["crossover_concurrency"])
        if len(crossed):
            measured = sorted(int(c) for c in self.levels["concurrency"].unique())
            first, last = crossed["crossover_concurrency"].min(), crossed.iloc[0]
            lines.append(
                f"- Crossover (output throughput), where a configuration has one in range: the earliest "
                f"{bracket_text(first, measured)}, the latest "
                f"{bracket_text(last['crossover_concurrency'], measured)} ({literal(last['variant'])})."
            )
        for kind, count in xs["crossover_kind"].value_counts().items():
            if kind in (CROSSOVER_WORDS["below_range"], CROSSOVER_WORDS["none_in_range"]):
                words = (
                    "behind the baseline at every level"
                    if kind == CROSSOVER_WORDS["below_range"]
                    else "ahead at every level"
                )
                lines.append(f"- {count} configurations are {words}.")
        best = self.best_table()
        lines.append(
            "- Best configuration per concurrency (output throughput): "
            + "; ".join(
                f"{int(r.concurrency)}: {literal(r.best_variant)} ({round(r.gain_over_baseline, 2) + 0.0:+.0%} vs baseline)"
                for r in best.itertuples()
            )
            + "."
        )
        pol = self.policy()
        rec = pol[pol["recommended"]]
        if len(rec):
            r = rec.iloc[0]
            lines.append(
                f"- Recommended policy: **{literal(r['policy'])}**: {literal(r['settings'])} "
                f"(gives up at most {r['worst_shortfall']:.1%} of the best predicted throughput at any level)."
            )
        else:
            lines.append("- Recommended policy: plain decoding (no configuration beats the baseline at any level).")
        return "\n".join(lines)

    def verdict(self) -> str:
        """The report's answer, as markdown: :meth:`findings` with the recommended policy first, under a
        provenance line (MODEL PREDICTION, profile, workload, workbench version), then how far to trust it
        (:meth:`trust_line`) and its caveats."""
        lines = self.findings().splitlines()[2:]
        policy = [line for line in lines if line.startswith("- Recommended policy")]
        rest = [line for line in lines if not line.startswith("- Recommended policy")]
        head = (
            f"**Verdict** — {literal(self.subtitle_lines[0])}; {literal(self.subtitle_lines[1])}; workbench "
            f"{literal(__version__)}; one prediction per configuration and level (a model's output: nothing "
            "here is measured or tested)."
        )
        caveat = (
            "- **Caveats**: every figure is the simulator's cost and acceptance model, calibrated on the "
            "profile's own settings only; other settings' accept lengths are extrapolated. Use it to choose "
            "what to measure, then measure with `spec_vs_baseline`."
        )
        return "\n".join([head, "", *policy, *rest, self.trust_line(), caveat])

    # -- how far to trust it ------------------------------------------------------------------
    def trust_line(self) -> str:
        """The verdict's line on how far to trust the what-if (markdown): the recommended policy's held-out error and
        each regime's of the grid, with the table each came from, or that none was checked against a real engine."""
        table = self.tables.held_out
        if not table["held_out_n"].notna().any():
            return (
                f"- **How far to trust it**: not checked against a real engine: profile {literal(self.profile)} has "
                "no held-out table (`[[held_out]]`) for any regime of this grid."
            )
        pol = self.tables.policy
        chosen = pol[pol["recommended"].astype(bool)]
        row = (chosen if len(chosen) else pol).iloc[0]
        said = (
            f"is checked to {_held_out_figures(row)}; {literal(row['held_out_source'])}"
            if pd.notna(row["held_out_n"])
            else f"is {literal(row['held_out_source'])}"
        )
        regimes = "; ".join(
            f"{literal(r['regime'])} {_held_out_figures(r) if pd.notna(r['held_out_n']) else literal(r['held_out_source'])}"
            for _, r in table.iterrows()
        )
        return (
            f"- **How far to trust it** (the profile's `[[held_out]]` table): the {literal(row['policy'])} policy "
            f"{said}. By regime, at concurrency {literal(table['levels'].iloc[0])}: {regimes}."
        )

    def trust_subtitle(self) -> str:
        """One chart subtitle line: each regime's held-out error, or that none was checked against a real engine."""
        table = self.tables.held_out
        if not table["held_out_n"].notna().any():
            return f"not checked against a real engine (profile {self.profile} has no held-out table)"
        return "how far to trust it: " + "; ".join(
            f"{r['regime']} {_held_out_figures(r) if pd.notna(r['held_out_n']) else 'not checked'}"
            for _, r in table.iterrows()
        )

    # -- from prediction to measurement ---------------------------------------------------------
    def recommended_points(self) -> pd.DataFrame:
        """The speculative configurations the recommended policy runs (:func:`workbench.studies._whatif_grids.recommended_points`)."""
        return _whatif_grids.recommended_points(self.tables)

    def save_grids(self, out_dir: str | Path) -> pd.DataFrame:
        """Write the recommended configurations as grid files with the command that measures each
        (:func:`workbench.studies._whatif_grids.save_grids`; relative ``out_dir``: to the project root)."""
        return _whatif_grids.save_grids(self.tables, out_dir)

    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """Every chart, by file stem (data aggregated to a few hundred rows each)."""
        return dict(self._charts)

    @functools.cached_property
    def _charts(self) -> dict[str, alt.TopLevelMixin]:
        """:meth:`charts`, drawn once per what-if (a value computed from the tables, never changed)."""
        from workbench.sim import STEP_PARTS

        sub = [*self.subtitle_lines, self.trust_subtitle()]
        top = self.highlights()
        out: dict[str, alt.TopLevelMixin] = {
            "throughput": charts.envelope_chart(
                self.levels,
                metric="output_throughput_tok_s",
                title="Predicted total output throughput",
                y_title="Output tok/s (all requests)",
                baseline=self.baseline,
                highlight=top,
                subtitle=sub,
            ),
            "per_request": charts.envelope_chart(
                self.levels,
                metric="mean_per_request_tok_s",
                title="Predicted per-request speed",
                y_title="Mean per-request tok/s",
                baseline=self.baseline,
                highlight=top,
                subtitle=sub,
            ),
        }
        order = list(self.crossover_table()["variant"])
        ratios = self.ratios()[["variant", "concurrency", "output_ratio"]].rename(columns={"output_ratio": "ratio"})
        ratios["variant"] = pd.Categorical(ratios["variant"], categories=order, ordered=True)
        out["ratio_heatmap"] = charts.ratio_heatmap(
            ratios.sort_values("variant").astype({"variant": str}), metric_title="output throughput", subtitle=sub
        )
        drawn = self.crossover_table().drop(columns=list(HELD_OUT_COLUMNS))
        out["crossover"] = charts.crossover_chart(drawn, subtitle=sub)
        table = self.breakdown_table(top)
        long = table.melt(
            id_vars=["variant", "concurrency", "step_tokens_per_request"],
            value_vars=[f"step_{p}_ms" for p in STEP_PARTS],
            var_name="part",
            value_name="ms",
        )
        long["part"] = long["part"].str.removeprefix("step_").str.removesuffix("_ms")
        long["part_order"] = long["part"].map({p: i for i, p in enumerate(STEP_PARTS)})
        long["ms_per_token"] = long["ms"] / long["step_tokens_per_request"]
        long["variant"] = long["variant"].astype(str)
        out["breakdown"] = charts.breakdown_chart(long.dropna(subset=["ms_per_token"]), subtitle=sub)
        out["policy"] = charts.policy_chart(
            self.policy_levels(),
            title="Predicted output throughput of the policies",
            y_title="Output tok/s (all requests)",
            subtitle=sub,
        )
        return out

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart as PNG and SVG into ``out_dir`` (relative: to the project root); one row per chart."""
        from workbench import paths

        return charts.save_charts(self.charts(), paths.resolve(out_dir), prefix="what_if_")


def _held_out_figures(row: pd.Series) -> str:
    """``"2.6% mean, 10.4% worst held-out error on spec/baseline ratio (n=21)"`` of a row with held-out columns
    (``in-sample error`` for an entry of fitted points)."""
    what = "in-sample error" if row["held_out_kind"] == "in-sample" else "held-out error"
    return (
        f"{row['held_out_mean_pct']:g}% mean, {row['held_out_worst_pct']:g}% worst {what} on "
        f"{row['held_out_metric']} (n={int(row['held_out_n'])})"
    )


def _bound_by(weights_ms: float, compute_ms: float) -> str:
    """What bound a step's weight matrix multiplications: their reads, their FLOPs, or each for some groups."""
    if weights_ms > 0 and compute_ms > 0:
        return "both (by kernel group)"
    return "FLOPs" if compute_ms > 0 else "weight reads"
