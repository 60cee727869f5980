"""Provenance of a report: which code, parameters and times produced it.

Stored in the executed notebook under ``metadata["workbench"]`` (papermill keeps
its own record under ``metadata["papermill"]``), shown as the header of the HTML.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from workbench._version import __version__
from workbench.gitinfo import git_state

__all__ = ["git_state", "jsonable", "provenance"]


def jsonable(value: Any) -> Any:
    """``value`` made JSON-serialisable (paths and other objects become strings)."""
    return json.loads(json.dumps(value, default=str))


def provenance(
    *,
    notebook: Path,
    parameters: Mapping[str, Any],
    kernel_name: str,
    started_at: datetime,
    finished_at: datetime,
    status: Literal["ok", "failed"],
    git: dict[str, Any] | None,
    error: Mapping[str, Any] | None = None,
    defaults: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``metadata["workbench"]`` record of one notebook run.

    The run's effective parameters are ``parameters`` (what was injected) together with
    ``defaults`` (every other name the ``parameters`` cell declares, at its default).

    Args:
        notebook: the input notebook.
        parameters: the parameters injected (``report_dir`` included).
        kernel_name: the Jupyter kernel that ran it.
        started_at: when execution began (timezone-aware).
        finished_at: when it ended.
        status: ``"ok"`` or ``"failed"``.
        git: :func:`git_state` of the notebook's folder.
        error: for a failed run, ``{"cell", "ename", "evalue"}``.
        defaults: the declared parameters not injected, name -> default as written in
            the cell (Python source text, e.g. ``'["0.5.9", "0.5.23"]'`` or ``"None"``).

    Returns:
        A JSON-serialisable dict.
    """
    record: dict[str, Any] = {
        "workbench_version": __version__,
        "git": git,
        "notebook": str(notebook),
        "parameters": jsonable(dict(parameters)),
        "defaults": {str(k): str(v) for k, v in (defaults or {}).items()},
        "kernel_name": kernel_name,
        "python": platform.python_version(),
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": finished_at.isoformat(timespec="seconds"),
        "duration_s": round((finished_at - started_at).total_seconds(), 3),
        "status": status,
    }
    if error is not None:
        record["error"] = jsonable(dict(error))
    return record
