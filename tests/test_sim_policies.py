"""Speculation policies of the simulated engine: static, spec-off-above, SGLang's adaptive 0.5.12
(EMA) and 0.5.16+ (batch-size tiers), steps 0, the off-cost (workbench/sim/_policies.py)."""

from __future__ import annotations

import json
import random

import pytest

from workbench.errors import ConfigError
from workbench.sim import _calibrate as cal
from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._engine import EngineCore, SimRequest
from workbench.sim._policies import (
    DEFAULT_TIERS_0_5_16,
    AdaptiveEma,
    AdaptiveTiers,
    SpecOffAbove,
    SpecOffCost,
    spec_capture_batch_sizes,
)
from workbench.sim._profiles import load_profile
from workbench.sim._server_args import parse_server_args
from workbench.sim._spec import SpecConfig, resolve_spec
from workbench.variants import load_variant
from doubles.flat_cost import FlatCost

CHAIN3 = [
    "--model-path",
    "m",
    "--speculative-algorithm",
    "EAGLE3",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
]


# -- SGLang 0.5.12: one EMA -------------------------------------------------------------------------
def test_adaptive_0_5_12_ema_steps_up_after_warmup_and_interval() -> None:
    policy = AdaptiveEma(3)  # candidates [1, 3, 7], EMA starts at 3 - 1 = 2
    assert policy.candidate_steps == [1, 3, 7]
    for i in range(14):  # 10 warmup batches + 4: no decision yet
        policy.observe(4, 26)  # 6.5 accepted drafts per request
        assert policy.steps(4) == 3
    policy.observe(4, 26)  # batch 15: ema = 6.5 - 4.5 x 0.8^15 = 6.34 > 3 - 0.5: up to 7
    assert policy.steps(4) == 7 and policy.slot.ema == pytest.approx(6.5 - 4.5 * 0.8**15)


def test_adaptive_0_5_12_ema_steps_down_and_adds_initial_steps() -> None:
    policy = AdaptiveEma(3)
    for _ in range(15):
        policy.observe(8, 0)  # ema = 2 x 0.8^15 = 0.07 <= 1 - 0.5 - 0.25: down to 1
    assert policy.steps(8) == 1
    assert AdaptiveEma(2, {"candidate_steps": [1, 4]}).candidate_steps == [1, 2, 4]  # initial added
    with pytest.raises(ConfigError, match="at least 2"):
        AdaptiveEma(3, {"candidate_steps": [3]})


# -- SGLang 0.5.16+: batch-size tiers ---------------------------------------------------------------
def test_adaptive_tiers_route_padded_batch_sizes() -> None:
    policy = AdaptiveTiers(3, DEFAULT_TIERS_0_5_16, spec_capture_batch_sizes(160))
    # tier 1 [1,3,7] starts at 3; tier 8 [0,1,3] at 3; tier 32 [0,1] at its middle 1; tier 64 [0] at 0
    expected = {1: 3, 7: 3, 8: 3, 9: 3, 31: 1, 32: 1, 60: 1, 61: 0, 64: 0, 100: 0}
    assert {b: policy.steps(b) for b in expected} == expected  # 61 pads to the captured 64
    assert policy.tier(9) == 8 and policy.tier(61) == 64
    no_graphs = AdaptiveTiers(3, DEFAULT_TIERS_0_5_16, None)
    assert no_graphs.steps(61) == 1 and no_graphs.tier(61) == 32
    assert policy.candidate_steps == [0, 1, 3, 7]


def test_adaptive_tiers_step_to_zero_and_probe_back() -> None:
    policy = AdaptiveTiers(3, DEFAULT_TIERS_0_5_16, spec_capture_batch_sizes(160))
    for _ in range(15):
        policy.observe(8, 0)
    assert policy.steps(8) == 0  # ema 0.07 <= 0.5 (to 1) and <= 0.5 (to 0): drafting off
    assert policy.steps(1) == 3  # other tiers keep their own state
    for _ in range(5):
        policy.observe(8, 0)  # at 0 the EMA stands still; the next decision probes up
    assert policy.steps(8) == 1


