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

#: Public name -> the module (a private root module or a package's face) that defines it.
_NAMES = {
    "benchmark_variant": "_investigation",
    "benchmark_variants": "_investigation",
    "CalibrationStudy": "_calibration_study",
    "callers_table": "source",
    "check_variants": "variants",
    "compare_runs": "_catalogue",
    "definition_history": "source",
    "delete_run": "_catalogue",
    "diff_panes": "source",
    "dynamic_disable": "_policy_study",
    "expand_grid": "variants",
    "export_runs": "_catalogue",
    "find_definition": "source",
    "find_references": "source",
    "findings_html": "variants",
    "get_host": "hosts",
    "history_diffs": "source",
    "history_events": "source",
    "history_table": "source",
    "import_results": "imports",
    "label_run": "_catalogue",
    "list_runs": "_catalogue",
    "list_variants": "variants",
    "load_calibration": "_calibration_study",
    "load_dynamic_disable": "_policy_study",
    "load_quarantine": "store",
    "load_study": "_investigation",
    "load_variant": "variants",
    "patch_diffs_html": "variants",
    "PolicyStudy": "_policy_study",
    "resolve_engine": "engines",
    "run_notebook": "report",
    "save_study_charts": "_investigation",
    "setup_notebook": "_investigation",
    "show_markdown": "_investigation",
    "show_panel": "_policy_study",
    "show_ratio_charts": "_investigation",
    "show_run": "_catalogue",
    "show_server_series": "_server_view",
    "show_text": "_investigation",
    "source_panes": "source",
    "stored_runs": "_catalogue",
    "Study": "_study",
    "summary_table": "source",
    "variants_html": "variants",
    "what_if": "_whatif",
    "WhatIf": "_whatif",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
