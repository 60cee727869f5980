"""A fleet sweep's units summed per host (pure; docs/FLEET.md).

One function serves the driver's progress lines (``workbench.sweeps``, from the units'
outcomes as they finish) and the report (``workbench.studies``, from the manifests'
``fleet_units`` entries), so both count a host's units the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["HOST_COLUMNS", "fleet_hosts"]

#: The per-host summary's keys, in order.
HOST_COLUMNS = ("host", "units", "failed", "gpus_used", "busy_s")


def fleet_hosts(units: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per host of a fleet sweep's units.

    Args:
        units: one mapping per unit with ``host`` (node IP; None for a unit never placed, such as
            one lost with its node or cancelled before it started), ``gpus`` (``"0,1"`` or None),
            ``duration_s`` (seconds, or None) and ``failed`` (True when the unit did not finish:
            its server failed, its worker or node was lost, it raised or it was cancelled).

    Returns:
        Rows with :data:`HOST_COLUMNS`: ``host``, ``units`` (units that finished), ``failed`` (those
        that did not), ``gpus_used`` (the distinct GPU ids, sorted, joined by ``,``), ``busy_s``
        (the sum of the units' durations, rounded to milliseconds). Sorted by host, the unplaced
        units (host None) last.
    """
    rows: dict[Any, dict[str, Any]] = {}
    for unit in units:
        host = unit.get("host")
        row = rows.setdefault(host, {"host": host, "units": 0, "failed": 0, "gpus": set(), "busy_s": 0.0})
        row["failed" if unit.get("failed") else "units"] += 1
        if unit.get("gpus"):
            row["gpus"].update(str(unit["gpus"]).split(","))
        if unit.get("duration_s") is not None:
            row["busy_s"] += float(unit["duration_s"])
    ordered = sorted(rows.values(), key=lambda r: (r["host"] is None, str(r["host"])))
    return [
        {
            "host": r["host"],
            "units": r["units"],
            "failed": r["failed"],
            "gpus_used": ",".join(sorted(r["gpus"], key=lambda g: (len(g), g))),
            "busy_s": round(r["busy_s"], 3),
        }
        for r in ordered
    ]
