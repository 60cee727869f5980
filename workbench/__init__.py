"""Workbench for investigating speculative decoding in SGLang.

The notebook-facing API, importable from the root (``import workbench as wb``):
benchmarking variants and reading the study (:func:`benchmark_variants`,
:func:`load_study`, :class:`Study`), inspecting SGLang source (:func:`find_definition`,
:func:`definition_history`, ...), checking variants (:func:`check_variants`,
:func:`variants_html`) and running reports (:func:`run_notebook`). Each name is
imported on first use, so ``import workbench`` is instant. The packages behind it,
and what each owns, are mapped in docs/ARCHITECTURE.md.
"""

from workbench._faces import lazy_face as _lazy_face

__version__ = "0.1.0"

#: Public name -> the package whose face exports it.
_NAMES = {
    "benchmark_variant": "sweeps",
    "benchmark_variants": "sweeps",
    "CalibrationStudy": "studies",
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
    "label_run": "sweeps",
    "list_runs": "sweeps",
    "list_variants": "variants",
    "load_calibration": "studies",
    "load_dynamic_disable": "studies",
    "load_quarantine": "store",
    "load_study": "studies",
    "load_variant": "variants",
    "patch_diffs_html": "variants",
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
    "source_panes": "source",
    "stored_runs": "sweeps",
    "Study": "studies",
    "summary_table": "source",
    "variants_html": "variants",
    "what_if": "studies",
    "WhatIf": "studies",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