def test_adaptive_config_json_and_resolution(tmp_path) -> None:
    cfg = tmp_path / "adaptive.json"
    cfg.write_text(json.dumps({"warmup_batches": 0, "1": {"candidate_steps": [2, 4]}, "16": {"candidate_steps": [0]}}))
    c = parse_server_args(
        [
            "--model-path",
            "m",
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-adaptive",
            "--speculative-adaptive-config",
            str(cfg),
            "--sim-sglang-version",
            "0.5.16",
        ]
    )
    assert (c.spec.num_steps, c.spec.topk, c.spec.num_draft_tokens) == (2, 1, 3)  # middle of [0, 2, 4]
    policy = c.make_policy()
    assert isinstance(policy, AdaptiveTiers) and policy.slots[1].warmup_batches == 0
    assert policy.steps(20) == 0 and c.memory.alloc_len == 5  # max candidate 4 + 1
    with pytest.raises(ConfigError, match="not in the adaptive config candidate_steps"):
        parse_server_args(
            CHAIN3
            + ["--speculative-adaptive", "--speculative-adaptive-config", str(cfg), "--sim-sglang-version", "0.5.16"]
        )
    cfg.write_text(json.dumps({"ema_alpha": 0.5}))
    with pytest.raises(ConfigError, match="at least one integer-string"):
        parse_server_args(
            CHAIN3
            + ["--speculative-adaptive", "--speculative-adaptive-config", str(cfg), "--sim-sglang-version", "0.5.16"]
        )


# -- version gate ---------------------------------------------------------------------------------
def test_adaptive_flags_need_an_emulated_version_that_has_them() -> None:
    with pytest.raises(ConfigError, match="not a flag of SGLang 0.5.9.*--sim-sglang-version 0.5.12"):
        parse_server_args(CHAIN3 + ["--speculative-adaptive"])
    c = parse_server_args(CHAIN3 + ["--speculative-adaptive", "--sim-sglang-version", "0.5.12"])
    assert isinstance(c.make_policy(), AdaptiveEma) and c.spec.spec_v2  # 0.5.12: spec v2 on by default
    # topk > 1: SGLang warns and runs static settings (and 0.5.12 falls back to spec v1)
    topk4 = parse_server_args(
        [
            "--model-path",
            "m",
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-num-steps",
            "2",
            "--speculative-eagle-topk",
            "4",
            "--speculative-num-draft-tokens",
            "16",
            "--speculative-adaptive",
            "--sim-sglang-version",
            "0.5.12",
        ]
    )
    assert topk4.make_policy() is None and not topk4.spec.spec_v2 and topk4.args["speculative_adaptive"] is False


def test_spec_rules_by_version() -> None:
    def resolve(version, v2=None, topk=1):
        return resolve_spec(
            algorithm="EAGLE3", num_steps=2, topk=topk, num_draft_tokens=None, enable_spec_v2=v2, sglang_version=version
        )

    assert not resolve("0.5.9").spec_v2 and resolve("0.5.9", True).spec_v2
    assert resolve("0.5.12").spec_v2 and not resolve("0.5.12", False).spec_v2
    assert not resolve("0.5.12", topk=4).spec_v2  # quietly v1
    assert resolve("0.5.16", False, topk=4).spec_v2  # always v2
    with pytest.raises(ConfigError, match="topk = 1"):
        resolve("0.5.9", True, topk=4)
    with pytest.raises(ConfigError, match="not emulated"):
        resolve("0.5.10")


# -- no drafting, and what it costs ---------------------------------------------------------------
def test_off_cost_points() -> None:
    cost = SpecOffCost()
    assert cost.overhead(1) == cost.overhead(2) == pytest.approx(0.0656)
    assert cost.overhead(189) == cost.overhead(500) == pytest.approx(0.2158)
    assert cost.overhead(95) == pytest.approx(0.0656 + (0.2158 - 0.0656) * 93 / 187)
    assert SpecOffCost.from_table({"spec_off_overhead": [[1, 0.1]]}).overhead(50) == 0.1
    with pytest.raises(ConfigError):
        SpecOffCost.from_table({"spec_off_overhead": [[1, -0.1]]})
    assert load_profile("seed-pcie-8gpu").policies["spec_off_overhead"] == [[2, 0.0656], [189, 0.2158]]


