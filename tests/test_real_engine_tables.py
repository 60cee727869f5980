"""The real-engine calibration tables (SGLang 0.5.17 on one H100, data/calibration/h100-sglang-0.5.17-2026-12-06-real)
and the simulator terms measured from them: the exposed host time and the extend attention per cached token.

The tables are GPU measurements kept in the repository; these tests check that their tidy form is what the raw
records say, that the terms read them as documented, and that the real-engine profiles keep the held-out accuracy
docs/SIMULATOR.md states (a regression guard: a change to the step model that moves it must update the docs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import shutil
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.sim import ExtendAttentionCosts, SpecConfig, load_profile
from workbench.sim._spec_kernels import SmallKernelCosts

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "data" / "calibration" / "h100-sglang-0.5.17-2026-12-06-real"
sys.path.insert(0, str(ROOT / "benchmarks"))
import real_engine_accuracy as acc  # noqa: E402


def test_the_stored_tables_are_what_one_command_writes_from_raw(tmp_path) -> None:
    """steps.csv, kernels.csv and accuracy.json regenerate, byte for byte, from raw/ alone by the README's command."""
    shutil.copytree(TABLE / "raw", tmp_path / "raw")
    with contextlib.redirect_stdout(io.StringIO()):
        assert acc.main(["--table", str(tmp_path), "--json", str(tmp_path / "accuracy.json")]) == 0
    for name in ("steps.csv", "kernels.csv", "accuracy.json"):
        assert (tmp_path / name).read_bytes() == (TABLE / name).read_bytes(), name


def test_every_point_the_issue_asks_for_is_measured() -> None:
    """14 servers (each model: plain decoding, chains of 3 at two accept lengths and of 7, trees of 16 at two accept
    lengths and of 8) at batch 1-64, and a trace summary at batch 1, 8 and 64 of each (the Llama chain of 3 at 2.0:
    batch 8 only)."""
    steps = pd.read_csv(TABLE / "steps.csv")
    assert steps.server.nunique() == 14 and len(steps) == 98
    assert (steps.groupby("server").batch.apply(sorted) == pd.Series([[1, 2, 4, 8, 16, 32, 64]] * 14).values).all()
    kernels = pd.read_csv(TABLE / "kernels.csv")
    assert len(kernels) == 13 * 3 + 1


def test_kernels_csv_reads_the_trace_summaries_as_the_kept_traces_say(tmp_path) -> None:
    """The extend attention and fused MoE read from the calib step's summaries equal those read from the kernels of
    the four traces kept in traces-batch8.tar."""
    with tarfile.open(TABLE / "traces-batch8.tar") as tar:
        tar.extractall(tmp_path, filter="data")
    traced = acc.kernel_table(tmp_path).set_index(["server", "batch"])
    stored = pd.read_csv(TABLE / "kernels.csv").set_index(["server", "batch"])
    assert len(traced) == 4
    for key, row in traced.iterrows():
        assert stored.loc[key, "extend_attention_ms"] == pytest.approx(row.extend_attention_ms, abs=0.001)
        assert stored.loc[key, "moe_ms"] == pytest.approx(row.moe_ms, abs=0.01)


def test_steps_csv_is_the_tidy_form_of_the_raw_records() -> None:
    stored = pd.read_csv(TABLE / "steps.csv")
    fresh = acc.tidy(TABLE)
    assert len(stored) == len(fresh) == 98
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
    assert host["llama31-8b"] == pytest.approx(0.478, abs=0.01)
    assert host["qwen3-30b-a3b"] == pytest.approx(0.828, abs=0.01)
    for name in acc.REAL_PROFILES.values():  # the profiles carry the measured medians, not fitted values
        model = next(m for m, n in acc.REAL_PROFILES.items() if n == name)
        assert load_profile(name).physics.efficiency.host_exposed_ms == pytest.approx(host[model], abs=0.001)


def test_extend_attention_is_affine_in_the_cache_per_request_and_linear_in_batch(tmp_path) -> None:
    table = tmp_path / "kernels.csv"
    table.write_text(
        "server,batch,extend_attention_ms,kv_per_request\n"
        "x-chain,1,1.0,500\nx-tree,1,1.4,700\nx-chain7,1,1.2,600\nx-chain,8,2.0,400\nx-chain,64,16.0,400\n"
        "x-baseline,8,0.0,400\ny-chain,8,99.0,1\n"
    )
    costs = ExtendAttentionCosts(table, servers="x-")
    # batch 1: three caches on one line, 0.002 ms per cached token per request above a fixed 0.0 ... 0.4 ms
    assert costs.line(1) == pytest.approx((0.0, 0.002))
    assert costs.iteration_ms(1, 250) == pytest.approx(0.5)
    # batch 8 and 64: one cache each, read through zero; the plain-decoding row (0 ms) is not read
    assert costs.iteration_ms(8, 8 * 400) == pytest.approx(2.0)
    # linear in the batch between 8 (0.005/token) and 64 (0.04/token): batch 36 is the midpoint
    assert costs.iteration_ms(36, 36 * 100) == pytest.approx(0.0225 * 100)
    assert costs.iteration_ms(120, 120 * 100) == pytest.approx((0.04 + 0.035) * 100)
    with pytest.raises(ConfigError, match="no speculative server named z-"):
        ExtendAttentionCosts(table, servers="z-")
    with pytest.raises(ConfigError, match="cannot read"):
        ExtendAttentionCosts(tmp_path / "missing.csv", servers="x-")


