"""Which tool wrote a result file or folder, from its content, and reading it into levels.

:func:`detect_format` recognises each file or folder by what it holds (not its name): sglang.bench_serving
JSONL, vllm bench serve JSON and sweep folders, AIPerf exports (JSON, CSV, aggregate, artifact folder),
GuideLLM benchmarks, InferenceX aggregates, or a folder of such files. :func:`read_results` reads one into
:class:`~workbench.imports._rows.ImportedLevel` rows through its tool's module; nothing is checked or stored
here (:func:`workbench.imports._importer.import_results` does that).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from workbench.errors import ConfigError
from workbench.imports import _aiperf, _aiperf_csv, _bench_serving, _guidellm, _inferencex, _vllm
from workbench.imports._rows import ImportedLevel, json_int

__all__ = ["Format", "detect_format", "folder_files", "read_results"]

Format = Literal["bench_serving", "vllm", "vllm_sweep", "aiperf", "aiperf_csv", "guidellm", "inferencex", "folder"]

_KNOWN = (
    "Known formats: sglang.bench_serving JSONL (--output-file), vllm bench serve --save-result JSON, a "
    "vllm bench sweep folder, AIPerf profile_export_aiperf.json or .csv (or its aggregate, or an artifact "
    "folder), GuideLLM benchmarks JSON, InferenceX aggregated results (agg_*.json), or a folder of such files"
)
#: File name endings a folder of result files is read for (:func:`folder_files`).
_RESULT_SUFFIXES = (".json", ".jsonl", ".csv")


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                return line
    return ""


def detect_format(path: str | Path) -> Format:
    """Which tool wrote ``path`` (a file or a folder), from its content.

    Raises:
        ConfigError: it does not exist or is no format the importer reads (the message lists them).
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise ConfigError(f"Cannot import {path}: no such file or folder")
    if path.is_dir():
        if _vllm.is_sweep_folder(path):
            return "vllm_sweep"
        if _aiperf_files(path):
            return "aiperf"
        if folder_files(path):
            return "folder"
        raise ConfigError(
            f"Cannot import folder {path}: it is neither a vllm bench sweep experiment folder "
            "(SERVE-...-BENCH-.../run=<n>.json), an AIPerf artifact folder "
            "(profile_export_aiperf.json or .csv) nor a folder of result files (*.json, *.jsonl, "
            "*.csv); pass result files or one of those folders"
        )
    if path.suffix.lower() == ".csv" or _aiperf_csv.looks_like_csv(path):
        if _aiperf_csv.looks_like_csv(path):
            return "aiperf_csv"
        raise ConfigError(
            f"Cannot import {path}: a CSV file, but not AIPerf's CSV export (its first line is not "
            f"'Metric,avg,...' or 'Metric,Value'). {_KNOWN}"
        )
    try:
        first = json.loads(_first_line(path), parse_int=json_int)
    except json.JSONDecodeError:
        first = None
    if isinstance(first, dict) and _bench_serving.looks_like(first):
        return "bench_serving"
    text = _read_text(path)
    try:
        whole = json.loads(text, parse_int=json_int)
    except ValueError:
        whole = None
    if _inferencex.looks_like(whole):
        return "inferencex"
    try:
        objects = _vllm.parse_objects(text, path)
    except ConfigError as exc:
        raise ConfigError(f"{exc}. {_KNOWN}") from exc
    obj = objects[0] if objects else {}
    for name, test in (
        ("aiperf", lambda o: _aiperf.looks_like(o) or _aiperf.looks_like_aggregate(o)),
        ("guidellm", _guidellm.looks_like),
        ("vllm", _vllm.looks_like),
        ("bench_serving", _bench_serving.looks_like),
    ):
        if test(obj):
            return name  # type: ignore[return-value]
    raise ConfigError(f"Cannot import {path}: not a result file of a known tool. {_KNOWN}")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}") from exc


def _aiperf_files(folder: Path) -> list[Path]:
    """AIPerf exports in an artifact folder: the aggregate when there is one, else each run's JSON export,
    else each run's CSV export."""
    aggregate = sorted(folder.glob("**/profile_export_aiperf_aggregate.json"))
    return (
        aggregate
        or sorted(folder.glob("**/profile_export_aiperf.json"))
        or sorted(folder.glob("**/profile_export_aiperf.csv"))
    )


def folder_files(folder: Path) -> list[Path]:
    """The result files directly inside ``folder`` (``*.json``, ``*.jsonl``, ``*.csv``, by name), e.g. the
    ``--result-dir`` of a vLLM rate sweep that saved one file per rate."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in _RESULT_SUFFIXES)


def _read_folder(folder: Path, *, variant: str | None) -> list[ImportedLevel]:
    """Every file of a folder of result files; runs the files do not name (no tag or label) are named
    after the folder, so a sweep saved as one file per load is one run.

    Raises:
        ConfigError: a file in the folder is no known format (named, with what to do).
    """
    levels: list[ImportedLevel] = []
    for file in folder_files(folder):
        try:
            read = read_results(file, variant=variant)
        except ConfigError as exc:
            raise ConfigError(
                f"{exc} (in folder {folder}: move files that are not results out of it, or pass the "
                "result files themselves)"
            ) from exc
        for level in read:
            if level.named_by_file:
                level.variant, level.named_by_file = folder.name, False
        levels.extend(read)
    return levels


def read_results(path: str | Path, *, variant: str | None = None) -> list[ImportedLevel]:
    """Read one file or folder into levels (nothing checked or stored).

    Raises:
        ConfigError: an unknown format or a malformed file (the message names it).
    """
    path = Path(path).expanduser().resolve()
    fmt = detect_format(path)
    if fmt == "bench_serving":
        return _bench_serving.read_bench_serving(path, variant=variant)
    if fmt == "vllm_sweep":
        return _vllm.read_vllm_sweep(path, variant=variant)
    if fmt == "folder":
        return _read_folder(path, variant=variant)
    if fmt == "aiperf" and path.is_dir():
        return [
            level
            for f in _aiperf_files(path)
            for level in (
                _aiperf_csv.read_aiperf_csv(f, variant=variant or path.name)
                if f.suffix == ".csv"
                else _aiperf.read_aiperf(f, variant=variant or path.name)
            )
        ]
    if fmt == "aiperf_csv":
        return _aiperf_csv.read_aiperf_csv(path, variant=variant)
    text = _read_text(path)
    if fmt == "inferencex":
        return _inferencex.read_inferencex(path, json.loads(text, parse_int=json_int), variant=variant)
    if fmt == "vllm":
        return _vllm.read_vllm_file(path, text, variant=variant)
    obj = _vllm.parse_objects(text, path)[0]
    if fmt == "aiperf":
        return _aiperf.read_aiperf(path, obj, variant=variant)
    return _guidellm.read_guidellm(path, obj, variant=variant)
