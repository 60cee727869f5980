"""Sweeps: everything that launches, measures or writes runs.

Benchmarking variants (variant → engine → server → plan → sweep → store, one call per
notebook cell: :func:`benchmark_variant`, :func:`benchmark_variants`), the policy files a
policy study writes and runs (``_policy_files``), the run catalogue for notebooks and
``workbench runs`` (:func:`list_runs`, :func:`show_run`, :func:`label_run`,
:func:`compare_runs`, :func:`delete_run`, :func:`export_runs`), and the ``bench`` and ``runs``
verbs (``cli.py``). On a fleet (a Ray cluster, docs/FLEET.md) the same units run as Ray tasks
with GPU slots (``_fleet``: :class:`Fleet`, :func:`run_units`), their writes recorded on the
workers and replayed into the local runs (``_fleet_record``). What reads runs and explains them is :mod:`workbench.studies`; the map is
docs/ARCHITECTURE.md.
"""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it.
_NAMES = {
    "Fleet": "_fleet",
    "FleetUnit": "_fleet",
    "INDEX_NAME": "_policy_files",
    "Placement": "_fleet",
    "PolicyRun": "_policy_files",
    "adaptive_variant": "_policy_files",
    "benchmark_variant": "_investigation",
    "benchmark_variants": "_investigation",
    "compare_runs": "_catalogue",
    "delete_run": "_catalogue",
    "export_runs": "_catalogue",
    "label_run": "_catalogue",
    "list_runs": "_catalogue",
    "load_study": "_investigation",
    "read_policy_runs": "_policy_files",
    "save_study_charts": "_investigation",
    "setup_notebook": "_investigation",
    "show_markdown": "_investigation",
    "show_ratio_charts": "_investigation",
    "show_run": "_catalogue",
    "show_text": "_investigation",
    "stored_runs": "_catalogue",
    "threshold_variant": "_policy_files",
    "UnitOutcome": "_fleet",
    "run_units": "_fleet",
    "host_summary": "_fleet_hosts",
    "variant_settings": "_policy_files",
    "write_index": "_policy_files",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
