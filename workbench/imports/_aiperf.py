"""NVIDIA AIPerf results: ``profile_export_aiperf.json`` and its multi-run aggregate.

A run's export (``aiperf profile``, schema 1.x) holds each metric as an object with its
unit and statistics (``{"unit": "ms", "avg": ..., "p50": ..., "p90": ..., "p99": ...}``),
the version (``aiperf_version``) and the input configuration (``input_config``: streaming,
the profiling phase's concurrency or request rate). ``--num-profile-runs N`` adds
``aggregate/profile_export_aiperf_aggregate.json``: one key per metric and statistic
(``time_to_first_token_p99``), each ``{"mean", "std", "ci_low", "ci_high", "unit", ...}`` over
the runs, and the runs' labels; its run folders (``profile_runs/run_0001/``) hold each run's
own export (import those for one repeat per run). A run's ``profile_export.jsonl``, when it
lies beside the export, gives the request rows (``{"value", "unit"}`` per metric and request).

Definitions, from aiperf 0.13.0's ``aiperf/metrics/types/*.py``:

- ``time_to_first_token``, ``request_latency`` (our E2E), ``inter_chunk_latency`` (each gap
  between chunks: our ``itl_ms``), ``e2e_output_token_throughput`` (output tokens / request
  latency: our ``per_request_tok_s``), ``output_token_throughput`` and ``request_throughput``
  (totals over the benchmark duration) are ours.
- ``inter_token_latency`` is ``(request latency - TTFT) / (output tokens - first chunk's
  tokens)``; without ``--per-chunk-usage`` the first chunk counts as one token, which is our
  TPOT. With it, it is kept only as ``aiperf_inter_token_latency_*``.
- ``output_token_throughput_per_user`` (1 / ITL per request) is not ours:
  ``aiperf_output_token_throughput_per_user_*_tok_s``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError
from workbench.imports._rows import ImportedLevel, json_int, json_lines, ms, number, tpot_ms

__all__ = ["Getter", "level_values", "load_shape", "looks_like", "looks_like_aggregate", "read_aiperf"]

_STATS = (("avg", "mean"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99"))
#: AIPerf time metric -> our metric (time units converted to ms).
_TIME_METRICS = {"time_to_first_token": "ttft_ms", "request_latency": "e2e_ms", "inter_chunk_latency": "itl_ms"}
_RATE_UNITS = {"tokens/sec", "tokens/sec/user", "requests/sec"}

#: ``get(tag, stat) -> (value, unit) or None``: one accessor over both file shapes.
Getter = Callable[[str, str], "tuple[float, str] | None"]


def looks_like(obj: Mapping[str, Any]) -> bool:
    """True for one run's ``profile_export_aiperf.json``."""
    return "aiperf_version" in obj and isinstance(obj.get("request_latency") or obj.get("time_to_first_token"), dict)


def looks_like_aggregate(obj: Mapping[str, Any]) -> bool:
    """True for the multi-run ``profile_export_aiperf_aggregate.json``."""
    return "aiperf_version" in obj and isinstance(obj.get("metrics"), dict) and isinstance(obj.get("metadata"), dict)


def _run_getter(obj: Mapping[str, Any]) -> Getter:
    def get(tag: str, stat: str) -> tuple[float, str] | None:
        metric = obj.get(tag)
        if not isinstance(metric, Mapping) or stat not in metric:
            return None
        return number(metric[stat]), str(metric.get("unit", ""))

    return get


def _aggregate_getter(obj: Mapping[str, Any], field: str = "mean") -> Getter:
    metrics = obj["metrics"]

    def get(tag: str, stat: str) -> tuple[float, str] | None:
        metric = metrics.get(f"{tag}_{stat}")
        if not isinstance(metric, Mapping) or field not in metric:
            return None
        return number(metric[field]), str(metric.get("unit", ""))

    return get


def _time(get: Getter, tag: str, stat: str, path: Path) -> float:
    found = get(tag, stat)
    if found is None:
        return math.nan
    try:
        return ms(*found)
    except ValueError as exc:
        raise ConfigError(f"{path}: {tag} has unit {found[1]!r}, not a time unit; is this an AIPerf export?") from exc


def _rate(get: Getter, tag: str, stat: str, path: Path) -> float:
    found = get(tag, stat)
    if found is None:
        return math.nan
    if found[1] not in _RATE_UNITS:
        raise ConfigError(f"{path}: {tag} has unit {found[1]!r}; expected one of {sorted(_RATE_UNITS)}")
    return found[0]


