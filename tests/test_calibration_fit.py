"""workbench.calibration: the table reader, the fit, held-out errors, knees, the profile writer and the
what-if, on the H200 tables committed in data/calibration/h200-2026-12-01 (no GPU needed)."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from workbench.calibration import (
    cost_model,
    fit_table,
    load_table,
    load_tables,
    profile_text,
    step_points,
    whatif_crossovers,
    whatif_speedup,
)
from workbench.calibration._fit import least_squares, measured_knee
from workbench.errors import ConfigError
from workbench.paths import PACKAGE_ROOT
from workbench.sim import Efficiency, load_profile

TABLES = PACKAGE_ROOT / "data" / "calibration" / "h200-2026-12-01"


@pytest.fixture(scope="module")
def llama():
    return load_table(TABLES / "llama3-8b.json")


@pytest.fixture(scope="module")
def llama_fit(llama):
    return fit_table(llama, gpu="h200")


def test_step_points_scale_layers_and_add_the_lm_head_over_the_logit_rows() -> None:
    tables = load_tables(TABLES)
    assert set(tables) == {"llama3-8b", "qwen3-30b-a3b"}
    qwen = tables["qwen3-30b-a3b"]
    assert qwen.layers_scale == 6 and qwen.gpu_name == "NVIDIA H200" and qwen.date == "2026-12-01"
    pts = step_points(qwen).set_index("point")
    raw = qwen.rows.set_index(["point", "group"])["median_ms"]
    assert pts.loc["decode:T1:q1:C0", "layers_ms"] == pytest.approx(6 * raw["decode:T1:q1:C0", "layers"])
    assert pts.loc["decode:T64:q1:C0", "lm_head_ms"] == pytest.approx(raw["lm_head:T64:q1:C0", "lm_head"])
    assert pts.loc["prefill:T4096:q4096:C0", "logits"] == 1  # one logit row per sequence
    assert pts.loc["prefill:T4096:q4096:C0", "lm_head_ms"] == pytest.approx(raw["lm_head:T1:q1:C0", "lm_head"])
    row = pts.loc["verify:T64:q16:C2048"]
    assert (row["seqs"], row["q_len"], row["kv_tokens"]) == (4, 16, 4 * 2048)
    assert row["measured_ms"] == pytest.approx(row["layers_ms"] + row["lm_head_ms"])
    draft = step_points(tables["llama3-8b"]).set_index("point").loc["draft:T4:q4:C2048"]
    assert draft["measured_ms"] == draft["step_ms"] and draft["lm_head_ms"] > 0  # the draft is never scaled


def test_fit_uses_the_simulators_own_cost_model(llama, llama_fit) -> None:
    assert llama_fit.terms == ("hbm_efficiency", "flops_efficiency", "layer_fixed_us")
    v = llama_fit.values
    assert 0.6 < v["hbm_efficiency"] <= 1 and 0.3 < v["flops_efficiency"] <= 1 and 10 < v["layer_fixed_us"] < 200
    pts = llama_fit.points
    assert pts["fitted"].sum() == 25 and set(pts[pts["fitted"]]["context"]) == {0, 2048}
    # the model's time of a point is the roofline's forward, not a formula restated here
    cost = cost_model(llama, llama_fit.efficiency, gpu="h200")
    p = pts.set_index("point").loc["verify:T64:q16:C2048"]
    groups = cost.forward_groups(64, 4, 4 * 2048, 64)
    assert p["model_ms"] == pytest.approx(sum(groups.values()))
    assert p["model_fixed_ms"] == pytest.approx(32 * v["layer_fixed_us"] / 1e3)
    # the simulated engine's decode step is the same forward (no CPU hidden under it at batch 1 here)
    prof = load_profile("h200-llama3-8b")
    assert prof.physics.efficiency.layer_fixed_us == pytest.approx(v["layer_fixed_us"], rel=1e-4)
    assert prof.cost_for().decode_ms(1, 2048) == pytest.approx(
        pts.set_index("point").loc["decode:T1:q1:C2048", "model_ms"], rel=1e-4
    )


def test_fit_residuals_held_out_errors_and_knees(llama_fit) -> None:
    summary = llama_fit.residual_summary().set_index(["set", "family", "context"])
    assert summary.loc[("fitted", "decode", 0), "median_abs_error_pct"] < 10
    assert summary.loc[("fitted", "decode", 2048), "max_abs_error_pct"] < 10
    assert ("held out", "verify", 2048) in summary.index and ("held out", "prefill", 0) in summary.index
    # SDPA without split-KV at one sequence and 32k context: the model (roofline bandwidth) is far faster
    assert summary.loc[("held out", "decode", 32768), "mean_error_pct"] < -40
    k = llama_fit.knees().set_index("context")
    assert 16 <= k.loc[0, "measured_knee_tokens"] <= 32 and math.isnan(k.loc[32768, "measured_knee_tokens"])
    assert k.loc[0, "model_knee_tokens"] > k.loc[2048, "model_knee_tokens"]


def test_measured_knee_interpolates_and_least_squares_solves() -> None:
    assert measured_knee([1, 10, 20], [10.0, 10.5, 12.5]) == pytest.approx(12.5)
    assert math.isnan(measured_knee([1, 2], [1.0, 1.05]))
    x, _ = least_squares(lambda x: np.array([x[0] - 3.0, 2 * (x[1] + 1.0), x[0] + x[1] - 2.0]), np.zeros(2))
    assert x == pytest.approx([3.0, -1.0], abs=1e-6)


def test_fit_refuses_cpu_tables_and_too_many_terms(llama) -> None:
    with pytest.raises(ConfigError, match="CPU"):
        fit_table(dataclasses.replace(llama, calibration=False), gpu="h200")
    with pytest.raises(ConfigError, match="1 to 3"):
        fit_table(llama, gpu="h200", terms=("hbm_efficiency", "flops_efficiency", "layer_fixed_us", "cpu_overhead_ms"))
    with pytest.raises(ConfigError, match="fewer terms than points"):
        fit_table(llama, gpu="h200", fit_on=lambda p: p["point"] == "decode:T1:q1:C0")


def test_allreduce_rows_give_latency_and_bandwidth(llama) -> None:
    """A synthetic 2-GPU table: all-reduces made with known terms are fitted back."""
    cost = cost_model(dataclasses.replace(llama, plan=dict(llama.plan, tp=1)), Efficiency(), gpu="h200")
    assert cost.forward_groups(1, 1, 0, 1)["communication"] == 0
    link = 450e9 * 0.7 / 1e3  # bytes per ms at 70% of NVLink's one-way bandwidth
    rows = [
        dict(
            llama.rows.iloc[0].to_dict(),
            family="allreduce",
            group="allreduce",
            point=f"allreduce:T{t}",
            tokens=t,
            seqs=t,
            layers_timed=0,
            layers_model=0,
            gpus=2,
            message_bytes=t * 4096 * 2,
            median_ms=0.012 + (2 * 1 / 2) * t * 4096 * 2 / link,
        )
        for t in (1, 64, 512, 4096, 16384)
    ]
    table = dataclasses.replace(llama, rows=pd.concat([llama.rows, pd.DataFrame(rows)], ignore_index=True))
    fit = fit_table(table, gpu="h200")
    assert fit.allreduce["allreduce_latency_us"] == pytest.approx(12.0, rel=1e-3)
    assert fit.allreduce["interconnect_efficiency"] == pytest.approx(0.7, rel=1e-3)


def test_profile_text_round_trips_and_names_every_source(llama_fit, tmp_path) -> None:
    carry = PACKAGE_ROOT / "data" / "profiles" / "h100-llama3-8b-eagle3.toml"
    text = profile_text(llama_fit, name="x", description="test", carry=carry, table_path="t.json")
    path = tmp_path / "x.toml"
    path.write_text(text)
    prof = load_profile(path)
    assert prof.physics.fit_terms == llama_fit.terms and prof.physics.gpu.name == "h200"
    assert prof.acceptance == load_profile(carry).acceptance and prof.workload == load_profile(carry).workload
    assert prof.acceptance_table == load_profile(carry).acceptance_table  # regimes and prompt sets carried too


NUMBER = re.compile(r"^\s*(\w+)\s*=\s*[-+0-9.]")


@pytest.mark.parametrize("name", ["h200-llama3-8b", "h200-qwen3-30b-a3b"])
def test_written_profiles_name_the_source_of_every_unfitted_number(name: str) -> None:
    profile = load_profile(name)
    text = profile.path.read_text()
    for section in ("efficiency", "deployment"):
        body = text.split(f"[{section}]\n", 1)[1].split("\n[", 1)[0]
        for line in body.splitlines():
            m = NUMBER.match(line)
            if m and m.group(1) not in profile.physics.fit_terms:
                assert "#" in line, f"{name}: {line.strip()!r} names no source"
    assert "h200-2026-12-01" in profile.calibration["table"]


def test_whatif_speedup_and_crossover() -> None:
    s = whatif_speedup(
        "h200-llama3-8b",
        baseline="llama3-8b-baseline",
        spec_variants=["llama3-8b-eagle3", "llama3-8b-eagle3-bs1"],
        batches=(1, 8, 32, 128),
    )
    assert len(s) == 8 and (s["speedup"] > 0).all()
    c = whatif_crossovers(s).set_index("variant")
    assert c.loc["llama3-8b-eagle3-bs1", "speedup_at_1"] > c.loc["llama3-8b-eagle3", "speedup_at_1"] > 1
    assert 8 < c.loc["llama3-8b-eagle3-bs1", "crossover_batch"] < 32


def test_stored_table_is_the_program_format() -> None:
    doc = json.loads((TABLES / "llama3-8b.json").read_text())
    assert doc["format"] == "workbench-gpu-calibration/1" and doc["status"] == "complete"


def test_calibration_verdict_states_fit_errors_misses_knee_and_whatif(llama_fit) -> None:
    from workbench.studies import CalibrationStudy

    s = whatif_speedup(
        "h200-llama3-8b", baseline="llama3-8b-baseline", spec_variants=["llama3-8b-eagle3-bs1"], batches=(1, 8, 32, 128)
    )
    study = CalibrationStudy(llama_fit, "h200-llama3-8b", whatif=s)
    lines = study.verdict().splitlines()
    assert (
        lines[0].startswith("**Verdict** — MEASURED (NVIDIA H200, 2026-12-01")
        and "25 points fitted, 41 held out" in lines[0]
    )
    assert (
        lines[2]
        == "- **Fit**: median |error| 4.2% on the fitted points, 13% on the held-out points (the honest figure)."
    )
    assert lines[3] == (
        "- **Largest miss**: held-out decode at context 32768: median |error| 55% over 2 points, the model "
        "under-predicting."
    )
    assert (
        lines[4]
        == "- **Knee** (a decode step 10% slower than at one token) at context 0: measured near 25 tokens, the model 140."
    )
    assert lines[5].startswith(
        "- **What-if (SIMULATED, step level)**: llama3-8b-eagle3-bs1 2.50x plain decode at batch 1, "
        "stops paying between batch 8 and 32"
    )
    assert lines[-1].startswith("- **Caveats**: attention here is PyTorch SDPA")
