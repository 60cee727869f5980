"""Where each unit of a fleet sweep ran, from the runs' manifests (pure; docs/FLEET.md).

A run measured on a fleet (``workbench.sweeps``, ``benchmark_variants(..., fleet=...)``) records
one ``fleet_units`` entry per (variant, repeat) unit it submitted: the Ray node's IP and host name,
the GPUs Ray gave it (its ``CUDA_VISIBLE_DEVICES``), the units beside it on that host while it ran
(``co_tenants``: they shared its CPU, PCIe and memory bandwidth), its duration and, when it did not
return, why. This module turns those entries into the report's table; runs from one host have none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["FLEET_COLUMNS", "fleet_placement", "fleet_placement_line"]

#: The placement table's columns, in order (``repeat`` counts from 1 as the report's other tables do).
FLEET_COLUMNS = ("variant", "repeat", "host", "hostname", "gpus", "co_tenants", "duration_s", "outcome")


def fleet_placement(manifests: Sequence[Mapping[str, Any]]) -> pd.DataFrame | None:
    """One row per unit of the fleet runs among ``manifests``: where it ran and beside whom.

    Args:
        manifests: run manifests (``Study.manifests``); those without ``fleet_units`` are skipped.

    Returns:
        :data:`FLEET_COLUMNS`: ``variant``, ``repeat`` (1-based), ``host`` (node IP), ``hostname``,
        ``gpus`` (``"2,3"``), ``co_tenants`` (labels joined by ``"; "``, ``"none"`` when it ran alone),
        ``duration_s`` (its worker's start to the driver seeing it finish, seconds) and ``outcome``
        (``"ok"``, or the error that ended it: a lost worker or node after its retries, an exception,
        ``"cancelled"``). Rows in run order, then submission order. None when no run came from a fleet.
    """
    rows = []
    for m in manifests:
        for unit in m.get("fleet_units") or []:
            rows.append({"variant": m.get("variant"), "repeat": int(unit.get("repeat", 0)) + 1,
                         "host": unit.get("host"), "hostname": unit.get("hostname"), "gpus": unit.get("gpus"),
                         "co_tenants": "; ".join(unit.get("co_tenants") or []) or "none",
                         "duration_s": unit.get("duration_s"), "outcome": unit.get("error") or "ok"})
    if not rows:
        return None
    return pd.DataFrame(rows, columns=list(FLEET_COLUMNS))


def fleet_placement_line(manifests: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on the fleet runs' placement: units per host and the units that did not return.

    Returns ``""`` when no run came from a fleet, else e.g. ``"8 units ran on a fleet of 2 hosts
    (10.0.0.5: 4, 10.0.0.6: 4); every unit returned."``.
    """
    table = fleet_placement(manifests)
    if table is None:
        return ""
    placed = table[table["host"].notna()]
    counts = placed.groupby("host").size()
    hosts = ", ".join(f"{host}: {n}" for host, n in counts.items())
    failed = table[table["outcome"] != "ok"]
    tail = "every unit returned." if failed.empty else \
        f"{len(failed)} did not return ({', '.join(f'{r.variant} repeat {r.repeat}' for r in failed.itertuples())})."
    return f"{len(table)} units ran on a fleet of {len(counts)} host(s) ({hosts or 'none placed'}); {tail}"
