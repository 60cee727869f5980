"""Sweeps: everything that launches, measures or writes runs.

Benchmarking variants (variant → engine → server → plan → sweep → store, one call per
notebook cell: :func:`benchmark_variant`, :func:`benchmark_variants`), the policy sweep (:func:`dynamic_disable`:
sweep, write the derived policies as variant files, run them: :func:`write_policies`,
:func:`measure_policies`), the run catalogue for notebooks and
``workbench runs`` (:func:`list_runs`, :func:`show_run`, :func:`label_run`,
:func:`compare_runs`, :func:`delete_run`, :func:`export_runs`), and the ``bench`` and ``runs``
verbs (``cli.py``). On a fleet (a Ray cluster, docs/FLEET.md) the same units run as Ray tasks
with GPU slots (``_fleet``: :func:`run_units`; ``_fleet_connect``: :class:`Fleet`), their writes recorded on
the workers and replayed into the local runs (``_fleet_record``, ``_fleet_pass``). What reads runs and explains them is :mod:`workbench.studies`; the map is
docs/ARCHITECTURE.md.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it.
_NAMES = {
    "Fleet": "_fleet_connect",
    "FleetUnit": "_fleet_units",
    "Placement": "_fleet_units",
    "benchmark_variant": "_investigation",
    "benchmark_variants": "_investigation",
    "compare_runs": "_catalogue",
    "delete_run": "_catalogue",
    "dynamic_disable": "_policy_sweep",
    "export_runs": "_catalogue",
    "label_run": "_catalogue",
    "list_runs": "_catalogue",
    "measure_policies": "_policy_sweep",
    "show_run": "_catalogue",
    "write_policies": "_policy_sweep",
    "UnitOutcome": "_fleet_units",
    "run_units": "_fleet",
    "host_summary": "_fleet_hosts",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.sweeps._fleet_connect import Fleet as Fleet
    from workbench.sweeps._fleet_units import FleetUnit as FleetUnit
    from workbench.sweeps._fleet_units import Placement as Placement
    from workbench.sweeps._investigation import benchmark_variant as benchmark_variant
    from workbench.sweeps._investigation import benchmark_variants as benchmark_variants
    from workbench.sweeps._catalogue import compare_runs as compare_runs
    from workbench.sweeps._catalogue import delete_run as delete_run
    from workbench.sweeps._policy_sweep import dynamic_disable as dynamic_disable
    from workbench.sweeps._catalogue import export_runs as export_runs
    from workbench.sweeps._catalogue import label_run as label_run
    from workbench.sweeps._catalogue import list_runs as list_runs
    from workbench.sweeps._policy_sweep import measure_policies as measure_policies
    from workbench.sweeps._catalogue import show_run as show_run
    from workbench.sweeps._policy_sweep import write_policies as write_policies
    from workbench.sweeps._fleet_units import UnitOutcome as UnitOutcome
    from workbench.sweeps._fleet import run_units as run_units
    from workbench.sweeps._fleet_hosts import host_summary as host_summary
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
