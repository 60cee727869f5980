"""GuideLLM benchmark reports (``guidellm run --output kind=json``, ``benchmarks.json``).

One report holds several benchmarks (a sweep: ``concurrent@1``, ``concurrent@4``, constant
or Poisson rates, ``synchronous``, ``throughput``); each becomes one level. Read from
guidellm 0.8.1's output (``metadata.guidellm_version``, ``benchmarks[i].config.strategy``,
``metrics``, ``requests``; per-request stats ``guidellm/schemas/...``):

- each benchmark keeps its requests (``requests.successful`` / ``errored``, each with
  ``request_latency`` in seconds, ``time_to_first_token_ms``, ``prompt_tokens``,
  ``output_tokens``, ``request_start_time``/``request_end_time`` in epoch seconds). When
  they are all there (their count equals ``metrics.request_totals``), our level columns
  are derived from them with our own definitions (:func:`workbench.bench.summarize_levels`:
  TPOT ``(e2e - ttft) / (output - 1)`` per request, request-weighted statistics, duration
  from the first start to the last end). When GuideLLM sampled them, TTFT and E2E come from
  its per-request distributions (same definitions) and throughputs from its rates, and
  TPOT is left missing;
- GuideLLM's ``time_per_output_token_ms`` is the request latency **including TTFT** over the
  output tokens, and its ``inter_token_latency_ms`` is our per-request TPOT weighted by
  tokens (each request counted once per token after the first): neither is ours, so both are
  kept as ``guidellm_time_per_output_token_*_ms`` and ``guidellm_inter_token_latency_*_ms``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.bench import summarize_levels
from workbench.errors import ConfigError
from workbench.imports._rows import SUMMARY_SCALARS, ImportedLevel, ms, number, tpot_ms

__all__ = ["looks_like", "read_guidellm"]

_STATS = (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p99", "p99"))
#: Our level columns taken from :func:`workbench.bench.summarize_levels` of the request rows.
_DERIVED = (
    *SUMMARY_SCALARS,
    *(f"{s}_{m}" for m in ("ttft_ms", "tpot_ms", "e2e_ms", "per_request_tok_s") for s in ("mean", "p50", "p90", "p99")),
)


def looks_like(obj: Mapping[str, Any]) -> bool:
    """True for a GuideLLM benchmarks report."""
    meta = obj.get("metadata")
    return isinstance(obj.get("benchmarks"), list) and isinstance(meta, Mapping) and "guidellm_version" in meta


def _stat(metric: Any, stat: str) -> float:
    """A statistic of a GuideLLM distribution (``successful`` requests)."""
    dist = metric.get("successful") if isinstance(metric, Mapping) else None
    if not isinstance(dist, Mapping):
        return math.nan
    if stat in ("mean", "median"):
        return number(dist.get(stat))
    return number((dist.get("percentiles") or {}).get(stat))


def _iso(epoch: Any) -> str | None:
    value = number(epoch)
    if math.isnan(value):
        return None
    return datetime.fromtimestamp(value, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _strategy(config: Mapping[str, Any]) -> dict[str, Any]:
    strategy = config.get("strategy") or {}
    kind = str(strategy.get("type_", ""))
    if kind == "synchronous":
        return {"mode": "closed", "concurrency": 1.0, "request_rate_req_s": math.nan}
    if kind == "concurrent":
        return {"mode": "closed", "concurrency": number(strategy.get("streams")), "request_rate_req_s": math.nan}
    if kind in ("constant", "poisson", "async"):
        return {
            "mode": "open",
            "concurrency": number(strategy.get("max_concurrency")),
            "request_rate_req_s": number(strategy.get("rate")),
        }
    if kind == "throughput":
        return {"mode": "open", "concurrency": number(strategy.get("max_concurrency")), "request_rate_req_s": math.inf}
    return {"mode": kind or None, "concurrency": math.nan, "request_rate_req_s": math.nan}


def _count(value: Any) -> float:
    """A count of GuideLLM's totals: 0 when missing (NaN or infinity compare unequal to every length)."""
    count = number(value)
    return 0.0 if math.isnan(count) else count


