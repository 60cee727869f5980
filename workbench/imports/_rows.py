"""The tidy row every importer produces: our level columns, the tool's own, provenance.

One imported row is one measured level (one benchmark run of the other tool at one
concurrency or request rate). It carries

- **our level columns, with our names and units** where the tool measured the same
  thing by the same definition (those of :mod:`workbench.bench._metrics`: ``concurrency``,
  ``request_rate_req_s``, ``output_throughput_tok_s``, ``mean_ttft_ms``, ``p50_ttft_ms``,
  ``p90_ttft_ms``, ``p99_ttft_ms``, the same for ``tpot_ms``, ``e2e_ms``, ``itl_ms``,
  ``itl_per_token_ms``, and ``accept_length``); a metric the tool did not record is
  NaN (None for text), never 0;
- **the tool's own columns**, ``<tool>_<its name>`` with the unit in the name, for figures
  whose definition differs from ours or that we do not have (bench_serving's p95 ITL,
  AIPerf's per-user throughput, vLLM's client queue time);
- **provenance**: ``tool``, ``tool_version``, ``source_file``, ``source_record`` (where in
  the file or folder), ``measured_at`` (the tool's own timestamp, if it wrote one).

Each tool module returns :class:`ImportedLevel` values; :mod:`workbench.imports._importer`
groups them into runs and checks them (:mod:`workbench.imports._checks`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError

__all__ = [
    "ImportedLevel",
    "STAT_METRICS",
    "SUMMARY_SCALARS",
    "bench_totals",
    "OUR_STATS",
    "number",
    "ms",
    "stats_columns",
    "level_columns",
    "to_engine_time",
    "json_int",
    "json_lines",
    "tpot_ms",
]

_FLOAT_MAX = sys.float_info.max
#: Our per-level statistics (:data:`workbench.bench._metrics.STATS`) and the metrics they summarise.
OUR_STATS = ("mean", "p50", "p90", "p99")
STAT_METRICS = ("ttft_ms", "tpot_ms", "e2e_ms", "itl_ms", "itl_per_token_ms", "per_request_tok_s")

#: Our level columns that summarise the request rows (counts, duration, totals, throughputs).
SUMMARY_SCALARS = (
    "num_requests",
    "completed",
    "failed",
    "duration_s",
    "total_output_tokens",
    "total_prompt_tokens",
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "achieved_concurrency",
)
#: Our scalar level columns an importer may fill (all others of a stored level are absent).
SCALARS = (
    "mode",
    "concurrency",
    "request_rate_req_s",
    "max_new_tokens",
    *SUMMARY_SCALARS,
    "accept_length",
    "server_accept_length",
    "spec_acceptance_rate",
)


def level_columns() -> list[str]:
    """Our level columns in the order imported tables show them (descriptors, counts, rates, statistics)."""
    return [*SCALARS[:11], *SCALARS[11:13], *stats_columns(), *SCALARS[13:]]


def stats_columns() -> list[str]:
    """``mean_ttft_ms``, ``p50_ttft_ms``, ... for every metric of :data:`STAT_METRICS`."""
    return [f"{s}_{m}" for m in STAT_METRICS for s in OUR_STATS]


#: Digits of the longest integer JSON text is read as an int (Python refuses int() of more than 4,300).
MAX_INT_DIGITS = 4000


def json_int(text: str) -> int | float:
    """A JSON integer's text as an int; as a float (infinite) beyond :data:`MAX_INT_DIGITS` digits, which
    Python's ``int()`` would refuse with a ValueError: every reader's ``parse_int``, so that a number too large
    for a float reaches the checks as infinity, with its field (:mod:`workbench.imports._limits`)."""
    return int(text) if len(text) <= MAX_INT_DIGITS else float(text)


def json_lines(path: Path, *, hint: str) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` of each non-blank line of a JSON Lines file.

    Raises:
        ConfigError: a line is not JSON (the message names the line and adds ``hint``).
    """
    with path.open(encoding="utf-8") as fh:
        for line_number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield line_number, json.loads(line, parse_int=json_int)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{path}: line {line_number} is not JSON ({exc.msg} at column {exc.colno}); {hint}"
                ) from exc


def tpot_ms(e2e_ms: float, ttft_ms: float, output_tokens: float) -> float:
    """Our TPOT of one request, ``(e2e - ttft) / (output_tokens - 1)`` (:mod:`workbench.bench._record`);
    NaN below 2 output tokens."""
    return (e2e_ms - ttft_ms) / (output_tokens - 1) if output_tokens >= 2 else math.nan


def bench_totals(record: Mapping[str, Any]) -> dict[str, float]:
    """The duration, token totals and throughputs of a bench_serving-style result (SGLang's ``bench_serving``,
    vLLM's ``vllm bench serve``: the same field names), as our level columns."""
    return {
        "duration_s": number(record.get("duration")),
        "total_prompt_tokens": number(record.get("total_input_tokens")),
        "total_output_tokens": number(record.get("total_output_tokens")),
        "request_throughput_req_s": number(record.get("request_throughput")),
        "output_throughput_tok_s": number(record.get("output_throughput")),
    }


