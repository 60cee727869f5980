"""Run directories: raw request rows, per-level summaries and a manifest per run."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "catalogue": "_manage",
    "run_kind": "_manage",
    "delete_run": "_manage",
    "export_tables": "_manage",
    "fail_unfinished_run": "_resume",
    "find_run": "_manage",
    "finish_run": "_runs",
    "label_run": "_manage",
    "list_runs": "_catalog",
    "load_quarantine": "_imported",
    "load_run": "_catalog",
    "lock_owner": "_resume",
    "load_runs": "_catalog",
    "with_workload": "_catalog",
    "new_run": "_runs",
    "open_run": "_resume",
    "ResumedRun": "_resume",
    "RunStatus": "_manifest",
    "RunWriter": "_runs",
    "run_labels": "_manage",
    "run_origin": "_manage",
    "runs_root": "_root",
    "runs_root_source": "_root",
    "writable_runs_root": "_root",
    "save_imported_run": "_imported",
    "save_level": "_runs",
    "stored_runs": "_manage",
    "sweep_identity": "_resume",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.store._manage import catalogue as catalogue
    from workbench.store._manage import run_kind as run_kind
    from workbench.store._manage import delete_run as delete_run
    from workbench.store._manage import export_tables as export_tables
    from workbench.store._resume import fail_unfinished_run as fail_unfinished_run
    from workbench.store._manage import find_run as find_run
    from workbench.store._runs import finish_run as finish_run
    from workbench.store._manage import label_run as label_run
    from workbench.store._catalog import list_runs as list_runs
    from workbench.store._imported import load_quarantine as load_quarantine
    from workbench.store._catalog import load_run as load_run
    from workbench.store._resume import lock_owner as lock_owner
    from workbench.store._catalog import load_runs as load_runs
    from workbench.store._catalog import with_workload as with_workload
    from workbench.store._runs import new_run as new_run
    from workbench.store._resume import open_run as open_run
    from workbench.store._resume import ResumedRun as ResumedRun
    from workbench.store._manifest import RunStatus as RunStatus
    from workbench.store._runs import RunWriter as RunWriter
    from workbench.store._manage import run_labels as run_labels
    from workbench.store._manage import run_origin as run_origin
    from workbench.store._root import runs_root as runs_root
    from workbench.store._root import runs_root_source as runs_root_source
    from workbench.store._root import writable_runs_root as writable_runs_root
    from workbench.store._imported import save_imported_run as save_imported_run
    from workbench.store._runs import save_level as save_level
    from workbench.store._manage import stored_runs as stored_runs
    from workbench.store._resume import sweep_identity as sweep_identity
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
