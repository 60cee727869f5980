"""Defaults the command line shows in its help, kept apart so that ``workbench --help`` imports no pandas."""

from __future__ import annotations

__all__ = ["DEFAULT_VERSIONS"]

#: Versions compared when none are given: the investigated release and a recent one.
DEFAULT_VERSIONS: tuple[str, ...] = ("0.5.9", "0.5.23")
