"""Import other tools' results: detect the format, read, check, group into runs, store.

:func:`import_results` is the one entry point (``wb.import_results``, ``workbench import``).
Each file or folder is recognised by its content and read
(:mod:`workbench.imports._formats`: :func:`~workbench.imports._formats.detect_format`) into
:class:`~workbench.imports._rows.ImportedLevel` rows by its tool's module, checked
(:mod:`workbench.imports._checks`), and grouped into runs: one run per (tool, source,
variant), its levels numbered by (workload, concurrency, request rate) and a level measured
again on the same workload in the same run counted as another ``repeat`` (``run=<n>`` of a
vLLM sweep gives its own); rows of different workloads (a bench_serving file holding random
and ShareGPT runs at one rate) are different levels, each with its ``workload`` label.
Each run is stored as a run directory of kind ``import`` in the runs folder
(:func:`workbench.store.save_imported_run`), so ``wb.load_runs``, ``wb.load_study`` and the
run catalogue see it beside measured runs.

Engine and simulation: a bench_serving file that recorded ``/server_info`` says which engine
answered (:func:`workbench.engines.server_info_engine`: the simulator says so itself). Other
tools do not record it: pass ``engine=`` (and ``simulated=`` for an engine the workbench does
not know); otherwise rows have ``engine`` None and ``simulated=False`` (docs/RUNS.md).

Time scale: a simulated server running faster than real time (``simulation.time_scale`` s in
its recorded ``/server_info``) gives the tool wall-clock figures s times too fast; they are
converted to engine time, as the workbench stores its own runs (times x s, rates / s), and
``time_scale`` is kept per row and in the manifest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.bench import summarize_levels, workload_labels
from workbench.engines import engine_names, get_engine, server_info_engine
from workbench.errors import ConfigError
from workbench.names import check_name
from workbench.imports._checks import violations
from workbench.imports._formats import read_results
from workbench.imports._identity import drop_duplicates, record_sha256, refuse_copies
from workbench.imports._limits import impossible
from workbench.imports._naming import sweep_names
from workbench.imports._rows import ImportedLevel, to_engine_time
from workbench.store import save_imported_run, writable_runs_root

__all__ = ["ImportResult", "import_results"]

#: Columns of :attr:`ImportResult.runs`.
RUN_LISTING = (
    "run_id",
    "variant",
    "tool",
    "tool_version",
    "engine",
    "simulated",
    "levels",
    "quarantined",
    "requests",
    "source_file",
    "path",
    "created",
)


@dataclasses.dataclass(frozen=True)
class ImportResult:
    """What an import read and stored.

    Attributes:
        levels: the rows that passed the checks, one per level and repeat (our column names,
            the tools' own ``<tool>_...`` columns, provenance); what charts may show.
        quarantine: the rows that broke an invariant, same columns plus ``reason`` (every
            invariant broken, joined by ``"; "``).
        requests: per-request rows, where the files had them.
        runs: one row per run (:data:`RUN_LISTING`): id, variant, tool, counts, directory,
            ``created`` (False: the same import was already stored and was left as it was).
        notes: lines the import has to tell besides its tables: how many exact duplicate records it
            dropped (:mod:`workbench.imports._identity`); empty when none.
    """

    levels: pd.DataFrame
    quarantine: pd.DataFrame
    requests: pd.DataFrame
    runs: pd.DataFrame
    notes: tuple[str, ...] = ()

    def to_records(self) -> list[dict[str, Any]]:
        """The level rows as JSON-ready dicts (NaN and infinities as None and ``"inf"``), quarantined ones
        included with their ``quarantine_reason``; what ``workbench import --json`` prints."""
        frames = [
            f
            for f in (
                self.levels.assign(quarantine_reason=None),
                self.quarantine.rename(columns={"reason": "quarantine_reason"}),
            )
            if len(f)
        ]
        rows = pd.concat(frames, ignore_index=True).to_dict("records") if frames else []
        return [{k: _jsonable(v) for k, v in row.items()} for row in rows]


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return _jsonable(value.item())
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _engine_of(levels: list[ImportedLevel], engine: str | None, simulated: bool | None) -> tuple[str | None, bool]:
    """The engine name and simulated flag of one run's levels (module docstring)."""
    info = next((lvl.server_info for lvl in levels if lvl.server_info), None)
    answered = server_info_engine(info) if info else None
    if answered is not None:
        if simulated is not None and simulated != answered.simulated:
            raise ConfigError(
                f"{levels[0].source_file}: the recorded /server_info says the engine was "
                f"{answered.name!r} (simulated={answered.simulated}); simulated={simulated} "
                "contradicts it"
            )
        return answered.name, bool(answered.simulated)
    if engine is None:
        return None, bool(simulated)
    known = get_engine(engine) if engine in engine_names() else None
    if known is not None:
        return known.name, bool(known.simulated if simulated is None else simulated)
    return engine, bool(simulated)


def _iso(text: str | None) -> str | None:
    """``text`` when it is an ISO 8601 time (the catalogue sorts on it), else None."""
    if not text:
        return None
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return text


#: Columns :func:`workbench.bench.summarize_levels` needs, with what a request row lacking one gets.
_SUMMARY_INPUTS = {
    "error": None,
    "error_type": None,
    "output_tokens": math.nan,
    "prompt_tokens": math.nan,
    "ttft_ms": math.nan,
    "tpot_ms": math.nan,
    "e2e_ms": math.nan,
    "spec_verify_ct": math.nan,
    "start_s": math.nan,
    "end_s": math.nan,
}
_PER_REQUEST = tuple(f"{s}_per_request_tok_s" for s in ("mean", "p50", "p90", "p99"))


def _fill_per_request_speed(lvl: ImportedLevel) -> None:
    """Per-request tok/s statistics (our definition, output tokens / E2E) from the level's request
    rows, when the tool's summary has none and its rows carry both figures (vLLM's --save-detailed)."""
    rows = lvl.requests
    if rows is None or not len(rows) or not {"output_tokens", "e2e_ms"} <= set(rows):
        return
    if rows["e2e_ms"].isna().all() or any(not math.isnan(lvl.values.get(k, math.nan)) for k in _PER_REQUEST):
        return
    frame = rows.assign(
        level_index=0,
        itl_ms=[[] for _ in range(len(rows))],
        tokens_per_chunk=[[] for _ in range(len(rows))],
        **{k: rows[k] if k in rows else v for k, v in _SUMMARY_INPUTS.items()},
    )
    summary = summarize_levels(frame).iloc[0]
    lvl.values.update({k: float(summary[k]) for k in _PER_REQUEST})


def _number_levels(levels: list[ImportedLevel]) -> list[dict[str, Any]]:
    """Rows of one run with ``workload`` (:func:`workbench.bench.workload_labels`), ``level_index``
    (by workload, then concurrency, then request rate) and ``repeat``: only the same load on the
    same workload is another repeat."""
    workloads = list(workload_labels(pd.DataFrame([lvl.values for lvl in levels]))) if levels else []

    def key(lvl: ImportedLevel, workload: str) -> tuple[str, float, float, str]:
        conc = lvl.values.get("concurrency", math.nan)
        rate = lvl.values.get("request_rate_req_s", math.nan)
        return (
            workload,
            math.inf if math.isnan(conc) else conc,
            math.inf if math.isnan(rate) else rate,
            str(lvl.values.get("mode")),
        )

    keys = [key(lvl, w) for lvl, w in zip(levels, workloads)]
    order = {k: i for i, k in enumerate(sorted(set(keys)))}
    seen: dict[tuple[str, float, float, str], int] = {}
    rows = []
    for lvl, k in zip(levels, keys):
        row = lvl.row()
        row["workload"] = k[0]
        given = lvl.values.get("repeat")
        row["level_index"] = order[k]
        row["repeat"] = int(given) if given is not None else seen.get(k, 0)
        seen[k] = max(seen.get(k, 0), row["repeat"]) + 1
        row["variant"] = lvl.variant
        rows.append(row)
    return rows


def _front(frame: pd.DataFrame) -> pd.DataFrame:
    first = [c for c in ("variant", "workload", "level_index", "repeat", "reason") if c in frame]
    return frame[first + [c for c in frame.columns if c not in first]]


def _run_frames(
    group: list[ImportedLevel], *, name: str, tool: str, engine: str | None, simulated: bool
) -> dict[str, pd.DataFrame]:
    """One run's ``levels`` (clean), ``quarantine`` (with ``reason``) and ``requests`` tables."""
    for lvl in group:
        _fill_per_request_speed(lvl)
        if lvl.time_scale is not None and lvl.time_scale != 1.0:
            lvl.values, lvl.requests = to_engine_time(lvl.values, lvl.requests, lvl.time_scale)
        lvl.values["time_scale"] = lvl.time_scale if lvl.time_scale is not None else math.nan
    clean: list[Any] = []
    bad: list[Any] = []
    reqs: list[Any] = []
    for lvl, row in zip(group, _number_levels(group)):
        row.update(engine=engine, simulated=simulated)
        reasons = violations(row, streamed=lvl.streamed)
        (bad if reasons else clean).append({**row, "reason": "; ".join(reasons)} if reasons else row)
        if lvl.requests is not None and len(lvl.requests):
            reqs.append(
                lvl.requests.assign(
                    variant=name,
                    level_index=row["level_index"],
                    repeat=row["repeat"],
                    mode=row["mode"],
                    concurrency=row["concurrency"],
                    request_rate_req_s=row["request_rate_req_s"],
                    engine=engine,
                    simulated=simulated,
                    tool=tool,
                    source_file=lvl.source_file,
                )
            )
    return {
        "levels": pd.DataFrame(clean),
        "quarantine": pd.DataFrame(bad),
        "requests": pd.concat(reqs, ignore_index=True) if reqs else pd.DataFrame(),
    }


def import_results(
    paths: str | Path | Iterable[str | Path],
    *,
    variant: str | None = None,
    engine: str | None = None,
    simulated: bool | None = None,
    label: str | None = None,
    runs_dir: str | Path | None = None,
    store: bool = True,
) -> ImportResult:
    """Import other tools' result files into tidy tables and the run catalogue.

    Args:
        paths: files or folders (formats: :func:`detect_format`).
        variant: run name for every level (default: each tool's tag or label, else the file's stem).
        engine: the engine the tool measured, where the file does not say (``"sglang"``, ``"sim"``,
            ``"vllm"``, ...). A bench_serving file with ``/server_info`` says it itself.
        simulated: whether the figures come from a simulator, where neither the file nor a known
            ``engine`` says (default False).
        label: a label stored with each run.
        runs_dir: the runs folder (default ``$WORKBENCH_RUNS_DIR`` or ``data/runs``).
        store: False reads and checks only (nothing written; ``run_id`` is None).

    Returns:
        An :class:`ImportResult`: clean level rows, quarantined rows (with the reason), request
        rows and one row per run. Every row has ``run_id``, ``variant``, ``engine``, ``simulated``,
        ``tool``, ``tool_version``, ``source_file`` and ``source_record``.

    Records: each row keeps its identity, ``record_sha256`` (its file and figures); a record with the
    same figures as an earlier one of the same file is dropped (counted in :attr:`ImportResult.notes`).

    Raises:
        ConfigError: no path given, a path that does not exist or is in no known format, a
            malformed file (the message names the file and place), a value no measurement can
            give (:func:`workbench.imports._limits.impossible`: the field, file and record named),
            records of one run name with the same figures in two files (one measurement copied,
            never pooled as repeats: :func:`workbench.imports._identity.refuse_copies`), contradicting ``simulated``,
            a run name (``variant``, or a tool's tag, label or file name) or ``label`` that breaks
            :data:`workbench.names.NAME_RULE`.
        HostError: the runs folder or a run directory cannot be written (checked first:
            :func:`workbench.store.writable_runs_root`, ConfigError when it names a file).
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise ConfigError("import_results: no files given")
    if variant is not None:
        check_name(variant, fix="Pass another --variant")
    if label is not None:
        check_name(label, what="label", fix="Pass another --label")
    if store:
        runs_dir = writable_runs_root(runs_dir)  # a file or read-only folder: said before any file is read
    read: list[tuple[Path, ImportedLevel]] = []
    for item in items:  # every file first: a bad one stops the import before anything is stored
        source = Path(item).expanduser().resolve()
        read.extend((source, lvl) for lvl in read_results(source, variant=variant))
    sweep_names(lvl for _, lvl in read)  # one file per rate, none naming its run: one run (workbench.imports._naming)
    for source, lvl in read:
        check_name(
            lvl.variant,
            what=f"run name from {source.name} ({lvl.source_record}: the tool's tag or label, else the file's name)",
            fix="Pass --variant NAME to name the runs of this import",
        )
        problem = impossible(lvl)
        if problem is not None:
            raise ConfigError(problem)
    unique = drop_duplicates(read)
    refuse_copies(unique.kept)
    groups: dict[tuple[str, str], list[tuple[Path, ImportedLevel]]] = {}
    for source, lvl, digest in unique.kept:
        lvl.values["record_sha256"] = record_sha256(lvl, digest)
        groups.setdefault((lvl.tool, lvl.variant), []).append((source, lvl))
    levels_out, quarantine_out, requests_out, runs = [], [], [], []
    digests: dict[Path, str] = {}
    for (tool, name), members in groups.items():
        sources = list(dict.fromkeys(src for src, _ in members))
        group = [lvl for _, lvl in members]
        eng, sim = _engine_of(group, engine, simulated)
        frames = _run_frames(group, name=name, tool=tool, engine=eng, simulated=sim)
        run_id, path, created = None, None, False
        if store:
            for src in sources:
                digests.setdefault(src, _sha256(src))
            digest = (
                digests[sources[0]]
                if len(sources) == 1
                else hashlib.sha256("".join(digests[src] for src in sorted(sources)).encode()).hexdigest()
            )
            path, created = save_imported_run(
                variant=name,
                engine=eng,
                simulated=sim,
                tool=tool,
                tool_version=group[0].tool_version,
                source_file=str(sources[0]),
                source_sha256=digest,
                levels=frames["levels"],
                requests=frames["requests"],
                quarantine=frames["quarantine"],
                label=label,
                measured_at=next((t for t in (_iso(lvl.measured_at) for lvl in group) if t), None),
                extra={
                    "tool_version_source": group[0].tool_version_source,
                    "server_info": next((lvl.server_info for lvl in group if lvl.server_info), None),
                    "source_files": [str(src) for src in sources],
                    "source_records": [lvl.source_record for lvl in group],
                    "time_scale": group[0].time_scale,
                },
                root=runs_dir,
            )
            run_id = path.name
        for frame in frames.values():
            if len(frame):
                frame.insert(0, "run_id", run_id)
        levels_out.append(frames["levels"])
        quarantine_out.append(frames["quarantine"])
        requests_out.append(frames["requests"])
        runs.append(
            {
                "run_id": run_id,
                "variant": name,
                "tool": tool,
                "tool_version": group[0].tool_version,
                "engine": eng,
                "simulated": sim,
                "levels": len(frames["levels"]),
                "quarantined": len(frames["quarantine"]),
                "requests": len(frames["requests"]),
                "source_file": ", ".join(str(src) for src in sources),
                "path": str(path) if path else None,
                "created": created,
            }
        )

    def cat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        frames = [f for f in frames if len(f)]
        return _front(pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()

    return ImportResult(
        levels=cat(levels_out),
        quarantine=cat(quarantine_out),
        requests=cat(requests_out),
        runs=pd.DataFrame(runs, columns=list(RUN_LISTING)),
        notes=(unique.note,) if unique.note else (),
    )
