"""A spec-versus-baseline study for notebooks: one façade over the study's tables, words and charts.

:func:`load_study` reads runs into the frozen tables (:class:`workbench.studies._tables.StudyTables`,
built once by :func:`workbench.studies._assemble.read_tables`), and :class:`Study` is what a notebook
holds: the tables (:attr:`Study.tables`, every figure), the words written from them (the opening, the
verdict, comparability, acceptance, findings: ``_openings``, ``_study_verdict``, ``_study_words``, ``_seed_pair``,
``_fleet_view``), the tables for reading (``_readings``) and the charts (``_study_charts``). Those
modules are functions of the tables and import them for real; nothing here computes a figure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench import charts, paths
from workbench.analysis import Crossover
from workbench.studies import _fleet_view, _method_words, _readings, _seed_pair, _study_verdict, _study_words
from workbench.studies._assemble import assemble_tables, read_tables
from workbench.studies._goodput import GoodputTargets
from workbench.studies._study_charts import study_charts
from workbench.studies._tables import SetAsideRun, StudyTables

if TYPE_CHECKING:  # charts are built by workbench.charts; a terminal summary on a GPU host needs no altair
    import altair as alt

__all__ = ["Study", "load_study"]


@dataclasses.dataclass(frozen=True)
class Study:
    """Runs of several variants on one workload, compared against a baseline (:func:`load_study`).

    Attributes:
        tables: the study's tables, every figure the words and charts use (means and intervals over
            repeats, ratios, crossovers, the policy, comparability, acceptance in detail).
    """

    tables: StudyTables

    @classmethod
    def from_frames(
        cls,
        levels: pd.DataFrame,
        requests: pd.DataFrame,
        manifests: Sequence[Mapping[str, Any]],
        baseline: str,
        *,
        workload: str | None = None,
        goodput: GoodputTargets = GoodputTargets(),
        seed_pair: tuple[str, str] | None = None,
    ) -> Study:
        """A study of rows at hand (levels, requests, manifests) rather than stored runs: as
        :func:`workbench.studies._assemble.assemble_tables` checks and narrows them.

        Raises:
            ConfigError: as :func:`~workbench.studies._assemble.assemble_tables`.
        """
        return cls(
            assemble_tables(
                levels, requests, manifests, baseline, workload=workload, goodput=goodput, seed_pair=seed_pair
            )
        )

    # -- what is compared (the tables' own fields) ---------------------------------------
    @property
    def levels(self) -> pd.DataFrame:
        """Per-level rows of the workload shown (:attr:`StudyTables.levels`)."""
        return self.tables.levels

    @property
    def requests(self) -> pd.DataFrame:
        """Per-request rows of those levels."""
        return self.tables.requests

    @property
    def manifests(self) -> tuple[dict[str, Any], ...]:
        """The runs' manifests, in run order."""
        return self.tables.manifests

    @property
    def baseline(self) -> str:
        """The baseline variant's name."""
        return self.tables.baseline

    @property
    def workload(self) -> str:
        """The workload shown."""
        return self.tables.workload

    @property
    def other_workloads(self) -> tuple[str, ...]:
        """Workloads in the runs besides :attr:`workload` (not shown)."""
        return self.tables.other_workloads

    @property
    def set_aside(self) -> tuple[SetAsideRun, ...]:
        """Runs given that the study cannot compare, with why (the opening lists them)."""
        return self.tables.set_aside

    @property
    def goodput_targets(self) -> GoodputTargets:
        """Goodput's latency targets (false when none is set: no goodput columns)."""
        return self.tables.goodput

    @property
    def load(self) -> str:
        """The level column compared on: ``"concurrency"`` or ``"request_rate_req_s"``."""
        return self.tables.load

    @property
    def variants(self) -> list[str]:
        """Variant names in run order."""
        return self.tables.variants

    @property
    def spec_variants(self) -> list[str]:
        """Every variant compared with the baseline (:attr:`StudyTables.spec_variants`)."""
        return self.tables.spec_variants

    @property
    def simulated(self) -> bool:
        """True when any figure comes from the simulated engine."""
        return self.tables.simulated

    @property
    def subtitle(self) -> str:
        """Where the figures come from, as one line (every chart's subtitle)."""
        return self.tables.subtitle

    # -- the figures a notebook reads (StudyTables) ----------------------------------------
    def means(self) -> pd.DataFrame:
        """:meth:`StudyTables.means`: per (variant, level), each metric's mean over repeats with its interval."""
        return self.tables.means()

    def ratios(self, spec: str) -> pd.DataFrame:
        """:meth:`StudyTables.ratios`: ``spec`` over the baseline at each shared level, with intervals."""
        return self.tables.ratios(spec)

    def ratio_intervals(self, spec: str, metric: str) -> pd.DataFrame:
        """:meth:`StudyTables.ratio_intervals`: ``spec`` over the baseline on ``metric``."""
        return self.tables.ratio_intervals(spec, metric)

    def crossovers(self, spec: str) -> dict[str, Crossover]:
        """:meth:`StudyTables.crossovers`: where ``spec`` stops beating the baseline, per compared metric."""
        return self.tables.crossovers(spec)

    def policy(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """:meth:`StudyTables.policy`: the best variant per level on ``metric``."""
        return self.tables.policy(metric)

    # -- tables for reading (_readings) -----------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """:func:`workbench.studies._readings.summary`: the compact per-level table."""
        return _readings.summary(self.tables)

    def table(self, kind: str = "throughput") -> pd.DataFrame:
        """:func:`workbench.studies._readings.narrow_table`: ``"throughput"`` or ``"latency"``, figures as text."""
        return _readings.narrow_table(self.tables, kind)

    def crossover_table(self) -> pd.DataFrame:
        """:func:`workbench.studies._readings.crossover_table`: one row per (speculative variant, metric)."""
        return _readings.crossover_table(self.tables)

    def policy_table(self, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
        """:func:`workbench.studies._readings.policy_table`: the policy for reading."""
        return _readings.policy_table(self.tables, metric)

    def seed_figures(self) -> pd.DataFrame:
        """:func:`workbench.studies._seed_pair.seed_figures`: the seed's four figures against these runs'."""
        return _seed_pair.seed_figures(self.tables)

    def cap_split(self) -> _seed_pair.CapSplit | None:
        """:func:`workbench.studies._seed_pair.cap_split`: the seed pair's gap split into the cap's factor and
        speculation's."""
        return _seed_pair.cap_split(self.tables)

    # -- words ------------------------------------------------------------------------------
    def opening(self) -> str:
        """:func:`workbench.studies._openings.study_opening`: the five sentences that open the report, then the
        runs set aside (:attr:`set_aside`), each also said on the terminal of a ``workbench report``
        (:func:`workbench.report.report_note`).

        The openings are imported here, not with this module: they name the other studies, whose modules draw
        with altair, and a study's terminal summary on a GPU host needs no altair (``workbench bench``).
        """
        from workbench.report import report_note
        from workbench.studies import _openings

        for run in self.tables.set_aside:
            report_note(run.line)
        return _openings.study_opening(self.tables)

    def verdict(self) -> str:
        """:func:`workbench.studies._study_verdict.verdict`: the answer that opens the report."""
        return _study_verdict.verdict(self.tables)

    def comparability_text(self) -> str:
        """:func:`workbench.studies._study_words.comparability_text`: the report's *Comparability* section."""
        return _study_words.comparability_text(self.tables)

    def acceptance_text(self) -> str:
        """:func:`workbench.studies._study_words.acceptance_text`: the report's acceptance in detail."""
        return _study_words.acceptance_text(self.tables)

    def findings(self) -> str:
        """:func:`workbench.studies._study_words.findings`: the details at the end of the report."""
        return _study_words.findings(self.tables)

    def method_text(self) -> str:
        """:func:`workbench.studies._method_words.method_text`: the report's *How it was measured*, every sentence
        from the runs' own record (their plans, time scale, and when and in which order their requests ran)."""
        return _method_words.method_text(self.tables)

    def provenance_line(self) -> str:
        """:func:`workbench.studies._study_words.provenance_line`: measured or simulated, engine, versions, host, n."""
        return _study_words.provenance_line(self.tables)

    def fleet_placement(self) -> pd.DataFrame | None:
        """Where each unit ran, for runs from a fleet (:func:`workbench.studies._fleet_view.fleet_placement`:
        variant, repeat, host, hostname, GPUs, co-tenants, duration, outcome, failure kind and line); None when
        none came from one."""
        return _fleet_view.fleet_placement(self.tables.manifests)

    def fleet_placement_line(self) -> str:
        """One sentence (plain text): units per fleet host and those that failed; ``""`` without fleet runs."""
        return _fleet_view.fleet_placement_line(self.tables.manifests)

    def fleet_hosts(self) -> pd.DataFrame | None:
        """Per host of a fleet sweep (:func:`workbench.studies._fleet_view.fleet_host_table`: units done,
        failed, GPUs used, seconds busy); None when no run came from a fleet."""
        return _fleet_view.fleet_host_table(self.tables.manifests)

    def fleet_section(self) -> str:
        """The report's *Where each unit ran* (markdown, every value placed literally:
        :func:`workbench.studies._fleet_view.fleet_section`); ``""`` when no run came from a fleet."""
        return _fleet_view.fleet_section(self.tables.manifests)

    # -- charts -----------------------------------------------------------------------------
    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """:func:`workbench.studies._study_charts.study_charts`: every chart of the study, by file stem."""
        return study_charts(self.tables)

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart as PNG and SVG into ``out_dir`` (relative: to the project root); one row per chart:
        ``chart`` (its stem), ``png`` and ``svg`` (file names) and ``folder``."""
        return charts.save_charts(self.charts(), paths.resolve(out_dir))


def load_study(
    runs: Sequence[str | Path],
    *,
    baseline: str | None = None,
    workload: str | None = None,
    ttft_target_ms: float | None = None,
    tpot_target_ms: float | None = None,
    seed_pair: Sequence[str] | None = None,
    runs_dir: str | Path | None = None,
) -> Study:
    """A :class:`Study` over runs: run directories, run ids or unique prefixes of one, resolved as
    every ``workbench runs`` command resolves them (:func:`workbench.store.find_run` under ``runs_dir``;
    None: ``$WORKBENCH_RUNS_DIR`` or data/runs).

    ``baseline`` names the variant the others are compared with; None: the first run's variant that decodes
    plainly, else the first run's (``benchmark_variants`` returns runs in the order of its ``variants``). ``workload`` picks
    which workload to show when the runs hold several (a label of
    :func:`workbench.bench.workload_labels`, as ``workbench runs show`` prints it); None: the
    one the most variants measured (:attr:`Study.other_workloads` lists the rest, and every
    chart's subtitle says which is shown). ``ttft_target_ms`` and ``tpot_target_ms`` (the
    spec-versus-baseline notebook's parameters) set goodput's latency targets, TTFT and TPOT in ms
    (:class:`workbench.studies._goodput.GoodputTargets`: the share of requests meeting every target,
    ``goodput_fraction``, and those requests per second, ``goodput_req_s``, shown beside throughput
    in the verdict and the policy; None: no goodput). ``seed_pair``: the seed investigation's
    (uncapped baseline, speculative variant), set beside the like-for-like pair
    (:meth:`Study.seed_figures`, :meth:`Study.cap_split`); kept only when both are among the runs.

    Raises:
        ConfigError: closed- and open-loop runs mixed beyond what can be set aside, an unknown workload, no
            baseline, a goodput target not > 0 ms, a ``seed_pair`` that does not name two variants, or a run
            that matches nothing (or a prefix that matches several: they are named).

    Rows of runs whose figures come from a simulator stand-in for a patch carry its
    label in ``sim_stand_in`` (None elsewhere), taken from each run's manifest.
    """
    goodput = GoodputTargets(ttft_ms=ttft_target_ms, tpot_ms=tpot_target_ms)
    return Study(
        read_tables(runs, baseline=baseline, workload=workload, goodput=goodput, seed_pair=seed_pair, runs_dir=runs_dir)
    )
