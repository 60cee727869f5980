"""Benchmarking: prompts, the streaming client, closed/open-loop load, sweeps and metrics."""

from workbench.bench.client import build_generate_body, send_generate
from workbench.bench.loadgen import closed_loop, open_loop, poisson_arrivals, prompt_schedule
from workbench.bench.metrics import add_request_columns, summarize_level, summarize_levels
from workbench.bench.prompts import Prompt, load_prompts
from workbench.bench.record import RequestRecord, StreamAccumulator, records_to_frame
from workbench.bench.sse import SSEDecoder, StreamEvent
from workbench.bench.sweep import (DEFAULT_CONCURRENCY_LEVELS, LevelResult, SweepResult,
                                   default_requests_per_level, run_sweep, run_sweep_async)
from workbench.bench.timing import Timebase
from workbench.bench.tokenizer import TOKENIZER_DIR, count_tokens, decode_incremental, load_tokenizer

__all__ = [
    "DEFAULT_CONCURRENCY_LEVELS",
    "LevelResult",
    "Prompt",
    "RequestRecord",
    "SSEDecoder",
    "StreamAccumulator",
    "StreamEvent",
    "SweepResult",
    "TOKENIZER_DIR",
    "Timebase",
    "add_request_columns",
    "build_generate_body",
    "closed_loop",
    "count_tokens",
    "decode_incremental",
    "default_requests_per_level",
    "load_prompts",
    "load_tokenizer",
    "open_loop",
    "poisson_arrivals",
    "prompt_schedule",
    "records_to_frame",
    "run_sweep",
    "run_sweep_async",
    "send_generate",
    "summarize_level",
    "summarize_levels",
]
