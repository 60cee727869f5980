"""vLLM ``vllm bench serve --save-result`` JSON and ``vllm bench sweep serve`` output folders.

Read from vLLM's source (vllm-project/vllm ``vllm/benchmarks/serve.py``,
``vllm/benchmarks/lib/endpoint_request_func.py``, ``vllm/benchmarks/sweep/serve.py`` and
``param_sweep.py``; the commits are cited in tests/fixtures/imports/README.md):

- a result file is one JSON object (``--append-result`` appends more, each after a newline):
  ``date`` (``%Y%m%d-%H%M%S``, local time), ``backend``, ``label``, ``model_id``,
  ``num_prompts``, ``request_rate`` (a number, or the **string** ``"inf"``), ``burstiness``,
  ``max_concurrency``, ``duration``, ``completed``, ``failed``, ``total_input_tokens``,
  ``total_output_tokens``, ``request_throughput``, ``output_throughput``,
  ``total_token_throughput``, ``request_goodput``, ``max_output_tokens_per_s``,
  ``max_concurrent_requests``, and per ``--percentile-metrics`` metric (``ttft``, ``tpot``,
  ``itl``, ``e2el``, newer: ``client_queue_time``, ``e2el_including_client_queue``)
  ``mean_/median_/std_<m>_ms`` and ``p<P>_<m>_ms`` for each ``--metric-percentiles`` P.
  With a speculative server, ``spec_decode_acceptance_rate`` (**percent**),
  ``spec_decode_acceptance_length`` (``1 + accepted / drafts``: tokens per verify step, as
  SGLang's accept length), ``spec_decode_num_drafts``, ``..._draft_tokens``,
  ``..._accepted_tokens``, ``..._per_position_acceptance_rates`` (fractions).
  ``--save-detailed`` keeps per-request arrays in seconds (``ttfts``, ``itls``,
  ``latencies``, ``start_times``, ``queue_times``, ``input_lens``, ``output_lens``, ``errors``).
  No vLLM version is written (``tool_version`` is None unless ``--metadata version=...``).
- TTFT, TPOT (``(latency - ttft) / (output_len - 1)``) and E2E (``e2el``) are ours; the
  **ITL is one gap per streamed chunk** (``output.itl.append(timestamp - most_recent_timestamp)``
  per chunk with choices): our ``itl_ms``. Client queue time (the wait for a
  ``--max-concurrency`` slot before the request is sent) is the load generator's
  ``client_wait_ms`` and queue-inclusive E2E its ``user_e2e_ms``; both are also kept as
  ``vllm_<stat>_client_queue_time_ms`` and ``vllm_<stat>_e2el_including_client_queue_ms``.
  The standard deviations ``std_<m>_ms`` (``np.std`` over the requests: the population
  deviation, ddof 0; we have no column of that definition) are kept as ``vllm_std_<m>_ms``,
  NaN where the file has none.
- a sweep folder (``-o DIR``, experiment ``DIR/<name>/``) holds one directory per
  combination, ``SERVE--<serve params>-BENCH--<bench params>`` (either part may be absent),
  with ``run=<n>.json`` per repeat (a result file plus ``run_number`` and the overrides),
  ``summary.json`` and ``warmup.json``. Each serve combination is one run (variant), each
  bench combination a level, each ``run=<n>`` a repeat.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError
from workbench.imports._rows import ImportedLevel, bench_totals, json_int, ms, number, tpot_ms

__all__ = ["looks_like", "read_vllm_file", "read_vllm_sweep", "is_sweep_folder"]

_SIGNATURE = ("request_throughput", "output_throughput", "total_output_tokens")
_OURS = (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("itl", "itl_ms"), ("e2el", "e2e_ms"))
_STATS = (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p99", "p99"))
_RUN_FILE = re.compile(r"^run=(\d+)\.json$")


def looks_like(obj: Mapping[str, Any]) -> bool:
    """True for a ``vllm bench serve`` result object (and not a bench_serving one)."""
    return (
        all(k in obj for k in _SIGNATURE)
        and "mean_e2e_latency_ms" not in obj
        and ("endpoint_type" in obj or "mean_ttft_ms" in obj or "date" in obj)
    )


def parse_objects(text: str, path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a result file (``--append-result`` writes several, newline-separated)."""
    decoder = json.JSONDecoder(parse_int=json_int)
    out: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise ConfigError(f"{path}: expected JSON objects, found {type(obj).__name__}")
        out.append(obj)


