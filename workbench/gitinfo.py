"""The git commit a working tree is at and whether it has changes (for provenance)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


def git_state(directory: str | Path, *, timeout_s: float = 10.0) -> dict[str, Any] | None:
    """``{"commit": "<40 hex>", "dirty": bool | None}`` of the git tree holding ``directory``.

    ``dirty`` means tracked files differ from the commit (untracked files are ignored);
    it is None when ``git status`` fails.

    Args:
        directory: any folder inside the working tree.
        timeout_s: limit for each git command (seconds, default 10).

    Returns:
        The state, or None when ``directory`` is not in a git working tree or git is
        not installed.
    """

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=directory, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if head is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": head.strip(), "dirty": None if status is None else bool(status.strip())}
