"""Run directories: ``<root>/<run_id>/`` with the raw rows, per-level summaries and a manifest.

Layout of one run::

    data/runs/20260529T101500Z-eagle3-topk4-3fa91c/
        manifest.json     variant, launch command, server_info, versions, times, the sweep plan, provenance
        requests.parquet  one row per request (list columns itl_ms, tokens_per_chunk)
        levels.parquet    one row per level, derived from requests (+ server observations)
        failed_levels.parquet  request rows of levels cut short by a dead server (only when there were
                          some; never charted: manifest ``failed_levels`` says why each failed)
        server_series.parquet  what the server and host showed during each level, one row per
                          observed value (/metrics, batch log lines, GPU telemetry), when any

``run_id`` is ``<UTC start, %Y%m%dT%H%M%SZ>-<variant>-<6 hex>``. The root is the
``root`` argument, else ``$WORKBENCH_RUNS_DIR``, else ``data/runs`` (:func:`~workbench.store._root.runs_root`).
What every manifest holds is :mod:`workbench.store._manifest`.

Writing: :func:`new_run` creates the directory and a ``status: "running"`` manifest;
:func:`save_level` (pass it as ``run_sweep(on_level=run.save_level)``) rewrites
``requests.parquet``, ``levels.parquet`` and then the manifest after every level (every
unit ``(repeat, level_index)``), each atomically. The manifest is written last and lists
the units stored (``units_completed``): it is the commit point, so a crash between the
files loses only the unit being written, and readers ignore rows of units it does not
list. :func:`finish_run` stamps the end time and status. A :class:`RunWriter` is also a
context manager that finishes the run as ``failed`` (with the error) on an exception, or as
``interrupted`` on Ctrl-C (KeyboardInterrupt).
:func:`workbench.store._resume.open_run` finds, locks and reopens the run of a sweep's
identity, so a re-run resumes it.

Every stored row carries ``run_id``, ``variant``, ``engine`` and ``simulated``.
"""

from __future__ import annotations

import random
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from workbench import paths
from workbench._version import __version__
from workbench.bench import SweepPlan, summarize_levels
from workbench.engines import Engine, get_engine
from workbench.errors import ConfigError
from workbench.gitinfo import git_state
from workbench.store._files import read_parquet, to_jsonable, write_json, write_parquet
from workbench.store._manifest import RUN_COLUMNS, SCHEMA_VERSION, STANDARD_KEYS, RunStatus, stored_units
from workbench.store._root import runs_root

__all__ = ["RunWriter", "finish_run", "new_run", "save_level"]

REPO_ROOT = paths.PACKAGE_ROOT
#: The error an interrupted run records.
INTERRUPTED_ERROR = "interrupted by the user (Ctrl-C); run the same sweep again to resume it"