def test_a_fixed_part_of_the_extend_kernel_is_kept_where_the_caches_show_one(tmp_path) -> None:
    table = tmp_path / "kernels.csv"
    table.write_text("server,batch,extend_attention_ms,kv_per_request\nx-a,8,2.42,466\nx-b,8,3.02,636\n")
    fixed, slope = ExtendAttentionCosts(table, servers="x-").line(8)
    assert slope == pytest.approx(0.6 / 170) and fixed == pytest.approx(2.42 - 466 * 0.6 / 170)
    # the measured H100 table: at batch 8 the Llama verify keeps about 0.7 ms whatever its cache
    real = ExtendAttentionCosts(TABLE / "kernels.csv", servers="l8b-")
    assert 0.5 < real.line(8)[0] < 1.0


def test_the_profiles_carry_the_gemm_flop_efficiency_the_traces_measure() -> None:
    stated = json.loads((TABLE / "accuracy.json").read_text())["gemm_flops_efficiency"]
    fresh = acc.gemm_flops_efficiency(acc.tidy(TABLE), pd.read_csv(TABLE / "kernels.csv"))
    assert fresh == pytest.approx(stated, abs=1e-4) and 0.7 < fresh < 0.85
    for name in acc.REAL_PROFILES.values():
        assert load_profile(name).physics.efficiency.flops_efficiency == round(fresh, 2)


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
    assert cost.decode_ms(8, 8 * 256) - bare.decode_ms(8, 8 * 256) == pytest.approx(0.478, abs=1e-6)
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


SMALL_HEAD = "server,batch,num_steps,topk,num_draft_tokens,rest_ms,decode_attention_ms\n"
SMALL_SERVERS = ("x-plain", "x-c3", "x-c7", "x-t8", "x-t16")


def _small_table(tmp_path: Path, terms_by_batch: dict[int, tuple[float, float, float, float]]) -> Path:
    """A kernels.csv whose speculative rows are exactly fixed + per step x (steps - 1) + per row x ndt + per tree,
    above a plain server whose own small kernels are 0.4 ms (rest 0.7 less 0.3 of decode attention)."""
    lines = [SMALL_HEAD]
    for b, (fixed, step, row, tree) in terms_by_batch.items():
        lines.append(f"x-plain,{b},0,1,1,0.7,0.3\n")
        for name, (n, k, d) in {"x-c3": (3, 1, 4), "x-c7": (7, 1, 8), "x-t8": (3, 4, 8), "x-t16": (3, 4, 16)}.items():
            rest = 0.4 + fixed + step * (n - 1) + row * d + (tree if k > 1 else 0.0)
            lines.append(f"{name},{b},{n},{k},{d},{rest},\n")
        lines.append(f"y-c3,{b},3,1,4,99.0,\n")  # another model's server, not named
    path = tmp_path / "kernels.csv"
    path.write_text("".join(lines))
    return path


def test_small_kernels_solve_four_terms_per_batch_above_plain_decoding(tmp_path) -> None:
    table = _small_table(
        tmp_path, {1: (0.2, 0.05, 0.005, 0.3), 8: (0.2, 0.06, 0.02, 0.34), 64: (0.04, 0.07, 0.17, 1.6)}
    )
    costs = SmallKernelCosts(table, servers=SMALL_SERVERS)
    assert costs.terms(8) == pytest.approx(
        {"fixed": 0.2, "per_draft_step": 0.06, "per_verify_row": 0.02, "per_tree": 0.34}
    )
    # what plain decoding pays for its own small kernels (0.4 ms) is not charged again
    assert costs.step_ms(8, 3, 1, 4) == pytest.approx(0.2 + 0.12 + 0.08)
    # a shape never measured: a topk-8 tree of 64 tokens with 5 steps at batch 64
    assert costs.step_ms(64, 5, 8, 64) == pytest.approx(0.04 + 0.28 + 0.17 * 64 + 1.6)
    # linear in the batch: 36 is halfway between 8 and 64; flat below 1; along the last segment past 64
    assert costs.terms(36)["per_tree"] == pytest.approx(0.97)
    assert costs.terms(0.5) == costs.terms(1)
    assert costs.terms(120)["per_verify_row"] == pytest.approx(0.17 + 0.15 * 56 / 56)
    assert costs.step_ms(0, 3, 4, 16) == 0.0


