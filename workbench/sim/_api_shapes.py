"""Native response bodies of each emulated SGLang version (pure functions, no I/O).

One :class:`ApiShape` per emulated version, registered in :data:`EMULATED_VERSIONS`;
the server asks the shape, never compares version names. Every key set was read from
that version's release wheel (``workbench.source.sglang_release(version)``):

============  ==========================================================================
version       files (paths relative to the ``sglang`` package)
============  ==========================================================================
0.4.6.post5   ``srt/managers/tokenizer_manager.py`` (``_handle_batch_output``),
              ``srt/managers/scheduler.py`` (``get_internal_state``, ready handshake),
              ``srt/entrypoints/http_server.py`` (``/get_server_info``, ``/get_model_info``),
              ``srt/openai_api/protocol.py`` (``ModelCard``, ``UsageInfo``)
0.5.4         the same files; OpenAI models in ``srt/entrypoints/openai/protocol.py``;
              ``_calculate_spec_decoding_metrics`` in ``tokenizer_manager.py``
0.5.9         the same files (``/server_info`` and ``/model_info`` added, the old routes kept
              as deprecated aliases)
0.5.12        the same files
0.5.17        recorded from the real server on an H200 (``tests/fixtures/sglang_real/0.5.17/``): 0.5.12's
              keys plus ``cached_tokens_details``, ``dp_rank``, the request timestamps with metrics on,
              ``embedding`` in model info
0.5.23        the same as 0.5.12, plus ``srt/utils/common.py`` (``build_server_info``),
              ``srt/managers/scheduler_components/internal_state.py`` and
              ``memory_usage.py``, ``srt/utils/weight_versions.py``,
              ``srt/mem_cache/hicache_storage.py`` (``disabled_l3_layout``)
============  ==========================================================================

Keys the simulator cannot fill truthfully get SGLang's value for the simulator's case
(``cached_tokens`` 0: no radix cache; retractions 0; memory figures 0.0). Every body
also carries the simulator's own ``simulated`` key (and ``simulation`` in server info),
which is how the workbench tells a simulated server from a real one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

#: The SGLang release the simulator emulates (its API shapes, flag rules and step) when neither the flags nor the
#: profile name one; every default release in ``sim/`` is this one.
DEFAULT_RELEASE = "0.5.9"

#: Body of a successful (200) or refused (400) /flush_cache, 0.5.9 wording.
FLUSH_CACHE_TEXT = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)

#: SpecCounts -> the speculative meta_info keys of the final chunk.
SpecBuilder = Callable[["SpecCounts"], dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class SpecCounts:
    """One finished request's speculative counters (inputs of the spec meta_info keys).

    Attributes:
        completion_tokens: output tokens.
        verify_ct: verify iterations the request took part in.
        accepted_drafts: draft tokens accepted over all its verifies (bonus excluded).
        num_steps: ``--speculative-num-steps``.
        num_draft_tokens: ``--speculative-num-draft-tokens`` (root included).
        histogram: verify count indexed by drafts accepted.
    """

    completion_tokens: int
    verify_ct: int
    accepted_drafts: int
    num_steps: int
    num_draft_tokens: int
    histogram: tuple[int, ...] = ()


def _spec_04(c: SpecCounts) -> dict[str, Any]:
    """0.4.x: only the verify count (``meta_info["spec_verify_ct"]`` when finished)."""
    return {"spec_verify_ct": c.verify_ct}


def _spec_054(c: SpecCounts) -> dict[str, Any]:
    """0.5.4: always written; rate = accepted / (verify_ct * num_steps)."""
    out: dict[str, Any] = {"spec_accept_rate": 0.0, "spec_accept_length": 0, "spec_verify_ct": c.verify_ct}
    drafts = c.verify_ct * c.num_steps
    if c.verify_ct > 0 and drafts > 0:
        out["spec_accept_rate"] = c.accepted_drafts / drafts
        out["spec_accept_length"] = c.completion_tokens / c.verify_ct
    return out


def _spec_059(c: SpecCounts) -> dict[str, Any]:
    """0.5.9: only when verify_ct > 0; rate = accepted / (verify_ct * (draft_tokens - 1))."""
    drafts = c.verify_ct * (c.num_draft_tokens - 1)
    if c.verify_ct <= 0 or drafts <= 0:
        return {}
    out: dict[str, Any] = {
        "spec_accept_rate": c.accepted_drafts / drafts,
        "spec_accept_length": c.completion_tokens / c.verify_ct,
        "spec_accept_token_num": c.accepted_drafts,
        "spec_draft_token_num": drafts,
        "spec_verify_ct": c.verify_ct,
    }
    if c.histogram:
        out["spec_accept_histogram"] = list(c.histogram)
    return out


def _spec_0512(c: SpecCounts, *, aliases: bool = True) -> dict[str, Any]:
    """0.5.12: renamed counters (correct/proposed drafts) plus the old names as aliases."""
    drafts = c.verify_ct * (c.num_draft_tokens - 1)
    if c.verify_ct <= 0:
        return {}
    out: dict[str, Any] = {}
    if drafts > 0:
        out.update(
            {
                "spec_accept_rate": c.accepted_drafts / drafts,
                "spec_accept_length": c.completion_tokens / c.verify_ct,
                "spec_num_correct_drafts": c.accepted_drafts,
                "spec_num_proposed_drafts": drafts,
                "spec_verify_ct": c.verify_ct,
            }
        )
        if aliases:
            out["spec_accepted_drafts"] = c.accepted_drafts
            out["spec_proposed_drafts"] = drafts
    if c.histogram:
        out["spec_correct_drafts_histogram"] = list(c.histogram)
        if aliases:
            out["spec_accept_histogram"] = list(c.histogram)
    return out


def _spec_0523(c: SpecCounts) -> dict[str, Any]:
    """0.5.23: 0.5.12's keys without the aliases (spec_cap_* need DSpark/ragged verify)."""
    return _spec_0512(c, aliases=False)