def _plain(get: Getter, tag: str, stat: str = "avg") -> float:
    found = get(tag, stat)
    return math.nan if found is None else found[0]


def level_values(get: Getter, path: Path, *, per_chunk_usage: bool) -> dict[str, Any]:
    """Our level columns and AIPerf's own from one export's metrics, read through ``get`` (times to ms; a time
    or rate metric in another unit is a ConfigError naming ``path``)."""
    v: dict[str, Any] = {}
    for tag, ours in _TIME_METRICS.items():
        for stat, our_stat in _STATS:
            v[f"{our_stat}_{ours}"] = _time(get, tag, stat, path)
    itl_target = "aiperf_inter_token_latency" if per_chunk_usage else None
    for stat, our_stat in _STATS:
        value = _time(get, "inter_token_latency", stat, path)
        if itl_target:
            v[f"{itl_target}_{our_stat}_ms"] = value
        else:
            v[f"{our_stat}_tpot_ms"] = value
        v[f"{our_stat}_per_request_tok_s"] = _rate(get, "e2e_output_token_throughput", stat, path)
        v[f"aiperf_output_token_throughput_per_user_{our_stat}_tok_s"] = _rate(
            get, "output_token_throughput_per_user", stat, path
        )
    v["output_throughput_tok_s"] = _rate(get, "output_token_throughput", "avg", path)
    v["request_throughput_req_s"] = _rate(get, "request_throughput", "avg", path)
    duration = get("benchmark_duration", "avg")
    v["duration_s"] = ms(*duration) / 1e3 if duration else math.nan
    v["total_output_tokens"] = _plain(get, "total_output_tokens")
    v["total_prompt_tokens"] = _plain(get, "total_isl")
    v["completed"] = _plain(get, "request_count")
    v["aiperf_effective_concurrency"] = _plain(get, "effective_concurrency")
    v["aiperf_mean_time_to_second_token_ms"] = _time(get, "time_to_second_token", "avg", path)
    return v


