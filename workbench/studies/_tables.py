"""The tables of a spec-versus-baseline study: one frozen value that every word, chart and opening reads.

:class:`StudyTables` holds the per-level and per-request rows of the runs compared (one workload, one load
axis, one run per variant) with the runs' manifests, and answers the investigation's questions with the
pure functions of :mod:`workbench.analysis`: means over repeats with their intervals, spec/baseline ratios,
where each speculative variant stops beating the baseline (the crossover), which variant is best at each
level (the policy), and what makes a pair not like-for-like. It is built once, checked and narrowed
(:func:`workbench.studies._assemble.assemble_tables`), and never changes after: the words (``_study_verdict``,
``_study_words``, ``_seed_pair``, ``_openings``) and the charts (``_study_charts``) are functions of it,
and :class:`workbench.studies.Study` is the notebook's façade over the three.

Levels measured in several repeats are reported as the mean over repeats with a 95% Student t interval
and their n (:func:`workbench.analysis.repeat_table`); ratios pair repeats
(:func:`workbench.analysis.ratio_intervals`), and a crossover is claimed only where the intervals
separate (:func:`workbench.analysis.crossover_interval`); elsewhere the text says "not distinguishable at
this level". With one repeat the figures say ``n=1`` and carry no interval.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pandas as pd

from workbench import charts
from workbench.analysis import (
    Crossover,
    CrossoverInterval,
    LoadAxis,
    SameWork,
    accept_by_category,
    accept_length_distribution,
    crossover_interval,
    find_crossover,
    imported_position_rates,
    not_tested_text,
    per_request_ratio_ci,
    position_rates,
    queued_requests,
    ratio_intervals,
    repeat_table,
    same_outputs,
)
from workbench.errors import ConfigError
from workbench.studies import _study_policy
from workbench.studies._conditions import conditions_of, conditions_text
from workbench.studies._goodput import GoodputTargets
from workbench.studies._run_facts import drafts, gpu_words

__all__ = ["COMPARED", "INTERVAL_METRICS", "LATENCY_METRICS", "SetAsideRun", "StudyTables"]

#: Level metrics compared between variants (higher is better for both).
COMPARED = ("output_throughput_tok_s", "mean_per_request_tok_s")

#: Level metrics reported with their interval over repeats (summary, charts, the bench CLI).
INTERVAL_METRICS = (
    "output_throughput_tok_s",
    "mean_per_request_tok_s",
    "mean_ttft_ms",
    "p90_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p90_tpot_ms",
    "p99_tpot_ms",
    "accept_length",
)

#: Latency percentiles drawn and tabled (ms), beyond :data:`INTERVAL_METRICS`.
LATENCY_METRICS = (
    "p50_ttft_ms",
    "p90_ttft_ms",
    "p99_ttft_ms",
    "p50_tpot_ms",
    "p90_tpot_ms",
    "p99_tpot_ms",
    "p50_e2e_ms",
    "p90_e2e_ms",
    "p99_e2e_ms",
)


@dataclasses.dataclass(frozen=True)
class SetAsideRun:
    """A run given to a study that it cannot compare, and why (a report lists it on its first screen).

    Attributes:
        run_id: the run's id (the variant's name for a table built by hand, without run ids).
        variant: its variant.
        workloads: the workloads it measured (none of them the one shown).
        reason: why it is set aside, a plain sentence (no markup), e.g. ``"measured workload X, not
            Y ..."``.
    """

    run_id: str
    variant: str
    workloads: tuple[str, ...]
    reason: str

    @property
    def line(self) -> str:
        """``"set aside: run R (variant V): <reason>"``: one terminal line."""
        return f"set aside: run {self.run_id} (variant {self.variant}): {self.reason}"


@dataclasses.dataclass(frozen=True, eq=False)
class StudyTables:
    """Runs of several variants on one workload and one load axis, compared against a baseline.

    Built by :func:`workbench.studies._assemble.assemble_tables` (which checks and narrows the rows; see
    there for what it refuses), then never changed: every method is a pure reading of these fields.

    Attributes:
        levels: per-level rows of the workload shown (``variant``, the load column, ``workload``,
            metrics; ``goodput_fraction``, ``goodput_req_s`` and ``goodput_requests`` when
            :attr:`goodput` sets a target).
        requests: per-request rows of those levels.
        manifests: the runs' manifests (dicts), in run order (every run given, those set aside included).
        baseline: the baseline variant's name.
        workload: the workload shown (the ``workload`` column of :attr:`levels`).
        axis: the load axis compared on (:attr:`load`: ``concurrency`` for closed-loop runs,
            ``request_rate_req_s`` for open-loop ones).
        goodput: goodput's latency targets (none set: no goodput columns).
        seed_pair: the seed investigation's own pair (its uncapped baseline, its speculative variant),
            measured beside the like-for-like pair; None: not in these runs (:mod:`workbench.studies._seed_pair`).
        other_workloads: workloads in the runs besides :attr:`workload` (their rows are not in :attr:`levels`).
        set_aside: runs given that measured none of :attr:`workload` or on the other load axis, with why.
    """

    levels: pd.DataFrame
    requests: pd.DataFrame
    manifests: tuple[dict[str, Any], ...]
    baseline: str
    workload: str
    axis: LoadAxis
    goodput: GoodputTargets = GoodputTargets()
    seed_pair: tuple[str, str] | None = None
    other_workloads: tuple[str, ...] = ()
    set_aside: tuple[SetAsideRun, ...] = ()
    #: (spec, confidence) -> the bootstrap of :meth:`per_request_ci`, computed once per study.
    _ci_cache: dict[tuple[str, float], pd.DataFrame] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    # -- who is who ---------------------------------------------------------------
    @property
    def load(self) -> str:
        """The level column this study compares on: ``"concurrency"`` (closed loop) or
        ``"request_rate_req_s"`` (open loop)."""
        return self.axis.column

    @property
    def load_axis(self) -> LoadAxis:
        """:attr:`load` with its words, chart title and unit (:data:`workbench.analysis.LOAD_AXES`)."""
        return self.axis

    @property
    def workload_line(self) -> str:
        """The chart subtitle line naming the workload shown (and how many others were set aside)."""
        others = (
            (
                f" (the runs hold {len(self.other_workloads)} other workload(s), not shown: "
                "load_study(..., workload=...) picks one)"
            )
            if self.other_workloads
            else ""
        )
        return f"workload: {self.workload}{others}"

    @property
    def variants(self) -> list[str]:
        """Variant names in run order."""
        return list(dict.fromkeys(self.levels["variant"]))

    @property
    def spec_variants(self) -> list[str]:
        """Every variant but the baseline (and the seed pair's own baseline, compared only in
        :func:`workbench.studies._seed_pair.seed_figures` and ``cap_split``)."""
        seed_base = self.seed_pair[0] if self.seed_pair else None
        return [v for v in self.variants if v not in (self.baseline, seed_base)]

    def speculative(self, variant: str) -> bool:
        """Whether ``variant``'s server drafts (speculative decoding) rather than decoding plainly: as its run's
        manifest says (:func:`workbench.studies._run_facts.drafts`), else whether its levels record an accept length,
        else whether it is neither the baseline nor the seed's (rows built by hand)."""
        said = drafts(self.manifests, variant)
        if said is not None:
            return said
        mine = self.levels.loc[self.levels["variant"] == variant].get("accept_length", pd.Series(dtype=float))
        if len(mine):
            return bool(mine.notna().any())
        return variant not in (self.baseline, self.seed_pair[0] if self.seed_pair else None)

    @property
    def baseline_speculative(self) -> bool:
        """True when the baseline itself drafts: no plain-decoding run to compare speculation with."""
        return self.speculative(self.baseline)

    def gpus(self, variant: str) -> str:
        """The GPUs ``variant``'s server ran on, in words (:func:`workbench.studies._run_facts.gpu_words`)."""
        return gpu_words(self.manifests, variant)

    @property
    def simulated(self) -> bool:
        """True when any figure comes from the simulated engine."""
        return bool(self.levels.get("simulated", pd.Series([False])).fillna(False).astype(bool).any())

    @property
    def subtitle(self) -> str:
        """Provenance text for every chart (SIMULATED when any run is), as one line."""
        return "; ".join(self.subtitle_lines)

    @property
    def time_scale(self) -> float | None:
        """The simulated engine's time scale (simulated seconds per wall second) from the runs'
        manifests; None when no run records one (a real engine)."""
        sims = [m.get("simulation") or {} for m in self.manifests]
        return next((float(s["time_scale"]) for s in sims if s.get("time_scale")), None)

    @property
    def subtitle_lines(self) -> list[str]:
        """Provenance as chart subtitle lines: where the figures come from, then each stand-in."""
        sims = [m.get("simulation") or {} for m in self.manifests]
        profile = next((s.get("profile") for s in sims if s.get("profile")), None)
        text = conditions_text(self.manifests, short=True) or charts.provenance_subtitle(
            self.levels, profile=profile, time_scale=self.time_scale
        )
        stand_ins = [f"{m.get('variant')} = {m['sim_stand_in']}" for m in self.manifests if m.get("sim_stand_in")]
        return [text, self.workload_line, *stand_ins]

    @property
    def max_repeats(self) -> int:
        """The most repeats any level has (1 for runs without repeats)."""
        if "repeat" not in self.levels or not len(self.levels):
            return 1
        return int(self.levels.groupby(["variant", self.load]).size().max())

    @property
    def min_repeats(self) -> int:
        """The fewest repeats any measured level has (1 for runs without repeats)."""
        if "repeat" not in self.levels or not len(self.levels):
            return 1
        return int(self.levels.groupby(["variant", self.load]).size().min())

    @property
    def repeats_words(self) -> str:
        """How many repeats a level has, as the reports say it: ``n=3 repeats per level``, or the range when
        levels differ (a sweep stopped in a later pass keeps its earlier passes: ``n=1–2 repeats per level``)."""
        lo, hi = self.min_repeats, self.max_repeats
        if lo == hi:
            return f"n={hi} repeat{'' if hi == 1 else 's'} per level"
        return f"n={lo}–{hi} repeats per level (uneven)"

    @property
    def repeats_line(self) -> str:
        """The chart subtitle line saying what a point is: n repeats and the interval drawn."""
        n = self.max_repeats
        if n == 1:
            return "n=1 repeat per level: points are single measurements, no interval"
        if self.min_repeats == 1:
            return f"points: mean over {self.repeats_words}; bars: 95% interval (Student t, n-1 df) where n > 1"
        return f"points: mean over {self.repeats_words}; bars: 95% interval (Student t, n-1 df)"

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

    def same_server_below(self, first: str, second: str) -> int | None:
        """The running-request count up to which ``first`` and ``second`` are one server
        (:func:`workbench.studies._study_policy.same_server_below`)."""
        return _study_policy.same_server_below(self, first, second)

    def policy_choices(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """What to run at each level, naming every variant that serves equally there
        (:func:`workbench.studies._study_policy.policy_choices`)."""
        return _study_policy.policy_choices(self, metric)

    def comparability(self) -> pd.DataFrame:
        """Server settings in which each speculative variant differs from the baseline, beyond speculation
        (:func:`workbench.studies._study_policy.comparability`)."""
        return _study_policy.comparability(self)

    def same_work(self, *, tolerance: float | None = None) -> list[SameWork]:
        """Per speculative variant, whether it returned the baseline's greedy outputs prompt by prompt
        (:func:`workbench.analysis.same_outputs`; ``tolerance`` None: its default, 5% of prompts)."""
        kw = {} if tolerance is None else {"tolerance": tolerance}
        forced = conditions_of(self.manifests).forced  # forced acceptance: judged on token counts
        return [
            same_outputs(
                self.requests,
                baseline=self.baseline,
                spec=spec,
                load=self.load,
                forced_accept_length=forced.get(spec),
                **kw,
            )
            for spec in self.spec_variants
        ]

    # -- acceptance in detail (workbench.analysis._acceptance) ---------------------
    def position_rates(self) -> pd.DataFrame:
        """Acceptance rate at each draft position per (variant, level): measured from the requests'
        accept histograms (:func:`workbench.analysis.position_rates`) and, for imported vLLM runs,
        the rates the file gave (:func:`workbench.analysis.imported_position_rates`); ``source``
        says which (``"requests"`` or ``"vllm"``)."""
        by = ("variant", self.load)
        measured = position_rates(self.requests, by=by).assign(source="requests")
        imported = imported_position_rates(self.levels, by=by).assign(source="vllm")
        frames = [f for f in (measured, imported) if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else measured

    def accept_distribution(self) -> pd.DataFrame:
        """Share of verify steps at each accept length per (variant, level)
        (:func:`workbench.analysis.accept_length_distribution`)."""
        return accept_length_distribution(self.requests, by=("variant", self.load))

    def accept_by_category(self) -> pd.DataFrame:
        """Accept length per prompt category of each variant, every level pooled
        (:func:`workbench.analysis.accept_by_category`)."""
        return accept_by_category(self.requests, by=("variant",))

    def queued(self) -> pd.DataFrame:
        """Levels where a server's queue held requests: ``variant``, the load column, ``queued_requests``, ``cap``."""
        means = self.means()
        held = means[means["queued_requests"] > 0][["variant", self.load, "queued_requests"]].copy()
        held["cap"] = held["variant"].map(self.caps)
        return held.reset_index(drop=True)

    # -- tables -------------------------------------------------------------
    def means(self) -> pd.DataFrame:
        """One row per (variant, level on :attr:`load`): ``n`` repeats, and each of :data:`INTERVAL_METRICS`
        (and :data:`COMPARED`) as mean, ``_lo``, ``_hi`` (95% t interval; NaN for n=1), ``_n``."""
        metrics = [
            m
            for m in dict.fromkeys(
                [
                    *COMPARED,
                    *INTERVAL_METRICS,
                    *LATENCY_METRICS,
                    "server_accept_length",
                    "goodput_req_s",
                    "goodput_fraction",
                ]
            )
            if m in self.levels.columns
        ]
        table = repeat_table(self.levels, metrics, by=("variant", self.load))
        table["workload"] = self.workload
        order = {v: i for i, v in enumerate(self.variants)}
        for col in [c for c in self.levels.columns if c in {"simulated", "engine"}]:
            if col in self.levels:
                table[col] = table["variant"].map(self.levels.groupby("variant")[col].first())
        caps = self.caps
        # an open loop holds no fixed number of requests in flight: nothing is known to queue
        table["queued_requests"] = [
            queued_requests(c, caps.get(v)) if self.load == "concurrency" else 0
            for v, c in zip(table["variant"], table[self.load])
        ]
        return table.sort_values(
            ["variant", self.load], key=lambda s: s.map(order) if s.name == "variant" else s
        ).reset_index(drop=True)

    def ratio_intervals(self, spec: str, metric: str) -> pd.DataFrame:
        """:func:`workbench.analysis.ratio_intervals` of ``spec`` over the baseline on ``metric``."""
        return ratio_intervals(self.levels, baseline=self.baseline, spec=spec, metric=metric, load=self.load)

    def compared(self, spec: str) -> tuple[str, ...]:
        """The :data:`COMPARED` metrics that ``spec`` and the baseline both recorded at a shared
        concurrency, in :data:`COMPARED`'s order.

        A run imported from another tool may lack one (sglang.bench_serving records no
        per-request E2E, so no per-request tok/s); it is then left out of the ratios,
        crossovers and charts of that pair, and the verdict says so.
        """
        lv = self.levels
        out = []
        for m in COMPARED:
            if m not in lv.columns:
                continue
            has = lv[m].notna()
            if set(lv.loc[has & (lv["variant"] == self.baseline), self.load]) & set(
                lv.loc[has & (lv["variant"] == spec), self.load]
            ):
                out.append(m)
        return tuple(out)

    def ratios(self, spec: str) -> pd.DataFrame:
        """Spec/baseline ratios of :data:`COMPARED` at each shared level: ``<m>_ratio`` (geometric
        mean over paired repeats; the plain ratio for one), ``<m>_ratio_lo``, ``<m>_ratio_hi``
        (NaN for n=1), ``<m>_n`` and ``<m>_verdict``; ``queued_requests``: requests waiting in either
        server's queue at that level (:meth:`caps`)."""
        metrics = self.compared(spec)
        if not metrics:
            raise ConfigError(
                f"{spec!r} and the baseline {self.baseline!r} share no {self.axis.words} level at which "
                f"both recorded any of {', '.join(COMPARED)}: nothing to compare (check the runs' levels)"
            )
        tables = [
            self.ratio_intervals(spec, m).rename(
                columns={
                    "ratio": f"{m}_ratio",
                    "ratio_lo": f"{m}_ratio_lo",
                    "ratio_hi": f"{m}_ratio_hi",
                    "n": f"{m}_n",
                    "verdict": f"{m}_verdict",
                }
            )
            for m in metrics
        ]
        out = tables[0]
        for t in tables[1:]:
            out = out.merge(t, on=self.load, how="outer")
        caps = self.caps
        out["queued_requests"] = [
            max(queued_requests(c, caps.get(self.baseline)), queued_requests(c, caps.get(spec)))
            if self.load == "concurrency"
            else 0
            for c in out[self.load]
        ]
        return out.sort_values(self.load).reset_index(drop=True)

    def per_request_ci(self, spec: str, *, confidence: float = 0.95) -> pd.DataFrame:
        """Bootstrap CI of the per-request tok/s ratio of ``spec`` over the baseline, per level.

        The bootstrap (2000 resamples per level) runs once per (``spec``, ``confidence``)
        for these tables; later calls (the charts, the findings, again) get a copy of that result.
        """
        key = (spec, confidence)
        if key not in self._ci_cache:
            self._ci_cache[key] = per_request_ratio_ci(self.requests, baseline=self.baseline, spec=spec,
                                                       confidence=confidence, load=self.load)  # fmt: skip
        return self._ci_cache[key].copy()

    def crossover_intervals(self, spec: str) -> dict[str, CrossoverInterval]:
        """Per compared metric, the crossover of ``spec`` with its interval, claimed only where the
        intervals separate (:func:`workbench.analysis.crossover_interval`)."""
        return {
            m: crossover_interval(self.ratio_intervals(spec, m), metric=m, load=self.load) for m in self.compared(spec)
        }

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
            point = find_crossover(table[self.load], table[f"{m}_ratio"], metric=m, load=self.load)
            if interval.kind == "not_tested":
                out[m] = dataclasses.replace(
                    point, description=f"{point.description} ({not_tested_text(interval.n)}: no crossover interval)"
                )
            elif interval.kind == "claimed":
                claimed = cast(float, interval.concurrency)  # a claimed crossover has its concurrency
                out[m] = Crossover(m, "interpolated", claimed, None, None, interval.description, ((0, 0, claimed),))
            else:
                out[m] = Crossover(m, "none_in_range", None, None, None, interval.description)
        return out

    def policy(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """Best variant per level on ``metric``, with its paired margin over the runner-up
        (:func:`workbench.studies._study_policy.policy`)."""
        return _study_policy.policy(self, metric)
