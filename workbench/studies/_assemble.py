"""Build a study's tables once: read the runs, check them, narrow them to what can be compared.

:func:`assemble_tables` turns rows (the runs' levels and requests, their manifests) into the frozen
:class:`workbench.studies._tables.StudyTables`: it finds the load axis, sets aside by name and reason the
runs that cannot be compared with the baseline (measured on the other kind of load, or on another
workload), refuses what cannot be a study (no baseline, two runs of one variant at one level), and adds
goodput under its targets. :func:`read_tables` reads stored runs first, as every ``workbench runs``
command resolves them. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.analysis import choose_workload, load_axis, load_modes
from workbench.errors import ConfigError
from workbench.studies._goodput import GoodputTargets, with_goodput
from workbench.studies._run_facts import drafts
from workbench.studies._tables import SetAsideRun, StudyTables

__all__ = ["assemble_tables", "read_tables"]

#: How each kind of load is said in a set-aside run's reason.
_LOOP_WORDS = {"closed": "closed-loop (at fixed concurrencies)", "open": "open-loop (at request rates)"}


def assemble_tables(
    levels: pd.DataFrame,
    requests: pd.DataFrame,
    manifests: Sequence[Mapping[str, Any]],
    baseline: str,
    *,
    workload: str | None = None,
    goodput: GoodputTargets = GoodputTargets(),
    seed_pair: tuple[str, str] | None = None,
) -> StudyTables:
    """The :class:`StudyTables` of these rows, compared against ``baseline``.

    The study compares levels on one load axis: ``concurrency`` for closed-loop runs,
    ``request_rate_req_s`` for open-loop ones (:func:`workbench.analysis.load_axis`); runs measured on
    the other kind than the baseline are set aside. It shows one workload (the ``workload`` column
    :func:`workbench.store.load_runs` labels rows with; a table built by hand without one is a single
    workload, ``"default"``): rows of other workloads are set aside, never taken as repeats, and each run
    none of whose rows is shown is named with why (:attr:`StudyTables.set_aside`).

    Args:
        levels: per-level rows (``variant``, the load column, metrics; ``run_id`` and ``level_index``
            to narrow ``requests`` with them).
        requests: per-request rows of those levels.
        manifests: the runs' manifests, in run order.
        baseline: the variant the others are compared with.
        workload: the workload to show; None: the one the most variants measured among those the
            baseline measured.
        goodput: latency targets for goodput (none: no goodput columns).
        seed_pair: the seed investigation's (uncapped baseline, speculative variant), or None.

    Raises:
        ConfigError: no rows of the baseline, a mixed load axis that remains, an unknown ``workload``
            or one the baseline did not measure, or two runs measuring the same variant, level and repeat.
    """
    names = list(dict.fromkeys(levels["variant"])) if len(levels) else []
    if baseline not in names:
        raise ConfigError(f"baseline variant {baseline!r} has no runs; runs cover {names}")
    levels, requests, set_aside = _set_aside_other_load(levels, requests, baseline)
    axis = load_axis(levels)
    if "workload" not in levels:  # a table built by hand, not read by load_runs: one workload
        levels = levels.assign(workload="default")
    if workload is None:  # only a workload the baseline measured can be compared with it
        measured = set(levels.loc[levels["variant"] == baseline, "workload"])
        candidates = levels[levels["workload"].isin(measured)]
        workload, _ = choose_workload(candidates["workload"], candidates["variant"])
    workload, others = choose_workload(levels["workload"], levels["variant"], workload)
    if others:
        kept = levels[levels["workload"] == workload]
        set_aside = [*set_aside, *_runs_left_out(levels, kept, workload=workload, baseline=baseline)]
        levels, requests = _keep(kept, requests)
        if baseline not in set(levels["variant"]):
            raise ConfigError(
                f"the baseline {baseline!r} did not measure workload {workload!r}; "
                f"pass workload= one of {[workload, *others]}"
            )
    keys = ["variant", axis.column, *(["repeat"] if "repeat" in levels else [])]
    dupes = levels.groupby(keys).size()
    if (dupes > 1).any():
        raise ConfigError(
            f"several runs measure the same variant and {axis.words} on workload {workload!r}: "
            f"{list(dupes[dupes > 1].index)}; pass one run per variant"
        )
    levels = with_goodput(levels, requests, goodput, load=axis.column)
    return StudyTables(
        levels=levels,
        requests=requests,
        manifests=tuple(dict(m) for m in manifests),
        baseline=baseline,
        workload=workload,
        axis=axis,
        goodput=goodput,
        seed_pair=seed_pair,
        other_workloads=tuple(others),
        set_aside=tuple(set_aside),
    )


def _keep(kept: pd.DataFrame, requests: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``kept`` (a subset of the level rows) with its index reset, and ``requests`` narrowed to its levels."""
    if {"run_id", "level_index"} <= set(requests.columns) and {"run_id", "level_index"} <= set(kept):
        keys = pd.MultiIndex.from_frame(kept[["run_id", "level_index"]].drop_duplicates())
        requests = requests[pd.MultiIndex.from_frame(requests[["run_id", "level_index"]]).isin(keys)].reset_index(
            drop=True
        )
    return kept.reset_index(drop=True), requests