def _utc_iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _slug(variant: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", variant).strip("-.")
    if not slug:
        raise ConfigError(f"variant name {variant!r} has no usable characters for a run id")
    return slug[:60]


class RunWriter:
    """Handle of a run directory being written (from :func:`new_run`).

    Attributes:
        run_id: the run's id.
        path: the run directory.
        manifest: the manifest dict as last written.
    """

    def __init__(
        self,
        path: Path,
        manifest: dict[str, Any],
        *,
        now: Callable[[], datetime],
        requests: pd.DataFrame | None = None,
        info: pd.DataFrame | None = None,
    ) -> None:
        self.path = path
        self.run_id: str = manifest["run_id"]
        self.manifest = manifest
        self._now = now
        self._requests: list[pd.DataFrame] = [requests] if requests is not None and len(requests) else []
        self._info: list[pd.DataFrame] = [info] if info is not None and len(info) else []
        #: Called once the run is finished (e.g. to release the sweep's lock file).
        self.on_finish: Callable[[], None] | None = None

    @property
    def units_completed(self) -> list[tuple[int, int]]:
        """The ``(repeat, level_index)`` units stored, in the order they were measured."""
        return stored_units(self.manifest)

    def pending_units(self, plan: SweepPlan) -> list[tuple[int, int]]:
        """The units of ``plan`` not stored yet, in the plan's order (:meth:`SweepPlan.units`)."""
        done = set(self.units_completed)
        return [u for u in plan.units() if u not in done]

    @property
    def requests(self) -> pd.DataFrame:
        """All request rows saved so far (with run columns)."""
        return pd.concat(self._requests, ignore_index=True) if self._requests else pd.DataFrame()

    def save_level(self, level: Any) -> None:
        """Same as :func:`save_level` (``run_sweep(on_level=run.save_level)``)."""
        save_level(self, level)

    def save_failed_level(self, level: Any, failure: Mapping[str, Any]) -> None:
        """Keep a level that its server's failure cut short, apart from the measured ones.

        Its request rows are appended to ``failed_levels.parquet`` and the manifest's
        ``failed_levels`` list gets ``{"repeat", "level_index", "completed", "failed",
        **failure}`` (e.g. the server's state, exit signal, log classification and tail).
        The unit is not marked stored: it stays out of ``levels.parquet``, charts and
        findings, and a re-run of the sweep measures it again.

        Raises:
            ConfigError: the run is finished.
            DiskFullError, HostError: a file cannot be written.
        """
        if self.manifest.get("status") != "running":
            raise ConfigError(f"Run {self.run_id} is {self.manifest.get('status')}; cannot add levels")
        requests = level.requests.copy()
        repeat, index = int(getattr(level, "repeat", 0)), int(getattr(level, "index", 0))
        if len(requests):
            requests.insert(0, "run_id", self.run_id)
            requests["repeat"] = repeat
            path = self.path / "failed_levels.parquet"
            if path.is_file():
                requests = pd.concat([read_parquet(path), requests], ignore_index=True)
            write_parquet(path, requests)
        failed = int(level.requests["error"].notna().sum()) if "error" in level.requests else 0
        entry = {
            "repeat": repeat,
            "level_index": index,
            "completed": len(level.requests) - failed,
            "failed": failed,
            **failure,
        }
        self.manifest["failed_levels"] = [*(self.manifest.get("failed_levels") or []), to_jsonable(entry)]
        self._write_manifest()

    def annotate(self, **keys: Any) -> None:
        """Add non-standard manifest keys (e.g. ``client=`` facts known only once the
        sweep started) and rewrite the manifest.

        Raises:
            ConfigError: a key is one of the standard manifest keys, or the run is finished.
        """
        clash = set(keys) & STANDARD_KEYS
        if clash:
            raise ConfigError(f"manifest keys {sorted(clash)} are standard keys; annotate adds other keys only")
        if self.manifest.get("status") != "running":
            raise ConfigError(f"Run {self.run_id} is {self.manifest.get('status')}; cannot annotate it")
        self.manifest.update(keys)
        self._write_manifest()

    def record_server(
        self,
        *,
        launch_command: str | Sequence[str] | None,
        client_location: str,
        server_info: Mapping[str, Any] | None,
        **extra: Any,
    ) -> None:
        """Record the server a (resumed) sweep measures now: its launch command, where the load
        generator runs, its ``/server_info``, and other (non-standard) keys, e.g. ``server_process``.

        Raises:
            ConfigError: an extra key is a standard key, or the run is finished.
        """
        self.manifest["launch_command"] = (
            launch_command if isinstance(launch_command, (str, type(None))) else list(launch_command)
        )
        self.manifest["client_location"] = client_location
        if server_info is not None:
            self.manifest["server_info"] = dict(server_info)
            self.manifest["sglang_version"] = self.manifest.get("sglang_version") or server_info.get("version")
        self.annotate(**extra)

    def finish(
        self, *, status: RunStatus = "complete", error: str | None = None, server_info: Mapping[str, Any] | None = None
    ) -> Path:
        """Same as :func:`finish_run`."""
        return finish_run(self, status=status, error=error, server_info=server_info)

    def reopen(self) -> None:
        """Mark a finished (or killed) run as ``running`` again, to add the units it lacks.

        Raises:
            HostError: the manifest cannot be written.
        """
        self.manifest["status"] = "running"
        self.manifest["error"] = None
        self.manifest["finished_at"] = None
        self._write_manifest()

    def _write_manifest(self) -> None:
        write_json(self.path / "manifest.json", self.manifest)

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self.manifest.get("status") != "running":
            return
        if exc is None:
            self.finish()
        elif isinstance(exc, KeyboardInterrupt):
            self.finish(status="interrupted", error=INTERRUPTED_ERROR)
        else:
            self.finish(status="failed", error=f"{type(exc).__name__}: {exc}")


def new_run(
    variant: str,
    *,
    engine: str | Engine,
    simulated: bool | None = None,
    launch_command: str | Sequence[str] | None = None,
    host: str = "local",
    client_location: str = "local",
    sglang_version: str | None = None,
    server_info: Mapping[str, Any] | None = None,
    plan: SweepPlan | None = None,
    time_scale: float = 1.0,
    extra: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    rng: random.Random | None = None,
    identity: str | None = None,
    label: str | None = None,
) -> RunWriter:
    """Create ``<root>/<run_id>/`` and its initial manifest (``status: "running"``).

    Args:
        variant: server variant name (e.g. ``"baseline"``, ``"eagle3-topk4"``).
        engine: what served the requests: an :class:`~workbench.engines.Engine` or its name
            (``"sim"``, ``"sglang"``); its name is stored as ``engine``.
        simulated: whether results come from a simulated engine; default: the engine's
            ``simulated`` (True for ``"sim"``).
        launch_command: the full server launch command (string or argv).
        host: where the server ran (``"local"`` or an ssh alias).
        client_location: where the load generator ran (``"local"``, ``"local (tunnel)"``,
            ``"host:<alias>"``).
        sglang_version: SGLang version; default: ``server_info["version"]`` once known.
        server_info: the ``/server_info`` body if already read (later levels fill it in).
        plan: the sweep's plan, recorded under ``plan`` as :meth:`SweepPlan.to_json`
            with ``prompt_texts=False`` (prompt ids and a hash, not the texts); when
            None, the first saved level's plan fills it in.
        time_scale: engine seconds per wall second used by the load generator.
        extra: more manifest keys (must not clash with the standard ones).
        root: runs root (see module docstring).
        now: UTC clock for timestamps and the run id.
        rng: randomness for the id suffix (default: :mod:`secrets`).
        identity: the sweep's identity (:func:`workbench.store._resume.sweep_identity`),
            recorded as ``identity`` (None: a run no re-run resumes).
        label: the user's label of the sweep (part of its identity), recorded as ``label``.

    Returns:
        A :class:`RunWriter`.

    Raises:
        ConfigError: an unknown ``engine`` (the message lists the known ones), a bad
            variant name, clashing ``extra`` keys.
        HostError: the directory or manifest cannot be written.
    """
    eng = get_engine(engine)
    started = now()
    suffix = f"{rng.getrandbits(24):06x}" if rng is not None else secrets.token_hex(3)
    run_id = f"{started.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}-{_slug(variant)}-{suffix}"
    path = runs_root(root)
    path = path / run_id
    if path.exists():
        raise ConfigError(f"Run directory {path} already exists; pass another rng or wait a second")
    info = dict(server_info) if server_info is not None else None
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "variant": variant,
        "engine": eng.name,
        "simulated": bool(eng.simulated if simulated is None else simulated),
        "status": "running",
        "error": None,
        "started_at": _utc_iso(started),
        "finished_at": None,
        "host": host,
        "client_location": client_location,
        "launch_command": launch_command if isinstance(launch_command, (str, type(None))) else list(launch_command),
        "sglang_version": sglang_version or (info or {}).get("version"),
        "time_scale": float(time_scale),
        "plan": None if plan is None else plan.to_json(prompt_texts=False),
        "levels_completed": 0,
        "units_completed": [],
        "num_requests": 0,
        "identity": identity,
        "label": label,
        "server_info": info,
        "workbench": {"version": __version__, **(git_state(REPO_ROOT) or {"commit": None, "dirty": None})},
    }
    clash = set(extra or {}) & set(manifest)
    if clash:
        raise ConfigError(f"extra manifest keys {sorted(clash)} clash with standard keys")
    manifest.update(extra or {})
    writer = RunWriter(path, manifest, now=now)
    path.mkdir(parents=True)
    writer._write_manifest()
    return writer


