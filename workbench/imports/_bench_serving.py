"""SGLang's ``python -m sglang.bench_serving`` JSONL results.

The client appends one JSON object per run to ``--output-file`` (so one file often holds a
whole concurrency sweep), writes an infinite ``request_rate`` as the bare token
``Infinity`` (Python's ``json.dumps``), and with ``--output-details`` adds per-request
arrays (``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``generated_texts``,
``errors``): lines of hundreds of KB whose times are in **seconds**, while the summary keys
are in milliseconds (``*_ms``) and tok/s.

The key set changed across releases; read from each release's ``sglang/bench_serving.py``
(``sglang/benchmark/serving.py`` from 0.5.10 on; ``result = {...}`` in
``run_benchmark``), the keys that first appear in a release identify the client's
generation (:data:`GENERATIONS`). The client writes no version of its own, so
``tool_version`` is that release range, marked ``inferred from the keys``.

Definitions (same sources):

- TTFT, TPOT (``(latency - ttft) / (output_len - 1)``), E2E latency, ``output_throughput``
  (``sum(output_lens) / duration``), ``concurrency`` (``sum(latency) / duration``) are ours;
  ``median`` is our ``p50``.
- **ITL**: the native backends (``sglang``, ``sglang-native``: ``async_request_sglang_generate``)
  split each chunk's gap over the tokens it added (``chunk_gap / num_new_tokens``, once per
  token): our ``itl_per_token_ms``. The OpenAI backends record one gap per chunk (our
  ``itl_ms``), except that from 0.5.5 on, with an accept length above 0 and
  ``sglang-oai``/``sglang-oai-chat``, they re-tokenize and report per token
  (``use_retokenized_itl``). Where the generation cannot tell which, the ITL is kept only under
  the tool's own names (``bench_serving_mean_itl_ms``, ...), as it always also is.
- ``accept_length``: the server's ``internal_states[0].avg_spec_accept_length`` from
  ``/get_server_info`` after the run: our ``server_accept_length`` and ``accept_length``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError
from workbench.imports._rows import ImportedLevel, bench_totals, json_lines, ms, number

__all__ = ["GENERATIONS", "generation", "looks_like", "read_bench_serving"]

#: ``(marker key, first release, last release, per-token ITL on OpenAI backends with spec)``,
#: newest first: a record's generation is the first whose marker it has. Read from the
#: releases' ``result = {...}`` dicts (0.4.6.post5 to 0.5.23). ``None``: not known (the span
#: covers releases both without and with ``use_retokenized_itl``).
GENERATIONS: tuple[tuple[str | None, str, str, bool | None], ...] = (
    ("p90_ttft_ms", "0.5.14", "0.5.23", True),
    ("p90_e2e_latency_ms", "0.5.8", "0.5.13.post1", True),
    ("max_output_tokens_per_s", "0.5.6", "0.5.7", True),
    ("total_throughput", "0.5.5.post2", "0.5.5.post3", True),
    ("server_info", "0.5.4.post3", "0.5.5.post1", None),
    ("tag", "0.5.4.post2", "0.5.4.post2", False),
    ("total_input_text_tokens", "0.5.3.post1", "0.5.4.post1", False),
    (None, "0.4.6.post5", "0.5.3", False),
)
#: Backends whose ITL is per token (``async_request_sglang_generate``).
NATIVE_BACKENDS = frozenset({"sglang", "sglang-native"})
#: Backends that re-tokenize the ITL when the server reports an accept length (0.5.5+).
RETOKENIZING_BACKENDS = frozenset({"sglang-oai", "sglang-oai-chat"})
#: Keys that only bench_serving writes (how a JSON object is recognised).
_SIGNATURE = ("mean_e2e_latency_ms", "total_output_tokens_retokenized")
_DETAIL_KEYS = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors")
_STATS = (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p99", "p99"))


def looks_like(record: Mapping[str, Any]) -> bool:
    """True for a bench_serving result object."""
    return all(k in record for k in _SIGNATURE)


def generation(record: Mapping[str, Any]) -> tuple[str, str, bool | None]:
    """``(first release, last release, per-token ITL on spec OpenAI backends)`` of a record's key set."""
    for marker, first, last, retok in GENERATIONS:
        if marker is None or marker in record:
            return first, last, retok
    raise AssertionError("GENERATIONS ends with a catch-all")


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    hint = "bench_serving writes one JSON object per line: is the file cut short?"
    for line, record in json_lines(path, hint=hint):
        if not isinstance(record, dict) or not looks_like(record):
            raise ConfigError(
                f"{path}: line {line} is not a bench_serving result (it lacks "
                f"{', '.join(_SIGNATURE)}); pass each tool's files as they were written"
            )
        yield line, record


def _itl_target(record: Mapping[str, Any], backend: str | None, retok: bool | None) -> str | None:
    """Which of our ITL columns bench_serving's ITL is, or None when it cannot be told."""
    if backend in NATIVE_BACKENDS:
        return "itl_per_token_ms"
    spec = number(record.get("accept_length")) > 0
    if backend in RETOKENIZING_BACKENDS and spec:
        return None if retok is None else ("itl_per_token_ms" if retok else "itl_ms")
    return "itl_ms" if backend is not None else None


