"""The roofline cost model: its limits, TP and all-reduce, MoE, breakdowns, and flags reaching it."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.errors import ConfigError
from workbench.sim._hardware import load_gpu, load_model_config
from workbench.sim._profiles import load_profile
from workbench.sim._roofline import RooflineCost
from workbench.sim._roofline_terms import Deployment, Efficiency
from workbench.sim._server_args import parse_server_args
from workbench.sim._spec import SpecConfig

H100 = load_gpu("h100-sxm")
LLAMA8 = load_model_config("llama-3.1-8b-instruct")
LLAMA70 = load_model_config("llama-3.3-70b-instruct")
DRAFT8 = load_model_config("eagle3-llama3.1-8b")
QWEN_MOE = load_model_config("qwen3-30b-a3b")
EFF = Efficiency(hbm_efficiency=0.8, flops_efficiency=0.6, interconnect_efficiency=0.5)
CHAIN = SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4)


def _cost(model=LLAMA8, *, tp=1, link="nvlink", custom=True, graph_bs=160, draft=DRAFT8, eff=EFF) -> RooflineCost:
    dep = Deployment(
        gpu=H100, interconnect=H100.interconnect(link), tp_size=tp, custom_all_reduce=custom, cuda_graph_max_bs=graph_bs
    )
    return RooflineCost(model, dep, eff, draft=draft)


def test_memory_bound_at_small_batch_compute_bound_at_large() -> None:
    cost = _cost()
    t1, t16 = cost.target.total(1, 1, 0, 1), cost.target.total(16, 16, 0, 16)
    assert t16 / t1 < 1.05  # reading the weights dominates: nearly flat in T
    small = cost.target.parts(1, 1, 0, 1)
    assert small[0] > 0 and small[2] == 0.0  # weights-bound, no compute-bound group
    a, b = cost.target.total(8192, 1, 0, 1), cost.target.total(16384, 1, 0, 1)
    assert b / a == pytest.approx(2.0, rel=0.15)  # compute-bound: linear in T (attention adds a little)
    big = cost.target.parts(16384, 1, 0, 1)
    assert big[2] > 10 * (big[0] + big[1])
    # the GEMMs' knee: 2 T FLOPs per 2-byte weight meet the bandwidth at T* = achieved FLOP/s / achieved B/s
    knee = (H100.dense_bf16_tflops * 1e12 * EFF.flops_efficiency) / (H100.hbm_bandwidth_gb_s * 1e9 * EFF.hbm_efficiency)
    below, above = (
        cost.target.parts(int(knee * 0.7), int(knee * 0.7), 0, 1),
        cost.target.parts(int(knee * 1.5), 1, 0, 1),
    )
    assert below[2] == 0.0 and above[2] > 0.0


def test_kv_reads_grow_with_context() -> None:
    cost = _cost()
    short, long = cost.decode_breakdown(32, 32 * 100), cost.decode_breakdown(32, 32 * 8000)
    assert long.kv_ms > 20 * short.kv_ms and long.weights_ms == pytest.approx(short.weights_ms)


def test_tp_and_custom_all_reduce_change_communication() -> None:
    one = _cost(LLAMA70, tp=1, draft=None).decode_breakdown(8, 8000)
    assert one.communication_ms == 0.0
    tp2 = _cost(LLAMA70, tp=2, draft=None).decode_breakdown(8, 8000)
    tp8 = _cost(LLAMA70, tp=8, draft=None).decode_breakdown(8, 8000)
    assert tp8.weights_ms == pytest.approx(tp2.weights_ms / 4)  # weights sharded
    assert tp2.communication_ms > 0 and tp8.communication_ms > tp2.communication_ms  # ring: 2 (n-1)/n bytes
    custom = _cost(LLAMA70, tp=8, custom=True, draft=None).decode_breakdown(1, 1000)
    nccl = _cost(LLAMA70, tp=8, custom=False, draft=None).decode_breakdown(1, 1000)
    assert nccl.communication_ms > custom.communication_ms + 160 * 0.010  # 160 all-reduces, >10 µs each saved
    # Over PCIe with 8 GPUs SGLang cannot run its custom all-reduce: the flag changes nothing.
    pcie_on = _cost(LLAMA70, tp=8, link="pcie", custom=True, draft=None)
    pcie_off = _cost(LLAMA70, tp=8, link="pcie", custom=False, draft=None)
    assert not pcie_on.deployment.uses_custom_all_reduce
    assert pcie_on.decode_ms(4, 4000) == pcie_off.decode_ms(4, 4000)
    # all-reduce bytes grow with T
    assert (
        _cost(LLAMA70, tp=8, link="pcie", draft=None).target.parts(4096, 1, 0, 1)[3]
        > 20 * _cost(LLAMA70, tp=8, link="pcie", draft=None).target.parts(8, 8, 0, 8)[3]
    )


def test_moe_touched_experts_grow_with_tokens() -> None:
    cost = _cost(QWEN_MOE, draft=None)
    touched = [cost.target.touched(t) for t in (1, 8, 64, 512)]
    assert touched[0] == pytest.approx(8.0)  # one token: its 8 experts
    assert touched == sorted(touched) and touched[-1] <= 128 and touched[-1] > 120
    b1, b64 = cost.decode_breakdown(1, 100), cost.decode_breakdown(64, 6400)
    assert b64.weights_ms > 3 * b1.weights_ms  # more experts read as the batch grows
    assert b1.touched_experts == pytest.approx(8.0) and b64.touched_experts > 8
    assert _cost(LLAMA8).decode_breakdown(1, 100).touched_experts is None


def test_breakdown_components_sum_to_the_step_time() -> None:
    cost = _cost()
    d = cost.decode_breakdown(24, 24 * 700)
    assert d.total_ms == pytest.approx(cost.decode_ms(24, 24 * 700))
    s = cost.spec_breakdown(24, 24 * 700, CHAIN, accepted_tokens=60)
    assert s.total_ms == pytest.approx(cost.spec_decode_ms(24, 24 * 700, CHAIN, 60))
    assert s.draft_ms > 0 and s.tokens == 96
    p = cost.prefill_breakdown([700, 300], CHAIN)
    assert p.total_ms == pytest.approx(cost.prefill_ms([700, 300], CHAIN))
    row = s.as_dict()
    parts = ("weights_ms", "kv_ms", "compute_ms", "communication_ms", "draft_ms", "overhead_ms")
    assert sum(row[k] for k in parts) == pytest.approx(row["total_ms"])


def test_draft_steps_cost_the_draft_model_and_its_vocab_gemm() -> None:
    cost = _cost()
    assert cost.draft.lm_mem > 0.2 * (cost.draft.dense_mem + cost.draft.lm_mem)  # the vocab GEMM matters
    wide = SpecConfig("EAGLE3", num_steps=8, topk=8, num_draft_tokens=64)
    assert cost.spec_breakdown(8, 8000, wide, 40).draft_ms > cost.spec_breakdown(8, 8000, CHAIN, 20).draft_ms
    with pytest.raises(ConfigError, match="draft model"):
        _cost(draft=None).spec_decode_ms(1, 10, CHAIN, 2)


def test_cpu_overhead_hides_under_overlap_and_adds_without_it() -> None:
    eff = dataclasses.replace(EFF, cpu_overhead_ms=2.0)
    cost = _cost(eff=eff)
    gpu = cost.target.total(1, 1, 100, 1)
    assert cost.decode_ms(1, 100) == pytest.approx(max(gpu, 2.0))  # overlap scheduler
    v1 = cost.spec_breakdown(1, 100, CHAIN, 2)
    assert v1.overhead_ms == pytest.approx(3 * 2.0)  # spec v1: three phases, no overlap
    v2 = cost.spec_breakdown(1, 100, dataclasses.replace(CHAIN, spec_v2=True), 2)
    assert v2.overhead_ms == pytest.approx(0.0)  # spec v2 hides it under the GPU


def test_cuda_graph_limit_adds_eager_launch_cost() -> None:
    graphed, eager = _cost(graph_bs=160), _cost(graph_bs=4)
    assert eager.decode_ms(8, 800) - graphed.decode_ms(8, 800) == pytest.approx(LLAMA8.num_hidden_layers * 0.030)
    assert eager.decode_ms(4, 400) == graphed.decode_ms(4, 400)


def test_flags_reach_the_cost_model() -> None:
    base = ["--model-path", "m", "--sim-profile", "seed-pcie-8gpu"]
    default = parse_server_args(base, environ={})
    assert default.args["tp_size"] == 8  # the profile's deployment when --tp-size is absent
    tp4 = parse_server_args(base + ["--tp", "4"], environ={})
    profile = tp4.profile
    c8, c4 = profile.cost_for(default.args), profile.cost_for(tp4.args)
    assert c4.deployment.tp_size == 4 and c4.decode_ms(1, 1000) != c8.decode_ms(1, 1000)
    with pytest.raises(ConfigError, match="has 8"):
        parse_server_args(base + ["--tp-size", "16"], environ={})
    nograph = parse_server_args(base + ["--disable-cuda-graph"], environ={})
    assert profile.cost_for(nograph.args).decode_ms(1, 1000) > c8.decode_ms(1, 1000)
    spec = parse_server_args(
        base
        + [
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-num-steps",
            "2",
            "--speculative-eagle-topk",
            "4",
            "--speculative-num-draft-tokens",
            "16",
        ],
        environ={},
    )
    assert not profile.cost_for(spec.args).deployment.overlap_schedule  # spec v1 runs without overlap
    small = dict(default.args, mem_fraction_static=0.5)
    assert profile.kv_capacity_tokens(small) < profile.kv_capacity_tokens(default.args)


def test_physical_profiles_load_and_legacy_linear_profiles_still_work(tmp_path) -> None:
    for name in ("seed-pcie-8gpu", "h100-llama3-8b-eagle3"):
        profile = load_profile(name)
        assert profile.physics is not None and 1 <= len(profile.physics.fit_terms) <= 3
        assert profile.model["target"] and profile.model["draft"]
    legacy = tmp_path / "old.toml"
    legacy.write_text('[profile]\nname = "old"\n[cost]\nbase_ms = 10\nper_token_ms = 0.1\n')
    old = load_profile(legacy)
    assert old.physics is None and old.cost_for({"tp_size": 4}).decode_ms(1, 0) == pytest.approx(10.1)
    bad = tmp_path / "bad.toml"
    bad.write_text('[profile]\nname = "bad"\n')
    with pytest.raises(ConfigError, match="neither"):
        load_profile(bad)


def test_step_breakdown_through_the_face() -> None:
    from workbench.sim import StepBreakdown, step_breakdown

    spec = step_breakdown("seed-pcie-8gpu", "eagle3-topk4", batch=8, kv_tokens=8 * 1500)
    base = step_breakdown("seed-pcie-8gpu", "baseline", batch=8, kv_tokens=8 * 1500)
    assert isinstance(spec, StepBreakdown) and spec.kind == "spec" and base.kind == "decode"
    assert spec.communication_ms > base.communication_ms  # the verify's 16 tokens per request over PCIe
    prefill = step_breakdown("h100-llama3-8b-eagle3", "llama3-8b-baseline", batch=1, kv_tokens=0, prompt_tokens=[640])
    assert prefill.kind == "prefill" and prefill.communication_ms == 0.0


def test_moe_tokens_cost_beyond_the_touched_experts() -> None:
    """``moe_token_us`` charges each token of an MoE layer on top of the touched experts' reads, divided by TP:
    a verify's extra tokens still cost once every expert is touched (docs/SIMULATOR.md, the MoE profile)."""
    plain = _cost(QWEN_MOE, tp=2, draft=None)
    per_token = _cost(QWEN_MOE, tp=2, draft=None, eff=dataclasses.replace(EFF, moe_token_us=0.192))
    assert per_token.target.touched(256) == pytest.approx(128, abs=0.01)  # every expert touched
    extra = {
        c: c.target.groups(1024, 64, 0, 64)["experts"][0] - c.target.groups(256, 64, 0, 64)["experts"][0]
        for c in (plain, per_token)
    }
    assert extra[plain] == pytest.approx(0.0, abs=1e-5)  # bytes alone: more tokens are (almost) free
    assert extra[per_token] - extra[plain] == pytest.approx(
        768 * 48 * 0.192 / 2 / 1e3, rel=1e-9
    )  # 768 tokens, 48 layers, TP 2
    dense = _cost(eff=dataclasses.replace(EFF, moe_token_us=0.192))
    assert dense.target.total(64, 64, 0, 64) == _cost().target.total(64, 64, 0, 64)  # a dense model is unaffected


