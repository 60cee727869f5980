"""Response bodies of the emulated SGLang version (pure functions, no I/O).

Shapes follow SGLang 0.5.9 ``srt/managers/tokenizer_manager.py``
(``_handle_batch_output`` and ``_calculate_spec_decoding_metrics``) and
``srt/entrypoints/http_server.py`` (``/model_info``, ``/server_info``,
``/v1/models``, ``/flush_cache``), read from the 0.5.9 release wheel. Other
versions are added by registering their builders in :data:`EMULATED_VERSIONS`.
"""

from __future__ import annotations

from typing import Any

#: SGLang versions whose HTTP shapes the simulator reproduces.
EMULATED_VERSIONS = ("0.5.9",)

#: Body of a successful (200) or refused (400) /flush_cache, 0.5.9 wording.
FLUSH_CACHE_TEXT = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)


def check_version(version: str) -> None:
    """Raise ConfigError when ``version`` is not emulated."""
    from workbench.errors import ConfigError

    if version not in EMULATED_VERSIONS:
        raise ConfigError(
            f"The simulator does not emulate SGLang {version}'s API yet; emulated: {', '.join(EMULATED_VERSIONS)}"
        )


def finish_reason_length(max_new_tokens: int) -> dict[str, Any]:
    """``{"type": "length", "length": N}`` (``srt/managers/schedule_batch.py``)."""
    return {"type": "length", "length": max_new_tokens}


def meta_info(
    *,
    rid: str,
    prompt_tokens: int,
    completion_tokens: int,
    finish_reason: dict[str, Any] | None,
    weight_version: str = "default",
) -> dict[str, Any]:
    """meta_info sent with every chunk (0.5.9 key order)."""
    return {
        "id": rid,
        "finish_reason": finish_reason,
        "prompt_tokens": prompt_tokens,
        "weight_version": weight_version,
        "total_retractions": 0,
        "completion_tokens": completion_tokens,
        "cached_tokens": 0,
    }


def spec_metrics(
    *,
    completion_tokens: int,
    verify_ct: int,
    accepted_drafts: int,
    num_draft_tokens: int,
    histogram: list[int],
) -> dict[str, Any]:
    """Speculative keys of the final chunk (only when verify_ct > 0, as from 0.5.9).

    spec_accept_length = completion_tokens / verify_ct (bonus and prefill tokens
    included); spec_accept_rate = accepted drafts / (verify_ct * (num_draft_tokens - 1)).
    """
    if verify_ct <= 0:
        return {}
    drafts = verify_ct * (num_draft_tokens - 1)
    out = {
        "spec_accept_rate": accepted_drafts / drafts if drafts else 0.0,
        "spec_accept_length": completion_tokens / verify_ct,
        "spec_accept_token_num": accepted_drafts,
        "spec_draft_token_num": drafts,
        "spec_verify_ct": verify_ct,
    }
    if histogram:
        out["spec_accept_histogram"] = list(histogram)
    return out


def model_info(*, model_path: str, tokenizer_path: str, weight_version: str) -> dict[str, Any]:
    """Body of ``/model_info`` (and the deprecated ``/get_model_info``), plus ``simulated``."""
    return {
        "model_path": model_path,
        "tokenizer_path": tokenizer_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": weight_version,
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "simulated": True,
    }


def models_list(*, served_model_name: str, model_path: str, created: int, max_model_len: int) -> dict[str, Any]:
    """Body of ``/v1/models``."""
    return {
        "object": "list",
        "data": [
            {
                "id": served_model_name,
                "object": "model",
                "created": created,
                "owned_by": "sglang",
                "root": model_path,
                "parent": None,
                "max_model_len": max_model_len,
            }
        ],
    }


def server_info(
    *,
    args: dict[str, Any],
    version: str,
    max_total_num_tokens: int,
    max_req_input_len: int,
    startup_time: float,
    last_gen_throughput: float,
    avg_spec_accept_length: float | None,
    max_running_requests: int,
    simulation: dict[str, Any],
) -> dict[str, Any]:
    """Body of ``/server_info``: flat server args, scheduler info, internal_states, version.

    ``avg_spec_accept_length`` is present only when speculative and the lifetime
    counters are non-zero (they advance at decode log ticks, 0.5.9
    ``scheduler.get_internal_state``). ``simulation`` describes the simulator.
    """
    state: dict[str, Any] = dict(args)
    state["last_gen_throughput"] = last_gen_throughput
    state["memory_usage"] = {"weight": 0.0, "kvcache": 0.0, "token_capacity": max_total_num_tokens, "graph": 0.0}
    state["effective_max_running_requests_per_dp"] = max_running_requests
    if avg_spec_accept_length is not None:
        state["avg_spec_accept_length"] = avg_spec_accept_length
    return {
        **args,
        "max_total_num_tokens": max_total_num_tokens,
        "max_req_input_len": max_req_input_len,
        "startup_time": startup_time,
        "internal_states": [state],
        "version": version,
        "simulated": True,
        "simulation": simulation,
    }
