"""The simulated engine's KV pool: capacity from memory, reservation per decode step by version,
admission and queueing when the pool is small, retraction (workbench/sim/_memory.py, _engine.py)."""

from __future__ import annotations

import random

import pytest

from workbench.errors import ConfigError
from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._engine import EngineCore, SimRequest
from workbench.sim._memory import (
    MemoryRules,
    alloc_len_per_decode,
    default_max_running_requests,
    memory_rules,
)
from workbench.sim._profiles import load_profile
from workbench.sim._server_args import parse_server_args
from workbench.sim._spec import SpecConfig
from doubles.flat_cost import FlatCost

SEED = ["--model-path", "m", "--tp-size", "8", "--mem-fraction-static", "0.85"]
EAGLE3_TOPK4 = [
    "--speculative-algorithm",
    "EAGLE3",
    "--speculative-num-steps",
    "2",
    "--speculative-eagle-topk",
    "4",
    "--speculative-num-draft-tokens",
    "16",
]


def _engine(spec: SpecConfig, memory: MemoryRules, *, mrr: int = 64, seed: int = 1, **kw) -> EngineCore:
    return EngineCore(
        cost=FlatCost(),
        acceptance=AcceptanceModel(),
        spec=spec,
        max_running_requests=mrr,
        chunked_prefill_size=8192,
        rng=random.Random(seed),
        memory=memory,
        **kw,
    )


# -- capacity ------------------------------------------------------------------------------------
def test_capacity_from_memory_weights_and_fraction_by_hand() -> None:
    # H100 NVL 94 GB, fraction 0.85, TP 8; Llama-3.3-70B: 69,501,714,432 params read per forward
    # (layers + LM head) + the input embedding 128,256 x 8,192 = 70,552,387,584 params, bf16 / 8 ranks
    # = 17,638,096,896 bytes; KV per token per rank: 80 layers x 2 x 1 KV head x 128 x 2 bytes = 40,960.
    free = 0.85 * 94e9 - 17_638_096_896
    assert free // 40_960 == 1_520_065
    baseline = parse_server_args(SEED)
    assert baseline.kv_capacity_tokens == 1_520_065
    # 0.5.9: the draft's pool is sized after the target's and gets the same tokens: no change
    assert parse_server_args(SEED + EAGLE3_TOPK4).kv_capacity_tokens == 1_520_065
    # 0.5.16 (pool_configurator.py): the EAGLE target's cell grows by 1 draft layer / 80
    v16 = parse_server_args(SEED + EAGLE3_TOPK4 + ["--sim-sglang-version", "0.5.16"])
    assert v16.kv_capacity_tokens == int(free // (40_960 * (1 + 1 / 80))) == 1_501_299
    # a lower fraction: 0.5 x 94e9 - weights
    assert parse_server_args(SEED[:-1] + ["0.5"]).kv_capacity_tokens == int((0.5 * 94e9 - 17_638_096_896) // 40_960)
    # --max-total-tokens caps it (ModelRunner.init_memory_pool)
    assert parse_server_args(SEED + ["--max-total-tokens", "5000"]).kv_capacity_tokens == 5000
    with pytest.raises(ConfigError, match="mem-fraction-static"):
        parse_server_args(SEED[:-1] + ["0.15"])  # 14.1 GB < 17.6 GB of weights per GPU


def test_default_max_running_requests() -> None:
    assert parse_server_args(SEED + EAGLE3_TOPK4).max_running_requests == 48  # EAGLE family, SGLang 0.5.9+
    # no speculation: min(capacity // 2, req pool of min(max(capacity / context * 512, 2048), 4096))
    assert parse_server_args(SEED).max_running_requests == 4096
    assert default_max_running_requests(3000, 131072) == 1500
    assert default_max_running_requests(1_000_000, 131072) == min(max(int(1_000_000 / 131072 * 512), 2048), 4096)
    assert default_max_running_requests(None, 131072) == 4096


# -- reservation per decode step -----------------------------------------------------------------
@pytest.mark.parametrize("version", ["0.5.9", "0.5.12", "0.5.14", "0.5.16", "0.5.20"])
def test_alloc_len_per_decode(version: str) -> None:
    assert alloc_len_per_decode(SpecConfig(), version) == 1
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 2, 4, 16), version) == 16  # max(2 x 4, 16)
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 5, 4, 8), version) == 20  # max(5 x 4, 8)
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 3, 1, 4), version) == 4
    # adaptive: 0.5.13+ sizes with max_speculative_num_draft_tokens (max candidate + 1); earlier not
    paged = version not in ("0.5.9", "0.5.12")
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 3, 1, 4), version, max_num_draft_tokens=8) == (8 if paged else 4)
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 3, 1, 4), version, page_size=16) == 4  # topk 1: plain rule
    if not paged:
        with pytest.raises(ConfigError, match="page_size"):
            alloc_len_per_decode(SpecConfig("EAGLE3", 2, 4, 16), version, page_size=16)
        return
    # 0.5.13+: ceil((page - 1 + steps) / page) pages per topk branch, each branch its own copy
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 2, 4, 16), version, page_size=16) == 2 * 16 * 4  # 128
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 5, 8, 64), version, page_size=2) == 64  # 3 x 2 x 8 = 48 < 64
    assert alloc_len_per_decode(SpecConfig("EAGLE3", 5, 8, 32), version, page_size=2) == 48