def number(value: Any) -> float:
    """``value`` as a float; NaN for None, "", non-numbers and booleans.

    ``"inf"``, ``"Infinity"`` and the bare ``Infinity`` token Python's json reads are +inf; an integer too
    large for a float is +-inf (refused where no figure may be infinite: :mod:`workbench.imports._limits`).
    """
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, int) and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
        return math.inf if value > 0 else -math.inf  # too large for a float (float() raises OverflowError)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        try:
            return float(text)
        except ValueError:
            return math.nan
    return math.nan


def ms(value: Any, unit: str) -> float:
    """A duration in milliseconds from ``value`` in ``unit`` (``s``/``sec``, ``ms``, ``us``, ``ns``).

    Raises:
        ValueError: an unknown unit (the importer turns it into a ConfigError naming the file).
    """
    factor = {
        "s": 1e3,
        "sec": 1e3,
        "secs": 1e3,
        "second": 1e3,
        "seconds": 1e3,
        "ms": 1.0,
        "msec": 1.0,
        "milliseconds": 1.0,
        "us": 1e-3,
        "usec": 1e-3,
        "microseconds": 1e-3,
        "ns": 1e-6,
        "nsec": 1e-6,
        "nanoseconds": 1e-6,
    }.get(unit.strip().lower())
    if factor is None:
        raise ValueError(f"unknown time unit {unit!r}")
    return number(value) * factor


def _scaled(key: str, value: Any, scale: float) -> Any:
    """``value`` of column ``key`` from wall-clock to engine time (times x scale, rates / scale)."""
    if key.endswith("_ms") or key == "duration_s" or key.endswith("_duration_s"):
        factor = scale
    elif key.endswith(("_tok_s", "_req_s")):
        factor = 1.0 / scale
    else:
        return value
    if isinstance(value, list):
        return [number(v) * factor for v in value]
    if value is None or isinstance(value, (str, bool)):
        return value
    return number(value) * factor


def to_engine_time(
    values: Mapping[str, Any], requests: pd.DataFrame | None, scale: float
) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """Level values and request rows measured by wall clock against a simulated engine running at
    ``scale`` engine seconds per wall second, converted to engine time (as the workbench stores its
    own runs): every ``*_ms`` column and ``duration_s`` times ``scale``, every ``*_tok_s`` and
    ``*_req_s`` divided by it (lists element-wise); other columns unchanged.
    """
    out = {k: _scaled(k, v, scale) for k, v in values.items()}
    if requests is not None:
        requests = requests.copy()
        for col in requests.columns:
            requests[col] = [_scaled(col, v, scale) for v in requests[col]]
    return out, requests


@dataclasses.dataclass
class ImportedLevel:
    """One level read from another tool's file, before it is grouped into a run.

    Attributes:
        tool: ``sglang.bench_serving``, ``vllm bench serve``, ``aiperf`` or ``guidellm`` (docs/RUNS.md's names).
        tool_version: the tool's version (or the release range its keys identify), None if unknown.
        source_file: the file read (absolute path).
        source_record: where in it (``line 3``, ``benchmarks[2]``, ``SERVE-a-BENCH-b/run=0.json``).
        variant: the variant (run) it belongs to: the tool's tag or label, or the user's name.
        values: our columns (:func:`level_columns`) and the tool's own (``<tool>_...``).
        streamed: whether the tool streamed the responses (None if it does not say).
        requests: per-request rows when the file holds them (our request column names), else None.
        server_info: the server's ``/server_info`` the tool recorded, if any.
        measured_at: the tool's timestamp of the run (ISO 8601 text), if any.
        tool_version_source: how ``tool_version`` was found (``"file"``, ``"inferred from the keys"``, ...).
        time_scale: engine seconds per wall second of a simulated server that said so in its
            recorded ``/server_info`` (``simulation.time_scale``); None when not recorded.
        named_by_file: True when ``variant`` is the file's (or folder's) own name because neither the
            user nor the tool named the run (no ``--variant``, tag or label): the importer may then name
            several such files as one run (:func:`workbench.imports._naming.sweep_names`).
    """

    tool: str
    tool_version: str | None
    source_file: str
    source_record: str
    variant: str
    values: dict[str, Any]
    streamed: bool | None = None
    requests: pd.DataFrame | None = None
    server_info: Mapping[str, Any] | None = None
    measured_at: str | None = None
    tool_version_source: str | None = None
    time_scale: float | None = None
    named_by_file: bool = False

    def row(self) -> dict[str, Any]:
        """The level as one flat row: our columns (NaN where missing), then the tool's, then provenance."""
        out: dict[str, Any] = {}
        for col in level_columns():
            default = None if col == "mode" else math.nan
            out[col] = self.values.get(col, default)
        for key, value in self.values.items():
            if key not in out:
                out[key] = value
        out.update(
            tool=self.tool,
            tool_version=self.tool_version,
            source_file=self.source_file,
            source_record=self.source_record,
            measured_at=self.measured_at,
        )
        return out
