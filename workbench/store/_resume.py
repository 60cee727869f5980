"""Resumable sweeps: a sweep's identity, the run that holds it, and the lock of the sweep writing it.

A sweep's **identity** is a hash of what decides its figures: the plan (its JSON, prompt
ids and their texts' hash), the variant (name and definition), the engine and its launch
options, the host, and a user's ``label`` (:func:`sweep_identity`), recorded as the
manifest's ``identity``. :func:`open_run` reopens the newest run under the runs root whose
manifest has that identity, so re-running the same sweep measures only the units its
manifest does not list (:meth:`RunWriter.pending_units
<workbench.store._runs.RunWriter.pending_units>`); ``fresh=True`` starts a new run, which
is then the newest of its identity (the old run stays on disk). Nothing but run
directories is written under the runs root.

A run being written holds ``<run>/sweep.lock`` (JSON: pid, host name, process start
time), created exclusively. A second sweep of the same identity while the first runs is
refused; a lock whose process is gone (``kill -9``) is stale and taken over, and the
reopened run's :attr:`ResumedRun.previous` tells the caller what the dead sweep left (its
manifest: e.g. the server it had started, to stop it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, HostError
from workbench.store._files import read_json, read_parquet, to_jsonable, write_json
from workbench.store._manifest import RUN_COLUMNS, stored_units
from workbench.store._root import runs_root
from workbench.store._runs import RunWriter, _utc_iso, new_run

__all__ = [
    "LOCK_NAME",
    "ResumedRun",
    "fail_unfinished_run",
    "lock_owner",
    "open_run",
    "sweep_identity",
    "sweep_in_flight",
]

#: The lock file in a run directory being written.
LOCK_NAME = "sweep.lock"


def sweep_identity(parts: Mapping[str, Any]) -> str:
    """The identity of a sweep: sha256 (hex, first 16 digits) of ``parts`` as canonical JSON.

    Args:
        parts: what decides the sweep's figures, e.g. ``{"plan": plan.to_json(prompt_texts=False),
            "variant": ..., "engine": ..., "host": ..., "label": ...}``; keys sorted, so their
            order does not matter.
    """
    text = json.dumps(to_jsonable(parts), sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclasses.dataclass
class ResumedRun:
    """The run of a sweep's identity, opened for writing (from :func:`open_run`).

    Attributes:
        writer: the run's :class:`~workbench.store._runs.RunWriter` (status ``running``; it
            holds the sweep lock until it is finished).
        resumed: True when an existing run was reopened (False: a new run).
        previous: the reopened run's manifest as it was found (None for a new run): its
            status (``running`` after a killed sweep) and what that sweep recorded.
        stale_lock: the lock a dead sweep left (pid, host, ...), None when there was none.
    """

    writer: RunWriter
    resumed: bool
    previous: dict[str, Any] | None
    stale_lock: dict[str, Any] | None


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, /proc), None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()[19]


def _alive(lock: Mapping[str, Any]) -> bool:
    """True when the lock's process still runs on this machine (and is the same process)."""
    pid = int(lock.get("pid") or 0)
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    started = _process_start(pid)
    return started is None or lock.get("process_start") in (None, started)