def _load(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"), parse_int=json_int)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"Cannot read {path} as JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return obj


def load_shape(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``concurrency``, ``request_rate_req_s``, ``mode`` and streaming of a run's ``input_config``."""
    config = obj.get("input_config") or {}
    phases = [p for p in config.get("phases") or [] if p.get("kind", "profiling") == "profiling"]
    phase = phases[0] if phases else {}
    concurrency = number(phase.get("concurrency"))
    rate = number(phase.get("request_rate", phase.get("rate")))
    endpoint = config.get("endpoint") or {}
    streamed = endpoint.get("streaming")
    return {
        "concurrency": concurrency,
        "request_rate_req_s": rate,
        "mode": "open" if not math.isnan(rate) else ("closed" if not math.isnan(concurrency) else None),
        "streamed": None if streamed is None else bool(streamed),
        "per_chunk_usage": bool(endpoint.get("per_chunk_usage")),
    }


def _failed(obj: Mapping[str, Any]) -> float:
    errors = obj.get("error_request_count")
    if isinstance(errors, Mapping):
        return number(errors.get("avg"))
    summary = obj.get("error_summary")
    if isinstance(summary, list):  # the export's list of error kinds and their counts ([] when none failed)
        return float(sum(number(e.get("count")) for e in summary if isinstance(e, Mapping)))
    return math.nan


def _requests(export: Path) -> pd.DataFrame | None:
    """Per-request rows from ``profile_export.jsonl`` beside a run's export (profiling phase only;
    each metric ``{"value", "unit"}``, times converted to ms); None when the file is not there."""
    path = export.with_name("profile_export.jsonl")
    if not path.is_file():
        return None
    rows: list[dict[str, Any]] = []
    for _, record in json_lines(path, hint="AIPerf writes one record per request and line"):
        if not isinstance(record, Mapping):
            raise ConfigError(f"{path}: expected one JSON object per line")
        meta, metrics = record.get("metadata") or {}, record.get("metrics") or {}
        if meta.get("benchmark_phase", "profiling") != "profiling":
            continue

        def value(tag: str, *, time: bool) -> Any:
            metric = metrics.get(tag)
            if not isinstance(metric, Mapping):
                return math.nan
            raw = metric.get("value")
            if isinstance(raw, list):
                return [ms(x, str(metric.get("unit", ""))) for x in raw] if time else raw
            return ms(raw, str(metric.get("unit", ""))) if time else number(raw)

        error = record.get("error")
        e2e, ttft = value("request_latency", time=True), value("time_to_first_token", time=True)
        out = value("output_sequence_length", time=False)
        rows.append(
            {
                "request_index": len(rows),
                "prompt_tokens": value("input_sequence_length", time=False),
                "output_tokens": math.nan if error else out,
                "ttft_ms": math.nan if error else ttft,
                "e2e_ms": math.nan if error else e2e,
                "tpot_ms": math.nan if error else tpot_ms(e2e, ttft, out),
                "itl_ms": None if error else value("inter_chunk_latency", time=True),
                "start_s": number(meta.get("request_start_ns")) / 1e9,
                "end_s": number(meta.get("request_end_ns")) / 1e9,
                "error": None
                if not error
                else (error.get("message") or error.get("type") or str(error))
                if isinstance(error, Mapping)
                else str(error),
            }
        )
    return pd.DataFrame(rows) if rows else None


def read_aiperf(path: Path, obj: Mapping[str, Any] | None = None, *, variant: str | None = None) -> list[ImportedLevel]:
    """The level of one AIPerf export (a run's, or the multi-run aggregate's means).

    Args:
        path: ``profile_export_aiperf.json`` or ``profile_export_aiperf_aggregate.json``.
        obj: its parsed content, when already read.
        variant: the run name (default: the artifact folder's name).

    Raises:
        ConfigError: not an AIPerf export, or a metric with an unexpected unit.
    """
    obj = obj if obj is not None else _load(path)
    if looks_like_aggregate(obj):
        return [_aggregate_level(path, obj, variant=variant)]
    if not looks_like(obj):
        raise ConfigError(f"{path} is not an AIPerf profile export (no aiperf_version and metrics)")
    shape = load_shape(obj)
    v = level_values(_run_getter(obj), path, per_chunk_usage=shape["per_chunk_usage"])
    v.update({k: shape[k] for k in ("concurrency", "request_rate_req_s", "mode")})
    v["failed"] = _failed(obj)
    v["num_requests"] = v["completed"] + v["failed"]
    run_info = obj.get("run_info") or {}
    v["aiperf_benchmark_id"] = obj.get("benchmark_id")
    v["aiperf_trial"] = number(run_info.get("trial"))
    folder = path.parent
    name = variant or (folder.parent.parent.name if folder.parent.name == "profile_runs" else folder.name)
    return [
        ImportedLevel(
            tool="aiperf",
            tool_version=str(obj.get("aiperf_version")),
            tool_version_source="file",
            source_file=str(path),
            source_record="whole file",
            variant=name,
            values=v,
            streamed=shape["streamed"],
            measured_at=obj.get("start_time"),
            requests=_requests(path),
        )
    ]


def _aggregate_level(path: Path, obj: Mapping[str, Any], *, variant: str | None) -> ImportedLevel:
    meta = obj["metadata"]
    root = path.parent.parent if path.parent.name == "aggregate" else path.parent
    labels = [str(x) for x in meta.get("run_labels") or []]
    first_run = next(
        (
            root / "profile_runs" / label / "profile_export_aiperf.json"
            for label in labels
            if (root / "profile_runs" / label / "profile_export_aiperf.json").is_file()
        ),
        None,
    )
    shape: dict[str, Any] = (
        load_shape(_load(first_run))
        if first_run
        else {
            "concurrency": math.nan,
            "request_rate_req_s": math.nan,
            "mode": None,
            "streamed": None,
            "per_chunk_usage": False,
        }
    )
    v = level_values(_aggregate_getter(obj), path, per_chunk_usage=shape["per_chunk_usage"])
    v.update({k: shape[k] for k in ("concurrency", "request_rate_req_s", "mode")})
    v["aiperf_num_profile_runs"] = number(meta.get("num_profile_runs"))
    v["aiperf_num_successful_runs"] = number(meta.get("num_successful_runs"))
    v["aiperf_confidence_level"] = number(meta.get("confidence_level"))
    for bound in ("ci_low", "ci_high"):
        get = _aggregate_getter(obj, bound)
        v[f"aiperf_output_throughput_{bound}_tok_s"] = _rate(get, "output_token_throughput", "avg", path)
        v[f"aiperf_mean_ttft_{bound}_ms"] = _time(get, "time_to_first_token", "avg", path)
        v[f"aiperf_mean_e2e_{bound}_ms"] = _time(get, "request_latency", "avg", path)
    return ImportedLevel(
        tool="aiperf",
        tool_version=str(obj.get("aiperf_version")),
        tool_version_source="file",
        source_file=str(path),
        source_record=f"aggregate of {len(labels)} runs (means over runs)",
        variant=variant or root.name,
        values=v,
        streamed=shape["streamed"],
    )