def _requests(obj: Mapping[str, Any]) -> pd.DataFrame | None:
    """Per-request rows of ``--save-detailed`` (seconds -> ms); None without them."""
    if not all(isinstance(obj.get(k), list) for k in ("ttfts", "errors")):
        return None
    n = len(obj["errors"])

    def at(key: str, i: int) -> Any:
        values = obj.get(key)
        return values[i] if isinstance(values, list) and i < len(values) else None

    rows = []
    for i in range(n):
        error = at("errors", i) or None
        itl = at("itls", i)
        out = number(at("output_lens", i))
        ttft = math.nan if error else ms(at("ttfts", i), "s")
        e2e = math.nan if error else ms(at("latencies", i), "s")
        rows.append(
            {
                "request_index": i,
                "prompt_tokens": number(at("input_lens", i)),
                "output_tokens": math.nan if error else out,
                "ttft_ms": ttft,
                "e2e_ms": e2e,
                "tpot_ms": math.nan if error else tpot_ms(e2e, ttft, out),
                "itl_ms": None if error or not isinstance(itl, list) else [ms(g, "s") for g in itl],
                "vllm_client_queue_time_ms": ms(at("queue_times", i), "s"),
                "start_s": number(at("start_times", i)),
                "error": error,
            }
        )
    return pd.DataFrame(rows)


def _level(obj: Mapping[str, Any], *, path: Path, record: str, variant: str) -> ImportedLevel:
    rate = number(obj.get("request_rate"))
    conc = number(obj.get("max_concurrency"))
    completed, failed = number(obj.get("completed")), number(obj.get("failed"))
    v: dict[str, Any] = {
        "mode": "closed" if math.isinf(rate) and not math.isnan(conc) else "open",
        "concurrency": conc,
        "request_rate_req_s": rate,
        "num_requests": completed + failed if not math.isnan(failed) else number(obj.get("num_prompts")),
        "completed": completed,
        "failed": failed,
        **bench_totals(obj),
        "accept_length": number(obj.get("spec_decode_acceptance_length")),
        "spec_acceptance_rate": number(obj.get("spec_decode_acceptance_rate")) / 100.0,
    }
    for theirs, ours in _OURS:
        for stat, our_stat in _STATS:
            v[f"{our_stat}_{ours}"] = number(obj.get(f"{stat}_{theirs}_ms"))
    for theirs, ours in (("client_queue_time", "client_wait_ms"), ("e2el_including_client_queue", "user_e2e_ms")):
        for stat, our_stat in _STATS:
            v[f"vllm_{stat}_{theirs}_ms"] = number(obj.get(f"{stat}_{theirs}_ms"))
            v[f"{our_stat}_{ours}"] = v[f"vllm_{stat}_{theirs}_ms"]
    for theirs in (*(t for t, _ in _OURS), "client_queue_time", "e2el_including_client_queue"):
        v[f"vllm_std_{theirs}_ms"] = number(obj.get(f"std_{theirs}_ms"))  # population std over requests (np.std)
    for key in (
        "request_goodput",
        "total_token_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "burstiness",
        "spec_decode_num_drafts",
        "spec_decode_draft_tokens",
        "spec_decode_accepted_tokens",
    ):
        v[f"vllm_{key}"] = number(obj.get(key))
    rates = obj.get("spec_decode_per_position_acceptance_rates")
    v["vllm_spec_decode_per_position_acceptance_rates"] = list(rates) if isinstance(rates, list) else None
    for key in ("backend", "label", "model_id"):
        v[f"vllm_{key}"] = obj.get(key)
    version = obj.get("vllm_version") or obj.get("version")
    date = obj.get("date")
    return ImportedLevel(
        tool="vllm bench serve",
        tool_version=str(version) if version else None,
        tool_version_source="--metadata of the run" if version else "not recorded by vllm bench serve",
        source_file=str(path),
        source_record=record,
        variant=variant,
        values=v,
        streamed=True,
        requests=_requests(obj),
        measured_at=f"{date} (local time of the client)" if date else None,
    )