def save_level(run: RunWriter, level: Any) -> None:
    """Add one measured level to the run and rewrite its files atomically.

    Args:
        run: the run being written.
        level: a :class:`workbench.bench.LevelResult` (``requests``, ``info``,
            ``server_info``, ``plan``, ``unit``) or a ``(requests, info)`` pair of
            DataFrames (unit ``(repeat, level_index)`` read from their columns). Its plan
            is recorded when :func:`new_run` was given none; its server_info replaces
            the manifest's (the latest read wins).

    Raises:
        ConfigError: the run is already finished, the unit is already stored, or the
            rows' ``engine``/``simulated`` (as the server reported them) contradict the run's.
        DiskFullError: the disk is full; the files keep every unit stored before.
        HostError: a file cannot be written.
    """
    if run.manifest.get("status") != "running":
        raise ConfigError(f"Run {run.run_id} is {run.manifest.get('status')}; cannot add levels")
    if isinstance(level, tuple):
        requests, info, server_info, plan = level[0], level[1], None, None
        unit = (_first_int(info, "repeat"), _first_int(info, "level_index"))
    else:
        requests, info, server_info, plan = level.requests, level.info, level.server_info, level.plan
        repeat = _first_int(info, "repeat") if "repeat" in info else int(getattr(level, "repeat", 0))
        unit = (repeat, _first_int(info, "level_index"))
    if unit in run.units_completed:
        raise ConfigError(
            f"Run {run.run_id} already stores level_index {unit[1]} of repeat {unit[0]}; "
            "a resumed sweep measures only the units it lacks"
        )
    if plan is not None and run.manifest.get("plan") is None:
        run.manifest["plan"] = plan.to_json(prompt_texts=False)
    constants = {
        "run_id": run.run_id,
        "variant": run.manifest["variant"],
        "engine": run.manifest["engine"],
        "simulated": run.manifest["simulated"],
    }
    for name in ("engine", "simulated"):
        reported = set(requests[name].dropna()) if name in requests else set()
        if reported - {constants[name]}:
            raise ConfigError(
                f"Run {run.run_id} was created with {name}={constants[name]!r}, but the server reported "
                f"{name}={sorted(reported, key=str)} (/server_info); simulated results must never be stored as "
                "real ones or the reverse. Create the run with the matching engine."
            )
    requests = requests.drop(columns=[c for c in RUN_COLUMNS if c in requests]).copy()
    info = info.drop(columns=[c for c in RUN_COLUMNS if c in info]).copy()
    for i, (name, value) in enumerate(constants.items()):
        requests.insert(
            i,
            name,
            pd.Series([value] * len(requests), index=requests.index, dtype="bool" if name == "simulated" else "str"),
        )
        info.insert(
            i, name, pd.Series([value] * len(info), index=info.index, dtype="bool" if name == "simulated" else "str")
        )
    for frame in (requests, info):
        if "repeat" not in frame:
            frame.insert(
                frame.columns.get_loc("level_index") + 1 if "level_index" in frame else len(frame.columns),
                "repeat",
                pd.Series([unit[0]] * len(frame), index=frame.index, dtype="Int64"),
            )
    all_requests = pd.concat([*run._requests, requests], ignore_index=True)
    all_info = pd.concat([*run._info, info], ignore_index=True)
    # Rows first, the manifest (the list of stored units) last: the commit point.
    write_parquet(run.path / "requests.parquet", all_requests)
    write_parquet(run.path / "levels.parquet", summarize_levels(all_requests, all_info))
    _save_series(run, getattr(level, "series", None), unit)
    run._requests, run._info = [all_requests], [all_info]
    if server_info is not None:
        run.manifest["server_info"] = dict(server_info)
        run.manifest["sglang_version"] = run.manifest.get("sglang_version") or server_info.get("version")
    run.manifest["units_completed"] = [*map(list, run.units_completed), list(unit)]
    run.manifest["levels_completed"] = len(run.manifest["units_completed"])
    run.manifest["num_requests"] = len(all_requests)
    run._write_manifest()


