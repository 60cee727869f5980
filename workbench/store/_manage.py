"""The run catalogue's operations: find a run, list runs with their state and labels, label, delete, export.

Everything starts from :func:`workbench.store._catalog.list_runs` (one row per run
directory it finds, with the status it reads), so a run that listing reports as broken
(manifest missing or unreadable, a sweep killed mid-level) is shown here with that state
rather than failing the catalogue. Nothing here re-scans the runs folder.

A run's **labels** are the user's words about it after the fact (``"before-driver-update"``,
``"keep"``), kept in ``<run>/labels.json`` beside the manifest: the sweep's own ``label``
is part of its identity (resuming depends on it) and the manifest is rewritten by the sweep
writing it, so labels never touch either. Imported runs (``kind: "import"`` in their
manifest, docs/RUNS.md) are listed, labelled, exported and deleted like measured ones.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import ConfigError, HostError
from workbench.names import check_name
from workbench.store._catalog import list_runs, load_run
from workbench.store._files import atomic_write, read_json
from workbench.store._resume import LOCK_NAME, sweep_in_flight
from workbench.store._root import runs_root

__all__ = [
    "CATALOGUE_COLUMNS",
    "catalogue",
    "delete_run",
    "export_tables",
    "find_run",
    "label_run",
    "run_labels",
    "run_origin",
    "stored_runs",
]

#: The sidecar file of a run's labels.
LABELS_NAME = "labels.json"
#: Columns of :func:`catalogue`, in order.
CATALOGUE_COLUMNS = (
    "run_id",
    "state",
    "kind",
    "variant",
    "engine",
    "simulated",
    "host",
    "sglang_version",
    "tool",
    "started_at",
    "units_stored",
    "units_planned",
    "num_requests",
    "time_scale",
    "workload",
    "requests_per_level",
    "label",
    "labels",
    "problem",
    "path",
)
#: Request columns holding lists (per-chunk gaps, tokens per chunk): JSON text in a CSV.
_LIST_COLUMNS = ("itl_ms", "tokens_per_chunk")


def find_run(run: str | Path, *, root: str | Path | None = None, listing: pd.DataFrame | None = None) -> Path:
    """The directory of ``run``: a directory path, a run id under ``root``, or a unique prefix of one.

    A directory is accepted without a manifest (a broken run can still be shown or deleted);
    ids and prefixes are matched against :func:`list_runs` (``listing`` when given).

    Raises:
        ConfigError: nothing matches, or a prefix matches several runs (they are named).
    """
    text = str(run)
    direct = Path(text).expanduser()
    if ("/" in text or direct.is_absolute()) and direct.is_dir():
        return direct
    table = list_runs(root) if listing is None else listing
    ids = [str(i) for i in table["run_id"]]
    paths = [Path(p) for p in table["path"]]
    if text in ids:
        return paths[ids.index(text)]
    hits = [p for i, p in zip(ids, paths) if i.startswith(text)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise ConfigError(
            f"{text!r} matches {len(hits)} runs ({', '.join(p.name for p in hits[:5])}"
            f"{', ...' if len(hits) > 5 else ''}); give more of the run id"
        )
    raise ConfigError(
        f"No run {text!r} under {runs_root(root)}: give a run id, a unique prefix of one or a run "
        "directory; `workbench runs list` (wb.list_runs()) shows what is stored"
    )


def run_labels(path: str | Path) -> list[str]:
    """The labels of the run in ``path`` (empty when it has none or the file is unreadable)."""
    file = Path(path) / LABELS_NAME
    if not file.is_file():
        return []
    try:
        labels = read_json(file).get("labels", [])
    except (HostError, AttributeError):
        return []
    return [str(x) for x in labels] if isinstance(labels, list) else []


def label_run(
    run: str | Path, labels: Iterable[str], *, remove: bool = False, root: str | Path | None = None
) -> list[str]:
    """Add (or with ``remove=True`` take away) labels of a run; returns its labels afterwards.

    Labels are kept in ``<run>/labels.json`` (not the manifest: see the module docstring),
    in the order they were added, without duplicates. A run being written may be labelled.

    A label added keeps to :data:`workbench.names.NAME_RULE`; any label the run has may be
    removed (also one stored before the rule).

    Raises:
        ConfigError: no such run, no label given, or a label added breaks the rule.
        HostError: the file cannot be written.
    """
    path = find_run(run, root=root)
    given = [str(x).strip() for x in labels]
    if not given or any(not x for x in given):
        raise ConfigError("label_run needs one or more non-empty labels, e.g. `workbench runs label RUN keep`")
    if not remove:
        for x in given:
            check_name(x, what="label", fix="Give another label")
    current = run_labels(path)
    if remove:
        updated = [x for x in current if x not in given]
    else:
        updated = current + [x for x in dict.fromkeys(given) if x not in current]
    text = json.dumps({"labels": updated}, indent=1) + "\n"
    atomic_write(path / LABELS_NAME, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return updated


def run_kind(manifest_kind: Any, simulated: Any) -> str:
    """What a run is, in one word: the manifest's own kind (``"import"``), else ``"simulated"`` for a run of a
    simulated engine and ``"measured"`` for one of a real engine (the one reading ``runs list`` and ``runs show``
    share)."""
    if isinstance(manifest_kind, str) and manifest_kind:
        return manifest_kind
    return "simulated" if simulated is True else "measured"


def catalogue(root: str | Path | None = None) -> pd.DataFrame:
    """Every run under ``root`` (default: the runs folder) with its state, kind and labels.

    Returns:
        One row per run, oldest first, columns :data:`CATALOGUE_COLUMNS`: ``state`` is the
        status :func:`list_runs` reads (``complete``, ``incomplete``, ``failed``, ``running``,
        ``unreadable``, ...); ``kind`` is the manifest's (``"import"``), else ``"simulated"`` for a run of a
        simulated engine and ``"measured"`` for one of a real engine; ``units_stored`` and ``units_planned``
        count (level, repeat) units, stored and in the plan; ``time_scale`` is simulated seconds per wall
        second (1 for a real engine; None for an import); ``workload`` and ``requests_per_level`` say what the
        plan sent (:func:`list_runs`), so runs that are not like for like can be told apart;
        ``tool`` the importing tool (None for measured runs); ``labels`` a comma-joined
        string; ``problem`` what is wrong with a broken run and what to do, where
        :func:`list_runs` says (None otherwise). Broken runs are rows, never errors.
    """
    listing = list_runs(root)
    out = pd.DataFrame(
        {
            c: listing[c] if c in listing else pd.Series([None] * len(listing), dtype=object)
            for c in CATALOGUE_COLUMNS
            if c not in ("state", "labels")
        }
    )
    out.insert(1, "state", listing["status"].fillna("unknown") if "status" in listing else "unknown")
    out["kind"] = [run_kind(kind, sim) for kind, sim in zip(out["kind"], out["simulated"])]
    out["labels"] = [", ".join(run_labels(p)) for p in listing["path"]]
    return out[list(CATALOGUE_COLUMNS)].reset_index(drop=True)


def delete_run(
    run: str | Path, *, root: str | Path | None = None, confirm: Callable[[str], bool] | None = None
) -> Path | None:
    """Delete a run directory: its tables, manifest, labels, everything in it.

    Args:
        run: run id, unique prefix or directory.
        root: runs folder for ids.
        confirm: asked with a description of the run; the run is kept unless it returns
            True. None: delete without asking.

    Returns:
        The deleted directory, or None when ``confirm`` declined.

    Raises:
        ConfigError: no such run; a sweep is writing it now (its lock is held by a live
            process, or by one on another machine); the directory holds none of a run's
            files (refused, so a mistyped path never removes something else).
        HostError: the directory cannot be removed.
    """
    path = find_run(run, root=root)
    holder = sweep_in_flight(path)
    if holder is not None:
        raise ConfigError(
            f"Run {path.name} is being written now by pid {holder.get('pid')} on "
            f"{holder.get('hostname')!r}; stop that sweep first (or wait for it to finish), then delete"
        )
    known = ("manifest.json", "levels.parquet", "requests.parquet", LABELS_NAME, LOCK_NAME)
    if not any((path / name).exists() for name in known):
        raise ConfigError(f"{path} holds no run files ({', '.join(known[:3])}); not deleting it")
    if confirm is not None and not confirm(_describe(path)):
        return None
    try:
        shutil.rmtree(path)
    except OSError as exc:
        raise HostError(f"Cannot delete {path}: {exc.strerror or exc}") from exc
    return path


def run_origin(manifest: Mapping[str, Any]) -> str:
    """Where a run's figures came from, for a person: ``"host gpu1"``, or for an import (which has no
    host) ``"imported from vllm bench serve /data/result.json"`` (its tool and file)."""
    if manifest.get("kind") == "import":
        return f"imported from {manifest.get('tool')} {manifest.get('source_file')}"
    return f"host {manifest.get('host')}"


def _describe(path: Path) -> str:
    try:
        m = read_json(path / "manifest.json")
    except HostError:
        return f"{path} (no readable manifest)"
    origin = run_origin(m)
    requests = "" if m.get("num_requests") is None else f", {m.get('num_requests')} request(s)"
    return (
        f"{path.name}: {m.get('variant')} on {m.get('engine')} ({'simulated' if m.get('simulated') else 'measured'}"
        f", {origin}), {m.get('status')}, {len(m.get('units_completed') or [])} unit(s) (level x repeat) stored"
        f"{requests}"
    )


def export_tables(
    runs: Sequence[str | Path] | None = None, *, root: str | Path | None = None, requests: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """One table of several runs' level rows (or request rows), ready for CSV.

    Args:
        runs: run ids, prefixes or directories; None: every run the catalogue lists.
        root: the runs folder.
        requests: the request rows instead of the level rows. Their list columns
            (``itl_ms``, ``tokens_per_chunk``) become JSON text.

    Returns:
        ``(table, skipped)``: the rows (with ``run_id``, ``variant``, ``engine``,
        ``simulated`` first, then the store's columns; runs oldest first, as stored) and one
        line per run that could not be read (named, with why), which is left out.

    Raises:
        ConfigError: a named run does not exist, or nothing could be read.
    """
    if runs:
        listing = list_runs(root)
        paths = [find_run(r, root=root, listing=listing) for r in runs]
    else:
        paths = [Path(p) for p in list_runs(root)["path"]]
    frames, skipped = [], []
    for path in paths:
        try:
            stored = load_run(path)
        except (ConfigError, HostError) as exc:
            skipped.append(f"{path.name}: {exc}")
            continue
        frame = stored.requests if requests else stored.levels
        if len(frame):
            frames.append(frame)
    if not frames:
        raise ConfigError(
            "No stored rows to export"
            + (f" ({'; '.join(skipped)})" if skipped else "")
            + "; `workbench runs list` shows the runs and their state"
        )
    table = pd.concat(frames, ignore_index=True)
    for column in _LIST_COLUMNS:
        if column in table:
            table[column] = [None if v is None else json.dumps(np.asarray(v).tolist()) for v in table[column]]
    return table, skipped


def stored_runs(runs: str | Path | Sequence[str | Path], *, runs_dir: str | Path | None = None) -> list[Path]:
    """The directories of stored runs, checked readable: what a report renders from without measuring.

    Args:
        runs: one run or several: run ids, unique prefixes of one, or run directories.
        runs_dir: the runs folder for ids (relative: to the project root).

    Returns:
        The run directories, in the order given.

    Raises:
        ConfigError: no runs given, an unknown run, one named twice, or one that cannot be
            read (its state and why are named, e.g. a missing or corrupt manifest).
    """
    items = [runs] if isinstance(runs, (str, Path)) else list(runs)
    if not items:
        raise ConfigError("from_runs is empty; give run ids or directories (`workbench runs list` shows them)")
    listing = catalogue(runs_dir)
    found = [find_run(r, root=runs_dir, listing=listing) for r in items]
    if len(set(found)) < len(found):
        raise ConfigError(f"a run is named twice in {[str(r) for r in items]}; name each run once")
    for path in found:
        try:
            load_run(path)
        except (ConfigError, HostError) as exc:
            raise ConfigError(f"run {path.name} cannot be reported on: {exc}") from None
    return found
