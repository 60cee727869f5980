"""Where each unit of a fleet sweep ran and how it ended, from the runs' manifests (pure; docs/FLEET.md).

A run measured on a fleet (``workbench.sweeps``, ``benchmark_variants(..., fleet=...)``) records
one ``fleet_units`` entry per (variant, repeat) unit it submitted: the Ray node's IP and host name,
the GPUs Ray gave it (its ``CUDA_VISIBLE_DEVICES``), the units beside it on that host while it ran
(``co_tenants``: they shared its CPU, PCIe and memory bandwidth), its duration and its outcome (done,
or failed with the failure's kind and first line). This module turns those entries into the report's
section: a sentence, a table per unit and a table per host; runs from one host have none. Every value
placed in the section's markdown goes through :func:`workbench.markup.literal`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.analysis import HOST_COLUMNS, fleet_hosts
from workbench.markup import literal

__all__ = ["FLEET_COLUMNS", "fleet_host_table", "fleet_placement", "fleet_placement_line", "fleet_section"]

#: The placement table's columns, in order (``repeat`` counts from 1 as the report's other tables do).
FLEET_COLUMNS = (
    "variant",
    "repeat",
    "host",
    "hostname",
    "gpus",
    "co_tenants",
    "duration_s",
    "moved_from",
    "outcome",
    "failure_kind",
    "failure",
)


def _outcome(unit: Mapping[str, Any]) -> tuple[str, Any, Any]:
    """``(outcome, failure_kind, failure)`` of an entry; an entry written before outcomes were recorded
    (no ``outcome`` key) failed when it has an ``error`` (Ray's, or the task's)."""
    if "outcome" in unit:
        return unit["outcome"], unit.get("failure_kind"), unit.get("failure")
    error = unit.get("error")
    return ("failed", None, error) if error else ("done", None, None)


def fleet_placement(manifests: Sequence[Mapping[str, Any]]) -> pd.DataFrame | None:
    """One row per unit of the fleet runs among ``manifests``: where it ran, beside whom, how it ended.

    Args:
        manifests: run manifests (``Study.manifests``); those without ``fleet_units`` are skipped.

    Returns:
        :data:`FLEET_COLUMNS`: ``variant``, ``repeat`` (1-based), ``host`` (node IP), ``hostname``,
        ``gpus`` (``"2,3"``), ``co_tenants`` (labels joined by ``"; "``, ``"none"`` when it ran alone),
        ``duration_s`` (its worker's start to the driver seeing it finish, seconds), ``moved_from`` (the
        lost hosts a ``one_unit_per_host`` unit was pinned to before, joined by ``", "``; None when it
        never moved), ``outcome``
        (``"done"`` or ``"failed"``), ``failure_kind`` (the server's classification such as ``killed``
        or ``oom``; ``killed`` also for a worker or node Ray lost; ``cancelled``; None when done) and
        ``failure`` (the failure's first line). Rows in run order, then submission order. None when no
        run came from a fleet.
    """
    rows = []
    for m in manifests:
        for unit in m.get("fleet_units") or []:
            outcome, kind, failure = _outcome(unit)
            rows.append(
                {
                    "variant": m.get("variant"),
                    "repeat": int(unit.get("repeat", 0)) + 1,
                    "host": unit.get("host"),
                    "hostname": unit.get("hostname"),
                    "gpus": unit.get("gpus"),
                    "co_tenants": "; ".join(unit.get("co_tenants") or []) or "none",
                    "duration_s": unit.get("duration_s"),
                    "moved_from": ", ".join(unit.get("moved_from") or []) or None,
                    "outcome": outcome,
                    "failure_kind": kind,
                    "failure": failure,
                }
            )
    if not rows:
        return None
    return pd.DataFrame(rows, columns=list(FLEET_COLUMNS))


def fleet_host_table(manifests: Sequence[Mapping[str, Any]]) -> pd.DataFrame | None:
    """One row per host of the fleet runs among ``manifests`` (:func:`workbench.analysis.fleet_hosts`):
    ``host``, ``units`` (done), ``failed``, ``gpus_used``, ``busy_s``; None when no run came from a fleet."""
    table = fleet_placement(manifests)
    if table is None:
        return None
    given = table.astype(object).where(table.notna(), None)  # a missing host or duration as None, not NaN
    units = [
        {"host": r.host, "gpus": r.gpus, "duration_s": r.duration_s, "failed": r.outcome != "done"}
        for r in given.itertuples()
    ]
    return pd.DataFrame(fleet_hosts(units), columns=list(HOST_COLUMNS))


def fleet_placement_line(manifests: Sequence[Mapping[str, Any]]) -> str:
    """One sentence (plain text) on the fleet runs' placement: units per host and the units that failed.

    Returns ``""`` when no run came from a fleet, else e.g. ``"8 units ran on a fleet of 2 hosts
    (10.0.0.5: 4, 10.0.0.6: 4); every unit finished."``, ``"1 unit ran on a fleet of 1 host (...)"``
    or ``"...; 1 failed (baseline repeat 2: killed)."``.
    """
    table = fleet_placement(manifests)
    if table is None:
        return ""
    placed = table[table["host"].notna()]
    counts = placed.groupby("host").size()
    hosts = ", ".join(f"{host}: {n}" for host, n in counts.items())
    failed = table[table["outcome"] != "done"]
    tail = (
        "every unit finished."
        if failed.empty
        else f"{len(failed)} failed ("
        + ", ".join(f"{r.variant} repeat {r.repeat}: {_or(r.failure_kind, 'failed')}" for r in failed.itertuples())
        + ")."
    )
    moved = table[table["moved_from"].notna() & table["host"].notna()]  # ran somewhere else afterwards
    if not moved.empty:
        tail += (
            f" {_counted(len(moved), 'unit')} moved to another host after the one "
            f"{'it was' if len(moved) == 1 else 'they were'} pinned to was lost ("
            + "; ".join(f"{r.variant} repeat {r.repeat}, lost on {r.moved_from}" for r in moved.itertuples())
            + ")."
        )
    return (
        f"{_counted(len(table), 'unit')} ran on a fleet of {_counted(len(counts), 'host')} "
        f"({hosts or 'none placed'}); {tail}"
    )


def _counted(n: int, noun: str) -> str:
    """``"1 unit"``, ``"2 units"``: a count with its noun in the number it needs."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _or(value: Any, default: str) -> Any:
    """``value``, or ``default`` when it is missing (None or NaN: a table column without a value)."""
    return default if value is None or (isinstance(value, float) and pd.isna(value)) else value


def _cell(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return literal(value)


def _markdown_table(frame: pd.DataFrame) -> list[str]:
    head = "| " + " | ".join(literal(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    return [
        head,
        rule,
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.astype(object).itertuples(index=False)),
    ]


def fleet_section(manifests: Sequence[Mapping[str, Any]]) -> str:
    """The report's section on a fleet sweep (markdown), ``""`` when no run came from a fleet.

    A heading (*Where each unit ran*), :func:`fleet_placement_line`, the table per unit
    (:func:`fleet_placement`; a failed unit's outcome reads ``failed (KIND): FIRST LINE``) and the
    table per host (:func:`fleet_host_table`). Every value is placed with
    :func:`workbench.markup.literal`, so a name or error carrying markup shows as text.
    """
    table = fleet_placement(manifests)
    if table is None:
        return ""
    shown = table.drop(columns=["failure_kind", "failure"]).astype(object)
    shown["outcome"] = [
        r.outcome if r.outcome == "done" else f"{r.outcome} ({_or(r.failure_kind, 'unknown')}): {_or(r.failure, '-')}"
        for r in table.itertuples()
    ]
    hosts = fleet_host_table(manifests)
    assert hosts is not None  # there is a placement table
    return "\n".join(
        [
            "### Where each unit ran",
            "",
            "Each (variant, repeat) unit of the fleet sweep: its host, the GPUs "
            "Ray gave it, the units beside it on that host while it ran (they shared its CPU, PCIe and "
            "memory bandwidth), how long it ran and how it ended (docs/FLEET.md). "
            + literal(fleet_placement_line(manifests)),
            "",
            *_markdown_table(shown),
            "",
            "**Per host** (units done and failed, GPUs used, seconds busy):",
            "",
            *_markdown_table(hosts.rename(columns={"units": "units_done", "failed": "units_failed"}).astype(object)),
            "",
        ]
    )