def _requests(record: Mapping[str, Any], itl_column: str | None) -> pd.DataFrame | None:
    """Per-request rows from ``--output-details`` arrays (seconds -> ms); None without them."""
    if not all(isinstance(record.get(k), list) for k in ("output_lens", "ttfts", "errors")):
        return None
    n = len(record["errors"])
    inputs = record.get("input_lens") or [None] * n
    itls = record.get("itls") or [None] * n
    rows = []
    for i in range(n):
        error = record["errors"][i] or None
        gaps = itls[i] if i < len(itls) and isinstance(itls[i], list) else None
        rows.append(
            {
                "request_index": i,
                "prompt_tokens": number(inputs[i]) if i < len(inputs) else math.nan,
                "output_tokens": math.nan if error else number(record["output_lens"][i]),
                "ttft_ms": math.nan if error else ms(record["ttfts"][i], "s"),
                "bench_serving_itl_ms": None if error or gaps is None else [ms(g, "s") for g in gaps],
                "error": error,
            }
        )
    frame = pd.DataFrame(rows)
    if itl_column is not None:
        frame[itl_column] = frame["bench_serving_itl_ms"]
    return frame


def _level(record: Mapping[str, Any], *, path: Path, line: int, variant: str | None) -> ImportedLevel:
    first, last, retok = generation(record)
    backend = record.get("backend")
    rate = record.get("request_rate")
    trace = isinstance(rate, str) and rate.strip().lower() == "trace"
    rate_req_s = math.nan if trace else number(rate)
    max_conc = number(record.get("max_concurrency"))
    v: dict[str, Any] = {
        "mode": "trace" if trace else ("closed" if math.isinf(rate_req_s) and not math.isnan(max_conc) else "open"),
        "concurrency": max_conc,
        "request_rate_req_s": rate_req_s,
        "completed": number(record.get("completed")),
        **bench_totals(record),
        "achieved_concurrency": number(record.get("concurrency")),
        "accept_length": number(record.get("accept_length")),
        "server_accept_length": number(record.get("accept_length")),
    }
    for theirs, ours in (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("e2e_latency", "e2e_ms")):
        for stat, our_stat in _STATS:
            v[f"{our_stat}_{ours}"] = number(record.get(f"{stat}_{theirs}_ms"))
    itl_column = _itl_target(record, backend, retok)
    if itl_column is not None:
        for stat, our_stat in _STATS:
            v[f"{our_stat}_{itl_column}"] = number(record.get(f"{stat}_itl_ms"))
    # the tool's own figures, under its names (units in the names)
    for stat in ("mean", "median", "std", "p90", "p95", "p99"):
        v[f"bench_serving_{stat}_itl_ms"] = number(record.get(f"{stat}_itl_ms"))
    for theirs in ("ttft", "tpot", "e2e_latency"):
        for stat in ("std", "p95"):
            v[f"bench_serving_{stat}_{theirs}_ms"] = number(record.get(f"{stat}_{theirs}_ms"))
    v["bench_serving_itl_definition"] = {
        "itl_per_token_ms": "per token (each chunk gap / tokens it added)",
        "itl_ms": "per chunk",
    }.get(itl_column or "", "not known for this backend and client generation")
    v["bench_serving_input_tok_s"] = number(record.get("input_throughput"))
    v["bench_serving_total_tok_s"] = number(record.get("total_throughput"))
    v["bench_serving_peak_output_tok_s"] = number(record.get("max_output_tokens_per_s"))
    v["bench_serving_peak_concurrent_requests"] = number(record.get("max_concurrent_requests"))
    v["bench_serving_total_output_tokens_retokenized"] = number(record.get("total_output_tokens_retokenized"))
    for key in ("backend", "dataset_name", "tag"):
        v[f"bench_serving_{key}"] = record.get(key)
    for key in ("random_input_len", "random_output_len", "random_range_ratio", "sharegpt_output_len"):
        v[f"bench_serving_{key}"] = number(record.get(key))
    cache = record.get("cache_report")
    if isinstance(cache, Mapping):
        v["bench_serving_cache_hit_rate"] = number(cache.get("cache_hit_rate_pct")) / 100.0
    requests = _requests(record, itl_column)
    if requests is not None:
        v["num_requests"] = float(len(requests))
        v["failed"] = float(requests["error"].notna().sum())
    info = record.get("server_info") if isinstance(record.get("server_info"), Mapping) else None
    simulation = (info or {}).get("simulation")
    scale = number(simulation.get("time_scale")) if isinstance(simulation, Mapping) else math.nan
    name = variant or record.get("tag") or path.stem
    return ImportedLevel(
        time_scale=None if math.isnan(scale) else scale,
        tool="sglang.bench_serving",
        tool_version=first if first == last else f"{first}..{last}",
        tool_version_source="inferred from the record's keys (the client writes no version)",
        source_file=str(path),
        source_record=f"line {line}",
        variant=str(name),
        values=v,
        streamed=True,
        requests=requests,
        server_info=info,
        named_by_file=not (variant or record.get("tag")),
    )


def read_bench_serving(path: Path, *, variant: str | None = None) -> list[ImportedLevel]:
    """Every run appended to a bench_serving JSONL file, one level each, in file order.

    Args:
        path: the ``--output-file``.
        variant: the run name for every record (default: its ``tag``, else the file's stem).

    Raises:
        ConfigError: a line is not JSON or not a bench_serving result (the message names the line).
    """
    return [_level(record, path=path, line=line, variant=variant) for line, record in _records(path)]
