"""Reports: run parameterized notebooks with papermill, export offline HTML.

``run_notebook("notebooks/spec_vs_baseline.ipynb", out_dir="reports", parameters={...})``
writes ``reports/spec_vs_baseline.ipynb`` (executed, with provenance),
``reports/spec_vs_baseline.html`` (opens offline, charts drawn) and the chart files the
notebook saves in ``reports/spec_vs_baseline/``.
"""

from workbench.report.discovery import NOTEBOOK_ORDER, default_notebooks, find_notebooks_dir
from workbench.report.html import export_html, external_resources
from workbench.report.params import (
    RESERVED_PARAMETERS,
    NotebookParameter,
    check_parameters,
    distribute_parameters,
    load_params_file,
    notebook_parameters,
    parse_param_pairs,
    parse_param_value,
)
from workbench.report.runner import DEFAULT_OUT_DIR, ReportResult, run_notebook

__all__ = [
    "DEFAULT_OUT_DIR",
    "NOTEBOOK_ORDER",
    "RESERVED_PARAMETERS",
    "NotebookParameter",
    "ReportResult",
    "check_parameters",
    "default_notebooks",
    "distribute_parameters",
    "export_html",
    "external_resources",
    "find_notebooks_dir",
    "load_params_file",
    "notebook_parameters",
    "parse_param_pairs",
    "parse_param_value",
    "run_notebook",
]
