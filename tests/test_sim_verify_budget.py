"""Adaptive verification and the goodput controller at the step level (workbench/sim/_verify_budget.py)."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.sim import configuration, load_profile
from workbench.sim._spec import SpecConfig
from workbench.sim._verify_budget import POLICIES, policy_support, policy_table, step_policies, survival

PROFILE = "h100-llama3-8b-eagle3"


def test_survival_is_each_requests_chance_of_reaching_a_position() -> None:
    acc = load_profile(PROFILE).acceptance
    rows = survival(acc, 7, 16)
    assert len(rows) == 16 and all(len(r) == 7 for r in rows)
    assert all(r[i] >= r[i + 1] for r in rows for i in range(6))  # a prefix product never rises
    # over the batch, position j's mean survival is the published-style marginal P(accepted >= j)
    pmf = acc.accept_distribution(SpecConfig(algorithm="EAGLE3", num_steps=7, topk=1, num_draft_tokens=8))
    for j in range(7):
        assert sum(r[j] for r in rows) / 16 == pytest.approx(sum(pmf[j + 1 :]), abs=1e-9)
    with pytest.raises(ConfigError, match="at least one draft"):
        survival(acc, 0, 4)


def _choices(batch: int):
    prof = load_profile(PROFILE)
    cfg = configuration(prof, "llama3-8b-eagle3", topk=1, num_steps=7, num_draft_tokens=8, spec_v2=True)
    return step_policies(prof.cost_for(cfg.args), prof.acceptance, cfg.spec, batch, batch * 1024)


def test_each_policy_is_at_least_as_good_as_static_and_verifies_less_at_large_batches() -> None:
    small, large = _choices(2), _choices(128)
    for choices in (small, large):
        assert set(choices) == set(POLICIES)
        assert choices["goodput"].tok_s >= choices["static"].tok_s - 1e-9
        assert choices["adaptive_verification"].tok_s >= choices["static"].tok_s - 1e-9
    assert large["static"].verify_tokens == 128 * 8
    assert large["adaptive_verification"].verify_tokens < large["static"].verify_tokens  # a ragged verify
    assert large["goodput"].drafts < 7
    # a ragged verify: batch + the admitted slots; every request keeps its bonus token
    assert large["adaptive_verification"].tokens_per_step > 128


def test_the_ragged_verify_costs_between_a_decode_and_the_full_tree() -> None:
    prof = load_profile(PROFILE)
    cfg = configuration(prof, "llama3-8b-eagle3", topk=1, num_steps=7, num_draft_tokens=8, spec_v2=True)
    cost = prof.cost_for(cfg.args)
    full = cost.spec_decode_ms(64, 64 * 1024, cfg.spec, 200)
    ragged = cost.spec_decode_ms(64, 64 * 1024, cfg.spec, 200, verify_tokens=64 * 3)
    assert ragged < full
    assert cost.spec_decode_ms(64, 64 * 1024, cfg.spec, 200, verify_tokens=64 * 8) == pytest.approx(full)


def test_a_tree_is_refused_with_what_to_do() -> None:
    prof = load_profile(PROFILE)
    tree = SpecConfig(algorithm="EAGLE3", num_steps=2, topk=4, num_draft_tokens=16)
    with pytest.raises(ConfigError, match="topk 1"):
        step_policies(prof.cost_for({}), prof.acceptance, tree, 4, 4096)


def test_policy_table_names_gains_and_who_runs_each() -> None:
    rows = policy_table(PROFILE, "llama3-8b-eagle3", "llama3-8b-baseline", batches=[1, 64])
    assert {(r["batch"], r["policy"]) for r in rows} == {(b, p) for b in (1, 64) for p in POLICIES}
    for r in rows:
        assert r["gain"] == pytest.approx(r["tok_s"] / r["baseline_tok_s"] - 1)
    old, new = policy_support("0.5.9"), policy_support("0.5.16")
    assert "vLLM" in old["adaptive_verification"] and "not 0.5.9" in old["adaptive_verification"]
    assert "not 0.5.16" not in new["adaptive_verification"]
    assert "needs >= 0.5.11" in old["goodput"] and "runs here" in new["goodput"]
