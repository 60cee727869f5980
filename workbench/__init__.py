"""Workbench for investigating speculative decoding in SGLang.

The notebook-facing API, importable from the root (``import workbench as wb``):
benchmarking variants and reading the study (:func:`benchmark_variants`,
:func:`load_study`, :class:`Study`), inspecting SGLang source (:func:`find_definition`,
:func:`definition_history`, ...), checking variants (:func:`check_variants`,
:func:`variants_html`) and running reports (:func:`run_notebook`). Each name is
imported on first use, so ``import workbench`` is instant. The packages behind it,
and what each owns, are mapped in docs/ARCHITECTURE.md.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face
from workbench._version import __version__ as __version__

#: Public name -> the package whose face exports it.
_NAMES = {
    "benchmark_variant": "sweeps",
    "benchmark_variants": "sweeps",
    "CalibrationStudy": "studies",
    "calibration_opening": "studies",
    "callers_table": "source",
    "check_variants": "variants",
    "compare_runs": "sweeps",
    "definition_history": "source",
    "delete_run": "sweeps",
    "diff_panes": "source",
    "dynamic_disable": "sweeps",
    "expand_grid": "variants",
    "export_runs": "sweeps",
    "find_definition": "source",
    "find_references": "source",
    "findings_html": "variants",
    "get_host": "hosts",
    "history_diffs": "source",
    "history_events": "source",
    "history_table": "source",
    "import_results": "imports",
    "is_local": "hosts",
    "label_run": "sweeps",
    "list_runs": "sweeps",
    "list_variants": "variants",
    "load_calibration": "studies",
    "load_dynamic_disable": "studies",
    "load_quarantine": "store",
    "load_study": "studies",
    "load_variant": "variants",
    "load_workloads": "studies",
    "patch_diffs_html": "variants",
    "policy_opening": "studies",
    "PolicyStudy": "studies",
    "resolve_engine": "engines",
    "run_notebook": "report",
    "save_study_charts": "studies",
    "setup_notebook": "studies",
    "show_markdown": "studies",
    "show_panel": "studies",
    "show_ratio_charts": "studies",
    "show_run": "sweeps",
    "show_server_series": "studies",
    "show_text": "studies",
    "source_panes": "source",
    "stored_runs": "store",
    "Study": "studies",
    "summary_table": "source",
    "variants_html": "variants",
    "what_if": "studies",
    "what_if_opening": "studies",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.sweeps import benchmark_variant as benchmark_variant
    from workbench.sweeps import benchmark_variants as benchmark_variants
    from workbench.studies import CalibrationStudy as CalibrationStudy
    from workbench.studies import calibration_opening as calibration_opening
    from workbench.source import callers_table as callers_table
    from workbench.variants import check_variants as check_variants
    from workbench.sweeps import compare_runs as compare_runs
    from workbench.source import definition_history as definition_history
    from workbench.sweeps import delete_run as delete_run
    from workbench.source import diff_panes as diff_panes
    from workbench.sweeps import dynamic_disable as dynamic_disable
    from workbench.variants import expand_grid as expand_grid
    from workbench.sweeps import export_runs as export_runs
    from workbench.source import find_definition as find_definition
    from workbench.source import find_references as find_references
    from workbench.variants import findings_html as findings_html
    from workbench.hosts import get_host as get_host
    from workbench.source import history_diffs as history_diffs
    from workbench.source import history_events as history_events
    from workbench.source import history_table as history_table
    from workbench.imports import import_results as import_results
    from workbench.hosts import is_local as is_local
    from workbench.sweeps import label_run as label_run
    from workbench.sweeps import list_runs as list_runs
    from workbench.variants import list_variants as list_variants
    from workbench.studies import load_calibration as load_calibration
    from workbench.studies import load_dynamic_disable as load_dynamic_disable
    from workbench.store import load_quarantine as load_quarantine
    from workbench.studies import load_study as load_study
    from workbench.variants import load_variant as load_variant
    from workbench.studies import load_workloads as load_workloads
    from workbench.variants import patch_diffs_html as patch_diffs_html
    from workbench.studies import policy_opening as policy_opening
    from workbench.studies import PolicyStudy as PolicyStudy
    from workbench.engines import resolve_engine as resolve_engine
    from workbench.report import run_notebook as run_notebook
    from workbench.studies import save_study_charts as save_study_charts
    from workbench.studies import setup_notebook as setup_notebook
    from workbench.studies import show_markdown as show_markdown
    from workbench.studies import show_panel as show_panel
    from workbench.studies import show_ratio_charts as show_ratio_charts
    from workbench.sweeps import show_run as show_run
    from workbench.studies import show_server_series as show_server_series
    from workbench.studies import show_text as show_text
    from workbench.source import source_panes as source_panes
    from workbench.store import stored_runs as stored_runs
    from workbench.studies import Study as Study
    from workbench.source import summary_table as summary_table
    from workbench.variants import variants_html as variants_html
    from workbench.studies import what_if as what_if
    from workbench.studies import what_if_opening as what_if_opening
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
