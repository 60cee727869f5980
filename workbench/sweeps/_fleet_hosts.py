"""Where a fleet sweep's units ran: each unit's co-tenants and a summary per host (pure).

A unit's **co-tenants** are the other units that ran on the same host (node IP) while it
ran: they shared its CPU, PCIe and memory bandwidth, so a manifest records them beside the
unit's host and GPUs. Intervals are the worker's start (:attr:`Placement.started_at`) to
the driver seeing the unit finish (:attr:`UnitOutcome.finished_at`), UTC seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.sweeps._fleet import UnitOutcome

__all__ = ["co_tenants", "host_summary", "unit_entry"]


def co_tenants(outcome: UnitOutcome, others: Sequence[UnitOutcome]) -> list[str]:
    """Labels of the units of ``others`` that overlapped ``outcome`` in time on its host (sorted)."""
    mine = outcome.placement
    if mine is None:
        return []
    found = set()
    for other in others:
        there = other.placement
        if other is outcome or there is None or there.host != mine.host:
            continue
        if there.started_at < outcome.finished_at and mine.started_at < other.finished_at:
            found.add(other.unit.label)
    return sorted(found)


def unit_entry(outcome: UnitOutcome, others: Sequence[UnitOutcome]) -> dict[str, Any]:
    """The manifest's ``fleet_units`` entry of one unit: what it measured, where, beside whom.

    Keys: ``label``, ``repeat`` (from the unit's key ``(variant index, repeat)``), ``host``,
    ``hostname``, ``node_id``, ``gpus`` (``CUDA_VISIBLE_DEVICES``), ``worker_pid``,
    ``submitted_at``/``started_at``/``server_ready_at``/``finished_at`` (UTC seconds; started
    and ready on the worker's clock), ``duration_s``, ``co_tenants`` and ``error``
    (None when it returned).
    """
    where = outcome.placement
    return {"label": outcome.unit.label, "repeat": outcome.unit.key[1], "host": where and where.host,
            "hostname": where and where.hostname, "node_id": where and where.node_id,
            "gpus": ",".join(where.gpus) if where else None, "worker_pid": where and where.pid,
            "submitted_at": outcome.submitted_at, "started_at": where and where.started_at,
            "server_ready_at": getattr(outcome.result, "ready_at", None), "finished_at": outcome.finished_at,
            "duration_s": None if where is None else round(outcome.finished_at - where.started_at, 3),
            "co_tenants": co_tenants(outcome, others), "error": outcome.error}


def host_summary(outcomes: Sequence[UnitOutcome]) -> list[dict[str, Any]]:
    """One row per host: ``host``, ``units`` (returned), ``failed`` (did not return), ``gpus_used``
    (distinct GPU ids), ``busy_s`` (sum of the units' durations); units never placed are under
    host ``None``. Sorted by host."""
    rows: dict[Any, dict[str, Any]] = {}
    for outcome in outcomes:
        where = outcome.placement
        host = where.host if where else None
        row = rows.setdefault(host, {"host": host, "units": 0, "failed": 0, "gpus": set(), "busy_s": 0.0})
        row["units" if outcome.ok else "failed"] += 1
        if where is not None:
            row["gpus"].update(where.gpus)
            row["busy_s"] += outcome.finished_at - where.started_at
    return [{"host": r["host"], "units": r["units"], "failed": r["failed"], "gpus_used": ",".join(sorted(r["gpus"])),
             "busy_s": round(r["busy_s"], 3)} for _, r in sorted(rows.items(), key=lambda kv: str(kv[0]))]
