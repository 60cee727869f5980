"""Sweeps: everything that launches, measures or writes runs.

Benchmarking variants (variant → engine → server → plan → sweep → store, one call per
notebook cell: :func:`benchmark_variant`, :func:`benchmark_variants`), the policy sweep (:func:`dynamic_disable`:
sweep, write the derived policies as variant files, run them: :func:`write_policies`,
:func:`measure_policies`), the run catalogue for notebooks and
``workbench runs`` (:func:`list_runs`, :func:`show_run`, :func:`label_run`,
:func:`compare_runs`, :func:`delete_run`, :func:`export_runs`), and the ``bench`` and ``runs``
verbs (``cli.py``). What reads runs and explains them is :mod:`workbench.studies`; the map is
docs/ARCHITECTURE.md.
"""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it.
_NAMES = {
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
    "stored_runs": "_catalogue",
    "write_policies": "_policy_sweep",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