def lock_owner(run_dir: str | Path) -> tuple[str, dict[str, Any]]:
    """Who holds ``run_dir``'s sweep lock: ``("none", {})``, ``("alive", lock)``, ``("dead", lock)``
    (its process is gone: the sweep was killed, or the lock is unreadable) or
    ``("elsewhere", lock)`` (taken on another machine, which this one cannot check)."""
    try:
        held = json.loads((Path(run_dir) / LOCK_NAME).read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return "none", {}
    except (OSError, ValueError):
        held = {}
    if not isinstance(held, dict):
        held = {}
    if held.get("hostname") not in (None, socket.gethostname()):
        return "elsewhere", held
    return ("alive" if _alive(held) else "dead"), held


def fail_unfinished_run(run_dir: str | Path, error: str) -> bool:
    """Mark failed with ``error`` a run its writer left unfinished (status ``running`` or ``interrupted``: the
    process writing it was stopped, e.g. a report's kernel on a full disk), stamp its end and remove its sweep
    lock. False (nothing written) when the run had already ended or has no readable manifest to amend.

    Raises:
        HostError: the manifest cannot be written.
    """
    run = Path(run_dir)
    try:
        manifest = read_json(run / "manifest.json")
    except HostError:
        return False
    if manifest.get("status") not in ("running", "interrupted"):
        return False
    manifest.update(status="failed", error=error, finished_at=_utc_iso(datetime.now(timezone.utc)))
    write_json(run / "manifest.json", manifest)
    (run / LOCK_NAME).unlink(missing_ok=True)  # the process that held it is gone
    return True


def sweep_in_flight(run_dir: str | Path) -> dict[str, Any] | None:
    """The lock of the sweep writing ``run_dir`` now (pid, hostname, process start), or None.

    A lock is live when its process still runs here, or when it was taken on another
    machine (which this one cannot check); a stale lock (its process gone, e.g. after
    ``kill -9``) or an unreadable one counts as no sweep (see :func:`lock_owner`).
    """
    owner, held = lock_owner(run_dir)
    return held if owner in ("alive", "elsewhere") else None


def _lock_record() -> dict[str, Any]:
    return {"pid": os.getpid(), "hostname": socket.gethostname(), "process_start": _process_start(os.getpid())}


def _acquire(run_dir: Path) -> dict[str, Any] | None:
    """Create ``run_dir/sweep.lock`` for this process; the stale lock it replaced, if any.

    Raises:
        ConfigError: another live sweep (here) holds it, or one on another machine may.
        HostError: the lock cannot be written.
    """
    path = run_dir / LOCK_NAME
    mine = json.dumps(_lock_record())
    stale = None
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                held = json.loads(path.read_text(encoding="utf-8") or "{}")
            except (OSError, ValueError):
                held = {}
            if held.get("hostname") not in (None, socket.gethostname()):
                raise ConfigError(
                    f"Run {run_dir} is locked by pid {held.get('pid')} on {held.get('hostname')!r} ({path}); "
                    "if no sweep runs there any more, delete that file and run again"
                ) from None
            if held.get("pid") == os.getpid() or _alive(held):
                raise ConfigError(
                    f"Another sweep (pid {held.get('pid')}) is writing {run_dir} right now; wait for it, or "
                    "pass fresh=True (--fresh) to start a separate run"
                ) from None
            stale = held  # its process is gone (killed): take the run over
            path.unlink(missing_ok=True)
            continue
        except OSError as exc:
            raise HostError(f"Cannot create the sweep lock {path}: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(mine)
        return stale
    raise ConfigError(f"Could not take the sweep lock {path}: another sweep took it at the same moment")


def _release(run_dir: Path) -> None:
    path = run_dir / LOCK_NAME
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def _existing(root: Path, identity: str) -> Path | None:
    """The newest run directory under ``root`` whose manifest records ``identity`` (None: none)."""
    found = []
    for manifest_path in root.glob("*/manifest.json") if root.is_dir() else []:
        try:
            manifest = read_json(manifest_path)
        except HostError:
            continue  # unreadable: not a run to resume
        if manifest.get("identity") == identity:
            found.append((str(manifest.get("started_at") or ""), manifest_path.parent.name, manifest_path.parent))
    return max(found)[2] if found else None


def _stored_rows(run_dir: Path, manifest: Mapping[str, Any]) -> tuple[Any, Any]:
    """The request rows and level info of the units the manifest lists (rows of a unit being written
    when the sweep died are dropped)."""
    import pandas as pd

    from workbench.bench import LEVEL_INFO_COLUMNS

    units = set(stored_units(manifest))
    frames = []
    for name in ("requests", "levels"):
        file = run_dir / f"{name}.parquet"
        frame = read_parquet(file) if file.is_file() else pd.DataFrame()
        if len(frame):
            repeat = frame["repeat"] if "repeat" in frame else pd.Series(0, index=frame.index)
            keep = [(int(r), int(i)) in units for r, i in zip(repeat, frame["level_index"])]
            frame = frame[keep].reset_index(drop=True)
        frames.append(frame)
    requests, levels = frames
    info_cols = [c for c in ("level_index", "repeat", *LEVEL_INFO_COLUMNS) if c in levels]
    info = levels[[*[c for c in RUN_COLUMNS if c in levels], *info_cols]] if len(levels) else None
    return requests, info


def open_run(
    variant: str,
    *,
    identity: str,
    label: str | None = None,
    fresh: bool = False,
    root: str | Path | None = None,
    **new_run_options: Any,
) -> ResumedRun:
    """Open the run of ``identity`` for writing: reopen it (resume), or create it, and lock it.

    Args:
        variant: the variant's name (for a new run's id).
        identity: from :func:`sweep_identity`.
        label: the user's label (recorded; it is part of ``identity`` already).
        fresh: start a new run even when one of this identity exists (which is kept).
        root: runs root (default: :func:`~workbench.store._root.runs_root`).
        new_run_options: the other :func:`~workbench.store._runs.new_run` arguments, used
            for a new run only.

    A reopened run's manifest gets one more entry in ``resumed`` (a list, absent from a run never reopened):
    ``{"at": <UTC time of reopening>, "units_reused": [[repeat, level_index], ...] (stored before, not measured
    again), "units_to_measure": [...] (the plan's units not stored yet; None without a ``plan`` in
    ``new_run_options``)}``, so a report made from the run can say which of its figures are older than the
    sweep that produced the report, and from when (``started_at``: the first sweep's start).

    Returns:
        A :class:`ResumedRun`; ``writer.pending_units(plan)`` lists what is left.

    Raises:
        ConfigError: another sweep is writing that run now.
        HostError: the run or its pointer cannot be written or read.
    """
    base = runs_root(root)
    run_dir = None if fresh else _existing(base, identity)
    if run_dir is None:
        writer = new_run(variant, root=base, identity=identity, label=label, **new_run_options)
        stale = _acquire(writer.path)
        writer.on_finish = lambda: _release(writer.path)
        return ResumedRun(writer=writer, resumed=False, previous=None, stale_lock=stale)
    stale = _acquire(run_dir)
    try:
        manifest = read_json(run_dir / "manifest.json")
        previous = json.loads(json.dumps(manifest))
        requests, info = _stored_rows(run_dir, manifest)
        now = new_run_options.get("now") or (lambda: datetime.now(timezone.utc))
        writer = RunWriter(run_dir, manifest, requests=requests, info=info, now=now)
        plan = new_run_options.get("plan")
        writer.manifest["resumed"] = [
            *(manifest.get("resumed") or []),
            {
                "at": _utc_iso(now()),
                "units_reused": [list(u) for u in writer.units_completed],
                "units_to_measure": None if plan is None else [list(u) for u in writer.pending_units(plan)],
            },
        ]
        writer.reopen()  # writes the manifest, with the record above
    except BaseException:
        _release(run_dir)
        raise
    writer.on_finish = lambda: _release(run_dir)
    return ResumedRun(writer=writer, resumed=True, previous=previous, stale_lock=stale)
