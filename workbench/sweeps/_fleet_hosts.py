"""Where a fleet sweep's units ran: each unit's co-tenants and a summary per host (pure).

A unit's **co-tenants** are the other units that ran on the same host (node IP) while it
ran: they shared its CPU, PCIe and memory bandwidth, so a manifest records them beside the
unit's host and GPUs. Intervals are the worker's start (:attr:`Placement.started_at`) to
the driver seeing the unit finish (:attr:`UnitOutcome.finished_at`), UTC seconds.

A unit **failed** when its server failed (the recorder's classified ``failure``), when Ray
gave up on it (its worker or node lost after the retries), when it raised, or when it was
cancelled: :func:`unit_failure` says which, in one line, for the manifest and the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.analysis import fleet_hosts
from workbench.sweeps._fleet_units import UnitOutcome
from workbench.sweeps._fleet_record import UnitRecorder

__all__ = ["LOST_KIND", "RAISED_KIND", "co_tenants", "host_summary", "unit_entry", "unit_failure"]

#: The failure kind of a unit whose worker or node Ray lost (after its retries): its server was killed with it.
LOST_KIND = "killed"
#: The failure kind of a unit whose task raised (not a classified server failure).
RAISED_KIND = "unknown"
#: The longest one-line failure a manifest entry keeps (the full message is in the sweep's failure).
FAILURE_LINE_CHARS = 300


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


def unit_failure(outcome: UnitOutcome) -> tuple[str, str] | None:
    """``(kind, message)`` of a unit that failed, None for one that finished.

    The kind is the server's classification (``workbench.servers``: ``killed``, ``oom``, ...) when its
    server failed, :data:`LOST_KIND` when Ray lost its worker or node after the retries (the message
    then starts with Ray's exception, e.g. ``NodeDiedError``), :data:`RAISED_KIND` when the task
    raised, ``"cancelled"`` when it was cancelled (Ctrl-C). The message may span lines.
    """
    if outcome.error == "cancelled":
        return "cancelled", "cancelled before it finished (Ctrl-C or a cancel)"
    if outcome.error is not None:
        return (LOST_KIND if outcome.lost else RAISED_KIND), outcome.error
    failure = outcome.result.failure if isinstance(outcome.result, UnitRecorder) else None  # its server failed
    if failure is not None:
        return failure.kind, failure.message
    return None


def _one_line(message: str) -> str:
    line = next((part.strip() for part in message.splitlines() if part.strip()), "")
    return line if len(line) <= FAILURE_LINE_CHARS else line[: FAILURE_LINE_CHARS - 3] + "..."


def unit_entry(outcome: UnitOutcome, others: Sequence[UnitOutcome]) -> dict[str, Any]:
    """The manifest's ``fleet_units`` entry of one unit: what it measured, where, beside whom.

    Keys: ``label``, ``repeat`` (from the unit's key ``(variant index, repeat)``), ``host``,
    ``hostname``, ``node_id``, ``gpus`` (``CUDA_VISIBLE_DEVICES``), ``worker_pid``,
    ``submitted_at``/``started_at``/``server_ready_at``/``finished_at`` (UTC seconds; started
    and ready on the worker's clock), ``duration_s``, ``co_tenants``, ``error`` (Ray's or the
    task's: None when it returned), ``outcome`` (``"done"`` or ``"failed"``), ``failure_kind`` and
    ``failure`` (:func:`unit_failure`'s kind and the first line of its message, at most
    :data:`FAILURE_LINE_CHARS` characters; None when done), ``moved_from`` (the lost hosts it was pinned to
    before it ran on ``host``, :attr:`UnitOutcome.moved_from`; ``[]`` when it never moved).
    """
    where = outcome.placement
    failed = unit_failure(outcome)
    recorder = outcome.result if isinstance(outcome.result, UnitRecorder) else None
    return {
        "label": outcome.unit.label,
        "repeat": outcome.unit.key[1],
        "host": where and where.host,
        "hostname": where and where.hostname,
        "node_id": where and where.node_id,
        "gpus": ",".join(where.gpus) if where else None,
        "worker_pid": where and where.pid,
        "submitted_at": outcome.submitted_at,
        "started_at": where and where.started_at,
        "server_ready_at": recorder and recorder.ready_at,
        "finished_at": outcome.finished_at,
        "duration_s": None if where is None else round(outcome.finished_at - where.started_at, 3),
        "co_tenants": co_tenants(outcome, others),
        "error": outcome.error,
        "outcome": "failed" if failed else "done",
        "failure_kind": failed and failed[0],
        "failure": failed and _one_line(failed[1]),
        "moved_from": list(outcome.moved_from),
    }


def host_summary(outcomes: Sequence[UnitOutcome]) -> list[dict[str, Any]]:
    """One row per host (:func:`workbench.analysis.fleet_hosts`): ``host``, ``units`` (finished),
    ``failed`` (:func:`unit_failure`), ``gpus_used`` (distinct GPU ids), ``busy_s`` (sum of the units'
    durations); units never placed are under host ``None``, last."""
    return fleet_hosts(
        {
            "host": o.placement.host if o.placement else None,
            "gpus": ",".join(o.placement.gpus) if o.placement else None,
            "duration_s": o.finished_at - o.placement.started_at if o.placement else None,
            "failed": unit_failure(o) is not None,
        }
        for o in outcomes
    )