def test_moe_token_cost_is_the_h200_expert_table() -> None:
    """The shipped 0.192 µs per token is the least-squares slope of the H200 expert-group timings (Qwen3-30B-A3B's
    experts alone, 8 layers timed, uniform routing; its rows at contexts 0 and 2,048) over 1-1,024 tokens, beside
    2.9 µs per touched expert."""
    import numpy as np
    import pandas as pd

    table = pd.read_csv("data/calibration/h200-2026-12-01/qwen3-30b-a3b.csv")
    rows = table[(table["group"] == "experts") & (table["tokens"] <= 1024) & table["context"].isin([0, 2048])]
    per_layer = rows["median_ms"].to_numpy(float) / rows["layers_timed"].to_numpy(float) * 1e3  # µs
    design = np.c_[np.ones(len(rows)), rows["touched_experts"].to_numpy(float), rows["tokens"].to_numpy(float)]
    (floor, per_expert, per_token), *_ = np.linalg.lstsq(design, per_layer, rcond=None)
    assert per_token == pytest.approx(0.192, abs=0.002)
    assert per_expert == pytest.approx(2.91, abs=0.02) and floor == pytest.approx(57, abs=1.0)
    fit = design @ np.array([floor, per_expert, per_token])
    assert np.max(np.abs(fit / per_layer - 1)[rows["tokens"].to_numpy() >= 4]) < 0.05
    assert load_profile("h100x2-qwen3-30b-a3b-eagle3").physics.efficiency.moe_token_us == 0.192


