"""NVIDIA AIPerf's CSV export, ``profile_export_aiperf.csv``: the same statistics as its JSON export.

Format, from AIPerf's ``aiperf/exporters/csv_exporter.py`` and ``docs/tutorials/working-with-profile-exports.md``
(ai-dynamo/aiperf): sections separated by blank lines,

1. request metrics, header ``Metric,avg,min,max,p1,p5,...,p99,std`` (the statistics vary by release:
   read from the header), one row per metric;
2. system metrics, header ``Metric,Value``, one row per single-value metric (throughputs, counts,
   the benchmark duration);
3. GPU telemetry, when ``--gpu-telemetry`` was on (``Endpoint,GPU_Index,...`` or ``=== GPU Telemetry``
   rows): not read.

A metric's name is its display header with the display unit in parentheses
(``Time to First Token (ms)``, ``Benchmark Duration (sec)``, ``Output Token Throughput (tokens/sec)``);
counts in requests have no unit (``Request Count``). Floats are written with two decimals, so the
figures are the file's, rounded as AIPerf rounded them. Metrics AIPerf flags experimental or internal
(its ``inter_chunk_latency``) are not in the CSV: our per-chunk ITL stays missing.

The CSV records neither the AIPerf version nor the load: both come from ``profile_export_aiperf.json``
when it lies beside the CSV, else the load from the artifact folder's name, which AIPerf builds as
``<model>-<service>-<endpoint>-concurrency<N>[-request_rate<R>]`` (and ``concurrency_<N>/`` in a
sweep), else it is missing. ``aiperf_load_source`` says which.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.imports._aiperf import Getter, level_values, load_shape, looks_like
from workbench.imports._rows import ImportedLevel, json_int, number

__all__ = ["HEADERS", "looks_like_csv", "read_aiperf_csv"]

#: AIPerf's display header -> its metric tag (``aiperf/metrics/types/*.py``: ``header`` and ``tag``).
HEADERS = {
    "Time to First Token": "time_to_first_token",
    "Time to Second Token": "time_to_second_token",
    "Request Latency": "request_latency",
    "Inter Token Latency": "inter_token_latency",
    "Inter Chunk Latency": "inter_chunk_latency",
    "Output Token Throughput Per User": "output_token_throughput_per_user",
    "E2E Output Token Throughput": "e2e_output_token_throughput",
    "Output Sequence Length": "output_sequence_length",
    "Input Sequence Length": "input_sequence_length",
    "Request Throughput": "request_throughput",
    "Output Token Throughput": "output_token_throughput",
    "Request Count": "request_count",
    "Error Request Count": "error_request_count",
    "Benchmark Duration": "benchmark_duration",
    "Total Output Tokens": "total_output_tokens",
    "Total Input Sequence Length": "total_isl",
    "Effective Concurrency": "effective_concurrency",
}
_NAME = re.compile(r"^(?P<header>.*?)(?:\s*\((?P<unit>[^()]*)\))?\s*$")
_CONCURRENCY = re.compile(r"(?:^|[-_])concurrency_?(\d+)(?=$|[-_])")
_RATE = re.compile(r"(?:^|[-_])request_rate_?(\d+(?:\.\d+)?)(?=$|[-_])")


def looks_like_csv(path: Path) -> bool:
    """True for a file whose first non-blank line is AIPerf's ``Metric,avg,...`` or ``Metric,Value`` header."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            for line in fh:
                if line.strip():
                    cells = [c.strip() for c in line.split(",")]
                    return cells[0] == "Metric" and len(cells) > 1 and cells[1] in ("avg", "Value")
    except OSError:
        return False
    return False


def _metrics(path: Path) -> dict[str, dict[str, Any]]:
    """``{tag: {"unit": ..., stat: value}}`` from the request and system sections (telemetry skipped)."""
    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}") from exc
    out: dict[str, dict[str, Any]] = {}
    header: list[str] | None = None
    for line_number, row in enumerate(rows, 1):
        cells = [c.strip() for c in row]
        if not any(cells):
            header = None
            continue
        if cells[0] == "Metric":
            header = ["avg" if c == "Value" else c for c in cells[1:]]
            continue
        if header is None:  # telemetry (``Endpoint,GPU_Index,...``, ``=== ... ===``) and whatever follows it
            continue
        if len(cells) != len(header) + 1:
            raise ConfigError(
                f"{path}: line {line_number} has {len(cells)} cells where its section's header has "
                f"{len(header) + 1}; is the file cut short or edited?"
            )
        match = _NAME.match(cells[0])
        name, unit = (match.group("header"), match.group("unit") or "") if match else (cells[0], "")
        tag = HEADERS.get(name)
        if tag is None:
            continue
        values = {stat: number(cell) for stat, cell in zip(header, cells[1:]) if cell != ""}
        if "avg" not in values:
            continue
        out[tag] = {"unit": unit or ("requests" if tag.endswith("_count") else ""), **values}
    if not out:
        raise ConfigError(
            f"{path}: no AIPerf metric rows (Time to First Token, Request Latency, ...) found; "
            "is this AIPerf's profile_export_aiperf.csv?"
        )
    return out


