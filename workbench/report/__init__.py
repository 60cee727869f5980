"""Reports: run parameterized notebooks with papermill, export offline HTML.

``run_notebook("notebooks/spec_vs_baseline.ipynb", out_dir="reports", parameters={...})``
writes ``reports/spec_vs_baseline.ipynb`` (executed, with provenance),
``reports/spec_vs_baseline.html`` (opens offline, charts drawn) and the chart files the
notebook saves in ``reports/spec_vs_baseline/``.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "measures": "_schedule",
    "MEASURES_KEY": "_schedule",
    "split_by_measuring": "_schedule",
    "CellWatch": "_progress",
    "default_notebooks": "_discovery",
    "distribute_parameters": "_params",
    "export_html": "_html",
    "external_resources": "_html",
    "load_params_file": "_params",
    "NOTEBOOK_ORDER": "_discovery",
    "notebook_parameters": "_params",
    "parse_param_pairs": "_params",
    "parse_param_value": "_params",
    "PROGRESS_FILE_ENV": "_progress",
    "ProgressTail": "_progress",
    "progress_bars": "_progress",
    "progress_lines": "_progress",
    "report_note": "_progress",
    "report_progress": "_progress",
    "reporting_progress": "_progress",
    "ReportResult": "_runner",
    "run_notebook": "_runner",
    "UNLIKE_ARMS_FLAG": "_from_runs",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.report._schedule import measures as measures
    from workbench.report._schedule import MEASURES_KEY as MEASURES_KEY
    from workbench.report._schedule import split_by_measuring as split_by_measuring
    from workbench.report._progress import CellWatch as CellWatch
    from workbench.report._discovery import default_notebooks as default_notebooks
    from workbench.report._params import distribute_parameters as distribute_parameters
    from workbench.report._html import export_html as export_html
    from workbench.report._html import external_resources as external_resources
    from workbench.report._params import load_params_file as load_params_file
    from workbench.report._discovery import NOTEBOOK_ORDER as NOTEBOOK_ORDER
    from workbench.report._params import notebook_parameters as notebook_parameters
    from workbench.report._params import parse_param_pairs as parse_param_pairs
    from workbench.report._params import parse_param_value as parse_param_value
    from workbench.report._progress import PROGRESS_FILE_ENV as PROGRESS_FILE_ENV
    from workbench.report._progress import ProgressTail as ProgressTail
    from workbench.report._progress import progress_bars as progress_bars
    from workbench.report._progress import progress_lines as progress_lines
    from workbench.report._progress import report_note as report_note
    from workbench.report._progress import report_progress as report_progress
    from workbench.report._progress import reporting_progress as reporting_progress
    from workbench.report._runner import ReportResult as ReportResult
    from workbench.report._runner import run_notebook as run_notebook
    from workbench.report._from_runs import UNLIKE_ARMS_FLAG as UNLIKE_ARMS_FLAG
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
