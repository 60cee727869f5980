"""Where runs live: the runs folder, resolved the one way every command and notebook call uses.

``root`` as given (``--runs-dir``), else ``$WORKBENCH_RUNS_DIR``, else ``data/runs`` under the project root
(:func:`runs_root`); :func:`runs_root_source` says which, for messages, and :func:`writable_runs_root`
creates the folder and checks it can be written before a sweep or an import launches or stores anything.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from workbench import paths
from workbench.errors import ConfigError, HostError

__all__ = ["runs_root", "runs_root_source", "writable_runs_root"]


def runs_root(root: str | Path | None = None) -> Path:
    """The runs folder, resolved the one way every command and notebook call uses.

    ``root`` as given, else ``$WORKBENCH_RUNS_DIR``, else ``data/runs``; a relative path is
    under the project root (:func:`workbench.paths.resolve`: ``$WORKBENCH_HOME`` or the checkout),
    never the current directory, so a notebook (run in ``notebooks/``) and a terminal in the
    checkout find the same runs.
    """
    if root is None:
        root = os.environ.get("WORKBENCH_RUNS_DIR") or Path("data") / "runs"
    return paths.resolve(root)


def runs_root_source(root: str | Path | None = None) -> str:
    """Where :func:`runs_root` took the folder from: ``"--runs-dir"`` (given), ``"$WORKBENCH_RUNS_DIR"``
    or ``"the default data/runs"`` (for messages)."""
    if root is not None:
        return "--runs-dir"
    return "$WORKBENCH_RUNS_DIR" if os.environ.get("WORKBENCH_RUNS_DIR") else "the default data/runs"


def writable_runs_root(root: str | Path | None = None) -> Path:
    """:func:`runs_root`, created if missing and checked writable: before a sweep launches anything.

    Raises:
        ConfigError: the path names a file, not a folder.
        HostError: the folder cannot be created or written (read-only, no permission, no room),
            naming it, where it came from and what to do.
    """
    base = runs_root(root)
    where = f"runs folder {base} (from {runs_root_source(root)})"
    if base.exists() and not base.is_dir():
        raise ConfigError(
            f"The {where} is a file, not a folder: point --runs-dir or WORKBENCH_RUNS_DIR at a "
            "folder (a new one is created)"
        )
    try:
        base.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=base, prefix=".write-check-"):
            pass
    except NotADirectoryError as exc:
        raise ConfigError(
            f"The {where} cannot be created: a part of its path is a file ({exc.filename}); point "
            "--runs-dir or WORKBENCH_RUNS_DIR at a folder"
        ) from exc
    except OSError as exc:
        raise HostError(
            f"The {where} cannot be written: {exc.strerror or exc}. Make it writable, or point "
            "--runs-dir or WORKBENCH_RUNS_DIR at a folder you can write"
        ) from exc
    return base