def _request_rows(bench: Mapping[str, Any]) -> pd.DataFrame | None:
    """Our request columns from a benchmark's requests; None when GuideLLM sampled them."""
    groups = bench.get("requests") or {}
    totals = (bench.get("metrics") or {}).get("request_totals") or {}
    ok = groups.get("successful") or []
    bad = groups.get("errored") or []
    if len(ok) != _count(totals.get("successful")) or len(bad) != _count(totals.get("errored")):
        return None
    rows: list[dict[str, Any]] = []
    for i, (req, error) in enumerate([(r, None) for r in ok] + [(r, "errored") for r in bad]):
        e2e = ms(req.get("request_latency"), "s")
        ttft = number(req.get("time_to_first_token_ms"))
        out = number(req.get("output_tokens"))
        rows.append(
            {
                "level_index": 0,
                "request_index": i,
                "error": error or None,
                "error_type": error,
                "prompt_tokens": number(req.get("prompt_tokens")),
                "output_tokens": out if not error else math.nan,
                "ttft_ms": ttft if not error else math.nan,
                "e2e_ms": e2e if not error else math.nan,
                "tpot_ms": math.nan if error else tpot_ms(e2e, ttft, out),
                "itl_ms": [],
                "tokens_per_chunk": [],
                "spec_verify_ct": math.nan,
                "start_s": number(req.get("request_start_time")),
                "end_s": number(req.get("request_end_time")),
            }
        )
    return pd.DataFrame(rows)


def _level(
    bench: Mapping[str, Any], index: int, *, path: Path, version: str, stream: bool | None, variant: str
) -> ImportedLevel:
    metrics = bench.get("metrics") or {}
    v: dict[str, Any] = dict(_strategy(bench.get("config") or {}))
    requests = _request_rows(bench)
    if requests is not None and len(requests):
        summary = summarize_levels(requests).iloc[0]
        v.update({k: float(summary[k]) for k in _DERIVED})
        requests = requests.drop(columns=["level_index", "itl_ms", "tokens_per_chunk", "spec_verify_ct"])
    else:
        totals = metrics.get("request_totals") or {}
        v.update(
            completed=number(totals.get("successful")),
            failed=number(totals.get("errored")),
            num_requests=number(totals.get("total")),
            duration_s=number(bench.get("duration")),
            output_throughput_tok_s=_stat(metrics.get("output_tokens_per_second"), "mean"),
            request_throughput_req_s=_stat(metrics.get("requests_per_second"), "mean"),
            total_output_tokens=number(
                (metrics.get("output_token_count") or {}).get("successful", {}).get("total_sum")
            ),
        )
        for stat, ours in _STATS:
            v[f"{ours}_ttft_ms"] = _stat(metrics.get("time_to_first_token_ms"), stat)
            v[f"{ours}_e2e_ms"] = ms(_stat(metrics.get("request_latency"), stat), "s")
        requests = None
    for stat, ours in _STATS:
        v[f"guidellm_time_per_output_token_{ours}_ms"] = _stat(metrics.get("time_per_output_token_ms"), stat)
        v[f"guidellm_inter_token_latency_{ours}_ms"] = _stat(metrics.get("inter_token_latency_ms"), stat)
    v["guidellm_output_tokens_per_second_mean_tok_s"] = _stat(metrics.get("output_tokens_per_second"), "mean")
    v["guidellm_requests_per_second_mean_req_s"] = _stat(metrics.get("requests_per_second"), "mean")
    v["guidellm_request_concurrency_mean"] = _stat(metrics.get("request_concurrency"), "mean")
    v["guidellm_duration_s"] = number(bench.get("duration"))
    v["guidellm_incomplete_requests"] = number((metrics.get("request_totals") or {}).get("incomplete"))
    v["guidellm_strategy"] = str(((bench.get("config") or {}).get("strategy") or {}).get("type_"))
    return ImportedLevel(
        tool="guidellm",
        tool_version=version,
        tool_version_source="file",
        source_file=str(path),
        source_record=f"benchmarks[{index}]",
        variant=variant,
        values=v,
        streamed=stream,
        requests=requests,
        measured_at=_iso(bench.get("start_time")),
    )


def read_guidellm(path: Path, obj: Mapping[str, Any], *, variant: str | None = None) -> list[ImportedLevel]:
    """One level per benchmark of a GuideLLM report, in report order.

    Args:
        path: the report file (for provenance and messages).
        obj: its parsed content.
        variant: the run name (default: the file's stem).

    Raises:
        ConfigError: not a GuideLLM report, or it holds no benchmark.
    """
    if not looks_like(obj):
        raise ConfigError(f"{path} is not a GuideLLM benchmarks report (no metadata.guidellm_version)")
    if not obj["benchmarks"]:
        raise ConfigError(f"{path}: the GuideLLM report holds no benchmark (did the run stop before the first?)")
    version = str(obj["metadata"]["guidellm_version"])
    backend = ((obj.get("config") or {}).get("spec") or {}).get("backend") or {}
    stream = backend.get("stream")
    return [
        _level(
            b,
            i,
            path=path,
            version=version,
            stream=None if stream is None else bool(stream),
            variant=variant or path.stem,
        )
        for i, b in enumerate(obj["benchmarks"])
    ]
