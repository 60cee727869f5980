"""Unit tests of the simulator's pure parts: spec resolution, acceptance, cost, engine core."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from workbench.errors import ConfigError
from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._cost_model import CostModel
from workbench.sim._engine import EngineCore, SimRequest
from workbench.sim._offline import run_closed_loop
from workbench.sim._spec import SpecConfig, resolve_spec

EAGLE3 = SpecConfig("EAGLE3", num_steps=2, topk=4, num_draft_tokens=16)


def test_resolve_spec_follows_sglang_059_rules() -> None:
    assert not resolve_spec(
        algorithm=None, num_steps=None, topk=None, num_draft_tokens=None, enable_spec_v2=False
    ).enabled
    s = resolve_spec(algorithm="eagle3", num_steps=2, topk=1, num_draft_tokens=16, enable_spec_v2=True)
    assert (s.algorithm, s.num_draft_tokens, s.spec_v2) == ("EAGLE3", 3, True)  # topk 1 forces steps + 1
    assert (
        resolve_spec(algorithm="NEXTN", num_steps=3, topk=1, num_draft_tokens=None, enable_spec_v2=False).algorithm
        == "EAGLE"
    )
    with pytest.raises(ConfigError, match="only supports topk = 1"):
        resolve_spec(algorithm="EAGLE3", num_steps=2, topk=4, num_draft_tokens=16, enable_spec_v2=True)
    with pytest.raises(ConfigError, match="without --speculative-num-steps"):
        resolve_spec(algorithm="EAGLE3", num_steps=None, topk=4, num_draft_tokens=None, enable_spec_v2=False)
    with pytest.raises(ConfigError, match="not a choice"):
        resolve_spec(algorithm="DFLASH", num_steps=2, topk=1, num_draft_tokens=3, enable_spec_v2=False)
    with pytest.raises(ConfigError, match="not emulated"):
        resolve_spec(
            algorithm=None,
            num_steps=None,
            topk=None,
            num_draft_tokens=None,
            enable_spec_v2=False,
            sglang_version="0.4.0",
        )


def test_tree_shape() -> None:
    assert (EAGLE3.tree_depth(), EAGLE3.tree_width()) == (2, 4.0)
    chain = SpecConfig("EAGLE3", num_steps=5, topk=1, num_draft_tokens=3)
    assert (chain.tree_depth(), chain.tree_width()) == (2, 1.0)  # budget limits depth
    assert SpecConfig().tree_depth() == 0


def test_acceptance_sampling_matches_expectation() -> None:
    model = AcceptanceModel(alpha=0.7, depth_decay=0.9, sibling=0.3, concentration=15.0)
    rng = random.Random(7)
    samples = []
    for _ in range(4000):
        a = model.sample_request_alpha(rng)
        samples.extend(1 + model.sample_accepted_drafts(EAGLE3, a, rng) for _ in range(5))
    expected = model.expected_accept_length(EAGLE3)
    se = statistics.stdev(samples) / math.sqrt(len(samples))
    assert abs(statistics.mean(samples) - expected) < 4 * se
    # A wider tree accepts more; a deeper one never accepts less.
    narrow = SpecConfig("EAGLE3", num_steps=2, topk=1, num_draft_tokens=3)
    assert model.expected_accept_length(EAGLE3) > model.expected_accept_length(narrow) > 1.0
    deep = SpecConfig("EAGLE3", num_steps=4, topk=1, num_draft_tokens=5)
    assert model.expected_accept_length(deep) > model.expected_accept_length(narrow)


def test_acceptance_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError):
        AcceptanceModel(alpha=1.2)
    with pytest.raises(ValueError):
        AcceptanceModel(depth_decay=0.0)


def test_cost_model_terms() -> None:
    cost = CostModel(
        base_ms=10,
        per_token_ms=0.5,
        per_seq_ms=0.1,
        per_kv_token_us=1.0,
        draft_base_ms=2,
        draft_per_token_ms=0.01,
        spec_overhead_ms=4,
        spec_per_seq_ms=0.2,
    )
    assert cost.decode_ms(4, kv_tokens=1000) == pytest.approx(10 + 2 + 0.4 + 1.0)
    # draft: first step 4 tokens, second 16; verify 64 tokens; extend 10 tokens; overhead 4 + 0.8
    expected = (2 + 0.04) + (2 + 0.16) + (10 + 32 + 0.4 + 1.0) + (2 + 0.1) + 4.8
    assert cost.spec_decode_ms(4, 1000, EAGLE3, accepted_tokens=10) == pytest.approx(expected)
    v2 = SpecConfig("EAGLE3", 2, 1, 3, spec_v2=True)
    assert cost.spec_decode_ms(4, 0, v2, 8) < cost.spec_decode_ms(4, 0, dataclasses_replace(v2, spec_v2=False), 8)
    with pytest.raises(ValueError):
        CostModel(base_ms=-1, per_token_ms=0)


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def _engine(spec: SpecConfig, mrr: int = 100, policy=None) -> EngineCore:
    return EngineCore(
        cost=CostModel(base_ms=10, per_token_ms=0.1),
        acceptance=AcceptanceModel(),
        spec=spec,
        max_running_requests=mrr,
        chunked_prefill_size=1000,
        rng=random.Random(1),
        spec_policy=policy,
    )


def test_engine_prefill_priority_chunking_and_caps() -> None:
    eng = _engine(SpecConfig(), mrr=2)
    for i, n in enumerate([600, 600, 100]):
        eng.submit(SimRequest(rid=f"r{i}", prompt_tokens=n, max_new_tokens=3))
    it = eng.step()  # r0 whole (600), r1 chunk of 400
    assert it.kind == "prefill" and [e.request.rid for e in it.emissions] == ["r0"]
    assert eng.waiting[0].prefilled == 400
    it = eng.step()  # finishes r1; r2 must wait: cap of 2 running
    assert [e.request.rid for e in it.emissions] == ["r1"] and len(eng.running) == 2
    it = eng.step()
    assert it.kind == "decode" and it.batch_size == 2 and all(e.new_tokens == 1 for e in it.emissions)
    it = eng.step()  # both finish (3 tokens), r2 still waiting -> next is its prefill
    assert all(e.finished for e in it.emissions)
    assert eng.step().kind == "prefill"


def test_engine_speculative_tokens_and_policy() -> None:
    eng = _engine(EAGLE3)
    eng.submit(SimRequest(rid="a", prompt_tokens=10, max_new_tokens=50))
    eng.step()
    while eng.running:
        it = eng.step()
        assert it.speculative and 1 <= it.emissions[0].new_tokens <= 3
    req = it.emissions[0].request
    assert req.output_tokens == 50 and req.verify_ct > 0
    assert sum(req.accept_histogram) == req.verify_ct
    assert sum(i * n for i, n in enumerate(req.accept_histogram)) == req.accepted_drafts
    off = _engine(EAGLE3, policy=lambda batch: batch <= 1)
    for i in range(3):
        off.submit(SimRequest(rid=f"r{i}", prompt_tokens=10, max_new_tokens=5))
    off.step()
    assert not off.step().speculative  # 3 running > 1: drafting off


def test_counters_advance_only_at_log_ticks() -> None:
    eng = _engine(EAGLE3)
    eng.decode_log_interval = 5
    eng.submit(SimRequest(rid="a", prompt_tokens=10, max_new_tokens=1000))
    eng.step()
    for _ in range(4):
        eng.step()
    assert eng.avg_spec_accept_length is None
    it = eng.step()
    assert it.log_line and "accept len:" in it.log_line
    assert 1.0 <= eng.avg_spec_accept_length <= 3.0
    eng.reset_counters()
    assert eng.avg_spec_accept_length is None


def test_closed_loop_keeps_concurrency_and_orders_rows() -> None:
    eng = _engine(SpecConfig())
    rows = run_closed_loop(eng, prompt_tokens=[50] * 10, concurrency=3, max_new_tokens=20)
    assert len(rows) == 10 and all(r["output_tokens"] == 20 for r in rows)
    for r in rows:
        assert r["ttft_ms"] > 0 and r["e2e_ms"] > r["ttft_ms"] and len(r["itl_ms"]) == 19
    # never more than 3 requests overlap in time
    events = sorted([(r["start_s"], 1) for r in rows] + [(r["end_s"], -1) for r in rows], key=lambda e: (e[0], e[1]))
    live = peak = 0
    for _, d in events:
        live += d
        peak = max(peak, live)
    assert peak == 3