def test_decode_reservation_spec_v1_v2_by_version() -> None:
    v1 = SpecConfig("EAGLE3", 2, 4, 16, spec_v2=False)
    v2 = SpecConfig("EAGLE3", 2, 1, 3, spec_v2=True)
    cases = {  # (spec, version) -> free tokens needed by one fresh request, then after one step
        ("v1", "0.5.9"): (16, 16),  # draft 8 then verify 16, peak max(8, 16), nothing kept
        ("v2", "0.5.9"): (6, 6),  # num_tokens * (1 + is_spec_v2) = 2 x max(2, 3)
        ("v2", "0.5.12"): (6, None),  # tight: kv_committed + 2 alloc - kv_allocated
    }
    for (kind, version), (first, then) in cases.items():
        spec = v1 if kind == "v1" else v2
        eng = _engine(spec, memory_rules(spec, version, 100_000))
        eng.submit(SimRequest("r", prompt_tokens=100, max_new_tokens=50))
        eng.step()  # prefill: holds the 100 prompt tokens
        req = eng.running[0]
        assert req.kv_held == eng.kv_used == 100
        assert eng._decode_need(eng.running) == first
        it = eng.step()
        gained = it.emissions[0].new_tokens
        committed = 100 + req.output_tokens - 1
        if kind == "v1":  # rejected drafts are freed: only the committed KV stays
            assert req.kv_held == committed
        else:  # the over-allocation made before the step stays: old committed + 2 x 3
            assert req.kv_held == 100 + 6
        assert eng._decode_need(eng.running) == (then if then is not None else gained)
        assert committed - 100 == gained


def test_plain_decode_reserves_one_token_per_request() -> None:
    eng = _engine(SpecConfig(), memory_rules(SpecConfig(), "0.5.9", 10_000))
    for i in range(3):
        eng.submit(SimRequest(f"r{i}", prompt_tokens=10, max_new_tokens=5))
    eng.step()
    assert eng._decode_need(eng.running) == 3 and eng.kv_used == 30
    eng.step()
    assert eng.kv_used == 33 and [r.kv_held for r in eng.running] == [11, 11, 11]


# -- admission, queueing, retraction ------------------------------------------------------------
def test_admission_waits_for_memory() -> None:
    eng = _engine(SpecConfig(), memory_rules(SpecConfig(), "0.5.9", 1000))
    for i in range(2):
        eng.submit(SimRequest(f"r{i}", prompt_tokens=400, max_new_tokens=300))
    it = eng.step()  # r0: 400 + 300 < 1000 (rem 1000 -> 300); r1: 700 >= 300: not admitted
    assert it.kind == "prefill" and [e.request.rid for e in it.emissions] == ["r0"]
    # next: rem = 1000 - 400 held - 299 x 0.7 future = 390.7 < 700: decode, r1 stays queued
    assert eng.step().kind == "decode" and len(eng.waiting) == 1
    kinds = []
    while not eng.idle:
        kinds.append(eng.step().kind)
        assert eng.kv_used <= 1000
    assert kinds.count("prefill") == 1 and eng.total_retractions == 0 and eng.kv_used == 0


def test_idle_engine_admits_the_head_even_when_it_cannot_fit() -> None:
    eng = _engine(SpecConfig(), memory_rules(SpecConfig(), "0.5.9", 100))
    eng.submit(SimRequest("big", prompt_tokens=80, max_new_tokens=50))
    assert eng.step().kind == "prefill"  # no deadlock: nothing runs, so the head goes in


@pytest.mark.parametrize("speculative", [False, True])
def test_retraction_happens_is_counted_and_requests_finish(speculative: bool) -> None:
    spec = SpecConfig("EAGLE3", 2, 1, 3) if speculative else SpecConfig()
    eng = _engine(spec, memory_rules(spec, "0.5.9", 1000))
    reqs = [SimRequest(f"r{i}", prompt_tokens=10 + i, max_new_tokens=400) for i in range(4)]
    for r in reqs:
        eng.submit(r)
    logs, tokens = [], {r.rid: 0 for r in reqs}
    first_retracted = None
    while not eng.idle:
        running_before = [(r.rid, r.output_tokens, r.prompt_tokens) for r in eng.running]
        waiting_before = len(eng.waiting)
        it = eng.step()
        if it.log_line and "Retract" in it.log_line:
            logs.append(it.log_line)
            if first_retracted is None:
                first_retracted = (running_before, [r.rid for r in list(eng.waiting)[waiting_before:]])
        for e in it.emissions:
            tokens[e.request.rid] += e.new_tokens
        assert eng.kv_used <= 1000 + 3 * 3  # the pool holds (the last request kept may overrun it)
    assert eng.total_retractions >= 1 and logs and "KV cache pool is full. Retract requests." in logs[0]
    assert sum(r.retractions for r in reqs) == eng.total_retractions
    assert all(tokens[r.rid] == r.output_tokens == 400 for r in reqs)  # retracted requests re-prefill and finish
    assert eng.kv_used == 0
    before, retracted = first_retracted
    if speculative:  # only from the back: the newest
        assert retracted[0] == before[-1][0]
    else:  # the fewest output tokens (ties: the longest prompt) first
        assert retracted[0] == min(before, key=lambda t: (t[1], -t[2]))[0]


