"""The client, the server readers and the simulated engine against real SGLang 0.5.17 answers.

``tests/fixtures/sglang_real/0.5.17/shapes-real-eagle3-chain.json`` was recorded on 2026-12-06 on an NVIDIA
H200 by ``benchmarks/real_sglang_gpu.py shapes``: a real SGLang 0.5.17 server (Llama-3.1-8B's shapes with
random weights, EAGLE-3 chain of 3, accept length forced to 3.0 by ``SGLANG_SIMULATE_ACC_LEN``, metrics on),
started through the workbench's own :class:`~workbench.servers.ServerHandle`, every route's raw answer kept.
Each test feeds a recorded answer to the code that reads it in a run, or asks the simulated engine the same
question and compares the shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workbench.bench._observe import parse_prometheus
from workbench.bench._record import StreamAccumulator
from workbench.bench._server_api import server_accept_length, server_engine, server_gen_throughput
from workbench.bench._sse import decode_all
from workbench.bench._timing import Timebase
from workbench.servers import ServerHandle
from workbench.variants import load_variant
from http_client import get, post_json

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sglang_real" / "0.5.17" / "shapes-real-eagle3-chain.json"
VARIANT = ROOT / "benchmarks" / "real_sglang" / "variants" / "real-eagle3-chain.toml"
RECORDED = json.loads(FIXTURE.read_text())


def call(method: str, path: str, nth: int = 0, **request: Any) -> dict[str, Any]:
    """The ``nth`` recorded call of ``method path`` whose request body holds ``request``'s items."""
    found = [
        c
        for c in RECORDED["calls"]
        if c["method"] == method
        and c["path"] == path
        and all((c.get("request") or {}).get(k) == v for k, v in request.items())
    ]
    assert len(found) > nth, f"no recorded {method} {path} {request}"
    return found[nth]


def body(c: dict[str, Any]) -> Any:
    return json.loads(c["body"])


def test_the_fixture_is_a_real_gpu_server() -> None:
    info = body(call("GET", "/server_info"))
    assert info["version"] == "0.5.17" and "simulation" not in info
    assert "H200" in RECORDED["gpu_at_ready"] and RECORDED["engine"] == "sglang"
    assert info["speculative_algorithm"] == "EAGLE3" and info["load_format"] == "dummy"


def test_streamed_generate_builds_a_complete_record() -> None:
    """One chunk per verify: 24 tokens arrive in 9 chunks (1 from prefill, then 8 verifies of 3 tokens)."""
    raw = call("POST", "/generate", stream=True)["body"].encode()
    events = decode_all(raw)
    assert events[-1].kind == "done"
    tb = Timebase(clock=lambda: 0.0, origin=0.0, epoch_at_origin=1_000_000.0)
    acc = StreamAccumulator(tb, 0.0, prompt_id="p", max_new_tokens=24)
    for i, ev in enumerate(events):
        acc.on_event(ev, 0.01 * (i + 1))
    rec = acc.finish(0.01 * (len(events) + 1))
    assert rec.ok and rec.error is None
    assert rec.output_tokens == 24 and rec.prompt_tokens == 6 and rec.finish_reason == "length"
    assert rec.num_chunks == 9 and rec.tokens_per_chunk == [1] + [3] * 7 + [2]
    assert rec.spec_verify_ct == 8 and rec.accept_length == pytest.approx(3.0)
    assert rec.meta_spec_accept_length == pytest.approx(3.0)
    assert rec.spec_accept_histogram == [0, 0, 8]  # every verify accepted 2 drafts + the bonus: the forced 3.0
    assert rec.server_e2e_ms == pytest.approx(1000 * json.loads(raw.split(b"\n\n")[-3][6:])["meta_info"]["e2e_latency"])
    assert len(rec.output_hash or "") == 16


def test_openai_completions_stream_builds_a_record() -> None:
    raw = call("POST", "/v1/completions", stream=True)["body"].encode()
    tb = Timebase(clock=lambda: 0.0, origin=0.0, epoch_at_origin=0.0)
    acc = StreamAccumulator(tb, 0.0, max_new_tokens=8, backend="completions")
    events = decode_all(raw)
    for i, ev in enumerate(events):
        acc.on_event(ev, 0.01 * (i + 1))
    rec = acc.finish(0.01 * (len(events) + 1))
    assert rec.ok and rec.output_tokens == 8 and rec.prompt_tokens == 6 and rec.finish_reason == "length"
    assert rec.spec_verify_ct is None  # the OpenAI routes carry no acceptance (0.5.17 has no sglext)


def test_server_info_readers() -> None:
    """What a run reads of /server_info: the engine (real, not simulated), the lifetime accept length and the
    last generation throughput (after requests), and nothing simulated."""
    before, after = body(call("GET", "/server_info", 0)), body(call("GET", "/server_info", 1))
    assert server_engine(after) == ("sglang", False)
    assert server_accept_length(after) == pytest.approx(after["internal_states"][0]["avg_spec_accept_length"])
    assert 2.9 < server_accept_length(after) < 3.1  # the forced 3.0, counted at the decode log ticks
    assert server_gen_throughput(after) == pytest.approx(after["internal_states"][0]["last_gen_throughput"])
    assert before["max_total_num_tokens"] == after["max_total_num_tokens"] > 0
    flushed = body(call("GET", "/server_info", 2))
    assert "avg_spec_accept_length" not in flushed["internal_states"][0]  # /flush_cache resets the counters