@dataclasses.dataclass(frozen=True)
class OpenAIShape:
    """How a version's OpenAI-compatible routes serialize (see :mod:`workbench.sim._openai`).

    Attributes:
        chat_chunks: ``"pydantic"`` (every field of every chunk, ``model_dump_json``) or
            ``"msgspec"`` (0.5.12+: delta without null role/content, always
            ``reasoning_content``; no ``usage`` key in content chunks).
        usage_reasoning_tokens: ``UsageInfo`` has ``reasoning_tokens`` (0.5.x).
        usage_completion_details: ``UsageInfo`` has ``completion_tokens_details`` (0.5.23).
        message_tool_calls: a chat reply's message keeps ``tool_calls: null`` (until 0.5.12).
        metadata_weight_versions: ``metadata`` also carries ``weight_versions`` (0.5.23).
        models_parent: ``/v1/models`` cards have ``parent`` (0.5.6+).
    """

    chat_chunks: Literal["pydantic", "msgspec"]
    usage_reasoning_tokens: bool
    usage_completion_details: bool
    message_tool_calls: bool
    metadata_weight_versions: bool
    models_parent: bool


@dataclasses.dataclass(frozen=True)
class ApiShape:
    """The HTTP shapes of one SGLang release (see the module docstring for the sources).

    Attributes:
        version: the release, e.g. ``"0.5.9"`` (also ``/server_info``'s ``version``).
        retraction_key: ``total_retractions`` (0.5.6-0.5.9), ``num_retractions`` (0.5.12+) or None.
        weight_version: meta_info has ``weight_version`` (0.5.2+).
        reasoning_tokens: meta_info has ``reasoning_tokens`` (0.5.12+).
        output_ids: ``/generate`` bodies' ``output_ids``: None (0.4.x: absent), ``"delta"``
            (streamed chunks carry only new ids, 0.5.0-0.5.4) or ``"cumulative"``.
        response_sent_ts: meta_info gets ``response_sent_to_client_ts`` (first streamed
            chunk, or the non-streamed reply; ~0.5.6+).
        spec_before_e2e: the spec keys come before ``e2e_latency`` (up to 0.5.4).
        weight_versions: the final meta_info has ``weight_versions`` spans (0.5.23).
        spec: builder of the final chunk's speculative keys.
        server_info_routes: routes answering server info (the first is the main one).
        model_info_routes: routes answering model info.
        strict_generate: ``/generate`` bodies are checked against the API contract (0.5.23).
        openai: the OpenAI-compatible routes' serialization.
        internal_state: builder of ``internal_states[0]`` (server args plus scheduler state).
        server_info_layout: builder of the whole server-info body.
        model_info_layout: builder of the model-info body.
        request_details: meta_info has ``cached_tokens_details`` and ``dp_rank`` after ``cached_tokens``
            (both null on a simulated server: no radix cache, no DP attention; 0.5.17, recorded on a GPU).
        metrics_timing: with ``--enable-metrics``, meta_info carries the request's timestamps
            (``forward_entry_time``, ``prefill_finished_time``, ``queue_time`` in every chunk; the final one adds
            ``request_received_ts``, ``api_server_dispatch_finish_ts``, ``request_finished_ts``,
            ``decode_throughput``; 0.5.17, recorded on a GPU).
        unknown_sampling_param_status: the HTTP status of a ``/generate`` whose sampling_params hold a key
            SGLang does not know (0.5.17: 500 ``Internal Server Error`` in plain text, recorded on a GPU;
            0.5.23's 400 comes from ``strict_generate``); None: the key is ignored.
        negative_max_new_tokens: the 400 message for ``max_new_tokens`` below the version's minimum.
        key_order: meta_info's key order as the real server writes it (empty: the order they are added in).
        sent_ts_on_final: a streamed request's final chunk carries ``response_sent_to_client_ts`` again (the
            first chunk's value; 0.5.17).
    """

    version: str
    retraction_key: str | None
    weight_version: bool
    reasoning_tokens: bool
    output_ids: Literal["delta", "cumulative"] | None
    response_sent_ts: bool
    spec_before_e2e: bool
    weight_versions: bool
    spec: SpecBuilder
    server_info_routes: tuple[str, ...]
    model_info_routes: tuple[str, ...]
    strict_generate: bool
    openai: OpenAIShape
    internal_state: Callable[..., dict[str, Any]] = dataclasses.field(repr=False)
    server_info_layout: Callable[..., dict[str, Any]] = dataclasses.field(repr=False)
    model_info_layout: Callable[..., dict[str, Any]] = dataclasses.field(repr=False)
    request_details: bool = False
    metrics_timing: bool = False
    unknown_sampling_param_status: int | None = None
    negative_max_new_tokens: str = "max_new_tokens must be a positive integer, got {value!r}"
    key_order: tuple[str, ...] = ()
    sent_ts_on_final: bool = False

    def ordered(self, meta: dict[str, Any]) -> dict[str, Any]:
        """``meta`` in the version's recorded key order (keys it does not list keep theirs, after the listed)."""
        if not self.key_order:
            return meta
        rank = {k: i for i, k in enumerate(self.key_order)}
        return dict(sorted(meta.items(), key=lambda kv: rank.get(kv[0], len(rank))))

    # -- /generate ----------------------------------------------------------
    def meta_info(
        self,
        *,
        rid: str,
        prompt_tokens: int,
        completion_tokens: int,
        finish_reason: dict[str, Any] | None,
        weight_version: str = "default",
    ) -> dict[str, Any]:
        """meta_info sent with every chunk, in the version's key order."""
        meta: dict[str, Any] = {"id": rid, "finish_reason": finish_reason, "prompt_tokens": prompt_tokens}
        if self.weight_version:
            meta["weight_version"] = weight_version
        if self.retraction_key:
            meta[self.retraction_key] = 0
        if self.reasoning_tokens:
            meta["reasoning_tokens"] = 0
        meta["completion_tokens"] = completion_tokens
        meta["cached_tokens"] = 0
        if self.request_details:
            meta["cached_tokens_details"] = None  # SGLang writes it only for a prefix-cache hit
            meta["dp_rank"] = None  # no DP attention
        return meta

    def finish(
        self,
        meta: dict[str, Any],
        *,
        e2e_latency: float,
        spec: SpecCounts | None,
        weight_version: str = "default",
    ) -> None:
        """Add the final chunk's keys to ``meta`` in place (e2e latency, spec keys, spans)."""
        if self.weight_versions:
            meta["weight_versions"] = [{"version": weight_version, "start": 0, "end": meta["completion_tokens"]}]
        spec_keys = self.spec(spec) if spec is not None else {}
        if self.spec_before_e2e:
            meta.update(spec_keys)
            meta["e2e_latency"] = e2e_latency
        else:
            meta["e2e_latency"] = e2e_latency
            meta.update(spec_keys)

    def generate_body(self, *, text: str, output_ids: list[int], meta: dict[str, Any]) -> dict[str, Any]:
        """One ``/generate`` chunk or reply: text, output_ids (when the version has them), meta_info."""
        if self.output_ids is None:
            return {"text": text, "meta_info": meta}
        return {"text": text, "output_ids": output_ids, "meta_info": meta}

    # -- management ---------------------------------------------------------
    def server_info(self, **kwargs: Any) -> dict[str, Any]:
        """Body of the server-info routes (see :func:`_server_info_05` for the arguments)."""
        return self.server_info_layout(self, **kwargs)

    def model_info(self, **kwargs: Any) -> dict[str, Any]:
        """Body of the model-info routes, plus ``simulated``."""
        return {**self.model_info_layout(**kwargs), "simulated": True}

    def models_list(
        self, *, served_model_name: str, model_path: str, created: int, max_model_len: int
    ) -> dict[str, Any]:
        """Body of ``/v1/models`` (``ModelCard`` of ``openai/protocol.py``)."""
        card: dict[str, Any] = {
            "id": served_model_name,
            "object": "model",
            "created": created,
            "owned_by": "sglang",
            "root": model_path,
        }
        if self.openai.models_parent:
            card["parent"] = None
        card["max_model_len"] = max_model_len
        return {"object": "list", "data": [card]}


