"""A sweep extended by levels reuses what is stored: the levels a stored run of the same sweep measured.

A sweep's identity hashes its plan, levels included, so the same sweep with one more level is another
sweep and would measure every level again. When a sweep opens a new run (none of its identity is stored,
and ``fresh`` is off), :func:`reuse_stored_levels` looks for a stored run of the same variant whose
identity is this sweep's with that run's levels (:meth:`VariantSweep.identity_with
<workbench.sweeps._sweep_prep.VariantSweep.identity_with>`: same variant definition, engine and its code,
host, client, label, prompts, seed, repeats and load, only :data:`LEVEL_FIELDS` differing) and copies into
the new run each of its stored units whose level this sweep also measures (:func:`level_keys`), renumbered
to this plan's level index; the pass then measures only the rest. The stored run is left as it was; the
new run's manifest says what it copied (``reused_levels``).

A run whose every level this sweep would copy is not used (nothing would be left to measure, so no server
would record the facts a run keeps of its server): such a sweep measures anew, as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.bench import LEVEL_INFO_COLUMNS, LevelResult
from workbench.errors import ConfigError, HostError
from workbench.report import report_progress
from workbench.store import RunWriter, list_runs, load_run, lock_owner
from workbench.sweeps._sweep_prep import VariantSweep

__all__ = ["LEVEL_FIELDS", "Reuse", "level_keys", "reuse_stored_levels"]

#: The plan's fields (:meth:`SweepPlan.to_json <workbench.bench.SweepPlan.to_json>`) that say which levels a
#: sweep measures: a stored run whose plan differs from a sweep's in these alone is the same sweep at other levels.
LEVEL_FIELDS = ("concurrency_levels", "request_rates", "requests_per_level")
#: Run statuses whose stored units can be reused (a ``running`` run may still be written).
_ENDED = ("complete", "incomplete", "failed", "interrupted")


@dataclasses.dataclass(frozen=True)
class Reuse:
    """What :func:`reuse_stored_levels` copied into a new run.

    Attributes:
        source: the stored run the units were copied from.
        units: ``(repeat, level_index in the source, level_index in the new run)`` of each unit copied.
    """

    source: Path
    units: tuple[tuple[int, int, int], ...]


def level_keys(plan_json: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What decides the figures of each level of a plan beyond the sweep's identity, one key per level index:
    its load (a concurrency, or a request rate), its value of a swept dimension, its request count and, with
    ``unique_prompts`` (each request's text tagged with its level index), its index.

    Args:
        plan_json: :meth:`SweepPlan.to_json <workbench.bench.SweepPlan.to_json>`, as a run's manifest records it.
    """
    rates = plan_json.get("request_rates")
    base: list[tuple[str, float]] = (
        [("request_rate", float(r)) for r in rates]
        if rates is not None
        else [("concurrency", float(c)) for c in plan_json.get("concurrency_levels") or []]
    )
    values = plan_json.get("sweep_values")
    grid = list(values) if values is not None else [None]
    counts = list(plan_json.get("requests_per_level") or [])
    keys = []
    for index in range(len(base) * len(grid)):
        key: tuple[Any, ...] = (
            *base[index % len(base)],
            grid[index // len(base)],
            int(counts[index]) if index < len(counts) else None,
        )
        keys.append((*key, index) if plan_json.get("unique_prompts") else key)
    return keys


def _renumbered(
    sweep: VariantSweep, plan_json: Mapping[str, Any], units: Sequence[tuple[int, int]], stored_plan: Mapping[str, Any]
) -> tuple[tuple[int, int, int], ...]:
    """The units of a stored run (plan ``stored_plan``) that ``sweep`` (plan ``plan_json``) measures too, each with
    its level index in ``sweep``'s plan."""
    mine, theirs = level_keys(plan_json), level_keys(stored_plan)
    out = []
    for repeat, index in units:
        if repeat < sweep.plan.repeats and index < len(theirs) and theirs[index] in mine:
            out.append((repeat, index, mine.index(theirs[index])))
    return tuple(out)


def _candidate(sweep: VariantSweep, plan_json: Mapping[str, Any]) -> Reuse | None:
    """The stored run of ``sweep`` at other levels with the most units to copy (the newest on a tie), or None."""
    try:
        listing = list_runs(sweep.root)
    except (ConfigError, HostError):
        return None  # a runs folder that cannot be listed: nothing to reuse, the sweep measures anew
    rows = listing[(listing["variant"] == sweep.variant.name) & listing["status"].isin(_ENDED)]
    total = len(sweep.plan.units())
    best: Reuse | None = None
    for path in reversed(list(rows["path"])):  # newest first
        if lock_owner(path)[0] in ("alive", "elsewhere"):
            continue  # another sweep writes it now
        try:
            manifest = load_run(path).manifest
        except (ConfigError, HostError):
            continue
        stored_plan = manifest.get("plan") or {}
        if (
            not stored_plan
            or manifest.get("identity") is None
            or manifest.get("identity")
            != sweep.identity_with({**plan_json, **{f: stored_plan.get(f) for f in LEVEL_FIELDS}})
        ):
            continue
        units = _renumbered(
            sweep, plan_json, [(int(r), int(i)) for r, i in manifest.get("units_completed") or []], stored_plan
        )
        if units and len(units) < total and (best is None or len(units) > len(best.units)):
            best = Reuse(Path(path), units)
    return best


def _level(
    tables: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame], repeat: int, index: int, new_index: int
) -> LevelResult:
    """Unit ``(repeat, index)`` of a stored run's ``(requests, levels, series)`` (:func:`workbench.store.load_run`)
    as a measured level at ``new_index``: its request rows, its level's observations and its server series."""

    def rows(frame: pd.DataFrame) -> pd.DataFrame:
        if not len(frame) or "level_index" not in frame:
            return frame.iloc[0:0]
        repeats = frame["repeat"] if "repeat" in frame else 0
        return frame[(repeats == repeat) & (frame["level_index"] == index)].copy()

    requests = rows(tables[0]).assign(level_index=new_index)
    levels = rows(tables[1])
    info = levels[[c for c in ("level_index", "repeat", *LEVEL_INFO_COLUMNS) if c in levels]].assign(
        level_index=new_index
    )
    series = rows(tables[2]).drop(columns=["repeat", "level_index"], errors="ignore")
    return LevelResult(
        requests=requests.reset_index(drop=True),
        info=info.reset_index(drop=True),
        server_info=None,
        plan=None,
        index=new_index,
        repeat=repeat,
        series=series if len(series) else None,
    )


