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
    line = f"output tok/s: {dense['tok_s_mean_abs_pct']}% mean, {dense['tok_s_worst_abs_pct']}% worst held-out error"
    assert f"chain spec v2, batch 1-64, {line}" in checked["chain-v2"]