def _set_aside_other_load(
    levels: pd.DataFrame, requests: pd.DataFrame, baseline: str
) -> tuple[pd.DataFrame, pd.DataFrame, list[SetAsideRun]]:
    """Runs measured on the other kind of load than the baseline (closed loop against open loop) are set
    aside by name and reason: the two share no axis, and a report never drops a run without saying so.
    Returns the levels and requests kept, and the runs set aside."""
    modes = load_modes(levels)
    if modes.nunique() < 2:
        return levels, requests, []
    mode = str(modes[levels["variant"] == baseline].mode().iloc[0])
    key = "run_id" if "run_id" in levels else "variant"
    out = []
    for run_id, rows in levels[modes != mode].groupby(key, sort=False):
        theirs = str(load_modes(rows).iloc[0])
        out.append(
            SetAsideRun(
                str(run_id),
                str(rows["variant"].iloc[0]),
                tuple(sorted(set(rows["workload"].astype(str)))) if "workload" in rows else (),
                (
                    f"it was measured {_LOOP_WORDS.get(theirs, theirs)}, and the baseline {baseline!r} "
                    f"{_LOOP_WORDS.get(mode, mode)}; a closed-loop level and an open-loop one are not the same load, so "
                    f"they share no axis and none of its figures is shown. Measure {baseline!r} the same way and "
                    "report the two together"
                ),
            )
        )
    kept, requests = _keep(levels[modes == mode], requests)
    return kept, requests, out


def _runs_left_out(levels: pd.DataFrame, kept: pd.DataFrame, *, workload: str, baseline: str) -> list[SetAsideRun]:
    """The runs of ``levels`` (by ``run_id``; by variant without one) none of whose rows is in ``kept``."""
    key = "run_id" if "run_id" in levels else "variant"
    out = []
    for run_id, rows in levels.groupby(key, sort=False):
        if str(run_id) in set(kept[key].astype(str)):
            continue
        workloads = tuple(sorted(set(rows["workload"].astype(str))))
        variant = str(rows["variant"].iloc[0])
        theirs = ", ".join(workloads)
        out.append(
            SetAsideRun(
                str(run_id),
                variant,
                workloads,
                (
                    f"it measured workload {theirs}, and this report compares {workload}, the workload of the "
                    f"baseline {baseline!r}; levels of different workloads (output lengths, prompts) are never "
                    f"compared, so none of its figures is shown. Measure {baseline!r} on {theirs} too and report "
                    "the two together"
                ),
            )
        )
    return out


def read_tables(
    runs: Sequence[str | Path],
    *,
    baseline: str | None = None,
    workload: str | None = None,
    goodput: GoodputTargets = GoodputTargets(),
    seed_pair: Sequence[str] | None = None,
    runs_dir: str | Path | None = None,
) -> StudyTables:
    """:func:`assemble_tables` over stored runs: run directories, run ids or unique prefixes of one, resolved
    as every ``workbench runs`` command resolves them (:func:`workbench.store.find_run` under ``runs_dir``;
    None: ``$WORKBENCH_RUNS_DIR`` or data/runs).

    ``baseline`` None: the first run's variant that decodes plainly (:func:`workbench.studies._run_facts.drafts`), else
    the first run's (every run drafts: the study then says it has no plain-decoding baseline). ``seed_pair`` is kept only when both of its variants are
    among the runs and its baseline is not the study's. Rows of runs whose figures come from a simulator
    stand-in for a patch carry its label in ``sim_stand_in`` (None elsewhere), from each run's manifest.

    Raises:
        ConfigError: as :func:`assemble_tables`, a ``seed_pair`` that does not name two variants, or a run
            that matches nothing (or a prefix that matches several: they are named).
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
    plain = [m for m in manifests if drafts([m], str(m.get("variant"))) is False]  # runs that decode plainly
    first = str((plain or manifests)[0].get("variant")) if manifests else "baseline"
    chosen = first if baseline is None else baseline
    names = {m.get("variant") for m in manifests}
    pair = (seed_pair[0], seed_pair[1]) if seed_pair and len(seed_pair) == 2 and set(seed_pair) <= names else None
    if seed_pair and pair is None and len(seed_pair) != 2:
        raise ConfigError(
            f"seed_pair must name two variants (the seed's baseline, its speculative variant), got {list(seed_pair)!r}"
        )
    return assemble_tables(
        levels,
        requests,
        manifests,
        chosen,
        workload=workload,
        goodput=goodput,
        seed_pair=pair if pair and pair[0] != chosen else None,
    )
