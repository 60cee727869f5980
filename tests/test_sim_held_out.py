"""How far a prediction is trusted: a profile's [[held_out]] entries and the line `sim predict` prints beside each
variant (issue 31 item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import ConfigError
from workbench.sim import SpecConfig, load_profile
from workbench.sim._held_out import parse_held_out, regime_of, trust

ROOT = Path(__file__).resolve().parents[1]
ENTRY = {
    "regime": "chain",
    "batch": [1, 64],
    "metric": "output tok/s",
    "mean_abs_pct": 4.2,
    "worst_abs_pct": 6.7,
    "n": 21,
    "source": "a table",
    "spec_v2": True,
}
CHAIN_V2 = SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4, spec_v2=True)
CHAIN_V1 = SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4, spec_v2=False)
TREE_V2 = SpecConfig("EAGLE3", num_steps=3, topk=4, num_draft_tokens=16, spec_v2=True)


def test_a_prediction_names_the_checks_of_its_own_regime_only() -> None:
    held = parse_held_out([ENTRY, {**ENTRY, "regime": "plain", "fitted": True, "mean_abs_pct": 2.4}], "p")
    assert [regime_of(s) for s in (SpecConfig(), CHAIN_V2, TREE_V2)] == ["plain", "chain", "tree"]
    line = trust(held, CHAIN_V2, [1, 8, 64])
    assert line.startswith("checked: chain spec v2, batch 1-64, output tok/s: 4.2% mean, 6.7% worst held-out error")
    assert "n=21; a table" in line and "plain" not in line
    assert "in-sample error (the points fitted)" in trust(held, SpecConfig(), [4])
    # another worker, another branching or batches outside the range: unchecked, and said so
    for spec, levels in ((CHAIN_V1, [1]), (TREE_V2, [1]), (CHAIN_V2, [128, 256])):
        assert "the prediction is unchecked there" in trust(held, spec, levels)


@pytest.mark.parametrize(
    "bad, says",
    [
        ({**ENTRY, "regime": "wide"}, "regime one of"),
        ({**ENTRY, "batch": [8, 2]}, "1 <= batch[0] <= batch[1]"),
        ({k: v for k, v in ENTRY.items() if k != "source"}, "needs regime, batch = [lo, hi]"),
    ],
)
def test_a_malformed_entry_is_refused_with_what_it_needs(bad: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("[", r"\[").replace("]", r"\]")):
        parse_held_out([bad], "Profile x.toml")


def test_the_real_engine_profile_carries_its_figures_and_sim_predict_prints_them(tmp_path) -> None:
    profile = load_profile("h100-llama3-8b-sglang0517-triton")
    assert {(h.regime, h.metric) for h in profile.held_out} >= {
        ("chain", "output tok/s"),
        ("tree", "spec/baseline ratio"),
    }
    shipped = (ROOT / "data" / "variants" / "llama3-8b-eagle3.toml").read_text()
    chain = tmp_path / "chain-v2.toml"  # the paper's chain of 3 on 0.5.17, whose EAGLE worker is spec v2
    chain.write_text(
        shipped.replace('name = "llama3-8b-eagle3"', 'name = "chain-v2"').replace(
            'sglang_version = "0.5.9"', 'sglang_version = "0.5.17"'
        )
    )
    result = CliRunner().invoke(
        app,
        [
            "sim",
            "predict",
            "llama3-8b-baseline",
            str(chain),
            "--sim-profile",
            "h100-llama3-8b-sglang0517-triton",
            "--levels",
            "1,2",
            "--requests",
            "4",
            "--max-new-tokens",
            "16",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    checked = json.loads(result.output)["held_out"]
    assert "in-sample error" in checked["llama3-8b-baseline"]
    table = ROOT / "data" / "calibration" / "h100-sglang-0.5.17-2026-12-06-real" / "accuracy.json"
    dense = json.loads(table.read_text())["real_engine_profiles"]["llama31-8b/chain"]
    line = (
        f"output tok/s: {dense['tok_s_mean_abs_pct']:g}% mean, {dense['tok_s_worst_abs_pct']:g}% worst held-out error"
    )
    assert f"chain spec v2, batch 1-64, {line}" in checked["chain-v2"]


def _profile_with(*entries: dict, name: str = "h100-qwen3-30b-a3b-sglang0517-triton"):
    """A shipped profile (its model, hardware and fit) whose held-out table is ``entries``."""
    import dataclasses

    return dataclasses.replace(load_profile(name), held_out=parse_held_out(list(entries), "test"))


def test_a_prediction_check_matches_each_batch_and_prefers_the_metric_asked_for() -> None:
    """Issue 31 item 6: each prediction carries its regime's held-out error (mean, worst, n, the table), matched
    batch by batch; a batch outside every entry, or a regime with none, says it was not checked."""
    from workbench.sim import check_prediction

    ratio = {**ENTRY, "metric": "spec/baseline ratio", "mean_abs_pct": 2.0, "worst_abs_pct": 5.0, "source": "ratios"}
    narrow = {**ENTRY, "batch": [1, 8], "mean_abs_pct": 9.0, "worst_abs_pct": 20.0, "source": "small batches"}
    profile = _profile_with(ENTRY, ratio, narrow)
    on_ratio = check_prediction(profile, CHAIN_V2, [1, 16], metric="spec/baseline ratio")
    assert on_ratio.regime == "MoE chain (spec v2)" and on_ratio.kind() == "held out"  # the model's kind said
    assert on_ratio.columns() == {
        "held_out_kind": "held out",
        "held_out_mean_pct": 2.0,
        "held_out_worst_pct": 5.0,
        "held_out_n": 21,
        "held_out_metric": "spec/baseline ratio",
        "held_out_source": "ratios",
    }
    # on throughput, two entries cover batch 4: the one with the larger worst error is carried
    assert check_prediction(profile, CHAIN_V2, [4]).entry.source == "small batches"
    assert check_prediction(profile, CHAIN_V2, [16]).entry.source == "a table"
    wide = check_prediction(profile, CHAIN_V2, [16, 128])
    assert wide.unchecked == (("MoE chain (spec v2)", 128),)
    assert wide.source() == "a table; batch 128 not checked against a real engine"
    assert wide.words().startswith("MoE chain (spec v2) at batch 16-128: 4.2% mean, 6.7% worst held-out error")
    for spec in (CHAIN_V1, TREE_V2):  # another worker, another branching: no entry of theirs
        none = check_prediction(profile, spec, [1, 16])
        assert not none.checked and none.columns()["held_out_source"] == "not checked against a real engine"
        assert none.words().endswith("at batch 1-16: not checked against a real engine")
    dense = _profile_with({**ENTRY, "regime": "plain", "fitted": True}, name="h100-llama3-8b-sglang0517-triton")
    plain = check_prediction(dense, SpecConfig(), [2])
    assert plain.regime == "dense plain decoding" and plain.kind() == "in-sample"
    assert "in-sample error on output tok/s (n=21)" in plain.figures()
    with pytest.raises(ConfigError, match="metric must be one of"):
        check_prediction(profile, CHAIN_V2, [1], metric="tok/s")
    with pytest.raises(ConfigError, match="at least one batch"):
        check_prediction(profile, CHAIN_V2, [])


def test_a_recommendation_is_trusted_as_far_as_its_least_trusted_part() -> None:
    from workbench.sim import check_prediction, combine_checks

    tree = {**ENTRY, "regime": "tree", "metric": "spec/baseline ratio", "worst_abs_pct": 12.0, "source": "trees"}
    chain = {**ENTRY, "metric": "spec/baseline ratio", "worst_abs_pct": 4.0, "source": "chains"}
    profile = _profile_with(tree, chain)
    parts = [
        check_prediction(profile, CHAIN_V2, [1, 4], metric="spec/baseline ratio"),
        check_prediction(profile, TREE_V2, [8, 16], metric="spec/baseline ratio"),
        check_prediction(profile, CHAIN_V1, [32], metric="spec/baseline ratio"),
    ]
    both = combine_checks(parts, metric="spec/baseline ratio")
    assert both.entry.source == "trees" and both.batches == (1, 4, 8, 16, 32)
    assert both.regime == "MoE chain (spec v2) + MoE tree (spec v2) + MoE chain (spec v1)"
    assert both.source() == "trees; MoE chain (spec v1) at batch 32 not checked against a real engine"
    assert not combine_checks(parts[2:]).checked
    with pytest.raises(ConfigError, match="at least one check"):
        combine_checks([])