def finish_reason_length(max_new_tokens: int) -> dict[str, Any]:
    """``{"type": "length", "length": N}`` (``srt/managers/schedule_batch.py``, all versions)."""
    return {"type": "length", "length": max_new_tokens}


# -- server info builders ---------------------------------------------------------
def _state_04(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {**args, "last_gen_throughput": kw["last_gen_throughput"]}


def _state_054(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    mem = {"weight": 0.0, "kvcache": 0.0, "token_capacity": kw["max_total_num_tokens"], "graph": 0.0}
    return {**args, "last_gen_throughput": kw["last_gen_throughput"], "memory_usage": mem}


def _state_059(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    state = _state_054(args, **kw)
    state["effective_max_running_requests_per_dp"] = kw["max_running_requests"]
    return state


#: ``GRAPH_MEMORY_USAGE_KEYS`` of 0.5.23 ``srt/model_executor/graph_memory_usage.py``.
GRAPH_PHASES_0523 = ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")


def _state_0523(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {
        **args,
        "world_size": args.get("tp_size", 1) * args.get("dp_size", 1),
        "startup_time": kw["startup_time"],
        "effective_max_running_requests_per_dp": kw["max_running_requests"],
        "last_gen_throughput": kw["last_gen_throughput"],
        "memory_usage": {
            "weight": 0.0,
            "kvcache": 0.0,
            "startup_available": 0.0,
            "token_capacity": kw["max_total_num_tokens"],
            "token_capacity_swa": None,
            "graph": dict.fromkeys(GRAPH_PHASES_0523, 0.0),
        },
        "disaggregation_mode": "null",
        "decode_cuda_graph_bs": [],
        "decode_cuda_graph_memory_gb": 0.0,
    }


def _internal_state(
    shape: ApiShape,
    args: dict[str, Any],
    *,
    max_total_num_tokens: int,
    last_gen_throughput: float,
    max_running_requests: int,
    startup_time: float,
    avg_spec_accept_length: float | None,
) -> dict[str, Any]:
    """The version's ``internal_states`` entry, with ``avg_spec_accept_length`` only when given."""
    internal = shape.internal_state(
        args,
        max_total_num_tokens=max_total_num_tokens,
        last_gen_throughput=last_gen_throughput,
        max_running_requests=max_running_requests,
        startup_time=startup_time,
    )
    if avg_spec_accept_length is not None:
        internal["avg_spec_accept_length"] = avg_spec_accept_length
    return internal


def _server_info_05(
    shape: ApiShape,
    *,
    args: dict[str, Any],
    max_total_num_tokens: int,
    max_req_input_len: int,
    startup_time: float,
    last_gen_throughput: float,
    avg_spec_accept_length: float | None,
    max_running_requests: int,
    launch_command: str,
    simulation: dict[str, Any],
) -> dict[str, Any]:
    """``{**server args, **scheduler ready info, internal_states, version}`` (0.4.6 to 0.5.12).

    ``avg_spec_accept_length`` is in the internal state only when speculative and the
    lifetime counters are non-zero (they advance at decode log ticks).
    """
    internal = _internal_state(
        shape,
        args,
        max_total_num_tokens=max_total_num_tokens,
        last_gen_throughput=last_gen_throughput,
        max_running_requests=max_running_requests,
        startup_time=startup_time,
        avg_spec_accept_length=avg_spec_accept_length,
    )
    return {
        **args,
        "status": "ready",
        "max_total_num_tokens": max_total_num_tokens,
        "max_req_input_len": max_req_input_len,
        "internal_states": [internal],
        "version": shape.version,
        "simulated": True,
        "simulation": simulation,
    }


def _server_info_0523(
    shape: ApiShape,
    *,
    args: dict[str, Any],
    max_total_num_tokens: int,
    max_req_input_len: int,
    startup_time: float,
    last_gen_throughput: float,
    avg_spec_accept_length: float | None,
    max_running_requests: int,
    launch_command: str,
    simulation: dict[str, Any],
) -> dict[str, Any]:
    """0.5.23 ``build_server_info`` + ``server_info``: adds launch_command, hicache layout, kv_events, frontend."""
    internal = _internal_state(
        shape,
        args,
        max_total_num_tokens=max_total_num_tokens,
        last_gen_throughput=last_gen_throughput,
        max_running_requests=max_running_requests,
        startup_time=startup_time,
        avg_spec_accept_length=avg_spec_accept_length,
    )
    return {
        **args,
        "launch_command": launch_command,
        "status": "ready",
        "max_total_num_tokens": max_total_num_tokens,
        "max_req_input_len": max_req_input_len,
        "startup_time": startup_time,
        "hicache_object_layout": {
            "enabled": False,
            "backend": None,
            "page_size": args.get("page_size", 1),
            "hicache_object_layout": {"pools": []},
            "reason": "Hierarchical cache is disabled",
        },
        "kv_events": None,
        "internal_states": [internal],
        "version": shape.version,
        "frontend": "python",
        "simulated": True,
        "simulation": simulation,
    }


# -- model info builders --------------------------------------------------------------
def _model_info_04(
    *, model_path: str, tokenizer_path: str, weight_version: str, served_model_name: str
) -> dict[str, Any]:
    return {"model_path": model_path, "tokenizer_path": tokenizer_path, "is_generation": True}


def _model_info_054(**kw: Any) -> dict[str, Any]:
    return {**_model_info_04(**kw), "preferred_sampling_params": None, "weight_version": kw["weight_version"]}


def _model_info_059(**kw: Any) -> dict[str, Any]:
    return {
        **_model_info_054(**kw),
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
    }


def _model_info_0517(**kw: Any) -> dict[str, Any]:
    """0.5.17 adds ``embedding``: what the server would do as an embedding model (nothing, for a generation model)."""
    return {
        **_model_info_059(**kw),
        "embedding": {"family": "none", "task": "none", "execution": "none", "enabled": False},
    }


def _model_info_0523(
    *, model_path: str, tokenizer_path: str, weight_version: str, served_model_name: str
) -> dict[str, Any]:
    return {
        "model_path": model_path,
        "served_model_name": served_model_name,
        "tokenizer_path": tokenizer_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": weight_version,
        "load_format": "auto",
        "reasoning_parser": None,
        "tool_call_parser": None,
        "disaggregation_mode": "null",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
    }


_OLD_ROUTES: dict[str, Any] = {"server_info_routes": ("/get_server_info",), "model_info_routes": ("/get_model_info",)}
_NEW_ROUTES: dict[str, Any] = {
    "server_info_routes": ("/server_info", "/get_server_info"),
    "model_info_routes": ("/model_info", "/get_model_info"),
}
_PYDANTIC_05: dict[str, Any] = dict(
    chat_chunks="pydantic",
    usage_reasoning_tokens=True,
    usage_completion_details=False,
    message_tool_calls=True,
    metadata_weight_versions=False,
)

#: meta_info's key order of a speculative 0.5.17 server with --enable-metrics, as recorded on a GPU.
_ORDER_0517 = (
    "id",
    "finish_reason",
    "prompt_tokens",
    "weight_version",
    "num_retractions",
    "forward_entry_time",
    "prefill_finished_time",
    "queue_time",
    "reasoning_tokens",
    "completion_tokens",
    "cached_tokens",
    "cached_tokens_details",
    "dp_rank",
    "e2e_latency",
    "spec_accept_rate",
    "spec_accept_length",
    "spec_num_correct_drafts",
    "spec_num_proposed_drafts",
    "spec_verify_ct",
    "spec_accepted_drafts",
    "spec_proposed_drafts",
    "spec_correct_drafts_histogram",
    "spec_accept_histogram",
    "request_received_ts",
    "api_server_dispatch_finish_ts",
    "response_sent_to_client_ts",
    "request_finished_ts",
    "decode_throughput",
)

#: SGLang versions whose HTTP shapes the simulator reproduces -> their shapes.
EMULATED_VERSIONS: dict[str, ApiShape] = {
    s.version: s
    for s in (
        ApiShape(
            version="0.4.6.post5",
            retraction_key=None,
            weight_version=False,
            reasoning_tokens=False,
            output_ids=None,
            response_sent_ts=False,
            spec_before_e2e=True,
            weight_versions=False,
            spec=_spec_04,
            strict_generate=False,
            server_info_layout=_server_info_05,
            internal_state=_state_04,
            model_info_layout=_model_info_04,
            # 0.4.x's openai_api/adapter.py streams differently; see docs/SIMULATOR.md.
            openai=OpenAIShape(**{**_PYDANTIC_05, "usage_reasoning_tokens": False}, models_parent=False),
            **_OLD_ROUTES,
        ),
        ApiShape(
            version="0.5.4",
            retraction_key=None,
            weight_version=True,
            reasoning_tokens=False,
            output_ids="delta",
            response_sent_ts=False,
            spec_before_e2e=True,
            weight_versions=False,
            spec=_spec_054,
            strict_generate=False,
            server_info_layout=_server_info_05,
            internal_state=_state_054,
            model_info_layout=_model_info_054,
            openai=OpenAIShape(**_PYDANTIC_05, models_parent=False),
            **_OLD_ROUTES,
        ),
        ApiShape(
            version="0.5.9",
            retraction_key="total_retractions",
            weight_version=True,
            reasoning_tokens=False,
            output_ids="cumulative",
            response_sent_ts=True,
            spec_before_e2e=False,
            weight_versions=False,
            spec=_spec_059,
            strict_generate=False,
            server_info_layout=_server_info_05,
            internal_state=_state_059,
            model_info_layout=_model_info_059,
            openai=OpenAIShape(**_PYDANTIC_05, models_parent=True),
            **_NEW_ROUTES,
        ),
        ApiShape(
            version="0.5.12",
            retraction_key="num_retractions",
            weight_version=True,
            reasoning_tokens=True,
            output_ids="cumulative",
            response_sent_ts=True,
            spec_before_e2e=False,
            weight_versions=False,
            spec=_spec_0512,
            strict_generate=False,
            server_info_layout=_server_info_05,
            internal_state=_state_059,
            model_info_layout=_model_info_059,
            openai=OpenAIShape(**{**_PYDANTIC_05, "chat_chunks": "msgspec"}, models_parent=True),
            **_NEW_ROUTES,
        ),
        # 0.5.17: recorded from the real server on a GPU (tests/fixtures/sglang_real/0.5.17/)
        ApiShape(
            version="0.5.17",
            retraction_key="num_retractions",
            weight_version=True,
            reasoning_tokens=True,
            output_ids="cumulative",
            response_sent_ts=True,
            spec_before_e2e=False,
            weight_versions=False,
            spec=_spec_0512,
            strict_generate=False,
            server_info_layout=_server_info_05,
            internal_state=_state_059,
            model_info_layout=_model_info_0517,
            openai=OpenAIShape(**{**_PYDANTIC_05, "chat_chunks": "msgspec"}, models_parent=True),
            request_details=True,
            metrics_timing=True,
            unknown_sampling_param_status=500,
            negative_max_new_tokens="max_new_tokens must be at least 0, got {value}.",
            key_order=_ORDER_0517,
            sent_ts_on_final=True,
            **_NEW_ROUTES,
        ),
        ApiShape(
            version="0.5.23",
            retraction_key="num_retractions",
            weight_version=True,
            reasoning_tokens=True,
            output_ids="cumulative",
            response_sent_ts=True,
            spec_before_e2e=False,
            weight_versions=True,
            spec=_spec_0523,
            strict_generate=True,
            server_info_layout=_server_info_0523,
            internal_state=_state_0523,
            model_info_layout=_model_info_0523,
            openai=OpenAIShape(
                chat_chunks="msgspec",
                usage_reasoning_tokens=True,
                usage_completion_details=True,
                message_tool_calls=False,
                metadata_weight_versions=True,
                models_parent=True,
            ),
            **_NEW_ROUTES,
        ),
    )
}

#: Short names accepted for a version: ``0.4`` / ``0.4.x`` / ``0.4.6`` mean 0.4.6.post5.
VERSION_ALIASES = {"0.4": "0.4.6.post5", "0.4.x": "0.4.6.post5", "0.4.6": "0.4.6.post5"}


def get_shape(version: str) -> ApiShape:
    """The :class:`ApiShape` of ``version`` (or an alias from :data:`VERSION_ALIASES`).

    Raises:
        ConfigError: the version is not emulated.
    """
    from workbench.errors import ConfigError

    shape = EMULATED_VERSIONS.get(VERSION_ALIASES.get(version, version))
    if shape is None:
        raise ConfigError(
            f"The simulator does not emulate SGLang {version}'s API; emulated: {', '.join(EMULATED_VERSIONS)} "
            f"(pass one with --sim-api-version)"
        )
    return shape


def check_version(version: str) -> None:
    """Raise ConfigError when ``version`` is not emulated."""
    get_shape(version)