def reuse_stored_levels(sweep: VariantSweep, writer: RunWriter) -> Reuse | None:
    """Copy into ``writer`` (the new, empty run of ``sweep``) the units a stored run of the same sweep at other
    levels holds of this sweep's levels, and record them in its manifest (``reused_levels``: the source's
    ``run_id`` and each unit's ``[repeat, source level_index, level_index]``). None when there is none.

    Raises:
        ConfigError, HostError (DiskFullError): as :meth:`RunWriter.save_level
        <workbench.store.RunWriter.save_level>`; the units copied before stay in the new run.
    """
    plan_json = sweep.plan.to_json(prompt_texts=False)
    found = _candidate(sweep, plan_json)
    if found is None:
        return None
    stored = load_run(found.source)
    for repeat, index, new_index in found.units:
        writer.save_level(_level((stored.requests, stored.levels, stored.series), repeat, index, new_index))
    writer.annotate(reused_levels={"run_id": stored.run_id, "units": [list(u) for u in found.units]})
    left = len(sweep.plan.units()) - len(found.units)
    labels = ", ".join(sweep.plan.unit_label((r, i)) for r, _, i in found.units)
    report_progress(
        f"{sweep.variant.name}: {len(found.units)} level(s) reused from run {stored.run_id} (the same "
        f"sweep at other levels: {labels}); measuring {left}"
    )
    return found
