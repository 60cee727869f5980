"""Reading run directories back: one run, a listing, several runs concatenated.

See :mod:`workbench.store._runs` for the layout. Readers never modify a run. A run's
sweep plan is read with :attr:`StoredRun.plan`, from the manifest's ``plan``, or, for
runs stored before it existed, from their ``parameters`` block.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.bench import default_requests_per_level, workload_labels
from workbench.errors import ConfigError, HostError
from workbench.store._files import parquet_problem, read_json, read_parquet
from workbench.store._resume import LOCK_NAME, lock_owner
from workbench.store._manifest import RUN_COLUMNS, stored_units
from workbench.store._root import runs_root

__all__ = ["StoredRun", "list_runs", "load_run", "load_runs", "resolve_run"]

#: Columns of :func:`list_runs`.
LISTING_COLUMNS: tuple[str, ...] = (
    "run_id",
    "variant",
    "engine",
    "simulated",
    "status",
    "started_at",
    "finished_at",
    "imported_at",
    "units_stored",
    "units_planned",
    "num_requests",
    "sglang_version",
    "host",
    "time_scale",
    "workload",
    "requests_per_level",
    "label",
    "kind",
    "tool",
    "path",
)  # kind, tool: imported runs' (docs/RUNS.md), None for measured ones


@dataclasses.dataclass(frozen=True)
class StoredRun:
    """A run read from disk.

    Attributes:
        run_id: the run's id.
        path: its directory.
        manifest: the manifest dict.
        requests: one row per request (empty when no level was saved).
        levels: one row per level (empty when no level was saved).
        series: what the server and host showed during each level (``server_series.parquet``,
            :mod:`workbench.bench._series`; empty when nothing was observed).
    """

    run_id: str
    path: Path
    manifest: dict[str, Any]
    requests: pd.DataFrame
    levels: pd.DataFrame
    series: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)

    @property
    def plan(self) -> dict[str, Any] | None:
        """The sweep's plan as the manifest records it (:meth:`workbench.bench.SweepPlan.to_json`
        with ``prompt_texts=False``); None when the run recorded none.

        Manifests written before the ``plan`` key existed kept a ``parameters`` block
        (``concurrency_levels`` and/or ``levels``, merged); it is read into the same
        keys, with ``None`` for what it did not record (``prompts_sha256`` always).
        """
        return _plan_of(self.manifest)


#: What manifests written before the sweep plan recorded as ``requests_per_level`` when the default rule
#: (:func:`workbench.bench.default_requests_per_level`) was used: this exact text, the one that code wrote.
_OLD_DEFAULT_RULE_TEXT = "max(16, 2 * concurrency)"


def _plan_of(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The sweep plan a manifest records (see :attr:`StoredRun.plan`)."""
    if manifest.get("plan") is not None:
        return {"repeats": 1, **manifest["plan"]}  # plans recorded before repeats existed measured one
    old = manifest.get("parameters") or {}
    closed = old.get("mode", "closed") == "closed"
    levels = old.get("levels", old.get("concurrency_levels"))
    if levels is None:
        return None
    counts = old.get("requests_per_level")
    if isinstance(counts, str):  # the rule's text, written when the default was used
        counts = (
            [default_requests_per_level(int(c) if closed else 1) for c in levels]
            if counts == _OLD_DEFAULT_RULE_TEXT
            else None
        )
    elif isinstance(counts, (int, float)):
        counts = [int(counts)] * len(levels)
    return {
        "concurrency_levels": [int(c) for c in levels] if closed else [],
        "request_rates": None if closed else [float(r) for r in levels],
        "requests_per_level": counts,
        "max_concurrency": old.get("max_concurrency"),
        "prompt_set": old.get("prompt_set"),
        "max_new_tokens": old.get("max_new_tokens"),
        "seed": old.get("seed"),
        "time_scale": old.get("time_scale", manifest.get("time_scale")),
        "warmup_requests": old.get("warmup_requests"),
        "flush": old.get("flush"),
        "unique_prompts": old.get("unique_prompts", old.get("unique_prefix")),
        "timeout_s": old.get("timeout_s"),
        "extra_sampling_params": old.get("extra_sampling_params"),
        "prompt_ids": old.get("prompt_ids"),
        "prompts_sha256": None,
        "repeats": 1,
    }


