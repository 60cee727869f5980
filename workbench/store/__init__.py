"""Run directories: raw request rows, per-level summaries and a manifest per run."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "catalogue": "_manage",
    "delete_run": "_manage",
    "export_tables": "_manage",
    "find_run": "_manage",
    "finish_run": "_runs",
    "label_run": "_manage",
    "list_runs": "_catalog",
    "load_quarantine": "_imported",
    "load_run": "_catalog",
    "load_runs": "_catalog",
    "with_workload": "_catalog",
    "new_run": "_runs",
    "open_run": "_resume",
    "ResumedRun": "_resume",
    "run_labels": "_manage",
    "run_origin": "_manage",
    "RunWriter": "_runs",
    "runs_root": "_runs",
    "save_imported_run": "_imported",
    "save_level": "_runs",
    "StoredRun": "_catalog",
    "sweep_identity": "_resume",
    "sweep_in_flight": "_resume",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
