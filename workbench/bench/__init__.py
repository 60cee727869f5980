"""Benchmarking: prompts, the sweep plan, the streaming client, closed/open-loop load, sweeps and metrics.

Names are imported on first use (PEP 562), so importing one submodule does not pull
in the rest: the host-side load generator (:mod:`workbench.bench._remote_run`) imports
only the modules that need the standard library and aiohttp, and runs on a GPU host
where pandas, numpy or tokenizers may be absent.
"""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "add_log_series": "_series",
    "add_request_columns": "_metrics",
    "build_request_body": "_client",
    "ensure_fd_limit": "_measure",
    "load_sharegpt": "_prompts",
    "parse_batch_log": "_batchlog",
    "parse_prometheus": "_observe",
    "parse_query_csv": "_gpu",
    "random_token_prompts": "_prompts",
    "send_request": "_client",
    "SERIES_COLUMNS": "_series",
    "SWEEP_DIMENSIONS": "_plan",
    "build_generate_body": "_client",
    "closed_loop": "_loadgen",
    "count_tokens": "_tokenizer",
    "decode_incremental": "_tokenizer",
    "DEFAULT_CONCURRENCY_LEVELS": "_plan",
    "default_requests_per_level": "_plan",
    "LEVEL_INFO_COLUMNS": "_metrics",
    "LevelResult": "_sweep",
    "load_prompts": "_prompts",
    "load_tokenizer": "_tokenizer",
    "open_loop": "_loadgen",
    "poisson_arrivals": "_loadgen",
    "Prompt": "_prompts",
    "prompt_schedule": "_loadgen",
    "read_host_sweep": "_onhost",
    "records_to_frame": "_frames",
    "repeat_seed": "_plan",
    "RequestRecord": "_record",
    "ROUTES": "_client",
    "run_sweep": "_sweep",
    "run_sweep_async": "_sweep",
    "run_sweep_on_host": "_onhost",
    "send_generate": "_client",
    "SSEDecoder": "_sse",
    "start_host_sweep": "_onhost",
    "StreamAccumulator": "_record",
    "StreamEvent": "_sse",
    "summarize_level": "_metrics",
    "summarize_levels": "_metrics",
    "SweepPlan": "_plan",
    "SweepResult": "_sweep",
    "Unit": "_plan",
    "Timebase": "_timing",
    "TOKENIZER_DIR": "_tokenizer",
    "WORKLOAD_COLUMNS": "_workload",
    "workload_labels": "_workload",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
