"""Is a spec/baseline pair like-for-like? Server settings that differ beyond speculation, and queued levels.

Pure functions on what the servers reported (the ``/server_info`` body each run's
manifest records: SGLang echoes its resolved ``ServerArgs`` there, the simulated
engine the same keys) and on per-level tables. A speculative server and its
baseline should differ only in the speculative settings; SGLang itself changes
others behind the flags (SGLang 0.5.9, ``srt/server_args.py``
``_handle_speculative_decoding``: the EAGLE family sets ``max_running_requests`` to
48 when it is not given, and spec v1 sets ``disable_overlap_schedule``), and a
variant file may differ by mistake. :func:`settings_differences` lists each
difference with what it does to the comparison and whether it can be equalised.

A request waits in the server's queue when more are in flight than the server
admits: at a closed-loop concurrency ``c`` against a cap of ``max_running_requests =
m``, ``max(0, c - m)`` requests wait at any time (:func:`queued_requests`). The
figures of such a level compare a full server against one that still admits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = ["IGNORED_SETTINGS", "queued_requests", "settings_differences"]

#: ``/server_info`` keys that are not settings of the comparison: identity, ports, seeds, run state,
#: the speculative settings themselves (their difference is the point), and the simulator's own.
IGNORED_SETTINGS = frozenset(
    {
        "host",
        "port",
        "random_seed",
        "status",
        "internal_states",
        "simulation",
        "simulated",
        "version",
        "weight_version",
        "served_model_name",
        "log_level",
        "decode_log_interval",
        "sim_seed",
        "sim_time_scale",
        "sim_profile",
        "sim_api_version",
        "sim_sglang_version",
        "sim_spec_off_above",
        "tokenizer_path",
        "speculative_draft_model_path",
        "speculative_token_map",
        "speculative_adaptive_config",
        "model_path",
        "max_total_num_tokens",
        "max_total_tokens",
        "max_req_input_len",
    }
)


#: ``disable_*`` keys said positively (their values inverted), so no reader meets "disable ... off".
POSITIVE = {
    "disable_overlap_schedule": "overlap scheduling",
    "disable_cuda_graph": "CUDA graphs",
    "disable_custom_all_reduce": "custom all-reduce",
    "disable_radix_cache": "radix cache",
}


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _consequence(key: str, spec: str, b: Any, s: Any) -> tuple[str, str]:
    """(what the difference does to the comparison, how it can be equalised or why not)."""
    if key == "max_running_requests":
        low_name, low = ("the baseline", b) if (b or math.inf) < (s or math.inf) else (spec, s)
        return (
            f"above concurrency {_shown(low)}, requests wait in {low_name}'s queue while the other server "
            "still admits them: throughput and latency there compare a full server with one that is not",
            "set the same --max-running-requests on both (SGLang caps EAGLE servers at 48 unless given)",
        )
    if key == "disable_overlap_schedule":
        off = spec if s else "the baseline"
        return (
            f"overlap scheduling is off for {off}: its CPU scheduling is not hidden behind the GPU, "
            "so part of the gap is scheduling, not speculation",
            "spec v1 turns overlap off and it cannot be turned back on; equal only by disabling it on the "
            "baseline too (slowing the baseline) or by running spec v2 (topk 1)",
        )
    if key == "disable_cuda_graph":
        eager = spec if s else "the baseline"
        return (
            f"{eager} runs eager (no CUDA graphs): kernel launch overhead counts against it",
            "use the same --disable-cuda-graph on both",
        )
    if key == "cuda_graph_max_bs":
        return (
            "CUDA graphs cover different batch sizes: above the smaller limit that server runs eager",
            "set the same --cuda-graph-max-bs on both",
        )
    if key == "enable_mixed_chunk":
        return (
            "mixed chunked prefill differs (SGLang turns it off under speculation)",
            "set --enable-mixed-chunk the same on both (off)",
        )
    return (
        "a setting other than speculation differs, so its effect mixes with speculation's",
        f"give both servers the same --{key.replace('_', '-')}",
    )


def settings_differences(
    baseline_info: Mapping[str, Any], spec_info: Mapping[str, Any], *, spec: str, baseline: str = "baseline"
) -> pd.DataFrame:
    """Settings the two servers report differently, beyond speculation.

    Args:
        baseline_info, spec_info: the ``/server_info`` bodies (resolved server arguments).
        spec, baseline: the variants' names, for the words.

    Returns:
        One row per differing key, sorted by key: ``variant`` (``spec``), ``setting`` (the
        key), ``baseline_value``, ``spec_value`` (as text; ``unset`` for None, ``on``/``off``
        for booleans), ``effect`` and ``equalise`` (sentences). Keys starting with
        ``speculative_`` and :data:`IGNORED_SETTINGS` are left out; a key one server does not
        report is left out too (another SGLang version's field, not a setting that differs).
        Example: max_running_requests 4096 against 48 gives one row whose effect says that
        above concurrency 48 requests wait in the speculative server's queue.
    """
    rows = []
    for key in sorted(set(baseline_info) & set(spec_info)):
        if key.startswith("speculative_") or key in IGNORED_SETTINGS:
            continue
        b, s = baseline_info[key], spec_info[key]
        if b == s or isinstance(b, (dict, list)) or isinstance(s, (dict, list)):
            continue
        effect, equalise = _consequence(key, spec, b, s)
        if key in POSITIVE and isinstance(b, bool) and isinstance(s, bool):
            name, b_text, s_text = POSITIVE[key], _shown(not b), _shown(not s)
        else:
            name, b_text, s_text = key, _shown(b), _shown(s)
        rows.append(
            {
                "variant": spec,
                "setting": name,
                "baseline_value": b_text,
                "spec_value": s_text,
                "effect": effect,
                "equalise": equalise,
            }
        )
    return pd.DataFrame(rows, columns=["variant", "setting", "baseline_value", "spec_value", "effect", "equalise"])


def queued_requests(concurrency: int, max_running_requests: int | float | None) -> int:
    """Requests waiting in the server's queue at a closed-loop ``concurrency`` (0 without a cap).

    Example: concurrency 64 against ``max_running_requests`` 48 -> 16.
    """
    if max_running_requests is None or (isinstance(max_running_requests, float) and math.isnan(max_running_requests)):
        return 0
    return max(0, int(concurrency) - int(max_running_requests))
