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
    "definition_history": "source",
    "diff_panes": "source",
    "find_definition": "source",
    "find_references": "source",
    "findings_html": "variants",
    "get_host": "hosts",
    "history_diffs": "source",
    "history_events": "source",
    "history_table": "source",
    "list_runs": "store",
    "list_variants": "variants",
    "load_calibration": "_calibration_study",
    "load_study": "_investigation",
    "load_variant": "variants",
    "patch_diffs_html": "variants",
    "run_notebook": "report",
    "save_study_charts": "_investigation",
    "setup_notebook": "_investigation",
    "show_markdown": "_investigation",
    "show_ratio_charts": "_investigation",
    "show_server_series": "_server_view",
    "source_panes": "source",
    "Study": "_study",
    "summary_table": "source",
    "variants_html": "variants",
    "what_if": "_whatif",
    "WhatIf": "_whatif",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
