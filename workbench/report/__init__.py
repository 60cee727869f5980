"""Reports: run parameterized notebooks with papermill, export offline HTML.

``run_notebook("notebooks/spec_vs_baseline.ipynb", out_dir="reports", parameters={...})``
writes ``reports/spec_vs_baseline.ipynb`` (executed, with provenance),
``reports/spec_vs_baseline.html`` (opens offline, charts drawn) and the chart files the
notebook saves in ``reports/spec_vs_baseline/``.
"""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "CellWatch": "_progress",
    "check_parameters": "_params",
    "default_notebooks": "_discovery",
    "DEFAULT_OUT_DIR": "_discovery",
    "distribute_parameters": "_params",
    "export_html": "_html",
    "external_resources": "_html",
    "find_notebooks_dir": "_discovery",
    "load_params_file": "_params",
    "NOTEBOOK_ORDER": "_discovery",
    "notebook_parameters": "_params",
    "NotebookParameter": "_params",
    "parse_param_pairs": "_params",
    "parse_param_value": "_params",
    "PROGRESS_FILE_ENV": "_progress",
    "ProgressTail": "_progress",
    "progress_bars": "_progress",
    "progress_lines": "_progress",
    "report_progress": "_progress",
    "reporting_progress": "_progress",
    "ReportResult": "_runner",
    "RESERVED_PARAMETERS": "_params",
    "run_notebook": "_runner",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
