"""Where the workbench keeps things: project root, runs, reports, caches."""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout this package lives in (holds data/, notebooks/).
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def project_root() -> Path:
    """The project directory: ``$WORKBENCH_HOME``, else the checkout the package is in."""
    env = os.environ.get("WORKBENCH_HOME")
    return Path(env).expanduser().resolve() if env else PACKAGE_ROOT


def resolve(path: str | Path) -> Path:
    """``path`` as given when absolute, else relative to :func:`project_root`."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else project_root() / p


def cache_dir() -> Path:
    """Per-user cache (``$WORKBENCH_CACHE_DIR`` or ``~/.cache/specbench-workbench``)."""
    env = os.environ.get("WORKBENCH_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "specbench-workbench"