def test_small_kernels_refuse_tables_that_cannot_give_the_four_terms(tmp_path) -> None:
    table = _small_table(tmp_path, {1: (0.2, 0.05, 0.005, 0.3)})
    with pytest.raises(ConfigError, match="no rows of x-nope"):
        SmallKernelCosts(table, servers=(*SMALL_SERVERS, "x-nope"))
    with pytest.raises(ConfigError, match="3 distinct speculative shapes at batch 1.*chains of two lengths"):
        SmallKernelCosts(table, servers=SMALL_SERVERS[:-1])
    with pytest.raises(ConfigError, match="no plain-decoding server among those named at batch 1"):
        SmallKernelCosts(table, servers=SMALL_SERVERS[1:])
    with pytest.raises(ConfigError, match="cannot read the small-kernel table"):
        SmallKernelCosts(tmp_path / "missing.csv", servers=SMALL_SERVERS)
    old = tmp_path / "old.csv"  # a kernels.csv written before the shape columns
    old.write_text("server,batch,rest_ms\nx-plain,1,0.7\n")
    with pytest.raises(ConfigError, match="rerun benchmarks/real_engine_accuracy.py"):
        SmallKernelCosts(old, servers=("x-plain",))


def test_the_servers_left_out_of_the_small_kernels_check_them() -> None:
    """The terms are solved from the four shapes at one accept length; the servers at a second accept length (same
    shapes, never read by the solve) are charged within 0.02 ms of their traces, but for one Qwen chain at batch 8
    whose trace holds a 2.3 ms copy its repeat does not (0.67 ms)."""
    check = acc.small_kernel_check(pd.read_csv(TABLE / "kernels.csv"))
    held = check[~check.solved_from]
    # l8b-chain3-acc2.0 at batch 8; l8b-tree16-acc2.5, q30b-tree16-acc2.5 and q30b-chain3-acc2.0 at 1, 8 and 64
    assert len(held) == 10
    outlier = (held.server == "q30b-chain3-acc2.0") & (held.batch == 8)
    assert held[~outlier].error_ms.abs().max() <= 0.02
    assert held[outlier].error_ms.iloc[0] < -1.5
    assert check[check.solved_from].error_ms.abs().max() < 1e-3


def test_a_tree_pays_its_own_kernels_over_its_chain_at_every_batch() -> None:
    """The dense 16-token tree's small kernels over the chain of 3 (same num_steps): 0.33 ms at batch 1, 0.59 at 8,
    3.68 at 64 in the traces; the real-engine profile charges them instead of the H200 stand-ins."""
    small = load_profile("h100-llama3-8b-sglang0517-triton").physics.spec_kernels
    assert isinstance(small, SmallKernelCosts)
    extra = {b: small.step_ms(b, 3, 4, 16) - small.step_ms(b, 3, 1, 4) for b in (1, 2, 4, 8, 16, 32, 64)}
    assert extra[1] == pytest.approx(0.327, abs=0.002) and extra[64] == pytest.approx(3.682, abs=0.002)
    assert all(extra[a] < extra[b] for a, b in zip(list(extra), list(extra)[1:]))


def test_a_profile_names_one_small_kernel_table(tmp_path) -> None:
    text = (ROOT / "data" / "profiles" / "h100-llama3-8b-sglang0517-triton.toml").read_text()
    both = tmp_path / "both.toml"
    both.write_text(
        text.replace(
            "small_kernels = ", 'table = "data/calibration/h200-2026-12-02-spec/spec_step.csv"\nsmall_kernels = '
        )
    )
    with pytest.raises(ConfigError, match="names both table"):
        load_profile(both)
    unnamed = tmp_path / "unnamed.toml"
    unnamed.write_text("\n".join(line for line in text.splitlines() if not line.startswith("small_kernels_servers")))
    with pytest.raises(ConfigError, match="small_kernels needs small_kernels_servers"):
        load_profile(unnamed)


def test_the_real_engine_terms_do_not_carry_to_the_published_flashinfer_table() -> None:
    """Out of the box (issue 31 item 4): the real-engine profile, with no fit, on the EAGLE-3 paper's Table 3 (SGLang
    v0.4.4, FlashInfer): batch 1 within 3% (with the GEMMs measured by rows the fit meets the tables' plain decoding
    within 0.8% at every batch, where it was 2.6% slow at batch 1, and the paper's plain batch 1 comes out 2.8%
    fast), every speedup at batch 2-56 short,
    because it charges the triton extend kernel the paper's runs did not pay; docs/SIMULATOR.md states the mean and
    worst."""
    from workbench.sim import _calibrate as cal

    shipped = load_profile("h100-llama3-8b-eagle3")
    real = load_profile("h100-llama3-8b-sglang0517-triton")
    points = cal.profile_points(shipped) + cal.profile_points(shipped, "validation")
    predicted = cal.Predictor(real).predict(points, real.physics.efficiency)
    errors = {pt.name: 100 * (value / pt.value - 1) for pt, value in zip(points, predicted)}
    assert abs(errors["baseline_bs1_tok_s"]) < 3.0 and abs(errors["eagle3_bs1_tok_s"]) < 1.0
    held = [
        abs(e) for name, e in errors.items() if name in {pt.name for pt in cal.profile_points(shipped, "validation")}
    ]
    assert all(errors[name] < -20 for name in errors if name.endswith("speedup"))
    doc = (ROOT / "docs" / "SIMULATOR.md").read_text()
    assert f"{sum(held) / len(held):.1f}% / {max(held):.1f}% (no fit)" in doc