@pytest.mark.parametrize("policy", ["tiers", "off_above"])
def test_steps_zero_means_no_drafting_and_costs_the_off_overhead(policy: str) -> None:
    spec = SpecConfig("EAGLE3", 3, 1, 4, spec_v2=True)
    pol = (
        AdaptiveTiers(3, {"1": {"candidate_steps": [0, 3]}, "4": {"candidate_steps": [0]}}, None)
        if policy == "tiers"
        else SpecOffAbove(3, 3)
    )
    eng = EngineCore(
        cost=FlatCost(),
        acceptance=AcceptanceModel(),
        spec=spec,
        max_running_requests=8,
        rng=random.Random(0),
        spec_policy=pol,
    )
    for i in range(4):
        eng.submit(SimRequest(f"r{i}", prompt_tokens=20, max_new_tokens=6))
    eng.step()
    it = eng.step()  # 4 running: no drafting
    assert it.kind == "decode" and not it.speculative and all(e.new_tokens == 1 for e in it.emissions)
    assert it.duration_s == pytest.approx(0.010 * (1 + 0.0656 + (0.2158 - 0.0656) * 2 / 187))
    assert all(r.verify_ct == 0 for r in eng.running) and eng.current_steps == 0


def test_spec_off_above_stand_in_keeps_working() -> None:
    prof = load_profile("seed-pcie-8gpu")
    cfg = cal.variant_config(prof, "eagle3-topk4-off-above-8")
    policy = cfg.make_policy()
    assert isinstance(policy, SpecOffAbove) and policy.steps(8) == 2 and policy.steps(9) == 0
    eng = EngineCore.from_config(cfg, rng=random.Random(0))
    assert eng.spec_policy is not None and eng.memory.alloc_len == 16
    legacy = EngineCore(
        cost=FlatCost(),
        acceptance=AcceptanceModel(),
        spec=cfg.spec,
        max_running_requests=48,
        rng=random.Random(0),
        spec_policy=lambda b: b <= 8,
    )  # the older function interface
    assert legacy.spec_policy.steps(9) == 0 and legacy.spec_policy.steps(2) == 2


# -- the shipped adaptive variant on the simulator ------------------------------------------------
@pytest.mark.parametrize("version", ["0.5.12", "0.5.16"])
def test_shipped_adaptive_variant_runs_on_the_simulator(version: str) -> None:
    prof = load_profile("seed-pcie-8gpu")
    v = load_variant("adaptive")
    assert v.target_version == "0.5.12"
    argv = v.server_flags() + ["--sim-profile", str(prof.path), "--sim-sglang-version", version]
    cfg = parse_server_args(argv, environ={})
    assert cfg.adaptive_config is not None and cfg.spec.spec_v2
    rows = cal.offline_level(
        prof,
        cfg.spec,
        cost=prof.cost_for(cfg.args),
        concurrency=4,
        prompt_lengths=[500, 900, 1300],
        max_new_tokens=256,
        num_requests=8,
        config=cfg,
    )
    assert len(rows) == 8 and all(r["output_tokens"] == 256 for r in rows)
    eng = EngineCore.from_config(cfg, rng=random.Random(0))
    for i in range(4):
        eng.submit(SimRequest(f"r{i}", prompt_tokens=800, max_new_tokens=256))
    steps = set()
    while not eng.idle:
        eng.step()
        steps.add(eng.current_steps)
    # seed acceptance (~0.7 per depth) accepts 1-2.5 drafts of 3: the EMA keeps 3 steps (neither <= 0.25
    # to drop to 1 nor > 2.5 to rise to 7)
    slot = eng.spec_policy.slot if version == "0.5.12" else eng.spec_policy.slots[1]
    assert steps == {3} and 1.0 < slot.ema <= 2.5 and slot.batches > 15
    with pytest.raises(ConfigError, match="--sim-sglang-version"):
        parse_server_args(v.server_flags() + ["--sim-profile", str(prof.path)], environ={})
