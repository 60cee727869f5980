"""Each emulated SGLang version's key sets, read off a real simulated server over HTTP.

The expected tables are the key sets of each release wheel (sources in
workbench/sim/_api_shapes.py and docs/SIMULATOR.md), written out here so that a change
to a shape shows up as a diff of this file.
"""

from __future__ import annotations

import json

import pytest

from workbench.servers import ServerHandle
from workbench.sim._api_shapes import EMULATED_VERSIONS, get_shape
from workbench.sim._contract import contract_error
from workbench.sim._server_args import build_parser
from workbench.variants import load_variant
from http_client import get, post_json, sse_events

VERSIONS = ["0.4.6.post5", "0.5.4", "0.5.9", "0.5.12", "0.5.17", "0.5.23"]

#: meta_info keys of every chunk.
HEAD = {
    "0.4.6.post5": ["id", "finish_reason", "prompt_tokens", "completion_tokens", "cached_tokens"],
    "0.5.4": ["id", "finish_reason", "prompt_tokens", "weight_version", "completion_tokens", "cached_tokens"],
    "0.5.9": [
        "id",
        "finish_reason",
        "prompt_tokens",
        "weight_version",
        "total_retractions",
        "completion_tokens",
        "cached_tokens",
    ],
    "0.5.12": [
        "id",
        "finish_reason",
        "prompt_tokens",
        "weight_version",
        "num_retractions",
        "reasoning_tokens",
        "completion_tokens",
        "cached_tokens",
    ],
    # 0.5.17 as recorded from the real server on a GPU (tests/fixtures/sglang_real/0.5.17/), metrics on
    "0.5.17": [
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
    ],
    "0.5.23": [
        "id",
        "finish_reason",
        "prompt_tokens",
        "weight_version",
        "num_retractions",
        "reasoning_tokens",
        "completion_tokens",
        "cached_tokens",
    ],
}
#: keys the final chunk adds (speculative server), in order.
FINAL = {
    "0.4.6.post5": ["spec_verify_ct", "e2e_latency"],
    "0.5.4": ["spec_accept_rate", "spec_accept_length", "spec_verify_ct", "e2e_latency"],
    "0.5.9": [
        "e2e_latency",
        "spec_accept_rate",
        "spec_accept_length",
        "spec_accept_token_num",
        "spec_draft_token_num",
        "spec_verify_ct",
        "spec_accept_histogram",
    ],
    "0.5.12": [
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
    ],
    "0.5.23": [
        "weight_versions",
        "e2e_latency",
        "spec_accept_rate",
        "spec_accept_length",
        "spec_num_correct_drafts",
        "spec_num_proposed_drafts",
        "spec_verify_ct",
        "spec_correct_drafts_histogram",
    ],
}
#: the final chunk's request timestamps (0.5.17 with metrics on), after the spec keys
FINAL["0.5.17"] = [
    *FINAL["0.5.12"],
    "request_received_ts",
    "api_server_dispatch_finish_ts",
    "request_finished_ts",
    "decode_throughput",
]
#: 0.5.17's streamed final chunk carries the first chunk's response_sent_to_client_ts again, before the finish
STREAM_FINAL = {
    "0.5.17": [
        *FINAL["0.5.12"],
        "request_received_ts",
        "api_server_dispatch_finish_ts",
        "response_sent_to_client_ts",
        "request_finished_ts",
        "decode_throughput",
    ]
}
SENT_TS = {"0.4.6.post5": False, "0.5.4": False, "0.5.9": True, "0.5.12": True, "0.5.17": True, "0.5.23": True}
BODY = {"0.4.6.post5": ["text", "meta_info"]}
SERVER_ROUTES = {"0.4.6.post5": ["/get_server_info"], "0.5.4": ["/get_server_info"]}
MODEL_INFO = {
    "0.4.6.post5": ["model_path", "tokenizer_path", "is_generation"],
    "0.5.4": ["model_path", "tokenizer_path", "is_generation", "preferred_sampling_params", "weight_version"],
    "0.5.9": [
        "model_path",
        "tokenizer_path",
        "is_generation",
        "preferred_sampling_params",
        "weight_version",
        "has_image_understanding",
        "has_audio_understanding",
        "model_type",
        "architectures",
    ],
    "0.5.23": [
        "model_path",
        "served_model_name",
        "tokenizer_path",
        "is_generation",
        "preferred_sampling_params",
        "weight_version",
        "load_format",
        "reasoning_parser",
        "tool_call_parser",
        "disaggregation_mode",
        "has_image_understanding",
        "has_audio_understanding",
        "model_type",
        "architectures",
    ],
}
MODEL_INFO["0.5.12"] = MODEL_INFO["0.5.9"]
MODEL_INFO["0.5.17"] = [*MODEL_INFO["0.5.9"], "embedding"]
#: server-info keys besides the echoed server args, in order.
SERVER_INFO = {
    v: ["status", "max_total_num_tokens", "max_req_input_len", "internal_states", "version", "simulated", "simulation"]
    for v in VERSIONS
}
SERVER_INFO["0.5.23"] = [
    "launch_command",
    "status",
    "max_total_num_tokens",
    "max_req_input_len",
    "startup_time",
    "hicache_object_layout",
    "kv_events",
    "internal_states",
    "version",
    "frontend",
    "simulated",
    "simulation",
]
#: internal_states[0] keys besides the server args (avg_spec_accept_length comes after a log tick).
STATE = {
    "0.4.6.post5": ["last_gen_throughput"],
    "0.5.4": ["last_gen_throughput", "memory_usage"],
    "0.5.9": ["last_gen_throughput", "memory_usage", "effective_max_running_requests_per_dp"],
    "0.5.23": [
        "world_size",
        "startup_time",
        "effective_max_running_requests_per_dp",
        "last_gen_throughput",
        "memory_usage",
        "disaggregation_mode",
        "decode_cuda_graph_bs",
        "decode_cuda_graph_memory_gb",
    ],
}
STATE["0.5.12"] = STATE["0.5.17"] = STATE["0.5.9"]
MEMORY = {
    "0.5.4": ["weight", "kvcache", "token_capacity", "graph"],
    "0.5.23": ["weight", "kvcache", "startup_available", "token_capacity", "token_capacity_swa", "graph"],
}
MEMORY["0.5.9"] = MEMORY["0.5.12"] = MEMORY["0.5.17"] = MEMORY["0.5.4"]

