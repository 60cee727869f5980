"""The simulated server as a real process on 127.0.0.1, spoken to over real HTTP."""

from __future__ import annotations

import json

import pytest

from workbench.errors import ServerStartError
from workbench.hosts import LocalHost
from workbench.hosts import _processes as processes
from workbench.servers import ServerHandle
from workbench.variants import Variant, load_variant
from http_client import get, post_json, sse_events

FAST = {"profile": "seed-pcie-8gpu", "time-scale": 20, "seed": 3}


@pytest.fixture(scope="module")
def eagle_server():
    with ServerHandle.start(load_variant("eagle3-topk4"), host="local", engine="sim", sim_options=FAST) as server:
        yield server
    assert not processes.group_members(LocalHost(), server.process.pgid)


def test_streaming_generate_shapes(eagle_server) -> None:
    status, raw = post_json(
        eagle_server.url + "/generate",
        {
            "text": "Write a Python function that parses a CSV file.",
            "sampling_params": {"max_new_tokens": 64, "temperature": 0.0, "ignore_eos": True},
            "stream": True,
        },
    )
    assert status == 200
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    tokens = [c["meta_info"]["completion_tokens"] for c in chunks]
    assert tokens[0] == 1 and tokens[-1] == 64 and tokens == sorted(tokens)
    assert max(b - a for a, b in zip(tokens, tokens[1:])) > 1  # speculation: several tokens per chunk
    for prev, cur in zip(chunks, chunks[1:]):  # text and output_ids are cumulative (0.5.9)
        assert (
            cur["text"].startswith(prev["text"]) and cur["output_ids"][: len(prev["output_ids"])] == prev["output_ids"]
        )
    assert all(c["meta_info"]["finish_reason"] is None for c in chunks[:-1])
    final = chunks[-1]["meta_info"]
    assert final["finish_reason"] == {"type": "length", "length": 64}
    assert final["spec_accept_length"] == pytest.approx(64 / final["spec_verify_ct"])
    assert sum(final["spec_accept_histogram"]) == final["spec_verify_ct"]
    assert final["spec_draft_token_num"] == final["spec_verify_ct"] * 15
    assert "response_sent_to_client_ts" in chunks[0]["meta_info"] and final["e2e_latency"] > 0
    assert list(chunks[0]["meta_info"])[:7] == [
        "id",
        "finish_reason",
        "prompt_tokens",
        "weight_version",
        "total_retractions",
        "completion_tokens",
        "cached_tokens",
    ]


def test_stream_interval_streams_every_kth_token_like_sglang(eagle_server) -> None:
    """SGLang 0.5.9 streams at 1, k+1, 2k+1, ... output tokens and at the end (scheduler_output_processor_mixin)."""
    body = {
        "text": "Write a Python function that parses a CSV file.",
        "stream": True,
        "sampling_params": {"max_new_tokens": 40, "temperature": 0.0, "ignore_eos": True, "stream_interval": 8},
    }
    status, raw = post_json(eagle_server.url + "/generate", body)
    chunks = sse_events(raw)[:-1]
    tokens = [c["meta_info"]["completion_tokens"] for c in chunks]
    assert status == 200 and tokens[0] == 1 and tokens[-1] == 40
    assert all(t % 8 == 1 for t in tokens[:-1]) and len(tokens) <= 40 // 8 + 2
    assert chunks[-1]["text"].startswith(chunks[-2]["text"]) and len(chunks[-1]["output_ids"]) == 40
    assert chunks[-1]["meta_info"]["spec_verify_ct"] > len(tokens)  # verify rounds that streamed nothing
    body["sampling_params"]["stream_interval"] = 0
    status, raw = post_json(eagle_server.url + "/generate", body)
    assert status == 400 and "stream_interval" in json.loads(raw)["error"]["message"]


def test_non_streaming_batch_and_errors(eagle_server) -> None:
    status, raw = post_json(eagle_server.url + "/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 5}})
    body = json.loads(raw)
    assert status == 200 and len(body["output_ids"]) == 5 and body["meta_info"]["completion_tokens"] == 5
    status, raw = post_json(
        eagle_server.url + "/generate", {"text": ["a", "b"], "sampling_params": {"max_new_tokens": 3}}
    )
    assert status == 200 and [b["meta_info"]["completion_tokens"] for b in json.loads(raw)] == [3, 3]
    status, raw = post_json(eagle_server.url + "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 16.0}})
    assert status == 400 and "max_new_tokens" in json.loads(raw)["error"]["message"]
    status, raw = post_json(eagle_server.url + "/generate", {"sampling_params": {}})
    assert status == 400


def test_management_endpoints(eagle_server) -> None:
    status, raw = get(eagle_server.url + "/v1/models")
    assert status == 200 and json.loads(raw)["data"][0]["owned_by"] == "sglang"
    info = json.loads(get(eagle_server.url + "/model_info")[1])
    assert info["simulated"] is True
    from tokenizers import Tokenizer

    assert Tokenizer.from_file(info["tokenizer_path"] + "/tokenizer.json").get_vocab_size() > 1000
    assert get(eagle_server.url + "/health")[0] == 200 and get(eagle_server.url + "/health_generate")[0] == 200
    # Counters move only at decode log ticks (every 40 decode steps), and flush resets them.
    post_json(eagle_server.url + "/generate", {"text": "go", "sampling_params": {"max_new_tokens": 200}})
    server_info = json.loads(get(eagle_server.url + "/server_info")[1])
    assert server_info["version"] == "0.5.9" and server_info["simulated"] is True
    assert server_info["speculative_eagle_topk"] == 4 and server_info["max_running_requests"] == 48
    assert 1.0 < server_info["internal_states"][0]["avg_spec_accept_length"] <= 3.0
    assert json.loads(get(eagle_server.url + "/get_server_info")[1])["version"] == "0.5.9"
    status, raw = post_json(eagle_server.url + "/flush_cache", {})
    assert status == 200 and raw.startswith(b"Cache flushed.")
    assert "avg_spec_accept_length" not in json.loads(get(eagle_server.url + "/server_info")[1])["internal_states"][0]
    assert "accept len:" in eagle_server.logs_tail(200)


def test_bad_flag_fails_start_with_log_tail() -> None:
    bad = Variant(name="bad", model_path="m", flags={"no-such-flag": 1})
    with pytest.raises(ServerStartError) as err:
        ServerHandle.start(bad, host="local", engine="sim", ready_timeout_s=30)
    assert "unrecognized arguments: --no-such-flag" in err.value.log_tail


def test_spec_v2_with_topk4_is_refused_like_sglang() -> None:
    v = load_variant("eagle3-topk4")
    bad = Variant(
        name="v2bad",
        model_path=v.model_path,
        draft_model_path=v.draft_model_path,
        flags=v.flags,
        env={"SGLANG_ENABLE_SPEC_V2": "1"},
    )
    with pytest.raises(ServerStartError) as err:
        ServerHandle.start(bad, host="local", engine="sim", ready_timeout_s=30)
    assert "only supports topk = 1" in err.value.log_tail
