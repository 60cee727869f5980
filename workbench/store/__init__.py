"""Run directories: raw request rows, per-level summaries and a manifest per run."""

from workbench.store.catalog import StoredRun, list_runs, load_run, load_runs
from workbench.store.runs import RunWriter, default_runs_root, finish_run, new_run, save_level

__all__ = ["RunWriter", "StoredRun", "default_runs_root", "finish_run", "list_runs", "load_run", "load_runs",
           "new_run", "save_level"]
