"""Sweeps: a sweep's units measured and written as runs; on a fleet, those units as Ray tasks
(docs/FLEET.md)."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "Fleet": "_fleet",
    "FleetUnit": "_fleet",
    "Placement": "_fleet",
    "UnitOutcome": "_fleet",
    "UnitRecorder": "_fleet_record",
    "co_tenants": "_fleet_hosts",
    "host_summary": "_fleet_hosts",
    "replay": "_fleet_record",
    "run_units": "_fleet",
    "unit_entry": "_fleet_hosts",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