def test_every_metric_the_workbench_samples_is_served() -> None:
    samples = parse_prometheus(call("GET", "/metrics")["body"])
    names = {name for name, _, _ in samples}
    for name in (
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:gen_throughput",
        "sglang:token_usage",
        "sglang:spec_accept_length",
        "sglang:spec_accept_rate",
        "sglang:num_requests_total",
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
    ):
        assert name in names, name
    labels = next(lbl for name, lbl, _ in samples if name == "sglang:num_running_reqs")
    assert {"model_name", "tp_rank"} <= set(labels)


def test_error_bodies() -> None:
    bad = call("POST", "/generate", 0, text="x")
    assert bad["status"] == 400 and body(bad) == {"error": {"message": "max_new_tokens must be at least 0, got -5."}}
    unknown = call("POST", "/generate", 1, text="x")
    assert (unknown["status"], unknown["body"]) == (500, "Internal Server Error")
    chat = call("POST", "/v1/chat/completions")
    assert chat["status"] == 400 and body(chat)["object"] == "error"  # no chat template on a random-weight model


def real_keys(path: str, **request: Any) -> list[str]:
    return list(body(call("POST", path, **request))["meta_info"])


@pytest.fixture(scope="module")
def sim() -> Any:
    """The simulated engine serving the real run's chain variant with 0.5.17's shapes (as a user would run it)."""
    options = {"profile": "h100-llama3-8b-eagle3", "time-scale": 20, "seed": 1, "api-version": "0.5.17"}
    with ServerHandle.start(load_variant(VARIANT), host="local", engine="sim", sim_options=options) as handle:
        yield handle


def test_sim_meta_info_keys_match_the_real_server(sim: Any) -> None:
    ids = [128000, 9906, 1917, 374, 264, 1296]
    greedy = {"max_new_tokens": 24, "ignore_eos": True, "temperature": 0}
    status, raw = post_json(sim.url + "/generate", {"input_ids": ids, "sampling_params": greedy})
    assert status == 200
    assert list(json.loads(raw)["meta_info"]) == real_keys("/generate", input_ids=ids, sampling_params=greedy)
    status, raw = post_json(sim.url + "/generate", {"input_ids": ids, "sampling_params": greedy, "stream": True})
    sim_chunks = [e.data for e in decode_all(raw) if e.kind == "chunk"]
    real_chunks = [
        e.data for e in decode_all(call("POST", "/generate", stream=True)["body"].encode()) if e.kind == "chunk"
    ]
    assert list(sim_chunks[0]["meta_info"]) == list(real_chunks[0]["meta_info"])
    assert list(sim_chunks[1]["meta_info"]) == list(real_chunks[1]["meta_info"])
    assert list(sim_chunks[-1]["meta_info"]) == list(real_chunks[-1]["meta_info"])
    assert list(sim_chunks[-1]) == list(real_chunks[-1]) == ["text", "output_ids", "meta_info"]


def test_sim_routes_match_the_real_server(sim: Any) -> None:
    status, raw = get(sim.url + "/model_info")
    assert status == 200
    assert [k for k in json.loads(raw) if k != "simulated"] == list(body(call("GET", "/model_info")))
    status, raw = get(sim.url + "/v1/models")
    real = body(call("GET", "/v1/models"))
    assert list(json.loads(raw)) == list(real) and list(json.loads(raw)["data"][0]) == list(real["data"][0])
    status, raw = post_json(sim.url + "/v1/completions", call("POST", "/v1/completions")["request"])
    assert status == 200 and list(json.loads(raw)) == list(body(call("POST", "/v1/completions")))
    bad = call("POST", "/generate", 0, text="x")
    status, raw = post_json(sim.url + "/generate", bad["request"])
    assert (status, json.loads(raw)) == (bad["status"], body(bad))
    unknown = call("POST", "/generate", 1, text="x")
    status, raw = post_json(sim.url + "/generate", unknown["request"])
    assert (status, raw.decode()) == (unknown["status"], unknown["body"])


def test_sim_server_info_has_every_key_the_workbench_reads(sim: Any) -> None:
    """The simulator echoes its own flags, not all of 0.5.17's ~400; what the workbench reads must be in both."""
    status, raw = get(sim.url + "/server_info")
    simulated, real = json.loads(raw), body(call("GET", "/server_info", 1))
    read = (
        "version",
        "max_total_num_tokens",
        "max_running_requests",
        "speculative_algorithm",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
        "tp_size",
        "mem_fraction_static",
        "attention_backend",
        "model_path",
        "internal_states",
    )
    for key in read:
        assert key in real and key in simulated, key
    assert set(real["internal_states"][0]) & {"last_gen_throughput", "memory_usage", "avg_spec_accept_length"} <= set(
        simulated["internal_states"][0]
    ) | {"avg_spec_accept_length"}