def _getter(metrics: Mapping[str, Mapping[str, Any]]) -> Getter:
    def get(tag: str, stat: str) -> tuple[float, str] | None:
        metric = metrics.get(tag)
        if metric is None or stat not in metric or math.isnan(metric[stat]):
            return None
        return float(metric[stat]), str(metric["unit"])

    return get


def _beside(path: Path) -> dict[str, Any] | None:
    """The JSON export in the CSV's folder (its version and load), when there is one."""
    import json

    export = path.with_name("profile_export_aiperf.json")
    if not export.is_file():
        return None
    try:
        obj = json.loads(export.read_text(encoding="utf-8"), parse_int=json_int)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) and looks_like(obj) else None


def _folder_load(path: Path) -> dict[str, Any] | None:
    """Concurrency and request rate from AIPerf's artifact folder names (the nearest folder that has one)."""
    for folder in (path.parent, path.parent.parent):
        conc, rate = _CONCURRENCY.search(folder.name), _RATE.search(folder.name)
        if conc or rate:
            concurrency = float(conc.group(1)) if conc else math.nan
            request_rate = float(rate.group(1)) if rate else math.nan
            return {
                "concurrency": concurrency,
                "request_rate_req_s": request_rate,
                "mode": "open" if rate else "closed",
                "streamed": None,
                "per_chunk_usage": False,
                "source": f"artifact folder name {folder.name!r}",
            }
    return None


def read_aiperf_csv(path: Path, *, variant: str | None = None) -> list[ImportedLevel]:
    """The level of one AIPerf CSV export.

    Args:
        path: ``profile_export_aiperf.csv`` (any file name in that format).
        variant: the run name (default: the artifact folder's name, as for the JSON export).

    Raises:
        ConfigError: no AIPerf metric rows, a row with the wrong number of cells, or a time or rate
            metric in a unit that is not one (the message names the file).
    """
    metrics = _metrics(path)
    export = _beside(path)
    folder_shape = _folder_load(path)
    if export is not None:
        shape: dict[str, Any] = {**load_shape(export), "source": "profile_export_aiperf.json beside the CSV"}
    elif folder_shape is not None:
        shape = folder_shape
    else:
        shape = {
            "concurrency": math.nan,
            "request_rate_req_s": math.nan,
            "mode": None,
            "streamed": None,
            "per_chunk_usage": False,
            "source": "not recorded (the CSV has no load; pass the JSON export)",
        }
    v = level_values(_getter(metrics), path, per_chunk_usage=shape["per_chunk_usage"])
    v.update({k: shape[k] for k in ("concurrency", "request_rate_req_s", "mode")})
    v["aiperf_load_source"] = shape["source"]
    error = metrics.get("error_request_count", {}).get("avg")
    v["failed"] = math.nan if error is None else error
    v["num_requests"] = v["completed"] + v["failed"]
    for tag, ours in (("output_sequence_length", "output"), ("input_sequence_length", "input")):
        v[f"aiperf_mean_{ours}_sequence_length_tokens"] = metrics.get(tag, {}).get("avg", math.nan)
    folder = path.parent
    name = variant or (folder.parent.parent.name if folder.parent.name == "profile_runs" else folder.name)
    version = str(export.get("aiperf_version")) if export is not None else None
    return [
        ImportedLevel(
            tool="aiperf",
            tool_version=version,
            tool_version_source="profile_export_aiperf.json beside the CSV" if version else "not recorded in the CSV",
            source_file=str(path),
            source_record="whole file (CSV export)",
            variant=name,
            values=v,
            streamed=shape["streamed"],
            measured_at=export.get("start_time") if export is not None else None,
        )
    ]
