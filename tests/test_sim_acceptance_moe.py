"""The mixture-of-experts profile (SpecForge issue #339): published points only, acceptance from the published
accept lengths, sources on every unfitted number, and the crossover the model places."""

from __future__ import annotations

import re

import pytest

from workbench.sim import _calibrate as cal
from workbench.sim import _offline_figures as offline
from workbench.sim._profiles import load_profile

MOE = load_profile("h100x2-qwen3-30b-a3b-eagle3")
#: issue #339's accept lengths per (num_steps, topk, num_draft_tokens), batch size 1.
PUBLISHED = {(3, 1, 4): 1.86, (3, 3, 8): 2.20, (3, 3, 4): 1.99, (7, 4, 16): 2.52, (6, 4, 12): 2.42, (8, 8, 60): 3.2}


def test_acceptance_comes_from_the_published_accept_lengths() -> None:
    acc = MOE.acceptance
    assert [(p.num_steps, p.topk, p.accept_length) for p in acc.points] == [(3, 1, 1.86), (7, 4, 2.52)]
    for (steps, topk, n), published in PUBLISHED.items():
        spec = cal.variant_config(MOE, f"qwen3-30b-a3b-eagle3-{'chain3' if topk == 1 else f'{steps}x{topk}-{n}'}").spec
        assert (spec.num_steps, spec.topk, spec.num_draft_tokens) == (steps, topk, n)
        # the two solved points exactly; the four others are the tree model's predictions (within 6%)
        assert acc.expected_accept_length(spec) == pytest.approx(
            published, rel=1e-3 if (steps, topk) in {(3, 1), (7, 4)} else 0.06
        )


def test_points_are_published_and_validation_is_never_fitted() -> None:
    fitted = cal.profile_points(MOE)
    held = cal.profile_points(MOE, "validation")
    assert {p.value for p in fitted} == {222.47, 1012.96, 159.78, 191.90}
    assert len(held) == 10 and not {p.name for p in held} & {p.name for p in fitted}
    assert len(MOE.physics.fit_terms) < len(fitted)
    assert all("#339" in p.source for p in fitted)
    assert MOE.physics.target.is_moe and MOE.physics.draft.lm_head_vocab == 32000


def test_every_unfitted_number_names_its_source() -> None:
    text = MOE.path.read_text()
    number = re.compile(r"^\s*(\w+)\s*=\s*[-+0-9.]")
    for section in ("efficiency", "deployment"):
        body = text.split(f"[{section}]\n", 1)[1].split("\n[", 1)[0]
        for line in body.splitlines():
            m = number.match(line)
            if m and m.group(1) not in MOE.physics.fit_terms:
                assert "#" in line, f"{line.strip()!r} names no source"


def test_the_model_places_an_inverted_crossover_and_says_why() -> None:
    """EAGLE-3 loses at small batches (as issue #339 measured) and wins once a decode already touches most
    experts: a verify's extra tokens then cost little more weight reading."""
    predictor = cal.Predictor(MOE)
    eff = MOE.physics.efficiency
    base = {c: predictor.level("qwen3-30b-a3b-baseline", c, eff)[0] for c in (1, 4, 20)}
    chain = {c: predictor.level("qwen3-30b-a3b-eagle3-chain3", c, eff)[0] for c in (1, 4, 20)}
    assert chain[1] < base[1] and chain[4] < base[4]
    assert chain[20] > base[20]
    one = offline.step_breakdown(MOE, "qwen3-30b-a3b-eagle3-chain3", batch=1, kv_tokens=1200)
    decode = offline.step_breakdown(MOE, "qwen3-30b-a3b-baseline", batch=1, kv_tokens=1200)
    # one request's 4 verify tokens: the first routes like a decode token, the other three count 1 - overlap each
    overlap = MOE.physics.efficiency.routing_overlap
    assert one.touched_experts == pytest.approx(128 * (1 - (120 / 128) ** (1 + 3 * (1 - overlap))), rel=1e-9)
    assert decode.touched_experts == pytest.approx(8.0) and one.touched_experts >= decode.touched_experts
    # the fused-MoE floor (48 layers x 27.1 us) is in the overhead of every forward
    assert decode.overhead_ms >= 48 * MOE.physics.efficiency.moe_layer_floor_us / 1e3
    wide = offline.step_breakdown(MOE, "qwen3-30b-a3b-eagle3-chain3", batch=20, kv_tokens=20 * 1200)
    busy = offline.step_breakdown(MOE, "qwen3-30b-a3b-baseline", batch=20, kv_tokens=20 * 1200)
    assert wide.touched_experts < 1.5 * busy.touched_experts  # saturating: 128 vs ~92