def test_draft_step_host_time_charges_each_draft_forward_after_the_first() -> None:
    """``cpu_per_draft_step_ms`` adds host time per draft step beyond the first (SGLang v0.4.4 plans FlashInfer's
    decode attention once per step on the host): exposed under spec v1, hidden under the GPU with spec v2."""
    host = _cost(eff=dataclasses.replace(EFF, cpu_per_draft_step_ms=0.25))
    tree = SpecConfig("EAGLE3", num_steps=8, topk=8, num_draft_tokens=64)
    for spec, steps in ((CHAIN, 2), (tree, 7)):
        assert host.spec_decode_ms(4, 4000, spec, 8) - _cost().spec_decode_ms(4, 4000, spec, 8) == pytest.approx(
            0.25 * steps, rel=1e-9
        )
        assert host.spec_gpu_ms(4, 4000, spec, 8) == _cost().spec_gpu_ms(4, 4000, spec, 8)  # host time, not GPU
    v2 = SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4, spec_v2=True)
    assert host.spec_decode_ms(4, 4000, v2, 8) == _cost().spec_decode_ms(4, 4000, v2, 8)  # overlapped: 0.5 ms < GPU
    assert host.decode_ms(4, 4000) == _cost().decode_ms(4, 4000)
    with pytest.raises(ValueError, match="cpu_per_draft_step_ms must be >= 0"):
        dataclasses.replace(EFF, cpu_per_draft_step_ms=-1.0)