def test_retracted_request_reprefills_prompt_and_output() -> None:
    eng = _engine(SpecConfig(), memory_rules(SpecConfig(), "0.5.9", 1000))
    for i in range(4):
        eng.submit(SimRequest(f"r{i}", prompt_tokens=10, max_new_tokens=400))
    while eng.total_retractions == 0:
        eng.step()
    victim = eng.waiting[-1]
    assert victim.kv_held == 0 and victim.prefilled == 0 and victim.output_tokens > 1
    out = victim.output_tokens
    while victim.kv_held == 0:
        eng.step()
    assert victim.prefilled == victim.kv_held == 10 + out  # prompt and output again, one token more out
    assert victim.output_tokens == out + 1


def test_unlimited_memory_changes_nothing() -> None:
    spec = SpecConfig("EAGLE3", 2, 4, 16)
    runs = []
    for memory in (MemoryRules(), memory_rules(spec, "0.5.9", 10**9)):
        eng = _engine(spec, memory, seed=3)
        for i in range(6):
            eng.submit(SimRequest(f"r{i}", prompt_tokens=300 + i, max_new_tokens=64))
        trace = []
        while not eng.idle:
            it = eng.step()
            trace.append((it.kind, it.duration_s, [(e.request.rid, e.new_tokens) for e in it.emissions]))
        runs.append(trace)
    assert runs[0] == runs[1]


def test_default_report_pool_never_runs_out() -> None:
    """Seed profile, 0.5.9: 1.5M tokens of KV; 64 requests of at most 3,121 + 256 tokens use 216K."""
    prof = load_profile("seed-pcie-8gpu")
    cfg = parse_server_args(SEED + EAGLE3_TOPK4 + ["--sim-profile", str(prof.path)])
    assert cfg.kv_capacity_tokens > 64 * (3121 + 256 + 2 * 16)


def test_server_reports_the_pool_and_retractions() -> None:
    from workbench.sim._server import SimServer

    server = SimServer(parse_server_args(SEED + EAGLE3_TOPK4 + ["--sim-api-version", "0.5.12"]))
    sim = server.simulation_info()
    assert sim["kv_capacity_tokens"] == 1_520_065 and sim["total_retractions"] == 0
    assert sim["alloc_len_per_decode"] == 16 and sim["token_usage"] == 0.0 and sim["spec_policy"] is None
    pending = server.submit(100, 8)
    pending.request.retractions = 2
    assert server._body(pending, final=False, stream=True)["meta_info"]["num_retractions"] == 2


def test_page_size_holds_whole_pages_and_needs_a_page_at_a_boundary() -> None:
    """--page-size 16 (0.5.9 ``new_tokens_required_next_decode``): a request holds ceil(tokens / 16) pages;
    a plain decode step needs a fresh page only for a request whose committed KV fills its last page."""
    rules = memory_rules(SpecConfig(), "0.5.9", 10_000, page_size=16)
    engine = _engine(SpecConfig(), rules)
    a, b = SimRequest("a", prompt_tokens=20, max_new_tokens=50), SimRequest("b", prompt_tokens=32, max_new_tokens=50)
    engine.submit(a)
    engine.submit(b)
    engine.step()  # prefill of both
    assert (a.kv_held, b.kv_held, engine.kv_used) == (32, 32, 64)
    # committed KV: a 20 (room in its page), b 32 (its page full): one new page
    assert engine._decode_need(engine.running) == 16
    engine.step()  # decode: a commits 21 tokens (2 pages), b 33 (3 pages)
    assert (a.kv_held, b.kv_held, engine.kv_used) == (32, 48, 80)
    spec = memory_rules(SpecConfig("EAGLE3", 2, 4, 16), "0.5.16", 10_000, page_size=16)
    # max(ceil(2 + 16, 16) x 4, ceil(16, 16)) = 128 per request (spec v1); the reservation is the paged tree rule
    assert spec.spec_page_need == 128 and spec.alloc_len == 128
    v2 = memory_rules(SpecConfig("EAGLE3", 3, 1, 4, spec_v2=True), "0.5.9", 10_000, page_size=16)
    assert v2.spec_page_need == 2 * 16 and v2.pages(17) == 32 and memory_rules(SpecConfig(), "0.5.9", 1).pages(17) == 17
