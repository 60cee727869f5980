"""The speculative step's small kernels, costed from the H200 table (workbench/sim/_spec_kernels.py),
and the whole-step comparison calibrated on decode only (workbench/calibration/_spec_step.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.sim import load_profile
from workbench.sim._spec import SpecConfig
from workbench.sim._spec_kernels import SpecKernelCosts

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "data/calibration/h200-2026-12-02-spec/spec_step.csv"


def _rows(part: str, **match) -> list[dict]:
    with TABLE.open(newline="") as fh:
        return [
            r
            for r in csv.DictReader(fh)
            if r["family"] == "kernels" and r["part"] == part and all(r[k] == str(v) for k, v in match.items())
        ]


def test_a_measured_size_costs_what_was_measured() -> None:
    k = SpecKernelCosts(TABLE)
    # shapes that verify the same rows (a chain of 3 at batch 16, a tree of 16 at batch 4) pool: their median
    same = sorted(float(r["median_ms"]) for r in _rows("verify_greedy", rows=64))
    assert k.curves["verify_greedy"](64) == pytest.approx(same[len(same) // 2])
    # one draft top-k over 16 rows for the chain's extend, two more for its draft steps
    tops = sorted(float(r["median_ms"]) for r in _rows("draft_topk", rows=16))
    one = tops[len(tops) // 2]
    parts = k.parts(16, 3, 1, 4)
    assert parts["draft_topk"] == pytest.approx(3 * one)
    assert parts["tree_select"] == 0 and parts["tree_build"] == 0


def test_between_and_beyond_measured_sizes() -> None:
    k = SpecKernelCosts(TABLE)
    c = k.curves["verify_greedy"]
    lo, hi = c(64), c(128)
    assert min(lo, hi) <= c(96) <= max(lo, hi)
    assert c(1e9) == c.ms[-1] and c(0.5) == c.ms[0]
    # a tree of 32 tokens lies between the measured 16- and 64-token trees
    t16, t32, t64 = k._tree_build(8, 16), k._tree_build(8, 32), k._tree_build(8, 64)
    assert t16 < t32 < t64


def test_a_tree_pays_selection_and_building_a_chain_does_not() -> None:
    k = SpecKernelCosts(TABLE)
    tree, chain = k.parts(8, 2, 4, 16), k.parts(8, 3, 1, 4)
    assert tree["tree_select"] > 0 and tree["tree_build"] > 0
    assert chain["tree_select"] == 0 and chain["tree_build"] == 0
    assert k.step_ms(8, 2, 4, 16) > k.step_ms(8, 3, 1, 4) > 0
    assert k.step_ms(0, 2, 4, 16) == 0


def test_sampled_verification_costs_more_than_greedy_at_large_batches() -> None:
    g, s = SpecKernelCosts(TABLE), SpecKernelCosts(TABLE, verify="sampled")
    assert s.parts(256, 3, 1, 4)["verify"] > g.parts(256, 3, 1, 4)["verify"]


def test_bad_tables_are_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="gpu_spec_step.py"):
        SpecKernelCosts(tmp_path / "missing.csv")
    with pytest.raises(ConfigError, match="verify must be one of"):
        SpecKernelCosts(TABLE, verify="beam")
    cpu = tmp_path / "cpu.csv"
    text = TABLE.read_text().replace("cuda-events", "cpu-perf_counter (NOT a calibration)")
    cpu.write_text(text)
    with pytest.raises(ConfigError, match="never a calibration"):
        SpecKernelCosts(cpu)
    partial = tmp_path / "partial.csv"
    partial.write_text("\n".join(line for line in TABLE.read_text().splitlines() if ",tree_build," not in line))
    with pytest.raises(ConfigError, match="tree_build"):
        SpecKernelCosts(partial)


def test_the_h200_profile_charges_them_in_the_spec_step() -> None:
    prof = load_profile("h200-llama3-8b")
    cost = prof.cost_for({})
    spec = SpecConfig(algorithm="EAGLE3", num_steps=2, topk=4, num_draft_tokens=16)
    b = cost.spec_breakdown(8, 8 * 1024, spec, 24)
    assert b.kernels_ms == pytest.approx(prof.physics.spec_kernels.step_ms(8, 2, 4, 16))
    assert b.total_ms == pytest.approx(cost.spec_decode_ms(8, 8 * 1024, spec, 24))
    gpu, kernels = cost.spec_gpu_ms(8, 8 * 1024, spec, 24)
    assert kernels == pytest.approx(b.kernels_ms) and gpu < b.total_ms  # the CPU phases are not in the GPU time
    assert cost.decode_breakdown(8, 8 * 1024).kernels_ms == 0


def test_whole_step_comparison_fits_decode_only_and_holds_the_spec_steps_out() -> None:
    from workbench.calibration._spec_step import spec_step_accuracy

    terms, rows = spec_step_accuracy(TABLE)
    assert set(terms) == {"hbm_efficiency", "flops_efficiency", "layer_fixed_us"}
    assert 0.5 < terms["hbm_efficiency"] <= 1.0
    fitted, held = rows[rows["fitted"]], rows[~rows["fitted"]]
    assert set(fitted["shape"]) == {"decode"} and len(fitted) == 9
    assert set(held["shape"]) == {"chain3", "chain7", "tree-2x4-16"} and len(held) == 27
    assert (held["kernels_ms"] > 0).all()
    assert (held["model_ms"] > held["model_no_kernels_ms"]).all()


def test_whole_step_parts_are_compared_part_by_part() -> None:
    from workbench.calibration._spec_step import spec_step_accuracy, spec_step_breakdown

    terms, _ = spec_step_accuracy(TABLE)
    parts = spec_step_breakdown(TABLE, terms)
    assert len(parts) == 27 * 3 and set(parts["part"]) == {"draft", "verify", "tree_and_accept"}
    assert (parts["measured_ms"] > 0).all() and (parts["model_ms"] > 0).all()
    # the tree's construction is charged to trees only
    chain = parts[(parts["shape"] == "chain3") & (parts["part"] == "tree_and_accept")]
    tree = parts[(parts["shape"] == "tree-2x4-16") & (parts["part"] == "tree_and_accept")]
    assert (tree["model_ms"].to_numpy() > chain["model_ms"].to_numpy()).all()
