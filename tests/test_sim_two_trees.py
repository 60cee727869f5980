"""A draft solved from a chain and two published trees, or the numbers that say why no draft of the model's kind can
(issue 31 item 5)."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._acceptance_solve import AcceptPoint

#: SpecForge #339 (Qwen3-30B-A3B, two H100s, MT-bench, greedy): one run's accept lengths at batch 1.
SPECFORGE = {
    "chain": {"num_steps": 3, "accept_length": 1.86},
    "tree": [
        {"num_steps": 7, "topk": 4, "num_draft_tokens": 16, "accept_length": 2.52},
        {"num_steps": 3, "topk": 3, "num_draft_tokens": 8, "accept_length": 2.20},
    ],
}


def test_a_chain_and_two_trees_of_one_run_solve_the_draft_and_predict_the_trees_it_never_saw() -> None:
    model = AcceptanceModel.from_table({"depth_decay": 1.0, "concentration": 50.0, **SPECFORGE})
    assert model.sibling == pytest.approx(0.246, abs=0.01)
    assert model.draft_calibration == pytest.approx(0.541, abs=0.02)
    for point in (
        AcceptPoint(3, 1.86),
        AcceptPoint(7, 2.52, topk=4, num_draft_tokens=16),
        AcceptPoint(3, 2.20, topk=3, num_draft_tokens=8),
    ):
        assert model.expected_accept_length(point.spec) == pytest.approx(point.accept_length, abs=0.03)
    # held out: the run's three other settings (published 1.99, 2.42, 3.2), never given to the solve
    for steps, topk, tokens, published in ((3, 3, 4, 1.99), (6, 4, 12, 2.42), (8, 8, 60, 3.2)):
        spec = AcceptPoint(steps, published, topk=topk, num_draft_tokens=tokens).spec
        assert abs(model.expected_accept_length(spec) / published - 1) < 0.07, (steps, topk, tokens)


def test_two_trees_from_different_runs_are_refused_with_the_numbers_that_rule_them_out() -> None:
    table = {
        "depth_decay": 1.0,
        "concentration": 50.0,
        "chain": {"num_steps": 7, "accept_length": 3.53},
        "tree": [
            {"num_steps": 8, "topk": 8, "num_draft_tokens": 64, "accept_length": 5.39},
            {"num_steps": 5, "topk": 8, "num_draft_tokens": 64, "accept_length": 4.68},
        ],
    }
    with pytest.raises(ConfigError) as err:
        AcceptanceModel.from_table(table)
    text = str(err.value)
    # the range the model can give the small tree while holding the large one, and by how far it misses
    assert "holding the 8/8/64 tree at 5.39" in text and "gives the 5/8/64 tree 4.83 to" in text
    assert "never 4.68: 0.15 below it" in text
    assert "the trees differ by 0.71 tokens; the model makes it at most 0.56" in text
    assert "acceptance rising with depth" in text and "Use two trees from one run, or keep one tree" in text
