"""SemiAnalysis InferenceX (formerly InferenceMAX) result files: aggregated per-configuration results.

InferenceX runs its own copy of vLLM's ``benchmark_serving.py`` (``--request-rate inf --max-concurrency
CONC --percentile-metrics ttft,tpot,itl,e2el``, random prompts of ``ISL`` and ``OSL`` tokens with
``--ignore-eos``) and turns each result into one object, ``agg_<result>.json``; ``collect_results.py``
gathers those into a JSON list. Read from SemiAnalysisAI/InferenceX ``utils/process_result.py`` (older)
and ``infx/results/fixed_sequence.py`` (``build_result``), ``infx/results/topology.py``:

- configuration: ``hw``, ``conc``, ``model``, ``framework``, ``precision``, ``spec_decoding`` (older:
  ``mtp``), ``isl``, ``osl``, ``image``, ``disagg``, ``is_multinode``, ``tp``, ``ep``, ``dp_attention``
  (single node; newer also ``pp``, ``dcp_size``, ``pcp_size``), or ``prefill_*`` / ``decode_*`` and
  ``num_prefill_gpu`` / ``num_decode_gpu`` (multinode);
- throughput **per GPU** only, in tok/s: ``tput_per_gpu`` (total tokens / all GPUs),
  ``output_tput_per_gpu`` (output tokens / the decode GPUs, or all GPUs of a single node),
  ``input_tput_per_gpu``;
- every ``<stat>_<metric>_ms`` of the client's result with ``_ms`` dropped and the value **in seconds**
  (``mean_ttft``, ``median_ttft``, ``std_ttft``, ``p99_ttft``, the same for ``tpot``, ``itl``, ``e2el``),
  and for each TPOT statistic ``<stat>_intvty`` = 1000 / TPOT in ms (tokens per second per user).

Mapping (units converted): TTFT, TPOT, E2E (``e2el``) and ITL (vLLM's client: one gap per streamed
chunk, our ``itl_ms``) seconds -> ms, ``median`` -> ``p50``; ``conc`` -> ``concurrency`` (closed loop);
our ``output_throughput_tok_s`` = ``output_tput_per_gpu`` x the GPUs it was divided by (the exact inverse
of InferenceX's division; that count is kept as ``inferencex_output_gpus``); ``isl`` / ``osl`` -> our
``input_len`` / ``max_new_tokens`` (the workload; InferenceX samples lengths up to these with its range
ratio). Kept under ``inferencex_*``: the per-GPU throughputs (``..._per_gpu_tok_s``), the standard
deviations, the interactivity (``..._intvty_tok_s``) and the configuration. Not recorded, so missing:
request counts (unless ``benchmark_outcome``), the offered request rate, the duration, the accept length.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.imports._rows import ImportedLevel, ms, number

__all__ = ["looks_like", "read_inferencex"]

_SIGNATURE = ("hw", "conc", "tput_per_gpu", "output_tput_per_gpu")
_METRICS = (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("itl", "itl_ms"), ("e2el", "e2e_ms"))
_OURS = {"mean": "mean", "median": "p50", "p90": "p90", "p99": "p99"}
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|intvty)$")
_CONFIG = (
    "hw",
    "model",
    "infmax_model_prefix",
    "framework",
    "precision",
    "spec_decoding",
    "mtp",
    "image",
    "disagg",
    "is_multinode",
    "tp",
    "pp",
    "dcp_size",
    "pcp_size",
    "ep",
    "dp_attention",
    "isl",
    "osl",
    "num_prefill_gpu",
    "num_decode_gpu",
    "prefill_tp",
    "prefill_ep",
    "decode_tp",
    "decode_ep",
    "recipe_fingerprint",
)


def looks_like(obj: Any) -> bool:
    """True for one InferenceX aggregated result object, or a list of them (``collect_results.py``)."""
    if isinstance(obj, list):
        return bool(obj) and all(isinstance(o, Mapping) and looks_like(o) for o in obj)
    return isinstance(obj, Mapping) and all(k in obj for k in _SIGNATURE)


def _count(obj: Mapping[str, Any], key: str, default: float = math.nan) -> float:
    value = number(obj.get(key))
    return default if math.isnan(value) else value


def _output_gpus(obj: Mapping[str, Any]) -> float:
    """The GPUs InferenceX divided the output throughput by (``fixed_sequence.build_result``)."""
    if obj.get("is_multinode") is True or "num_decode_gpu" in obj:
        decode, prefill = _count(obj, "num_decode_gpu"), _count(obj, "num_prefill_gpu")
        return decode if decode > 0 else prefill + decode
    return _count(obj, "tp") * _count(obj, "pp", 1.0) * _count(obj, "pcp_size", 1.0)


def _name(obj: Mapping[str, Any]) -> str:
    """A run name from the configuration: ``<framework>-<hw>-<precision>-tp<N>[-ep<N>][-dpa][-<spec>]``."""
    parts = [str(obj.get(k)) for k in ("framework", "hw", "precision") if obj.get(k)]
    if obj.get("tp") is not None:
        parts.append(f"tp{obj['tp']}")
    elif obj.get("num_decode_gpu") is not None:
        parts.append(f"p{obj.get('num_prefill_gpu')}d{obj.get('num_decode_gpu')}")
    if number(obj.get("ep")) > 1:
        parts.append(f"ep{obj['ep']}")
    if str(obj.get("dp_attention")).lower() == "true":
        parts.append("dpa")
    spec = obj.get("spec_decoding") or obj.get("mtp")
    if spec and str(spec).lower() not in ("none", "false", "off"):
        parts.append(str(spec))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))[:60] or "inferencex"


def _level(obj: Mapping[str, Any], *, path: Path, record: str, variant: str | None) -> ImportedLevel:
    gpus = _output_gpus(obj)
    v: dict[str, Any] = {
        "mode": "closed",
        "concurrency": number(obj.get("conc")),
        "request_rate_req_s": math.nan,
        "output_throughput_tok_s": number(obj.get("output_tput_per_gpu")) * gpus if gpus > 0 else math.nan,
        "input_len": number(obj.get("isl")),
        "max_new_tokens": number(obj.get("osl")),
        "inferencex_output_gpus": gpus,
    }
    for key in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"):
        v[f"inferencex_{key}_tok_s"] = number(obj.get(key))
    for key, value in obj.items():
        match = _STAT_KEY.match(key)
        if match is None:
            continue
        stat, metric = match.groups()
        if metric == "intvty":
            v[f"inferencex_{stat}_intvty_tok_s"] = number(value)
            continue
        in_ms = ms(value, "s")  # seconds in the file
        ours = dict(_METRICS)[metric]
        if stat in _OURS:
            v[f"{_OURS[stat]}_{ours}"] = in_ms
        else:
            v[f"inferencex_{stat}_{metric}_ms"] = in_ms
    outcome = obj.get("benchmark_outcome")
    if isinstance(outcome, Mapping):
        v["num_requests"], v["completed"] = number(outcome.get("requested")), number(outcome.get("completed"))
        v["failed"] = v["num_requests"] - v["completed"]
    for key in _CONFIG:
        if key in obj:
            value = obj[key]
            v[f"inferencex_{key}"] = value if isinstance(value, (str, bool)) or value is None else number(value)
    return ImportedLevel(
        tool="inferencex",
        tool_version=None,
        tool_version_source="not recorded by InferenceX's result files",
        source_file=str(path),
        source_record=record,
        variant=variant or _name(obj),
        values=v,
        streamed=True,
    )


def read_inferencex(path: Path, obj: Any, *, variant: str | None = None) -> list[ImportedLevel]:
    """Every configuration point of an InferenceX result file, one level each.

    Args:
        path: ``agg_<name>.json`` (one object) or a collected list of them.
        obj: its parsed content.
        variant: the run name for every point (default: one per configuration, named from it).

    Raises:
        ConfigError: not an InferenceX aggregated result.
    """
    if not looks_like(obj):
        raise ConfigError(f"{path} is not an InferenceX aggregated result (it lacks {', '.join(_SIGNATURE)})")
    objects = obj if isinstance(obj, list) else [obj]
    return [
        _level(o, path=path, record=f"[{i}]" if isinstance(obj, list) else "whole file", variant=variant)
        for i, o in enumerate(objects)
    ]