def test_verify_mask_cost_scales_with_context_times_draft_tokens() -> None:
    """``verify_mask_ns`` charges the verify's custom mask, ``seq_lens_sum x num_draft_tokens + num_draft_tokens^2 x
    batch`` elements (SGLang v0.4.4 ``build_tree_kernel``), as GPU time."""
    masked = _cost(eff=dataclasses.replace(EFF, verify_mask_ns=2.0))
    tree = SpecConfig("EAGLE3", num_steps=8, topk=8, num_draft_tokens=64)
    for spec in (CHAIN, tree):
        n = spec.num_draft_tokens
        extra = masked.spec_gpu_ms(2, 3000, spec, 4)[0] - _cost().spec_gpu_ms(2, 3000, spec, 4)[0]
        assert extra == pytest.approx(2.0e-6 * (3000 * n + n * n * 2), rel=1e-9)


def test_expert_flops_efficiency_applies_to_the_experts_only() -> None:
    """``expert_flops_efficiency`` sets the grouped expert GEMMs' FLOP/s apart from the dense GEMMs' (None: the
    same ``flops_efficiency``); the H200 table's expert rows reach 198 TFLOP/s at 4,096 tokens."""
    import pandas as pd

    same = _cost(QWEN_MOE, draft=None)
    grouped = _cost(QWEN_MOE, draft=None, eff=dataclasses.replace(EFF, expert_flops_efficiency=0.2))
    a, b = same.target.groups(4096, 4096, 0, 1), grouped.target.groups(4096, 4096, 0, 1)
    assert b["experts"][1] == pytest.approx(a["experts"][1] * 0.6 / 0.2, rel=1e-9)
    assert b["dense"] == a["dense"] and b["lm_head"] == a["lm_head"]
    with pytest.raises(ValueError, match="expert_flops_efficiency must be in"):
        dataclasses.replace(EFF, expert_flops_efficiency=1.5)
    table = pd.read_csv("data/calibration/h200-2026-12-01/qwen3-30b-a3b.csv")
    row = table[(table["group"] == "experts") & (table["tokens"] == 4096) & (table["context"] == 0)].iloc[0]
    per_layer_s = row["median_ms"] / row["layers_timed"] / 1e3
    flops = 2 * 4096 * QWEN_MOE.num_experts_per_tok * 3 * QWEN_MOE.hidden_size * QWEN_MOE.moe_intermediate_size
    assert flops / per_layer_s / 1e12 == pytest.approx(198.3, abs=1.0)


