"""The real-engine calibration tables (SGLang 0.5.17 on one H100, data/calibration/h100-sglang-0.5.17-2026-12-06-real)
and the simulator terms measured from them: the exposed host time and the extend attention per cached token.

The tables are GPU measurements kept in the repository; these tests check that their tidy form is what the raw
records say, that the terms read them as documented, and that the real-engine profiles keep the held-out accuracy
docs/SIMULATOR.md states (a regression guard: a change to the step model that moves it must update the docs).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.sim import ExtendAttentionCosts, SpecConfig, load_profile

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "data" / "calibration" / "h100-sglang-0.5.17-2026-12-06-real"
sys.path.insert(0, str(ROOT / "benchmarks"))
import real_engine_accuracy as acc  # noqa: E402


def test_steps_csv_is_the_tidy_form_of_the_raw_records() -> None:
    stored = pd.read_csv(TABLE / "steps.csv")
    fresh = acc.tidy(TABLE)
    assert len(stored) == len(fresh) == 63
    pd.testing.assert_frame_equal(stored.reset_index(drop=True), fresh.reset_index(drop=True), check_dtype=False)
    # every point: SGLang's own step time between its quartiles, from at least six decode-log intervals
    assert ((fresh.step_ms_q1 <= fresh.step_ms) & (fresh.step_ms <= fresh.step_ms_q3)).all()
    assert fresh.decode_intervals.min() >= 6
    assert set(fresh.gpu) == {"NVIDIA H100 80GB HBM3"} and set(fresh.sglang) == {"0.5.17"}
    # the forced accept length is what the engine delivered (within 0.2 token) wherever it was forced
    spec = fresh.dropna(subset=["forced_accept_length"])
    assert (spec.accept_length - spec.forced_accept_length).abs().max() <= 0.3


def test_the_gpu_waits_on_the_host_a_few_percent_of_each_iteration() -> None:
    steps = pd.read_csv(TABLE / "steps.csv").dropna(subset=["gpu_busy_fraction"])
    assert len(steps) >= 20
    assert steps.gpu_busy_fraction.between(0.84, 0.99).all()
    host = steps.groupby("model").host_exposed_ms.median()
    assert host["llama31-8b"] == pytest.approx(0.466, abs=0.01)
    assert host["qwen3-30b-a3b"] == pytest.approx(0.925, abs=0.01)
    for name in acc.REAL_PROFILES.values():  # the profiles carry the measured medians, not fitted values
        model = next(m for m, n in acc.REAL_PROFILES.items() if n == name)
        assert load_profile(name).physics.efficiency.host_exposed_ms == pytest.approx(host[model], abs=0.001)


def test_extend_attention_is_read_per_cached_token_and_interpolated_linearly_in_batch(tmp_path) -> None:
    table = tmp_path / "kernels.csv"
    table.write_text(
        "server,batch,extend_attention_ms,kv_per_request\n"
        "x-chain,1,1.0,500\nx-tree,1,3.0,500\nx-chain7,1,2.0,500\nx-chain,8,2.0,400\nx-chain,64,16.0,400\n"
        "x-baseline,8,0.0,400\ny-chain,8,99.0,1\n"
    )
    costs = ExtendAttentionCosts(table, servers="x-")
    # batch 1: the median of the three servers (2.0 ms at 500 tokens) = 0.004 ms per cached token per request
    assert costs.iteration_ms(1, 250) == pytest.approx(0.004 * 250)
    assert costs.iteration_ms(8, 8 * 400) == pytest.approx(2.0)  # the plain-decoding row (0 ms) is not read
    # linear in the batch between 8 (0.005/token) and 64 (0.04/token): batch 36 is the midpoint
    assert costs.iteration_ms(36, 36 * 100) == pytest.approx(0.0225 * 100)
    assert costs.iteration_ms(120, 120 * 100) == pytest.approx((0.04 + 0.035 * 56 / 56) * 100)
    with pytest.raises(ConfigError, match="no speculative server named z-"):
        ExtendAttentionCosts(table, servers="z-")
    with pytest.raises(ConfigError, match="cannot read"):
        ExtendAttentionCosts(tmp_path / "missing.csv", servers="x-")


def test_the_measured_terms_change_only_profiles_that_name_them() -> None:
    shipped = load_profile("h100-llama3-8b-eagle3")
    assert shipped.physics.efficiency.host_exposed_ms == 0.0 and shipped.physics.extend_attention is None
    real = load_profile("h100-llama3-8b-sglang0517-triton")
    spec = SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4, spec_v2=True)
    cost = real.cost_for({"tp_size": 1})
    without = load_profile("h100-llama3-8b-sglang0517-triton")
    plain = dataclasses.replace(
        without.physics,
        extend_attention=None,
        efficiency=dataclasses.replace(without.physics.efficiency, host_exposed_ms=0.0),
    )
    bare = dataclasses.replace(without, physics=plain).cost_for({"tp_size": 1})
    # plain decoding pays the exposed host time only
    assert cost.decode_ms(8, 8 * 256) - bare.decode_ms(8, 8 * 256) == pytest.approx(0.466, abs=1e-6)
    # a speculative iteration at batch 64 pays the measured extend attention, far above the roofline's bytes
    assert cost.spec_decode_ms(64, 64 * 256, spec, 192) - bare.spec_decode_ms(64, 64 * 256, spec, 192) > 8.0


def test_the_real_engine_profiles_keep_the_held_out_accuracy_the_docs_state() -> None:
    stated = json.loads((TABLE / "accuracy.json").read_text())
    points = acc.tidy(TABLE)
    fresh = acc.summary(acc.errors(points, acc.predict(points, profiles=acc.REAL_PROFILES)), "real-engine profiles")
    for key, figures in stated["real_engine_profiles"].items():
        if key == "label":
            continue
        assert fresh[key] == figures, key
    dense = stated["real_engine_profiles"]["llama31-8b/chain"]
    assert dense["tok_s_mean_abs_pct"] < 5.0  # the held-out dense chains, within a point of the 4% target
    doc = (ROOT / "docs" / "SIMULATOR.md").read_text()
    assert f"{dense['tok_s_mean_abs_pct']}% / {dense['tok_s_worst_abs_pct']}%" in doc