def read_vllm_file(path: Path, text: str, *, variant: str | None = None) -> list[ImportedLevel]:
    """The runs of one ``--save-result`` file, one level each.

    Args:
        path: the result file.
        text: its content.
        variant: the run name (default: the result's ``label``, else the file's stem).

    Raises:
        ConfigError: not JSON, or an object that is not a vllm bench serve result.
    """
    objects = parse_objects(text, path)
    for i, obj in enumerate(objects):
        if not looks_like(obj):
            raise ConfigError(
                f"{path}: object {i + 1} is not a vllm bench serve result (it lacks "
                f"{', '.join(_SIGNATURE)} or looks like another tool's)"
            )
    levels = []
    for i, obj in enumerate(objects):
        level = _level(
            obj,
            path=path,
            record=f"object {i + 1}" if len(objects) > 1 else "whole file",
            variant=variant or obj.get("label") or path.stem,
        )
        level.named_by_file = not (variant or obj.get("label"))
        levels.append(level)
    return levels


def is_sweep_folder(path: Path) -> bool:
    """True for a ``vllm bench sweep serve`` experiment folder (combination folders with run=N.json)."""
    return path.is_dir() and any(_RUN_FILE.match(p.name) for p in path.glob("*/run=*.json"))


def _serve_name(combination: str) -> str:
    """The serve part of ``SERVE--<serve>-BENCH--<bench>`` (the whole name when it has none)."""
    if not combination.startswith("SERVE-"):
        return "default"
    return combination[len("SERVE-") :].split("-BENCH-")[0].strip("-") or "default"


def read_vllm_sweep(folder: Path, *, variant: str | None = None) -> list[ImportedLevel]:
    """Every measured run of a sweep folder: one run per serve combination, ``run_number`` as the repeat.

    ``warmup.json``, ``summary.json`` and ``*.failure.json`` are skipped (a failure file is
    reported in the level's ``vllm_failures`` column of its combination).

    Raises:
        ConfigError: no ``run=<n>.json`` file in the folder's combination folders.
    """
    named = [(p, m) for p in folder.glob("*/run=*.json") if (m := _RUN_FILE.match(p.name))]
    files = [p for p, _ in sorted(named, key=lambda pm: (pm[0].parent.name, int(pm[1].group(1))))]
    if not files:
        raise ConfigError(
            f"{folder}: no <combination>/run=<n>.json files; pass a vllm bench sweep serve "
            "experiment folder (the one holding SERVE-...-BENCH-... folders)"
        )
    levels = []
    for file in files:
        text = file.read_text(encoding="utf-8")
        objs = parse_objects(text, file)
        failures = ", ".join(sorted(p.name for p in file.parent.glob("*.failure.json"))) or None
        for level, obj in zip(read_vllm_file(file, text, variant=variant or _serve_name(file.parent.name)), objs):
            level.source_record = f"{file.parent.name}/{file.name}"
            run_number = number(obj.get("run_number"))
            level.values["repeat"] = None if math.isnan(run_number) else run_number  # a whole number: _limits
            level.values["vllm_combination"] = file.parent.name
            level.values["vllm_failures"] = failures
            levels.append(level)
    return levels