def test_spec_v2_of_0_5_13_on_runs_the_draft_extend_over_the_whole_tree() -> None:
    """SGLang 0.5.13+ (eagle_worker_v2.py): num_steps - 1 draft forwards of batch x topk tokens, then the draft
    extend over batch x num_draft_tokens rows with a logit row each; profiles of earlier releases keep their step."""
    from workbench.sim import load_profile

    real = load_profile("h100-llama3-8b-sglang0517-triton")
    assert real.full_width_draft_extend and not load_profile("h100-llama3-8b-eagle3").full_width_draft_extend
    cost = real.cost_for({"tp_size": 1})
    spec = SpecConfig("EAGLE3", num_steps=3, topk=4, num_draft_tokens=16, spec_v2=True)
    batch, kv = 8, 8 * 300
    d = cost.draft
    assert d is not None
    expected = sum(d.total(batch * 4, batch, kv + step * batch * 4, batch * 4) for step in range(2))
    expected += d.total(batch * 16, batch, kv, batch * 16)
    assert cost.spec_breakdown(batch, kv, spec, 24).draft_ms == pytest.approx(expected)
    old = dataclasses.replace(real, sglang_version="0.5.12").cost_for({"tp_size": 1})
    assert old.spec_breakdown(batch, kv, spec, 24).draft_ms == pytest.approx(
        d.total(batch, batch, kv, batch)
        + sum(d.total(batch * 4, batch, kv + step * batch * 4, batch * 4) for step in (1, 2))
        + d.total(24, batch, kv, batch)
    )
