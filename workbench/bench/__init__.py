"""Benchmarking: prompts, the sweep plan, the streaming client, closed/open-loop load, sweeps and metrics.

Names are imported on first use (PEP 562), so importing one submodule does not pull
in the rest: the host-side load generator (:mod:`workbench.bench._remote_run`) imports
only the modules that need the standard library and aiohttp, and runs on a GPU host
where pandas, numpy or tokenizers may be absent.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "add_log_series": "_series",
    "add_request_columns": "_metrics",
    "ClosedLoop": "_closed_loop",
    "DEFAULT_MAX_NEW_TOKENS": "_plan",
    "parse_number_list": "_plan_checks",
    "ensure_fd_limit": "_measure",
    "load_sharegpt": "_prompts",
    "parse_batch_log": "_batchlog",
    "parse_prometheus": "_observe",
    "parse_query_csv": "_gpu",
    "random_token_prompts": "_prompts",
    "send_request": "_client",
    "SWEEP_DIMENSIONS": "_plan_load",
    "build_generate_body": "_client",
    "closed_loop": "_loadgen",
    "count_tokens": "_tokenizer",
    "decode_incremental": "_tokenizer",
    "DEFAULT_CONCURRENCY_LEVELS": "_plan",
    "default_requests_per_level": "_plan",
    "LOAD_DEFAULTS": "_plan_load",
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
    "RequestRecord": "_request_record",
    "ROUTES": "_client",
    "run_sweep": "_sweep",
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
    "Timebase": "_timing",
    "TOKENIZER_DIR": "_tokenizer",
    "workload_labels": "_workload",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.bench._series import add_log_series as add_log_series
    from workbench.bench._metrics import add_request_columns as add_request_columns
    from workbench.bench._closed_loop import ClosedLoop as ClosedLoop
    from workbench.bench._plan import DEFAULT_MAX_NEW_TOKENS as DEFAULT_MAX_NEW_TOKENS
    from workbench.bench._plan_checks import parse_number_list as parse_number_list
    from workbench.bench._measure import ensure_fd_limit as ensure_fd_limit
    from workbench.bench._prompts import load_sharegpt as load_sharegpt
    from workbench.bench._batchlog import parse_batch_log as parse_batch_log
    from workbench.bench._observe import parse_prometheus as parse_prometheus
    from workbench.bench._gpu import parse_query_csv as parse_query_csv
    from workbench.bench._prompts import random_token_prompts as random_token_prompts
    from workbench.bench._client import send_request as send_request
    from workbench.bench._plan_load import SWEEP_DIMENSIONS as SWEEP_DIMENSIONS
    from workbench.bench._client import build_generate_body as build_generate_body
    from workbench.bench._loadgen import closed_loop as closed_loop
    from workbench.bench._tokenizer import count_tokens as count_tokens
    from workbench.bench._tokenizer import decode_incremental as decode_incremental
    from workbench.bench._plan import DEFAULT_CONCURRENCY_LEVELS as DEFAULT_CONCURRENCY_LEVELS
    from workbench.bench._plan import default_requests_per_level as default_requests_per_level
    from workbench.bench._plan_load import LOAD_DEFAULTS as LOAD_DEFAULTS
    from workbench.bench._metrics import LEVEL_INFO_COLUMNS as LEVEL_INFO_COLUMNS
    from workbench.bench._sweep import LevelResult as LevelResult
    from workbench.bench._prompts import load_prompts as load_prompts
    from workbench.bench._tokenizer import load_tokenizer as load_tokenizer
    from workbench.bench._loadgen import open_loop as open_loop
    from workbench.bench._loadgen import poisson_arrivals as poisson_arrivals
    from workbench.bench._prompts import Prompt as Prompt
    from workbench.bench._loadgen import prompt_schedule as prompt_schedule
    from workbench.bench._onhost import read_host_sweep as read_host_sweep
    from workbench.bench._frames import records_to_frame as records_to_frame
    from workbench.bench._plan import repeat_seed as repeat_seed
    from workbench.bench._request_record import RequestRecord as RequestRecord
    from workbench.bench._client import ROUTES as ROUTES
    from workbench.bench._sweep import run_sweep as run_sweep
    from workbench.bench._onhost import run_sweep_on_host as run_sweep_on_host
    from workbench.bench._client import send_generate as send_generate
    from workbench.bench._sse import SSEDecoder as SSEDecoder
    from workbench.bench._onhost import start_host_sweep as start_host_sweep
    from workbench.bench._record import StreamAccumulator as StreamAccumulator
    from workbench.bench._sse import StreamEvent as StreamEvent
    from workbench.bench._metrics import summarize_level as summarize_level
    from workbench.bench._metrics import summarize_levels as summarize_levels
    from workbench.bench._plan import SweepPlan as SweepPlan
    from workbench.bench._sweep import SweepResult as SweepResult
    from workbench.bench._timing import Timebase as Timebase
    from workbench.bench._tokenizer import TOKENIZER_DIR as TOKENIZER_DIR
    from workbench.bench._workload import workload_labels as workload_labels
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
