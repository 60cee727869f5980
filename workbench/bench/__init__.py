"""Benchmarking: prompts, the streaming client, closed/open-loop load, sweeps and metrics.

Names are imported on first use (PEP 562), so importing one submodule does not pull
in the rest: the host-side load generator (:mod:`workbench.bench.remote_run`) imports
only the modules that need the standard library and aiohttp, and runs on a GPU host
where pandas, numpy or tokenizers may be absent.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> submodule that defines it.
_EXPORTS: dict[str, str] = {
    "DEFAULT_CONCURRENCY_LEVELS": "sweep",
    "LevelResult": "sweep",
    "Prompt": "prompts",
    "RequestRecord": "record",
    "SSEDecoder": "sse",
    "StreamAccumulator": "record",
    "StreamEvent": "sse",
    "SweepResult": "sweep",
    "TOKENIZER_DIR": "tokenizer",
    "Timebase": "timing",
    "add_request_columns": "metrics",
    "build_generate_body": "client",
    "closed_loop": "loadgen",
    "count_tokens": "tokenizer",
    "decode_incremental": "tokenizer",
    "default_requests_per_level": "sweep",
    "load_prompts": "prompts",
    "load_tokenizer": "tokenizer",
    "open_loop": "loadgen",
    "poisson_arrivals": "loadgen",
    "prompt_schedule": "loadgen",
    "read_host_sweep": "onhost",
    "records_to_frame": "frames",
    "run_sweep": "sweep",
    "run_sweep_async": "sweep",
    "run_sweep_on_host": "onhost",
    "send_generate": "client",
    "summarize_level": "metrics",
    "summarize_levels": "metrics",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench.bench' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"workbench.bench.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
