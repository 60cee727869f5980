"""What a run's manifest records, for the writer and the readers alike.

A run directory's ``manifest.json`` (:mod:`workbench.store._runs` writes it; the catalogue, the resume and
imported runs read or write it too) has a schema version (:data:`SCHEMA_VERSION`), the keys every manifest
has (:data:`STANDARD_KEYS`), a status (:data:`RunStatus`) and the list of units stored, its commit point
(:func:`stored_units`). Every stored row carries the run's columns (:data:`RUN_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["RUN_COLUMNS", "SCHEMA_VERSION", "STANDARD_KEYS", "RunStatus", "stored_units"]

#: The version of the manifest's layout.
SCHEMA_VERSION = 1
#: The columns every stored row (request, level) carries, first.
RUN_COLUMNS = ("run_id", "variant", "engine", "simulated")
#: Keys every manifest has (set by :mod:`workbench.store._runs`' ``new_run``, ``save_level`` and ``finish_run``).
STANDARD_KEYS = frozenset(
    {
        "schema_version",
        "run_id",
        "variant",
        "engine",
        "simulated",
        "status",
        "error",
        "started_at",
        "finished_at",
        "host",
        "client_location",
        "launch_command",
        "sglang_version",
        "time_scale",
        "plan",
        "levels_completed",
        "num_requests",
        "server_info",
        "workbench",
        "identity",
        "label",
        "units_completed",
    }
)
#: Run statuses: measuring, every unit stored, stopped by an error, stopped with units left (resumable),
#: stopped by the user (Ctrl-C: KeyboardInterrupt; resumable).
RunStatus = Literal["running", "complete", "failed", "incomplete", "interrupted"]


def stored_units(manifest: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The ``(repeat, level_index)`` units a manifest lists as stored.

    Manifests written before ``units_completed`` existed stored one repeat, levels in
    plan order: their first ``levels_completed`` levels of repeat 0.
    """
    units = manifest.get("units_completed")
    if units is None:
        return [(0, i) for i in range(int(manifest.get("levels_completed") or 0))]
    return [(int(r), int(i)) for r, i in units]