def resolve_run(run: str | Path, *, root: str | Path | None = None) -> Path:
    """Directory of ``run``: an existing directory path, else ``<root>/<run>``.

    Raises:
        ConfigError: neither exists or it holds no manifest.json.
    """
    candidate = Path(run).expanduser()
    if not (candidate / "manifest.json").is_file():
        base = runs_root(root)
        candidate = candidate if candidate.is_dir() else base / str(run)
    if candidate.is_dir() and not (candidate / "manifest.json").is_file():
        held = sorted(p.name for p in candidate.iterdir()) if candidate.is_dir() else []
        raise ConfigError(
            f"Run {str(run)!r} ({candidate}) has no manifest.json (deleted, or the sweep died before writing it), "
            f"so it cannot be read as a run; it holds {held or 'nothing'}. Restore manifest.json from a backup, "
            "or delete the folder and run the sweep again (it measures everything anew)"
        )
    if not (candidate / "manifest.json").is_file():
        raise ConfigError(
            f"No run {str(run)!r}: neither it nor {candidate} is a run directory with a "
            "manifest.json; list_runs() shows what is stored"
        )
    return candidate


def _with_run_columns(frame: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """Ensure the run columns are present (first), filled from the manifest."""
    values = {
        "run_id": manifest.get("run_id"),
        "variant": manifest.get("variant"),
        "engine": manifest.get("engine"),
        "simulated": bool(manifest.get("simulated")),
    }
    frame = frame.copy()
    for i, name in enumerate(RUN_COLUMNS):
        if name not in frame:
            frame.insert(
                i,
                name,
                pd.Series(
                    [values[name]] * len(frame), index=frame.index, dtype="bool" if name == "simulated" else "str"
                ),
            )
    return frame


def _stored_only(frame: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """``frame`` with a ``repeat`` column (0 for runs stored before repeats existed), keeping only
    rows of the units the manifest lists (a unit written when its sweep died is not one of them)."""
    if "level_index" not in frame or not len(frame):
        return frame
    if "repeat" not in frame:
        frame.insert(frame.columns.get_loc("level_index") + 1, "repeat", pd.Series(0, index=frame.index, dtype="Int64"))
    if manifest.get("units_completed") is None:
        return frame
    units = set(stored_units(manifest))
    keep = [(int(r), int(i)) in units for r, i in zip(frame["repeat"], frame["level_index"])]
    return frame[keep].reset_index(drop=True)


def load_run(run: str | Path, *, root: str | Path | None = None) -> StoredRun:
    """Read one run (by directory path or run id).

    Every table has a ``repeat`` column (0 for runs stored before repeats existed), and
    holds only the units the manifest lists as stored (``units_completed``).

    Raises:
        ConfigError: no such run.
        HostError: a file is unreadable or corrupt.
    """
    path = resolve_run(run, root=root)
    manifest = read_json(path / "manifest.json")
    tables = {}
    for name in ("requests", "levels"):
        file = path / f"{name}.parquet"
        tables[name] = _stored_only(
            _with_run_columns(read_parquet(file) if file.is_file() else pd.DataFrame(), manifest), manifest
        )
    series_file = path / "server_series.parquet"
    series = _stored_only(read_parquet(series_file), manifest) if series_file.is_file() else pd.DataFrame()
    return StoredRun(
        run_id=str(manifest.get("run_id", path.name)),
        path=path,
        manifest=manifest,
        requests=tables["requests"],
        levels=tables["levels"],
        series=series,
    )


#: Files only a run directory holds: a folder with one of them but no manifest is a broken run.
RUN_FILES = ("requests.parquet", "levels.parquet", "failed_levels.parquet", LOCK_NAME)
#: A run id (``20260101T120000Z-<variant>-<suffix>``), as :func:`workbench.store.new_run` names them.
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-.+-[0-9a-f]+$")
#: :func:`list_runs` adds ``problem``: what is wrong with a broken, unreadable or interrupted run, and what to do.
LISTING_COLUMNS = (*LISTING_COLUMNS, "problem")


def _broken(folder: Path) -> bool:
    """A folder that looks like a run (its name, or a run's files) but has no manifest.json."""
    return (
        folder.is_dir()
        and not (folder / "manifest.json").exists()
        and (bool(RUN_ID.match(folder.name)) or any((folder / name).exists() for name in RUN_FILES))
    )


def _listing_row(folder: Path) -> dict[str, Any]:
    """One :func:`list_runs` row of ``folder``."""
    manifest_path = folder / "manifest.json"
    problem = None
    if not manifest_path.exists():
        m: dict[str, Any] = {"run_id": folder.name, "status": "broken"}
        problem = (
            "no manifest.json (deleted, or the sweep died before writing it): restore it, or delete the "
            "folder and run the sweep again"
        )
    else:
        try:
            m = read_json(manifest_path)
        except HostError as exc:
            m, problem = {"run_id": folder.name, "status": "unreadable"}, str(exc)
    corrupt = [
        found
        for name in ("requests.parquet", "levels.parquet")
        if (folder / name).is_file() and (found := parquet_problem(folder / name))
    ]
    if corrupt and problem is None:
        m = {**m, "status": "broken"}
        problem = (
            "; ".join(corrupt) + ": the run's rows are lost or damaged (a disk error, or a copy cut short); "
            "restore the file from a backup, or delete the run and measure it again"
        )
    if m.get("status") == "failed" and not m.get("units_completed") and problem is None:
        said = str(m.get("error") or "no error recorded").strip().splitlines()[0][:300]
        problem = (
            f"failed before any level was measured, nothing is stored ({said}); fix that and run the same "
            "sweep again (it reuses this run), or `workbench runs delete` it"
        )
    if m.get("status") == "interrupted" and problem is None:
        problem = (
            "stopped by the user (Ctrl-C) before every level was measured; run the same sweep again to resume "
            "it (the levels stored are kept), or `workbench runs delete` it"
        )
    if m.get("status") == "running":
        owner, lock = lock_owner(folder)
        if owner == "dead":
            m = {**m, "status": "interrupted"}
            problem = (
                f"its sweep (pid {lock.get('pid')}) died without finishing (killed, or its kernel "
                "restarted); run the same sweep again to resume it (it also stops a server left running)"
            )
    row = {c: m.get(c) for c in LISTING_COLUMNS if c not in ("path", "problem")}
    row["path"], row["problem"] = str(folder), problem
    plan = _plan_of(m) if problem is None or m.get("status") == "interrupted" else None
    known = "units_completed" in m or "levels_completed" in m  # older manifests counted levels of one repeat
    row["units_stored"] = len(stored_units(m)) if known else None
    row.update(
        _plan_facts(plan) if plan is not None else {"units_planned": None, "workload": None, "requests_per_level": None}
    )
    if plan is None and m.get("kind") == "import" and problem is None:
        row["workload"] = _imported_workload(folder)
    return row


def _plan_facts(plan: dict[str, Any]) -> dict[str, Any]:
    """What a listing says of a run's plan: ``units_planned`` (levels x repeats), ``workload`` (one label, as
    :func:`workbench.bench.workload_labels` names a level's, with the swept dimension's values after it) and
    ``requests_per_level`` (``"max(16, 2c)"`` for the default rule, one number, or the numbers level by level)."""
    from workbench.bench import LOAD_DEFAULTS

    closed = plan.get("request_rates") is None
    base = list(plan.get("concurrency_levels") or []) if closed else list(plan.get("request_rates") or [])
    swept = plan.get("sweep_values") or None
    levels = len(base) * (len(swept) if swept else 1)
    settings = {**LOAD_DEFAULTS, **plan}
    row = {
        "prompt_set": settings.get("prompt_set"),
        "input_len": settings.get("input_len"),
        "max_new_tokens": settings.get("max_new_tokens"),
        "temperature": settings.get("temperature"),
        "backend": settings.get("backend"),
    }
    if swept:
        row[{"output_len": "max_new_tokens"}.get(str(plan.get("sweep")), str(plan.get("sweep")))] = None
    label = str(workload_labels(pd.DataFrame([row])).iloc[0])
    if swept:
        label += f" {plan.get('sweep')}=" + ",".join(f"{v:g}" for v in swept)
    counts = plan.get("requests_per_level")
    if not counts:
        requests = None
    elif (
        closed
        and len(counts) == len(base) * (len(swept) if swept else 1)
        and all(
            int(n) == default_requests_per_level(int(c)) for n, c in zip(counts, base * (len(swept) if swept else 1))
        )
    ):
        requests = "max(16, 2c)"
    elif len(set(counts)) == 1:
        requests = str(int(counts[0]))
    else:
        requests = ",".join(str(int(n)) for n in counts)
    return {"units_planned": levels * int(plan.get("repeats") or 1), "workload": label, "requests_per_level": requests}


def _imported_workload(folder: Path) -> str | None:
    """An imported run's workload (it has no plan): its levels' label, ``"several"`` when they hold more than one,
    None when its levels cannot be read."""
    try:
        levels = read_parquet(folder / "levels.parquet")
    except HostError:
        return None
    labels = with_workload(levels)["workload"].dropna().unique() if len(levels) else []
    return str(labels[0]) if len(labels) == 1 else ("several" if len(labels) else None)


def list_runs(root: str | Path | None = None) -> pd.DataFrame:
    """One row per run directory under ``root``, oldest first (columns :data:`LISTING_COLUMNS`).

    Oldest first is by ``started_at``; an imported run whose file recorded no measurement
    time sorts by its ``imported_at`` instead, and a folder with neither (no readable
    manifest) comes last, by name.

    ``status`` is the manifest's (``running``, ``complete``, ``failed``, ``incomplete``,
    ``interrupted``: stopped by Ctrl-C), except: ``interrupted`` also for a ``running`` run
    whose sweep lock's process is gone (the sweep or its kernel was killed); running the
    sweep again resumes an interrupted run, ``unreadable``
    for a manifest that cannot be read, and ``broken`` for a folder that holds a run's
    files (or is named like a run) but no manifest.json, or whose ``requests.parquet`` or
    ``levels.parquet`` cannot be read (its footer is checked, :func:`parquet_problem`). A
    ``failed`` run that holds no unit (its server never served a level) says so in ``problem``. ``problem`` says what is wrong
    with those and what to do (None for the others). A missing root gives an empty table.
    """
    base = runs_root(root)
    folders = (
        sorted(p for p in base.iterdir() if (p / "manifest.json").is_file() or _broken(p)) if base.is_dir() else []
    )
    listing = pd.DataFrame([_listing_row(folder) for folder in folders], columns=list(LISTING_COLUMNS))
    when = _utc(listing["started_at"]).fillna(_utc(listing["imported_at"]))
    return (
        listing.assign(_when=when)
        .sort_values(["_when", "run_id"], na_position="last")
        .drop(columns="_when")
        .reset_index(drop=True)
    )


def _utc(times: pd.Series) -> pd.Series:
    """ISO times (any offset; None or text that is no time: NaT) as UTC timestamps."""
    return pd.to_datetime(times, utc=True, errors="coerce", format="ISO8601").astype("datetime64[ns, UTC]")


def load_runs(runs: Iterable[str | Path], *, root: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Concatenate several runs' tables.

    Args:
        runs: run ids or directory paths.
        root: runs root for ids.

    Returns:
        ``(requests, levels)``, each with ``run_id``, ``variant``, ``engine`` and ``simulated``;
        ``levels`` also with ``workload`` (:func:`with_workload`).

    Raises:
        ConfigError: no runs given or one does not exist.
        HostError: a file is unreadable.
    """
    loaded = [load_run(r, root=root) for r in runs]
    if not loaded:
        raise ConfigError("load_runs: no runs given")
    requests = [r.requests for r in loaded if len(r.requests)]
    levels = [_with_prompt_set(r.levels, r.manifest) for r in loaded if len(r.levels)]
    return (
        pd.concat(requests, ignore_index=True) if requests else pd.DataFrame(columns=list(RUN_COLUMNS)),
        with_workload(pd.concat(levels, ignore_index=True)) if levels else pd.DataFrame(columns=list(RUN_COLUMNS)),
    )


def _with_prompt_set(levels: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """A measured run's levels with ``prompt_set`` from its plan (part of the workload), when they lack it."""
    name = (manifest.get("plan") or {}).get("prompt_set")
    if "prompt_set" in levels or not isinstance(name, str):
        return levels
    return levels.assign(prompt_set=name)


def with_workload(levels: pd.DataFrame) -> pd.DataFrame:
    """``levels`` with a ``workload`` label on every row (:func:`workbench.bench.workload_labels`), keeping
    the label a row already has (imported runs store it; the workbench's own runs are labelled on reading)."""
    labels = workload_labels(levels)
    if "workload" in levels:
        labels = levels["workload"].where(levels["workload"].notna(), labels)
    return levels.assign(workload=labels.astype(object))