ARG_KEYS = set(vars(build_parser().parse_args(["--model-path", "m"])))


@pytest.fixture(scope="module", params=VERSIONS)
def server(request):
    options = {"profile": "seed-pcie-8gpu", "time-scale": 20, "seed": 3, "api-version": request.param}
    with ServerHandle.start(load_variant("eagle3-topk4"), host="local", engine="sim", sim_options=options) as handle:
        yield request.param, handle


def test_registry_and_aliases() -> None:
    assert list(EMULATED_VERSIONS) == VERSIONS
    assert get_shape("0.4").version == get_shape("0.4.x").version == "0.4.6.post5"
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError, match="emulated: 0.4.6.post5, 0.5.4"):
        get_shape("0.5.10")


def test_generate_key_sets(server) -> None:
    version, handle = server
    status, raw = post_json(
        handle.url + "/generate",
        {"text": "Write a function.", "sampling_params": {"max_new_tokens": 24, "temperature": 0.0}, "stream": True},
    )
    assert status == 200
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    head, ts = HEAD[version], ["response_sent_to_client_ts"] if SENT_TS[version] else []
    assert all(list(c) == BODY.get(version, ["text", "output_ids", "meta_info"]) for c in chunks)
    assert list(chunks[0]["meta_info"]) == head + ts
    assert all(list(c["meta_info"]) == head for c in chunks[1:-1])
    assert list(chunks[-1]["meta_info"]) == head + STREAM_FINAL.get(version, FINAL[version])
    assert chunks[-1]["meta_info"]["completion_tokens"] == 24
    assert (
        max(
            b["meta_info"]["completion_tokens"] - a["meta_info"]["completion_tokens"]
            for a, b in zip(chunks, chunks[1:])
        )
        > 1
    )  # several tokens per chunk under speculation
    if get_shape(version).output_ids == "delta":  # 0.5.4 streams output_ids deltas
        assert sum(len(c["output_ids"]) for c in chunks) == 24
    elif "output_ids" in chunks[-1]:
        assert len(chunks[-1]["output_ids"]) == 24
    status, raw = post_json(handle.url + "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 5}})
    reply = json.loads(raw)
    assert status == 200 and list(reply["meta_info"]) == head + FINAL[version] + ts
    if "output_ids" in reply:
        assert len(reply["output_ids"]) == 5


def test_server_and_model_info_key_sets(server) -> None:
    version, handle = server
    post_json(handle.url + "/generate", {"text": "go", "sampling_params": {"max_new_tokens": 120}})
    routes = SERVER_ROUTES.get(version, ["/server_info", "/get_server_info"])
    assert get(handle.url + "/server_info")[0] == (200 if "/server_info" in routes else 404)
    info = json.loads(get(handle.url + routes[-1])[1])
    assert [k for k in info if k not in ARG_KEYS] == SERVER_INFO[version]
    assert info["version"] == version and info["simulation"]["emulated_api_version"] == version
    state = info["internal_states"][0]
    assert [k for k in state if k not in ARG_KEYS] == STATE[version] + ["avg_spec_accept_length"]
    if version in MEMORY:
        assert list(state["memory_usage"]) == MEMORY[version]
    model_routes = ["/get_model_info"] if version in SERVER_ROUTES else ["/model_info", "/get_model_info"]
    assert get(handle.url + "/model_info")[0] == (200 if "/model_info" in model_routes else 404)
    model = json.loads(get(handle.url + model_routes[-1])[1])
    assert list(model) == MODEL_INFO[version] + ["simulated"]
    card = json.loads(get(handle.url + "/v1/models")[1])["data"][0]
    assert ("parent" in card) == (version not in SERVER_ROUTES)


def test_strict_contract_only_in_0523(server) -> None:
    version, handle = server
    status, raw = post_json(handle.url + "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 3, "foo": 1}})
    if version == "0.5.23":
        assert status == 400
        assert json.loads(raw)["error"].startswith("unknown field `foo`, expected one of `max_new_tokens`, `stop`")
        status, raw = post_json(handle.url + "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 16.0}})
        assert (status, json.loads(raw)) == (400, {"error": "invalid type: floating point `16.0`, expected i64"})
    elif version == "0.5.17":  # recorded on a GPU: SamplingParams(**params) raises TypeError, a bare 500
        assert (status, raw) == (500, b"Internal Server Error")
    else:
        assert status == 200


def test_contract_texts() -> None:
    assert (
        contract_error({"text": "x", "sampling_params": {"ignore_eos": 1}})
        == "invalid type: integer `1`, expected a boolean"
    )
    assert (
        contract_error({"text": "x", "sampling_params": {"json_schema": {}}}) == "invalid type: map, expected a string"
    )
    assert contract_error({"text": "x", "unknown_top_level": 1, "sampling_params": {"max_new_tokens": 3}}) is None
    assert contract_error({"text": "x", "sampling_params": [{"n": 1}, {"bogus": 2}]}).startswith(
        "unknown field `bogus`"
    )