def _save_series(run: RunWriter, series: pd.DataFrame | None, unit: tuple[int, int]) -> None:
    """Add a level's observations to ``server_series.parquet`` (rows of units not stored are dropped:
    a sweep killed after writing them never committed its unit)."""
    if series is None or not len(series):
        return
    path = run.path / "server_series.parquet"
    stored = set(run.units_completed)
    frames = []
    if path.is_file():
        old = read_parquet(path)
        keep = [(int(r), int(i)) in stored for r, i in zip(old["repeat"], old["level_index"])]
        frames.append(old[keep])
    frames.append(
        series.assign(repeat=unit[0], level_index=unit[1]).astype({"repeat": "Int64", "level_index": "Int64"})
    )
    write_parquet(path, pd.concat([f for f in frames if len(f)], ignore_index=True))


def _first_int(frame: pd.DataFrame, column: str) -> int:
    return int(frame[column].iloc[0]) if column in frame and len(frame) else 0


def finish_run(
    run: RunWriter,
    *,
    status: RunStatus = "complete",
    error: str | None = None,
    server_info: Mapping[str, Any] | None = None,
) -> Path:
    """Stamp the end time and status in the manifest; returns the run directory.

    ``status`` ``"incomplete"``: the sweep stopped with units left, on purpose (e.g.
    between the repeats of alternated variants); re-running it resumes. The run's
    ``on_finish`` (the sweep lock's release) runs afterwards, even if the write fails.

    Raises:
        HostError: the manifest cannot be written.
    """
    if server_info is not None:
        run.manifest["server_info"] = dict(server_info)
        run.manifest["sglang_version"] = run.manifest.get("sglang_version") or server_info.get("version")
    run.manifest["status"] = status
    run.manifest["error"] = error
    run.manifest["finished_at"] = _utc_iso(run._now())
    try:
        run._write_manifest()
    finally:
        if run.on_finish is not None:
            run.on_finish()
    return run.path
