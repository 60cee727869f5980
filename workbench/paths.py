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


def shown(path: str | Path) -> str:
    """``path`` as a report or a shared table shows it: relative to :func:`project_root` when inside it
    (``reports/spec_vs_baseline``), ``~/...`` when inside the home folder, else as given. A report is
    meant to be shared, so it does not print the absolute paths of the machine that made it; every
    form is one :func:`resolve` reads back to the same folder on this machine.
    """
    p = Path(path).expanduser()
    if not p.is_absolute():
        return str(p)
    for base, prefix in ((project_root(), ""), (Path.home(), "~/")):
        try:
            rel = str(p.resolve().relative_to(base.resolve()))
        except (ValueError, OSError, RuntimeError):
            continue
        if rel == ".":
            return "." if not prefix else "~"
        return prefix + rel
    return str(p)
