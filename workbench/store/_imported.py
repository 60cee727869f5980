"""Run directories for results imported from other tools (``workbench import``).

An imported run is a run directory like a measured one (:mod:`workbench.store._runs`), so
the catalogue lists it and :func:`~workbench.store.load_runs` reads it beside our own; the
layout is docs/RUNS.md's contract for imported runs::

    data/runs/20260601T120000Z-eagle3-1a2b3c/
        manifest.json       kind "import", tool, tool_version, source_file, ... (below)
        levels.parquet      the rows that passed the checks, our level column names
        requests.parquet    per-request rows, when the tool's file had them
        quarantine.parquet  the rows that broke an invariant, with their reason (``reason``)

The manifest has the standard keys (``run_id``, ``variant``, ``engine``: None when the file
does not say, ``simulated``, ``status: "complete"``, ``started_at``: when the tool measured,
if its file says, else None, ``finished_at`` None, ``levels_completed``, ``units_completed``:
the clean units only, ``num_requests``, ``label``, ``sglang_version``: the server's, if the
tool recorded ``/server_info``) and
``kind: "import"``, ``tool``, ``tool_version``, ``tool_version_source``, ``source_file``
(absolute path), ``source_sha256``, ``imported_at``, ``quarantined`` (row count).

The run id is the store's pattern, ``<UTC import time>-<variant slug>-<6 hex>``, the hex a
hash of the file's content, the tool and the variant: importing the same file again finds
the run already there and returns it unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from workbench._version import __version__
from workbench.errors import HostError
from workbench.gitinfo import git_state
from workbench.store._files import read_json, read_parquet, write_json, write_parquet
from workbench.store._manifest import RUN_COLUMNS, SCHEMA_VERSION
from workbench.store._root import runs_root
from workbench.store._runs import REPO_ROOT, _slug, _utc_iso

__all__ = ["load_quarantine", "save_imported_run"]


def _with_run_columns(frame: pd.DataFrame, constants: Mapping[str, Any]) -> pd.DataFrame:
    frame = frame.drop(columns=[c for c in RUN_COLUMNS if c in frame]).copy()
    for i, (name, value) in enumerate(constants.items()):
        frame.insert(
            i,
            name,
            pd.Series([value] * len(frame), index=frame.index, dtype="bool" if name == "simulated" else "object"),
        )
    return frame


def save_imported_run(
    *,
    variant: str,
    engine: str | None,
    simulated: bool,
    tool: str,
    tool_version: str | None,
    source_file: str,
    source_sha256: str,
    levels: pd.DataFrame,
    requests: pd.DataFrame,
    quarantine: pd.DataFrame,
    extra: Mapping[str, Any] | None = None,
    label: str | None = None,
    measured_at: str | None = None,
    root: str | Path | None = None,
    now: datetime | None = None,
) -> tuple[Path, bool]:
    """Write one imported run's directory (or find the one a previous import wrote).

    Args:
        variant: the run's variant name.
        engine: the engine that served the tool's requests (None when nobody said).
        simulated: whether the figures come from a simulator.
        tool, tool_version, source_file, source_sha256: provenance (module docstring).
        levels: clean level rows, with ``level_index`` and ``repeat``.
        requests: per-request rows (may be empty), with ``level_index`` and ``repeat``.
        quarantine: rows that broke an invariant, with ``reason``.
        extra: more manifest keys (e.g. ``server_info``, ``tool_version_source``).
        label: the user's label.
        measured_at: when the tool measured (ISO text, from its file); ``started_at``.
        root: runs root (default :func:`runs_root`).
        now: the import time (default: the clock).

    Returns:
        ``(run directory, created)``: created is False when the same import was already stored.

    Raises:
        HostError: a file cannot be written (DiskFullError when the disk is full).
    """
    base = runs_root(root)
    digest = hashlib.sha256(f"{tool}\0{variant}\0{source_sha256}".encode()).hexdigest()[:6]
    for existing in sorted(base.glob(f"*-{digest}/manifest.json")) if base.is_dir() else []:
        try:
            manifest = read_json(existing)
        except HostError:
            continue
        if (manifest.get("kind"), manifest.get("source_sha256"), manifest.get("tool"), manifest.get("variant")) == (
            "import",
            source_sha256,
            tool,
            variant,
        ):
            return existing.parent, False
    imported = now or datetime.now(timezone.utc)
    run_id = f"{imported.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}-{_slug(variant)}-{digest}"
    path = base / run_id
    constants = {"run_id": run_id, "variant": variant, "engine": engine, "simulated": bool(simulated)}
    units = [[int(r), int(i)] for r, i in zip(levels["repeat"], levels["level_index"])] if len(levels) else []
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "kind": "import",
        "variant": variant,
        "engine": engine,
        "simulated": bool(simulated),
        "status": "complete",
        "error": None,
        "started_at": measured_at,
        "finished_at": None,
        "imported_at": _utc_iso(imported),
        "host": None,
        "client_location": None,
        "launch_command": None,
        "sglang_version": None,
        "time_scale": None,
        "plan": None,
        "levels_completed": len(units),
        "units_completed": units,
        "num_requests": _num_requests(levels, requests),
        "identity": None,
        "label": label,
        "server_info": None,
        "tool": tool,
        "tool_version": tool_version,
        "source_file": source_file,
        "source_sha256": source_sha256,
        "quarantined": int(len(quarantine)),
        "workbench": {"version": __version__, **(git_state(REPO_ROOT) or {"commit": None, "dirty": None})},
    }
    for key, value in (extra or {}).items():
        manifest[key] = value
    info = manifest.get("server_info")
    if isinstance(info, Mapping):
        manifest["sglang_version"] = info.get("version")
    path.mkdir(parents=True)
    write_parquet(path / "levels.parquet", _with_run_columns(levels, constants))
    if len(requests):
        write_parquet(path / "requests.parquet", _with_run_columns(requests, constants))
    if len(quarantine):
        write_parquet(path / "quarantine.parquet", _with_run_columns(quarantine, constants))
    write_json(path / "manifest.json", manifest)  # last: the run is listed once it is complete
    return path, True


def _num_requests(levels: pd.DataFrame, requests: pd.DataFrame) -> int | None:
    """The requests an import holds: its request rows when it has them, else the sum of its level rows'
    ``num_requests`` (the tool's own counts) when every level has one, else None (unknown, never 0)."""
    if len(requests):
        return int(len(requests))
    counts = pd.to_numeric(levels["num_requests"], errors="coerce") if "num_requests" in levels else None
    if counts is None or not len(counts) or counts.isna().any():
        return None
    return int(counts.sum())


def load_quarantine(run_dir: str | Path) -> pd.DataFrame:
    """The quarantined rows of an imported run directory (empty when it has none).

    Raises:
        HostError: the file exists but cannot be read.
    """
    file = Path(run_dir) / "quarantine.parquet"
    return read_parquet(file) if file.is_file() else pd.DataFrame()
