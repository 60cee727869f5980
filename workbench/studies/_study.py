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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from workbench import charts
from workbench.studies import _seed_pair, _study_words
from workbench.studies._study_words import COMPARED
from workbench.studies._conditions import conditions_of, conditions_text
from workbench.analysis import (MIN_TEST_REPEATS, Crossover, bracket_levels, CrossoverInterval, LoadAxis, best_policy,
                                choose_workload, crossover_interval, find_crossover, load_axis, load_modes, not_tested_text,
                                per_request_ratio_ci, queued_requests, interval_text, ratio_intervals, repeat_table,
                                same_outputs, settings_differences, position_rates, imported_position_rates,
                                accept_length_distribution, accept_by_category, goodput_levels)
from workbench.errors import ConfigError

if TYPE_CHECKING:  # charts are built by workbench.charts; a terminal summary on a GPU host needs no altair
    import altair as alt

#: :func:`workbench.analysis.ratio_intervals`' words for spec/baseline, said of best/runner-up.
_POLICY_WORDS = {"spec ahead": "ahead", "baseline ahead": "runner-up ahead (paired)"}

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


@dataclasses.dataclass
class Study:
    """Runs of several variants on one workload, compared against a baseline.

    A study compares levels on one load axis (:attr:`load`): ``concurrency`` for closed-loop
    runs, ``request_rate_req_s`` for open-loop ones (the workbench's own ``request_rates``
    sweeps, sglang.bench_serving's default mode); runs of both kinds are refused
    (:func:`workbench.analysis.load_axis`). It shows one workload (:attr:`workload`: the
    ``workload`` column :func:`workbench.store.load_runs` labels rows with; a table built by hand
    without one is a single workload): rows of other workloads in the same runs are set aside
    (:attr:`other_workloads`), never taken as repeats, and every chart says which workload it shows.

    Attributes:
        levels: per-level rows of the workload shown (``variant``, the load column,
            ``workload``, metrics).
        requests: per-request rows of those levels.
        manifests: the runs' manifests (dicts), in run order.
        baseline: the baseline variant's name.
        workload: the workload to show; None (default): the one the most variants measured.
        ttft_target_ms, tpot_target_ms: latency targets (ms) for goodput: the share of requests
            meeting both (``goodput_fraction``) and those requests per second (``goodput_req_s``),
            GuideLLM's and inference-perf's SLO figures (:func:`workbench.analysis.goodput_levels`),
            added to :attr:`levels` and shown beside throughput in the verdict and the policy.
            None (default): not set.

    Raises:
        ConfigError: no rows of the baseline, closed- and open-loop runs mixed, an unknown
            ``workload``, two runs measuring the same variant, level and repeat, or a target not
            > 0 ms.
    """

    levels: pd.DataFrame
    requests: pd.DataFrame
    manifests: list[dict[str, Any]]
    baseline: str
    workload: str | None = None
    ttft_target_ms: float | None = None
    tpot_target_ms: float | None = None
    #: The seed investigation's own pair (its uncapped baseline, its speculative variant), measured beside
    #: the like-for-like pair; None: not in these runs (:mod:`workbench.studies._seed_pair`).
    seed_pair: tuple[str, str] | None = None
    #: Workloads in the runs besides :attr:`workload` (their rows are not in :attr:`levels`).
    other_workloads: list[str] = dataclasses.field(default_factory=list, init=False)
    #: Runs given that measured none of :attr:`workload` (so none of their rows is in :attr:`levels`), with why.
    set_aside: list[SetAsideRun] = dataclasses.field(default_factory=list, init=False)
    #: (spec, confidence) -> the bootstrap of :meth:`per_request_ci`, computed once per study.
    _ci_cache: dict[tuple[str, float], pd.DataFrame] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = list(dict.fromkeys(self.levels["variant"])) if len(self.levels) else []
        if self.baseline not in names:
            raise ConfigError(f"baseline variant {self.baseline!r} has no runs; runs cover {names}")
        self._set_aside_other_load()
        self._axis: LoadAxis = load_axis(self.levels)
        if "workload" not in self.levels:  # a table built by hand, not read by load_runs: one workload
            self.levels = self.levels.assign(workload="default")
        if self.workload is None:  # only a workload the baseline measured can be compared with it
            measured = set(self.levels.loc[self.levels["variant"] == self.baseline, "workload"])
            candidates = self.levels[self.levels["workload"].isin(measured)]
            self.workload, _ = choose_workload(candidates["workload"], candidates["variant"])
        self.workload, self.other_workloads = choose_workload(self.levels["workload"], self.levels["variant"],
                                                              self.workload)
        if self.other_workloads:
            kept = self.levels[self.levels["workload"] == self.workload]
            self.set_aside = [*self.set_aside, *self._runs_left_out(kept)]
            self._keep(kept)
            if self.baseline not in set(self.levels["variant"]):
                raise ConfigError(f"the baseline {self.baseline!r} did not measure workload {self.workload!r}; "
                                  f"pass workload= one of {[self.workload, *self.other_workloads]}")
        keys = ["variant", self.load, *(["repeat"] if "repeat" in self.levels else [])]
        dupes = self.levels.groupby(keys).size()
        if (dupes > 1).any():
            raise ConfigError(
                f"several runs measure the same variant and {self._axis.words} on workload {self.workload!r}: "
                f"{list(dupes[dupes > 1].index)}; pass one run per variant"
            )
        for name, value in (("ttft_target_ms", self.ttft_target_ms), ("tpot_target_ms", self.tpot_target_ms)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise ConfigError(f"{name} must be a number of milliseconds > 0 (or None: no goodput), got {value!r}")
        if self.goodput_targets:
            self.levels = self._with_goodput(self.levels)

    def _keep(self, kept: pd.DataFrame) -> None:
        """Narrow :attr:`levels` to ``kept`` (a subset of its rows) and :attr:`requests` to their levels."""
        if {"run_id", "level_index"} <= set(self.requests.columns) and {"run_id", "level_index"} <= set(kept):
            keys = pd.MultiIndex.from_frame(kept[["run_id", "level_index"]].drop_duplicates())
            self.requests = self.requests[pd.MultiIndex.from_frame(
                self.requests[["run_id", "level_index"]]).isin(keys)].reset_index(drop=True)
        self.levels = kept.reset_index(drop=True)

    def _set_aside_other_load(self) -> None:
        """Runs measured on the other kind of load than the baseline (closed loop against open loop) are set
        aside by name and reason: the two share no axis, and a report never drops a run without saying so."""
        modes = load_modes(self.levels)
        if modes.nunique() < 2:
            return
        base_modes = modes[self.levels["variant"] == self.baseline]
        mode = str(base_modes.mode().iloc[0])
        words = {"closed": "closed-loop (at fixed concurrencies)", "open": "open-loop (at request rates)"}
        key = "run_id" if "run_id" in self.levels else "variant"
        for run_id, rows in self.levels[modes != mode].groupby(key, sort=False):
            theirs = str(load_modes(rows).iloc[0])
            self.set_aside.append(SetAsideRun(str(run_id), str(rows["variant"].iloc[0]), tuple(sorted(set(
                rows["workload"].astype(str)))) if "workload" in rows else (), (
                f"it was measured {words.get(theirs, theirs)}, and the baseline {self.baseline!r} "
                f"{words.get(mode, mode)}; a closed-loop level and an open-loop one are not the same load, so "
                f"they share no axis and none of its figures is shown. Measure {self.baseline!r} the same way and "
                "report the two together")))
        self._keep(self.levels[modes == mode])

    def _runs_left_out(self, kept: pd.DataFrame) -> list[SetAsideRun]:
        """The runs of :attr:`levels` (by ``run_id``; by variant without one) none of whose rows is in ``kept``."""
        key = "run_id" if "run_id" in self.levels else "variant"
        out = []
        for run_id, rows in self.levels.groupby(key, sort=False):
            if str(run_id) in set(kept[key].astype(str)):
                continue
            workloads = tuple(sorted(set(rows["workload"].astype(str))))
            variant = str(rows["variant"].iloc[0])
            theirs = ", ".join(workloads)
            out.append(SetAsideRun(str(run_id), variant, workloads, (
                f"it measured workload {theirs}, and this report compares {self.workload}, the workload of the "
                f"baseline {self.baseline!r}; levels of different workloads (output lengths, prompts) are never "
                f"compared, so none of its figures is shown. Measure {self.baseline!r} on {theirs} too and report "
                "the two together")))
        return out

    @property
    def goodput_targets(self) -> dict[str, float]:
        """The latency targets set for goodput, ``{"ttft_ms": ..., "tpot_ms": ...}`` (those given)."""
        return {k: float(v) for k, v in (("ttft_ms", self.ttft_target_ms), ("tpot_ms", self.tpot_target_ms))
                if v is not None}

    @property
    def goodput_words(self) -> str:
        """``"TTFT ≤ 500 ms and TPOT ≤ 50 ms"``: the targets as the report says them."""
        return " and ".join(f"{k.removesuffix('_ms').upper()} ≤ {v:g} ms" for k, v in self.goodput_targets.items())

    def _with_goodput(self, levels: pd.DataFrame) -> pd.DataFrame:
        """``levels`` with ``goodput_fraction`` and ``goodput_req_s`` from the requests (NaN where a
        level has no request rows with the timings, e.g. an imported bench_serving summary)."""
        need = {"variant", self.load, "error", "ttft_ms", "tpot_ms", "e2e_ms", "start_s", "end_s"}
        out = levels.drop(columns=[c for c in ("goodput_fraction", "goodput_req_s") if c in levels])
        if need - set(self.requests.columns) or not len(self.requests):
            return out.assign(goodput_fraction=float("nan"), goodput_req_s=float("nan"))
        good = goodput_levels(self.requests, load=self.load, **self.goodput_targets)
        keyed = out.assign(repeat=out["repeat"] if "repeat" in out else 0)
        merged = keyed.merge(good[["variant", self.load, "repeat", "goodput_fraction", "goodput_req_s"]],
                             on=["variant", self.load, "repeat"], how="left")
        return merged if "repeat" in levels else merged.drop(columns=["repeat"])

    @property
    def load(self) -> str:
        """The level column this study compares on: ``"concurrency"`` (closed loop) or
        ``"request_rate_req_s"`` (open loop)."""
        return self._axis.column

    @property
    def load_axis(self) -> LoadAxis:
        """:attr:`load` with its words, chart title and unit (:data:`workbench.analysis.LOAD_AXES`)."""
        return self._axis

    @property
    def workload_line(self) -> str:
        """The chart subtitle line naming the workload shown (and how many others were set aside)."""
        others = (f" (the runs hold {len(self.other_workloads)} other workload(s), not shown: "
                  "load_study(..., workload=...) picks one)") if self.other_workloads else ""
        return f"workload: {self.workload}{others}"

    @property
    def variants(self) -> list[str]:
        """Variant names in run order."""
        return list(dict.fromkeys(self.levels["variant"]))

    @property
    def spec_variants(self) -> list[str]:
        """Every variant but the baseline (and the seed pair's own baseline, compared only in
        :meth:`seed_figures` and :meth:`cap_split`)."""
        seed_base = self.seed_pair[0] if self.seed_pair else None
        return [v for v in self.variants if v not in (self.baseline, seed_base)]

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
            self.levels, profile=profile, time_scale=self.time_scale)
        stand_ins = [f"{m.get('variant')} = {m['sim_stand_in']}" for m in self.manifests if m.get("sim_stand_in")]
        return [text, self.workload_line, *stand_ins]

    @property
    def max_repeats(self) -> int:
        """The most repeats any level has (1 for runs without repeats)."""
        if "repeat" not in self.levels or not len(self.levels):
            return 1
        return int(self.levels.groupby(["variant", self.load]).size().max())

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

    def same_work(self, *, tolerance: float | None = None) -> list:
        """Per speculative variant, whether it returned the baseline's greedy outputs prompt by prompt
        (:func:`workbench.analysis.same_outputs`; ``tolerance`` None: its default, 5% of prompts)."""
        kw = {} if tolerance is None else {"tolerance": tolerance}
        forced = conditions_of(self.manifests).forced  # forced acceptance: judged on token counts
        return [same_outputs(self.requests, baseline=self.baseline, spec=spec, load=self.load,
                             forced_accept_length=forced.get(spec), **kw)
                for spec in self.spec_variants]

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

    def acceptance_text(self) -> str:
        """:func:`workbench.studies._study_words.acceptance_text`: the report's acceptance in detail."""
        return _study_words.acceptance_text(self)

    def queued(self) -> pd.DataFrame:
        """Levels where a server's queue held requests: ``variant``, the load column, ``queued_requests``, ``cap``."""
        means = self.means()
        held = means[means["queued_requests"] > 0][["variant", self.load, "queued_requests"]].copy()
        held["cap"] = held["variant"].map(self.caps)
        return held.reset_index(drop=True)

    # -- words (workbench.studies._study_words) ------------------------------------------
    def comparability_text(self) -> str:
        """:func:`workbench.studies._study_words.comparability_text`: the report's *Comparability* section."""
        return _study_words.comparability_text(self)

    def findings(self) -> str:
        """:func:`workbench.studies._study_words.findings`: the details at the end of the report."""
        return _study_words.findings(self)

    def fleet_placement(self) -> pd.DataFrame | None:
        """Where each unit ran, for runs from a fleet (:func:`workbench.studies._fleet_view.fleet_placement`:
        variant, repeat, host, hostname, GPUs, co-tenants, duration, outcome, failure kind and line); None when
        none came from one."""
        from workbench.studies._fleet_view import fleet_placement

        return fleet_placement(self.manifests)

    def fleet_placement_line(self) -> str:
        """One sentence (plain text): units per fleet host and those that failed; ``""`` without fleet runs."""
        from workbench.studies._fleet_view import fleet_placement_line

        return fleet_placement_line(self.manifests)

    def fleet_hosts(self) -> pd.DataFrame | None:
        """Per host of a fleet sweep (:func:`workbench.studies._fleet_view.fleet_host_table`: units done,
        failed, GPUs used, seconds busy); None when no run came from a fleet."""
        from workbench.studies._fleet_view import fleet_host_table

        return fleet_host_table(self.manifests)

    def fleet_section(self) -> str:
        """The report's *Where each unit ran* (markdown, every value placed literally:
        :func:`workbench.studies._fleet_view.fleet_section`); ``""`` when no run came from a fleet."""
        from workbench.studies._fleet_view import fleet_section

        return fleet_section(self.manifests)

    def provenance_line(self) -> str:
        """:func:`workbench.studies._study_words.provenance_line`: measured or simulated, engine, versions, host, n."""
        return _study_words.provenance_line(self)

    def verdict(self) -> str:
        """:func:`workbench.studies._study_words.verdict`: the answer that opens the report."""
        return _study_words.verdict(self)

    def opening(self) -> str:
        """:func:`workbench.studies._openings.study_opening`: the five sentences that open the report, then the
        runs set aside (:attr:`set_aside`), each also said on the terminal of a ``workbench report``
        (:func:`workbench.report.report_note`)."""
        from workbench.report import report_note
        from workbench.studies._openings import study_opening

        for run in self.set_aside:
            report_note(run.line)
        return study_opening(self)

    # -- the seed's pair (workbench.studies._seed_pair) -------------------------------
    def seed_figures(self) -> pd.DataFrame:
        """:func:`workbench.studies._seed_pair.seed_figures`: the seed's four figures against these runs'."""
        return _seed_pair.seed_figures(self)

    def cap_split(self) -> _seed_pair.CapSplit | None:
        """:func:`workbench.studies._seed_pair.cap_split`: the seed pair's gap split into the cap's factor and speculation's."""
        return _seed_pair.cap_split(self)

    # -- tables -------------------------------------------------------------
    def means(self) -> pd.DataFrame:
        """One row per (variant, level on :attr:`load`): ``n`` repeats, and each of :data:`INTERVAL_METRICS`
        (and :data:`COMPARED`) as mean, ``_lo``, ``_hi`` (95% t interval; NaN for n=1), ``_n``."""
        metrics = [m for m in dict.fromkeys([*COMPARED, *INTERVAL_METRICS, *LATENCY_METRICS, "server_accept_length",
                                             "goodput_req_s", "goodput_fraction"])
                   if m in self.levels.columns]
        table = repeat_table(self.levels, metrics, by=("variant", self.load))
        table["workload"] = self.workload
        order = {v: i for i, v in enumerate(self.variants)}
        for col in [c for c in self.levels.columns if c in {"simulated", "engine"}]:
            if col in self.levels:
                table[col] = table["variant"].map(self.levels.groupby("variant")[col].first())
        caps = self.caps
        # an open loop holds no fixed number of requests in flight: nothing is known to queue
        table["queued_requests"] = [queued_requests(c, caps.get(v)) if self.load == "concurrency" else 0
                                    for v, c in zip(table["variant"], table[self.load])]
        return table.sort_values(["variant", self.load], key=lambda s: s.map(order) if s.name == "variant"
                                 else s).reset_index(drop=True)

    def summary(self) -> pd.DataFrame:
        """Compact per-level table, rounded for reading.

        One repeat: variant, concurrency, throughput, latencies, accept length (each n=1).
        Several: one row per (variant, concurrency) with ``n`` (repeats) and, for each of
        :data:`INTERVAL_METRICS`, the mean over repeats and its 95% interval (``_lo``, ``_hi``).
        """
        if self.max_repeats == 1:
            cols = [c for c in SUMMARY_COLUMNS if c in self.levels.columns]
            if self.load not in cols:
                cols.insert(1, self.load)
            table = self.levels[cols].sort_values(["variant", self.load]).reset_index(drop=True)
            table.insert(2, "n", 1)
        else:
            means = self.means()
            cols = ["variant", self.load, "n"] + [f"{m}{s}" for m in INTERVAL_METRICS if m in means
                                                      for s in ("", "_lo", "_hi")]
            table = means[cols]
        digits = {c: (2 if "accept" in c or "_req_s" in c else 1) for c in table.columns
                  if pd.api.types.is_float_dtype(table[c])}
        return table.round(digits)

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
                    lv.loc[has & (lv["variant"] == spec), self.load]):
                out.append(m)
        return tuple(out)

    def ratios(self, spec: str) -> pd.DataFrame:
        """Spec/baseline ratios of :data:`COMPARED` at each shared level: ``<m>_ratio`` (geometric
        mean over paired repeats; the plain ratio for one), ``<m>_ratio_lo``, ``<m>_ratio_hi``
        (NaN for n=1), ``<m>_n`` and ``<m>_verdict``; ``queued_requests``: requests waiting in either
        server's queue at that level (:meth:`caps`)."""
        metrics = self.compared(spec)
        if not metrics:
            raise ConfigError(f"{spec!r} and the baseline {self.baseline!r} share no {self._axis.words} level at which both "
                              f"recorded any of {', '.join(COMPARED)}: nothing to compare (check the runs' levels)")
        tables = [self.ratio_intervals(spec, m).rename(columns={
            "ratio": f"{m}_ratio", "ratio_lo": f"{m}_ratio_lo", "ratio_hi": f"{m}_ratio_hi", "n": f"{m}_n",
            "verdict": f"{m}_verdict"}) for m in metrics]
        out = tables[0]
        for t in tables[1:]:
            out = out.merge(t, on=self.load, how="outer")
        caps = self.caps
        out["queued_requests"] = [max(queued_requests(c, caps.get(self.baseline)), queued_requests(c, caps.get(spec)))
                                  if self.load == "concurrency" else 0 for c in out[self.load]]
        return out.sort_values(self.load).reset_index(drop=True)

    def per_request_ci(self, spec: str, *, confidence: float = 0.95) -> pd.DataFrame:
        """Bootstrap CI of the per-request tok/s ratio of ``spec`` over the baseline, per level.

        The bootstrap (2000 resamples per level) runs once per (``spec``, ``confidence``)
        for this study; later calls (:meth:`charts`, :meth:`findings`, again) get a copy
        of that result. A study's rows are not meant to change after it is built.
        """
        key = (spec, confidence)
        if key not in self._ci_cache:
            self._ci_cache[key] = per_request_ratio_ci(self.requests, baseline=self.baseline, spec=spec,
                                                       confidence=confidence, load=self.load)  # fmt: skip
        return self._ci_cache[key].copy()

    def crossover_intervals(self, spec: str) -> dict[str, CrossoverInterval]:
        """Per compared metric, the crossover of ``spec`` with its interval, claimed only where the
        intervals separate (:func:`workbench.analysis.crossover_interval`)."""
        return {m: crossover_interval(self.ratio_intervals(spec, m), metric=m, load=self.load)
                for m in self.compared(spec)}

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
                out[m] = dataclasses.replace(point, description=f"{point.description} ({not_tested_text(interval.n)}: no crossover interval)")
            elif interval.kind == "claimed":
                claimed = cast(float, interval.concurrency)  # a claimed crossover has its concurrency
                out[m] = Crossover(m, "interpolated", claimed, None, None, interval.description, ((0, 0, claimed),))
            else:
                out[m] = Crossover(m, "none_in_range", None, None, None, interval.description)
        return out

    def crossover_table(self) -> pd.DataFrame:
        """One row per (speculative variant, metric): crossover kind, ``between`` (the measured levels
        that bracket it, ``"1–2"``), the interpolated concurrency and its interval (one decimal: a
        concurrency, not a measurement), n, description."""
        rows = []
        for spec in self.spec_variants:
            intervals = self.crossover_intervals(spec)
            measured = sorted(self._axis.value(c) for c in self.ratios(spec)[self.load])
            for metric, c in self.crossovers(spec).items():
                iv = intervals[metric]
                between = None
                if c.concurrency is not None:
                    lo, hi = bracket_levels(c.concurrency, measured)
                    between = f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"
                rows.append({"variant": spec, "metric": metric, "kind": c.kind if iv.kind == "not_tested"
                             else iv.kind, "between": between,
                             f"crossover_{self.load}": None if c.concurrency is None else round(c.concurrency, 1),
                             "crossover_lo": None if iv.lo is None else round(iv.lo, 1),
                             "crossover_hi": None if iv.hi is None else round(iv.hi, 1), "n": iv.n,
                             "description": c.description})
        return pd.DataFrame(rows)

    def policy(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """Best variant per concurrency on ``metric`` (mean over repeats; what to run at each load).

        Returns:
            One row per concurrency: :func:`workbench.analysis.best_policy`'s ``concurrency``,
            ``best_variant``, ``best_<metric>``, ``runner_up``, ``margin`` (best / runner-up - 1,
            of the means), then ``n`` (the best variant's repeats), ``best_<metric>_lo`` / ``_hi``
            (its 95% t interval over repeats; NaN for n=1), ``margin_lo`` / ``margin_hi`` (the
            95% t interval of the paired best/runner-up ratio minus 1,
            :func:`workbench.analysis.ratio_intervals`) and ``margin_verdict``: ``"ahead"``,
            ``"not distinguishable at this level"``, ``"runner-up ahead (paired)"`` or
            ``"not tested: <n> repeat(s)"`` under the significance rule.
        """
        means = self.means()
        out = best_policy(means, metric=metric, load=self.load)
        keyed = means.set_index(["variant", self.load])
        rows = []
        for row in out.itertuples():
            level = getattr(row, self.load)
            best = keyed.loc[(row.best_variant, level)]
            entry = {"n": int(best["n"]), f"best_{metric}_lo": best.get(f"{metric}_lo", float("nan")),
                     f"best_{metric}_hi": best.get(f"{metric}_hi", float("nan")),
                     "margin_lo": float("nan"), "margin_hi": float("nan"), "margin_verdict": None}
            at = self.levels[(self.levels[self.load] == level) & self.levels["variant"].isin([row.runner_up,
                                                                                             row.best_variant])]
            if isinstance(row.runner_up, str) and (at[metric] > 0).all():  # a ratio needs both above 0
                paired = ratio_intervals(at,
                                         baseline=row.runner_up, spec=row.best_variant, metric=metric, load=self.load)
                if len(paired):
                    first = paired.iloc[0]
                    entry.update(margin_lo=first["ratio_lo"] - 1.0, margin_hi=first["ratio_hi"] - 1.0,
                                 margin_verdict=_POLICY_WORDS.get(first["verdict"], first["verdict"]))
            rows.append(entry)
        return pd.concat([out, pd.DataFrame(rows, index=out.index)], axis=1)

    def policy_table(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """:meth:`policy` for reading: ``concurrency``, ``best variant``, ``n``, the best mean with its
        interval (``"143 (140–145)"``), ``runner-up``, the margin over it in per cent with its paired
        interval (``"+52% (+45% to +60%)"``) and whether the best is ahead under the significance rule."""
        pol = self.policy(metric)
        shown = {"output_throughput_tok_s": "output tok/s", "mean_per_request_tok_s": "per-request tok/s",
                 "goodput_req_s": f"goodput req/s ({self.goodput_words})"}.get(metric, metric)

        def margin(row) -> str:
            if row.margin != row.margin:
                return ""
            if row.margin_lo != row.margin_lo:
                return f"{row.margin:+.1%}"
            return f"{row.margin:+.1%} ({row.margin_lo:+.1%} to {row.margin_hi:+.1%})"

        return pd.DataFrame({
            self.load: pol[self.load], "best variant": pol["best_variant"], "n": pol["n"],
            shown: [interval_text(v, lo, hi) for v, lo, hi in
                    zip(pol[f"best_{metric}"], pol[f"best_{metric}_lo"], pol[f"best_{metric}_hi"])],
            "runner-up": pol["runner_up"], "margin over runner-up": [margin(r) for r in pol.itertuples()],
            "best vs runner-up": pol["margin_verdict"],
        })

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
        kw: dict[str, Any] = {"variants": self.variants, "baseline": self.baseline}
        out: dict[str, alt.TopLevelMixin] = {
            "throughput": charts.throughput_chart(means, subtitle=lines, **kw),
        }
        if means.get("mean_per_request_tok_s", pd.Series(dtype=float)).notna().any():
            out["per_request"] = charts.per_request_chart(means, subtitle=lines, **kw)
        for metric in charts.LATENCIES:
            if any(f"{p}_{metric}" in means for p in ("p50", "p90", "p99")):
                out[f"latency_{metric.removesuffix('_ms')}"] = charts.latency_chart(means, metric, subtitle=lines, **kw)
        unfair = self.comparability()
        for spec in self.spec_variants:
            ratios = self.ratios(spec)
            differs = unfair[(unfair["variant"] == spec) & ~unfair["setting"].str.startswith("preflight")]
            fairness = (["NOT LIKE-FOR-LIKE: " + "; ".join(
                f"{r.setting} {r.baseline_value} (baseline) vs {r.spec_value}" for r in differs.itertuples())]
                if len(differs) else [])
            if "mean_per_request_tok_s" not in self.compared(spec):
                ci = None  # not recorded for both (e.g. an imported sglang.bench_serving run)
                ratio_lines = [*self.subtitle_lines, "per-request tok/s not recorded for both: total output only"]
            elif self.max_repeats > 1:
                m = "mean_per_request_tok_s"
                ci = ratios[[self.load, f"{m}_ratio_lo", f"{m}_ratio_hi"]].rename(
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
        rates = self.position_rates()
        if len(rates):
            out["accept_positions"] = charts.position_rate_chart(rates, subtitle=lines, load=self.load, **kw)
        dist = self.accept_distribution()
        if len(dist):
            out["accept_distribution"] = charts.accept_distribution_chart(dist, subtitle=lines, load=self.load, **kw)
        return out

    def save_charts(self, out_dir: str | Path) -> dict[str, dict[str, Path]]:
        """Write every chart as PNG and SVG into ``out_dir``; returns stem -> {format: path}."""
        return {stem: charts.save_chart(chart, out_dir, stem) for stem, chart in self.charts().items()}

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
        out = means[["variant", self.load, "n", "queued_requests"]].rename(columns={"queued_requests": "queued"})
        for col, shown in TABLES[kind]:
            if col not in means or means[col].isna().all():
                continue
            out[shown] = [interval_text(getattr(row, col), getattr(row, f"{col}_lo"), getattr(row, f"{col}_hi"))
                          for row in means.itertuples()]
        return out.reset_index(drop=True)


def load_study(runs: Sequence[str | Path], *, baseline: str | None = None, workload: str | None = None,
               ttft_target_ms: float | None = None, tpot_target_ms: float | None = None,
               seed_pair: Sequence[str] | None = None, runs_dir: str | Path | None = None) -> Study:
    """A :class:`Study` over runs: run directories, run ids or unique prefixes of one, resolved as
    every ``workbench runs`` command resolves them (:func:`workbench.store.find_run` under ``runs_dir``;
    None: ``$WORKBENCH_RUNS_DIR`` or data/runs).

    ``baseline`` names the variant the others are compared with; None: the first run's variant
    (``benchmark_variants`` returns runs in the order of its ``variants``). ``workload`` picks
    which workload to show when the runs hold several (a label of
    :func:`workbench.bench.workload_labels`, as ``workbench runs show`` prints it); None: the
    one the most variants measured (:attr:`Study.other_workloads` lists the rest, and every
    chart's subtitle says which is shown). ``ttft_target_ms`` and ``tpot_target_ms`` set goodput's
    latency targets (:class:`Study`; None: no goodput). ``seed_pair``: the seed investigation's
    (uncapped baseline, speculative variant), set beside the like-for-like pair
    (:meth:`Study.seed_figures`, :meth:`Study.cap_split`); kept only when both are among the runs.

    Raises:
        ConfigError: as :class:`Study` (closed- and open-loop runs mixed, an unknown workload, no baseline),
            a ``seed_pair`` that does not name two variants, or a run that matches nothing (or a prefix
            that matches several: they are named).

    Rows of runs whose figures come from a simulator stand-in for a patch carry its
    label in ``sim_stand_in`` (None elsewhere), taken from each run's manifest.
    """
    from workbench.store import catalogue, find_run, load_run, load_runs

    if runs and not all(isinstance(r, Path) and r.is_dir() for r in runs):
        listing = catalogue(runs_dir)  # read once, not once per run
        runs = [r if isinstance(r, Path) and r.is_dir() else find_run(r, root=runs_dir, listing=listing) for r in runs]
    requests, levels = load_runs(runs)
    manifests = [load_run(r).manifest for r in runs]
    stand_in = {m.get("run_id"): m.get("sim_stand_in") for m in manifests}
    for frame in (requests, levels):
        if "run_id" in frame:
            frame["sim_stand_in"] = frame["run_id"].map(stand_in).astype("object")
    first = cast(str, manifests[0].get("variant")) if manifests else "baseline"
    chosen = first if baseline is None else baseline
    names = {m.get("variant") for m in manifests}
    pair = ((seed_pair[0], seed_pair[1]) if seed_pair and len(seed_pair) == 2 and set(seed_pair) <= names
            else None)
    if seed_pair and pair is None and len(seed_pair) != 2:
        raise ConfigError(f"seed_pair must name two variants (the seed's baseline, its speculative variant), "
                          f"got {list(seed_pair)!r}")
    return Study(levels=levels, requests=requests, manifests=manifests, baseline=chosen, workload=workload,
                 ttft_target_ms=ttft_target_ms, tpot_target_ms=tpot_target_ms,
                 seed_pair=pair if pair and pair[0] != chosen else None)