def test_sim_forces_the_accept_length_as_sglang_does(sim: Any) -> None:
    """SGLANG_SIMULATE_ACC_LEN=3.0 in the variant's [env]: the simulator's verifies accept exactly what the real
    server's did (8 verifies of 3 tokens after the prefill token: 24 tokens, histogram [0, 0, 8])."""
    ids = [128000, 9906, 1917, 374, 264, 1296]
    greedy = {"max_new_tokens": 24, "ignore_eos": True, "temperature": 0}
    real = body(call("POST", "/generate", input_ids=ids, sampling_params=greedy))["meta_info"]
    status, raw = post_json(sim.url + "/generate", {"input_ids": ids, "sampling_params": greedy})
    simulated = json.loads(raw)["meta_info"]
    for key in (
        "completion_tokens",
        "spec_verify_ct",
        "spec_accept_length",
        "spec_accept_histogram",
        "spec_num_correct_drafts",
        "spec_num_proposed_drafts",
    ):
        assert simulated[key] == real[key], key
    status, raw = get(sim.url + "/server_info")
    assert json.loads(raw)["simulation"]["forced_accept_length"] == 3.0


def test_forced_acceptance_matches_sglangs_match_expected_rule() -> None:
    from workbench.errors import ConfigError
    from workbench.sim._acceptance import ForcedAcceptance, forced_accept_length
    from workbench.sim._spec import SpecConfig

    tree = SpecConfig(algorithm="EAGLE3", num_steps=3, topk=4, num_draft_tokens=8)
    model = ForcedAcceptance(forced_length=3.4)
    assert model.request_pmf(tree) == pytest.approx((0.0, 0.0, 0.6, 0.4))  # 3 or 4 tokens, mean 3.4
    assert model.expected_accept_length(tree) == pytest.approx(3.4)
    assert ForcedAcceptance(forced_length=9.0).expected_accept_length(tree) == pytest.approx(4.0)  # clipped to steps+1
    assert forced_accept_length({"SGLANG_SIMULATE_ACC_LEN": "3.4"}) == 3.4
    assert forced_accept_length({"SGLANG_SIMULATE_ACC_LEN": "-1"}) is None  # SGLang's "off"
    assert forced_accept_length({}) is None
    with pytest.raises(ConfigError, match="not a number"):
        forced_accept_length({"SGLANG_SIMULATE_ACC_LEN": "three"})
    with pytest.raises(ConfigError, match="match-expected"):
        forced_accept_length({"SGLANG_SIMULATE_ACC_LEN": "3", "SGLANG_SIMULATE_ACC_METHOD": "multinomial"})


# -- the same routes recorded again on an NVIDIA H100 (data/measured/h100-sglang-0.5.17-2026-12-06/) ------------

H100 = json.loads(
    (ROOT / "data" / "measured" / "h100-sglang-0.5.17-2026-12-06" / "shapes-real-eagle3-chain.json").read_text()
)


def _shape(value: Any) -> Any:
    """Keys in order, element shapes and value types of a JSON value; the values themselves left out."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return ["list", [s for i, s in enumerate(map(_shape, value)) if s not in list(map(_shape, value))[:i]]]
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def _answer_shape(c: dict[str, Any]) -> Any:
    """An answer's shape: a stream's events in order with each chunk's shape, a JSON body's, /metrics' names."""
    kind = c["content_type"] or ""
    if "event-stream" in kind:
        return [(e.kind, _shape(e.data) if e.kind == "chunk" else None) for e in decode_all(c["body"].encode())]
    if "json" in kind:
        return _shape(json.loads(c["body"]))
    if c["path"] == "/metrics":
        return sorted({name for name, _, _ in parse_prometheus(c["body"])})
    return c["body"]


def test_the_h100_answers_have_the_h200_shapes() -> None:
    """Every route answered with the same status, content type and shape on both GPUs (keys and their order, chunk
    counts, metric names); only values differ, such as the KV pool's size."""
    assert "H100" in H100["gpu_at_ready"] and H100["engine"] == "sglang" and len(H100["calls"]) == 24
    for h200, h100 in zip(RECORDED["calls"], H100["calls"], strict=True):
        where = f"{h200['method']} {h200['path']}"
        assert (h100["method"], h100["path"], h100["request"]) == (h200["method"], h200["path"], h200["request"])
        assert (h100["status"], h100["content_type"]) == (h200["status"], h200["content_type"]), where
        assert _answer_shape(h100) == _answer_shape(h200), where
    info200, info100 = json.loads(RECORDED["calls"][4]["body"]), json.loads(H100["calls"][4]["body"])
    assert (info200["max_total_num_tokens"], info100["max_total_num_tokens"]) == (747670, 362417)
    generate = call("POST", "/generate", input_ids=[128000, 9906, 1917, 374, 264, 1296])
    same = next(c for c in H100["calls"] if c["request"] == generate["request"])
    assert json.loads(same["body"])["output_ids"] == body(generate)["output_ids"]  # the same dummy weights' tokens
