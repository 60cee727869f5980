"""What if: predicted sweeps of a grid of speculative settings against the baseline, on one profile.

:func:`what_if` runs the simulator's offline mode (:func:`workbench.sim.predict`, the engine
core on a virtual clock) for the baseline and every configuration of a (topk, num_steps,
num_draft_tokens, spec v1/v2) grid that SGLang 0.5.9 accepts, and :class:`WhatIf` answers the
questions of the investigation with :mod:`workbench.analysis` and :mod:`workbench.charts`:
each configuration's crossover, the step-time breakdown that explains it, the best
configuration per concurrency, and a recommended policy. Everything here is a MODEL
PREDICTION of the simulated engine, and every table and chart says so.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from workbench import charts
from workbench._version import __version__
from workbench.analysis import best_policy, best_threshold, bracket_text, find_crossover
from workbench.errors import ConfigError
from workbench.markup import literal
from workbench.variants import Variant, toml_value

#: Within this fraction of the best configuration at every level, the simpler policy is recommended.
POLICY_TOLERANCE = 0.02


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
        profile=prof.name,
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


@dataclasses.dataclass
class WhatIf:
    """Predicted sweeps of a baseline and a grid of speculative configurations (see :func:`what_if`).

    Attributes:
        profile: the profile's name.
        baseline: the baseline variant's name.
        template: the variant whose flags the grid configurations keep.
        levels: one row per (configuration, concurrency): :func:`workbench.sim.predict`'s columns.
        grid: one row per grid combination asked: settings, ``name``, ``status``, ``reason``.
        settings: the workload options given (None: the profile's).
    """

    profile: str
    baseline: str
    template: str
    levels: pd.DataFrame
    grid: pd.DataFrame
    settings: dict[str, Any]
    _cache: dict[str, Any] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    # -- provenance -----------------------------------------------------------
    @property
    def subtitle_lines(self) -> list[str]:
        """Chart subtitle: MODEL PREDICTION, the profile and the workload."""
        first = self.levels.iloc[0]
        reqs = self.settings.get("requests_per_level")
        return [
            f"MODEL PREDICTION (simulator offline, virtual clock; not a measurement): profile {self.profile}",
            f"{reqs or 'max(16, 2c)'} requests per level, {int(first['max_new_tokens'])} output tokens; "
            f"grid on {self.template}'s flags, SGLang 0.5.9 rules",
        ]

    @property
    def configurations(self) -> list[str]:
        """The speculative configurations predicted, in grid order."""
        return [v for v in dict.fromkeys(self.levels["variant"]) if v != self.baseline]

    # -- tables -----------------------------------------------------------------
    def grid_table(self) -> pd.DataFrame:
        """How many grid combinations SGLang 0.5.9 takes as asked, adjusts, duplicates or refuses, with an example reason."""
        out = self.grid.groupby("status").agg(combinations=("status", "size"), example=("reason", "first"))
        return out.reset_index()

    def ratios(self) -> pd.DataFrame:
        """Each configuration's output-throughput and per-request ratios to the baseline, per level."""
        if "ratios" not in self._cache:
            base = self.levels[self.levels["variant"] == self.baseline].set_index("concurrency")
            spec = self.levels[self.levels["variant"] != self.baseline]
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
            out["output_ratio"] = out["output_throughput_tok_s"] / out["concurrency"].map(
                base["output_throughput_tok_s"]
            )
            out["per_request_ratio"] = out["mean_per_request_tok_s"] / out["concurrency"].map(
                base["mean_per_request_tok_s"]
            )
            self._cache["ratios"] = out.reset_index(drop=True)
        return self._cache["ratios"].copy()

    def crossover_table(self) -> pd.DataFrame:
        """One row per configuration: settings, ratio at the lowest level, and the crossover on each metric."""
        if "crossovers" not in self._cache:
            rows: list[dict[str, Any]] = []
            for name, group in self.ratios().groupby("variant", sort=False):
                group = group.sort_values("concurrency")
                out_x = find_crossover(group["concurrency"], group["output_ratio"], metric="output_throughput_tok_s")
                per_x = find_crossover(
                    group["concurrency"], group["per_request_ratio"], metric="mean_per_request_tok_s"
                )
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
            self._cache["crossovers"] = (
                table.sort_values(["_sort", "ratio_at_lowest_level"], ascending=False)
                .drop(columns="_sort")
                .reset_index(drop=True)
            )
        return self._cache["crossovers"].copy()

    def best_table(self) -> pd.DataFrame:
        """The best configuration (baseline included) per concurrency, on output throughput and on per-request speed."""
        out = best_policy(self.levels, metric="output_throughput_tok_s")
        base = self.levels[self.levels["variant"] == self.baseline].set_index("concurrency")
        out["baseline_output_tok_s"] = out["concurrency"].map(base["output_throughput_tok_s"])
        out["gain_over_baseline"] = out["best_output_throughput_tok_s"] / out["baseline_output_tok_s"] - 1.0
        per = best_policy(self.levels, metric="mean_per_request_tok_s").set_index("concurrency")
        out["best_per_request_variant"] = out["concurrency"].map(per["best_variant"])
        out["best_mean_per_request_tok_s"] = out["concurrency"].map(per["best_mean_per_request_tok_s"])
        return out

    def highlights(self, n: int = 4) -> list[str]:
        """The configurations best at some level (output throughput), then the best at the lowest level, up to ``n``."""
        best = [v for v in dict.fromkeys(self.best_table()["best_variant"]) if v != self.baseline]
        ranked = list(self.crossover_table().sort_values("ratio_at_lowest_level", ascending=False)["variant"])
        return list(dict.fromkeys([*best, *ranked]))[:n]

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
    def _threshold_policy(self) -> dict[str, Any] | None:
        """The best (configuration, threshold) pair, simulated as one server (drafting off above the threshold).

        The pair is :func:`workbench.analysis.best_threshold`'s on output throughput, the rule the
        dynamic_disable notebook applies to measurements (``workbench.studies._policy_study``): each
        configuration's threshold is the highest level up to which it beats the baseline at every
        level, scored by the geometric mean over levels of its policy's throughput over the best
        configuration's. A prediction is one point per level (n=1), so the point values decide
        alone. None when every configuration is behind already at the lowest level; one ahead at
        every level drafts up to the highest level.
        """
        if "threshold" in self._cache:
            return self._cache["threshold"]
        from workbench.sim import configuration, load_profile, predict

        pick = best_threshold(
            self.levels, baseline=self.baseline, specs=self.configurations, metric="output_throughput_tok_s"
        )
        if pick.kind == "never":
            self._cache["threshold"] = None
            return None
        row = self.levels[self.levels["variant"] == pick.spec].iloc[0]
        top = int(self.levels["concurrency"].max())
        limit = top if pick.no_draft_above is None else pick.no_draft_above
        prof = load_profile(self.profile)
        cfg = configuration(
            prof,
            self.template,
            topk=int(row["topk"]),
            num_steps=int(row["num_steps"]),
            num_draft_tokens=int(row["num_draft_tokens"]),
            spec_v2=bool(row["spec_v2"]),
            spec_off_above=limit,
            max_running_requests=max(top, 48),
        )
        s = self.settings
        levels = predict(
            prof,
            [cfg],
            concurrency_levels=sorted(set(self.levels["concurrency"])),
            requests_per_level=s.get("requests_per_level"),
            max_new_tokens=s.get("max_new_tokens"),
            seed=s.get("seed"),
        )
        self._cache["threshold"] = {
            "variant": pick.spec,
            "threshold": limit,
            "name": cfg.name,
            "max_running_requests": cfg.max_running_requests,
            "levels": pd.DataFrame(levels),
        }
        return self._cache["threshold"]

    def _tiers(self, variants: Sequence[str] | None = None) -> list[tuple[int, int, str]]:
        """Contiguous level ranges with the same best configuration: (first level, last level, name)."""
        levels = (
            self.levels if variants is None else self.levels[self.levels["variant"].isin([self.baseline, *variants])]
        )
        best = best_policy(levels, metric="output_throughput_tok_s")
        tiers: list[tuple[int, int, str]] = []
        for row in best.itertuples():
            if tiers and tiers[-1][2] == row.best_variant:
                tiers[-1] = (tiers[-1][0], int(row.concurrency), row.best_variant)
            else:
                tiers.append((int(row.concurrency), int(row.concurrency), row.best_variant))
        return tiers

    def policy_levels(self) -> pd.DataFrame:
        """Output throughput per level of the baseline, the best-per-level envelope (adaptive tiers),
        the topk-1 tiers and the simulated threshold policy (``policy``, ``concurrency``, ``output_throughput_tok_s``)."""
        base = self.levels[self.levels["variant"] == self.baseline]
        frames = [base.assign(policy=f"baseline ({self.baseline})")]
        best = self.best_table()
        frames.append(
            pd.DataFrame(
                {
                    "policy": "best configuration per level (tiers)",
                    "concurrency": best["concurrency"],
                    "output_throughput_tok_s": best["best_output_throughput_tok_s"],
                }
            )
        )
        threshold = self._threshold_policy()
        if threshold is not None:
            frames.append(
                threshold["levels"].assign(
                    policy=f"threshold: {threshold['variant']} up to {threshold['threshold']} running, baseline above"
                )
            )
        return pd.concat([f[["policy", "concurrency", "output_throughput_tok_s"]] for f in frames], ignore_index=True)

    def policy(self) -> pd.DataFrame:
        """The recommended policy, and the alternatives it was chosen over, one row each.

        Columns: ``policy``, ``recommended``, ``settings`` (what to run), ``worst_shortfall``
        (the largest fraction of the best configuration's predicted throughput it gives up at any
        level) and ``note``. A threshold policy (one configuration, drafting off above a
        running-request count: a patched scheduler such as ``eagle-spec-off-above.patch``, or
        ``--sim-spec-off-above`` here) is recommended when it is within :data:`POLICY_TOLERANCE`
        of the best configuration at every level; otherwise adaptive tiers.
        """
        best = self.best_table().set_index("concurrency")["best_output_throughput_tok_s"]
        rows: list[dict[str, Any]] = []
        threshold = self._threshold_policy()
        if threshold is not None:
            sim = threshold["levels"].set_index("concurrency")["output_throughput_tok_s"]
            short = float((1.0 - sim / best).max())
            rows.append(
                {
                    "policy": "threshold",
                    "settings": f"{threshold['variant']} while at most "
                    f"{threshold['threshold']} requests run, plain decoding above "
                    f"(--max-running-requests {threshold['max_running_requests']})",
                    "worst_shortfall": short,
                    "note": "simulated as one server (drafting switched per iteration)",
                }
            )
        tiers = self._tiers()
        rows.append(
            {
                "policy": "adaptive tiers",
                "settings": "; ".join(f"{a}-{b}: {v}" if a != b else f"{a}: {v}" for a, b, v in tiers),
                "worst_shortfall": 0.0,
                "note": "the envelope of the grid (switching costs not modelled); needs a scheduler that changes settings "
                "with the batch size",
            }
        )
        topk1 = [v for v in self.configurations if v.startswith("topk1-")]
        if topk1:
            t1 = self._tiers(topk1)
            env = best_policy(
                self.levels[self.levels["variant"].isin([self.baseline, *topk1])], metric="output_throughput_tok_s"
            ).set_index("concurrency")
            rows.append(
                {
                    "policy": "adaptive tiers, topk 1",
                    "settings": "; ".join(f"{a}-{b}: {v}" if a != b else f"{a}: {v}" for a, b, v in t1),
                    "worst_shortfall": float((1.0 - env["best_output_throughput_tok_s"] / best).max()),
                    "note": "num_steps per batch-size tier at topk 1, what --speculative-adaptive (SGLang >= 0.5.11) "
                    "varies; a baseline tier still needs the threshold patch",
                }
            )
        table = pd.DataFrame(rows)
        pick = (
            "threshold"
            if threshold is not None and rows[0]["worst_shortfall"] <= POLICY_TOLERANCE
            else "adaptive tiers"
        )
        if threshold is None and len(tiers) == 1 and tiers[0][2] == self.baseline:
            pick = "none"
        table.insert(1, "recommended", table["policy"] == pick)
        return table

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
        provenance line (MODEL PREDICTION, profile, workload, workbench version) and its caveats."""
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
        return "\n".join([head, "", *policy, *rest, caveat])

    # -- from prediction to measurement ---------------------------------------------------------
    def recommended_points(self) -> pd.DataFrame:
        """The speculative configurations the recommended policy runs (:meth:`policy`), one row each: ``variant``
        (the what-if's label), ``topk``, ``num_steps``, ``num_draft_tokens``, ``spec_v2``, ``concurrency`` (the
        levels it is recommended at, as text) and ``spec_off_above`` (a threshold policy's N, else None). Empty when
        plain decoding is recommended everywhere."""
        pol = self.policy()
        chosen = pol[pol["recommended"].astype(bool)]
        kind = chosen["policy"].iloc[0] if len(chosen) else "none"
        rows: list[dict[str, Any]] = []
        if kind == "threshold":
            t = self._threshold_policy()
            assert t is not None  # a recommended threshold was simulated
            rows.append(
                {"variant": t["variant"], "concurrency": f"1-{t['threshold']}", "spec_off_above": t["threshold"]}
            )
        elif kind == "adaptive tiers":
            for a, b, name in self._tiers():
                if name != self.baseline:
                    rows.append(
                        {"variant": name, "concurrency": f"{a}-{b}" if a != b else f"{a}", "spec_off_above": None}
                    )
        cols = ["variant", "topk", "num_steps", "num_draft_tokens", "spec_v2", "concurrency", "spec_off_above"]
        if not rows:
            return pd.DataFrame(columns=cols)
        settings = self.levels.drop_duplicates("variant").set_index("variant")
        out = pd.DataFrame(rows).drop_duplicates("variant")
        for key in ("topk", "num_steps", "num_draft_tokens"):
            out[key] = [int(settings.loc[v, key]) for v in out["variant"]]
        out["spec_v2"] = [bool(settings.loc[v, "spec_v2"]) for v in out["variant"]]
        return out[cols].reset_index(drop=True)

    def save_grids(self, out_dir: str | Path) -> pd.DataFrame:
        """Write the recommended configurations as grid files (``data/grids/``' format) that ``workbench bench
        --grid FILE`` and the spec_vs_baseline notebook's ``grid`` measure, so a prediction becomes a measurement in
        one step (relative ``out_dir``: to the project root).

        Points are named as every grid names them, ``<name>-t<topk>-s<num_steps>-d<num_draft_tokens>``
        (:func:`workbench.variants.expand_grid`); ``<name>`` is the what-if's template's
        (``eagle3-topk4-t4-s2-d16``), with ``-v2`` for spec v2 points (``eagle3-topk4-v2-t1-s5-d6``), whose template is a
        shipped variant that differs from the what-if's only by ``SGLANG_ENABLE_SPEC_V2=1`` and the grid's own three
        settings (or, with none shipped, a variant file written beside the grid). A grid holds every combination of its
        lists, so configurations that are not one product (topk-1 chains of two lengths) go to one file each.

        Returns:
            One row per file: ``grid`` (its path, shown relative), ``points`` (the variant names it measures, each
            with the what-if's label of the same settings and the levels it is recommended at), ``template``, ``command`` (``workbench bench`` with this what-if's
            profile, levels and output length; the baseline's levels are measured once and reused by the next
            command) and ``note`` (a threshold policy's switch, which a grid cannot express). No row when plain
            decoding is recommended everywhere.
        """
        from workbench import paths

        folder = paths.resolve(out_dir)
        points = self.recommended_points()
        rows: list[dict[str, Any]] = []
        if not len(points):
            return pd.DataFrame(columns=["grid", "points", "template", "command", "note"])
        folder.mkdir(parents=True, exist_ok=True)
        for v2, group in points.groupby("spec_v2", sort=True):
            template = self._grid_template(bool(v2), folder)
            prefix = Path(self.template).stem + ("-v2" if v2 else "")
            for part in _products(group):
                stem = f"whatif-{self.profile}-{prefix}-" + "-".join(
                    f"{letter}{'_'.join(str(x) for x in part['axes'][axis])}"
                    for letter, axis in (("t", "topk"), ("s", "num_steps"), ("d", "num_draft_tokens"))
                )
                path = folder / f"{stem}.toml"
                path.write_text(_grid_toml(prefix, template, part["axes"], self.profile), encoding="utf-8")
                names = [
                    f"{prefix}-t{r.topk}-s{r.num_steps}-d{r.num_draft_tokens} = {r.variant} (concurrency "
                    f"{r.concurrency})"
                    for r in part["rows"].itertuples()
                ]
                thresholds = [int(n) for n in part["rows"]["spec_off_above"].dropna()]
                note = (
                    f"recommended with no drafting above {thresholds[0]} running requests: a grid point drafts at "
                    f"every level; the switch needs a variant with sim_policy spec_off_above = {thresholds[0]} on "
                    "the simulator, or the eagle-spec-off-above patch on SGLang"
                    if thresholds
                    else ""
                )
                rows.append(
                    {
                        "grid": paths.shown(path),
                        "points": "; ".join(names),
                        "template": str(template),
                        "command": self._bench_command(paths.shown(path)),
                        "note": note,
                    }
                )
        return pd.DataFrame(rows)

    def _bench_command(self, grid: str) -> str:
        """``workbench bench BASELINE --grid FILE`` with this what-if's profile, levels and output length."""
        levels = ",".join(str(int(c)) for c in sorted(set(self.levels["concurrency"])))
        tokens = int(self.levels["max_new_tokens"].iloc[0])
        extra = (
            ""
            if self.settings.get("requests_per_level") is None
            else f" --requests {self.settings['requests_per_level']}"
        )
        return (
            f"workbench bench {self.baseline} --grid {grid} --sim-profile {self.profile} --levels {levels} "
            f"--max-new-tokens {tokens}{extra}"
        )

    def _grid_template(self, spec_v2: bool, folder: Path) -> str:
        """The variant a grid's points keep their other flags from: the what-if's template, or for spec v2 (v1) a
        shipped variant equal to it but for SGLANG_ENABLE_SPEC_V2 (and the grid's settings), else a file written
        into ``folder``."""
        from workbench.variants import list_variants, load_variant

        base = load_variant(self.template)
        if (base.env.get("SGLANG_ENABLE_SPEC_V2") == "1") == spec_v2:
            return self.template
        env = {k: v for k, v in base.env.items() if k != "SGLANG_ENABLE_SPEC_V2"}
        if spec_v2:
            env["SGLANG_ENABLE_SPEC_V2"] = "1"
        wanted = _grid_point(self.template, env)
        for name in list_variants():
            if _grid_point(name) == wanted:
                return name
        name = f"{base.name}-{'v2' if spec_v2 else 'v1'}"
        path = folder / f"{name}.toml"
        path.write_text(
            _variant_toml(
                dataclasses.replace(
                    base,
                    name=name,
                    env=env,
                    description=(
                        f"{base.name} with spec {'v2' if spec_v2 else 'v1'} (SGLANG_ENABLE_SPEC_V2 "
                        f"{'on' if spec_v2 else 'off'}): the template of the what-if's grid"
                    ),
                )
            ),
            encoding="utf-8",
        )
        return str(path)

    # -- charts -----------------------------------------------------------------
    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """Every chart, by file stem (data aggregated to a few hundred rows each)."""
        if "charts" in self._cache:
            return self._cache["charts"]
        from workbench.sim import STEP_PARTS

        sub = self.subtitle_lines
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
        out["crossover"] = charts.crossover_chart(self.crossover_table(), subtitle=sub)
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
        self._cache["charts"] = out
        return out

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart as PNG and SVG into ``out_dir`` (relative: to the project root); one row per chart."""
        from workbench import paths

        return charts.save_charts(self.charts(), paths.resolve(out_dir), prefix="what_if_")


#: A crossover's kind (:func:`workbench.analysis.find_crossover`) as the tables say it.
CROSSOVER_WORDS = {
    "interpolated": "crosses between two levels",
    "at_level": "even at a level",
    "none_in_range": "ahead at every level",
    "below_range": "behind at every level",
}


def _bound_by(weights_ms: float, compute_ms: float) -> str:
    """What bound a step's weight matrix multiplications: their reads, their FLOPs, or each for some groups."""
    if weights_ms > 0 and compute_ms > 0:
        return "both (by kernel group)"
    return "FLOPs" if compute_ms > 0 else "weight reads"


def _products(group: pd.DataFrame) -> list[dict[str, Any]]:
    """``group``'s configurations as grids: one when they are every combination of their values, else one each."""
    axes = {key: sorted({int(v) for v in group[key]}) for key in ("topk", "num_steps", "num_draft_tokens")}
    wanted = {(int(r.topk), int(r.num_steps), int(r.num_draft_tokens)) for r in group.itertuples()}
    if wanted == set(itertools.product(*axes.values())):
        return [{"axes": axes, "rows": group}]
    return [
        {
            "axes": {
                "topk": [int(r.topk)],
                "num_steps": [int(r.num_steps)],
                "num_draft_tokens": [int(r.num_draft_tokens)],
            },
            "rows": group.iloc[[i]],
        }
        for i, r in enumerate(group.itertuples())
    ]


def _grid_toml(name: str, template: str, axes: dict[str, list[int]], profile: str) -> str:
    """A grid file: its name, template and the three axes, with a header saying where it came from."""
    lines = [
        f"# Written by the what-if on profile {profile}: the settings it recommends (a MODEL PREDICTION), to",
        "# measure them: workbench bench BASELINE --grid THIS_FILE (or the spec_vs_baseline notebook's grid).",
        f"name = {toml_value(name)}",
        f"template = {toml_value(template)}",
        f"description = {toml_value(f'What-if recommendation on profile {profile}')}",
    ]
    lines += [f"{key} = {toml_value(values)}" for key, values in axes.items()]
    return "\n".join(lines) + "\n"


def _variant_toml(variant: Variant) -> str:
    """A variant file of ``variant`` (a :class:`workbench.variants.Variant` without patches)."""
    top = {
        "name": variant.name,
        "description": variant.description,
        "model_path": variant.model_path,
        "draft_model_path": variant.draft_model_path,
        "sglang_version": variant.sglang_version,
        "base": variant.base,
    }
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items() if v is not None]
    for table, values in (("flags", variant.flags), ("env", variant.env), ("sim_policy", variant.sim_policy)):
        if values:
            lines += ["", f"[{table}]", *(f"{json.dumps(k)} = {toml_value(v)}" for k, v in values.items())]
    return "\n".join(lines) + "\n"


def _grid_point(template: str | Path, env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """What a grid on ``template`` makes of one point, but for its name, text and file (with ``env`` in place of
    the template's, when given): two templates are interchangeable for a grid when these agree. None for a
    template a grid refuses (not speculative)."""
    from workbench.variants import grid_variants

    try:
        point = grid_variants({"template": str(template), "topk": [1], "num_steps": [1], "num_draft_tokens": [2]})[0]
    except ConfigError:
        return None
    point = dataclasses.replace(point, name="point", description="", path=None, env=point.env if env is None else env)
    return point.to_dict()
