"""The real engine's weight GEMMs by rows (workbench/sim/_gemm_costs.py): the solve from kernels.csv, the curve
between and beyond the measured row counts, the refusals, and the H100 table's curve against its own traces."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.sim import SpecConfig, load_profile
from workbench.sim._gemm_costs import GemmCosts, sheet_bounds

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import real_engine_accuracy as acc  # noqa: E402

TABLE = ROOT / "data" / "calibration" / "h100-sglang-0.5.17-2026-12-06-real" / "kernels.csv"
TARGET, DRAFT = (4.0, 0.015), (0.25, 0.0008)  # (ms to read the weights, ms of FLOPs per row) at the data sheet
SERVERS = ("x-plain", "x-c3", "x-c7", "x-t8", "x-t16")
SHAPES = {"x-plain": (0, 1, 1), "x-c3": (3, 1, 4), "x-c7": (7, 1, 8), "x-t8": (3, 4, 8), "x-t16": (3, 4, 16)}


def _bound(bound: tuple[float, float], rows: int) -> float:
    return max(bound[0], bound[1] * rows)


def _table(tmp_path: Path, efficiency, *, shapes=SHAPES, batches=(1, 8, 64)) -> Path:
    """A kernels.csv whose gemm_ms is exactly the target's and draft's data-sheet roofline over ``efficiency(rows)``."""
    lines = ["server,batch,num_steps,topk,num_draft_tokens,gemm_ms\n"]
    for b in batches:
        for name, (steps, topk, n) in shapes.items():
            ms = _bound(TARGET, b * n) / efficiency(b * n)
            if steps:
                ms += (steps - 1) * _bound(DRAFT, b * topk) / efficiency(b * topk)
                ms += _bound(DRAFT, b * n) / efficiency(b * n)
            lines.append(f"{name},{b},{steps},{topk},{n},{ms}\n")
        lines.append(f"y-other,{b},3,1,4,99.0\n")  # another model's server, not named
    path = tmp_path / "kernels.csv"
    path.write_text("".join(lines))
    return path


def _dip(rows: int) -> float:
    """Efficiency falling from 0.85 at one row to 0.65 at 256 (the knee), then back to 0.8 at 1,024."""
    x = math.log2(rows)
    return 0.85 - 0.2 * x / 8 if x <= 8 else 0.65 + 0.15 * (x - 8) / 2


def test_the_solve_recovers_the_efficiency_at_every_row_count_a_target_runs(tmp_path) -> None:
    costs = GemmCosts(_table(tmp_path, _dip), servers=SERVERS, target_bound=TARGET, draft_bound=DRAFT)
    assert costs.rows == [1, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert costs.efficiency == pytest.approx([_dip(r) for r in costs.rows], abs=1e-9)
    # linear in log(rows) between measured row counts: 2 rows is halfway from 1 to 4
    assert costs(2) == pytest.approx((_dip(1) + _dip(4)) / 2)
    # flat outside: below one row, and above the widest verify (compute-bound at the efficiency measured there)
    assert costs(0) == costs(1) == pytest.approx(0.85)
    assert costs(4096) == pytest.approx(_dip(1024))
    # the target's time per forward at 128 rows against 32: the mid-size tiles the roofline alone does not see
    assert costs.target_ms(128, TARGET) - costs.target_ms(32, TARGET) == pytest.approx(
        TARGET[0] / _dip(128) - TARGET[0] / _dip(32)
    )


def test_a_target_time_that_falls_with_more_rows_is_pooled_so_the_curve_stays_monotone(tmp_path) -> None:
    def bump(rows: int) -> float:
        return 0.7 if rows == 32 else 0.8  # 32 rows slower than 64: noise, not physics

    costs = GemmCosts(_table(tmp_path, bump), servers=SERVERS, target_bound=TARGET, draft_bound=DRAFT)
    times = [costs.target_ms(r, TARGET) for r in costs.rows]
    assert times == sorted(times)
    at = dict(zip(costs.rows, times))
    # 32 rows pool with 64, 128 and 256 (below the knee all read the same weights at 0.8)
    assert at[32] == pytest.approx(at[256]) and at[32] == pytest.approx((4.0 / 0.7 + 3 * 4.0 / 0.8) / 4)
    assert at[16] == pytest.approx(4.0 / 0.8)


def test_tables_that_cannot_give_the_curve_are_refused_with_what_to_do(tmp_path) -> None:
    table = _table(tmp_path, _dip)
    kwargs = {"target_bound": TARGET, "draft_bound": DRAFT}
    with pytest.raises(ConfigError, match="no rows of x-nope"):
        GemmCosts(table, servers=(*SERVERS, "x-nope"), **kwargs)
    with pytest.raises(ConfigError, match="cannot read the GEMM table"):
        GemmCosts(tmp_path / "missing.csv", servers=SERVERS, **kwargs)
    # without the chain of 3 no target runs 4, 32 or 256 rows, which the trees' draft steps do
    with pytest.raises(ConfigError, match="draft runs 4, 32, 256 rows .* add a server"):
        GemmCosts(table, servers=("x-plain", "x-c7", "x-t8", "x-t16"), **kwargs)
    # shapes that disagree with the table: the GEMMs would beat the data sheet
    with pytest.raises(ConfigError, match=r"reach 1\.67 at 1 rows, .* of the data-sheet roofline: outside"):
        GemmCosts(table, servers=SERVERS, target_bound=(8.0, 0.03), draft_bound=DRAFT)
    old = tmp_path / "old.csv"
    old.write_text("server,batch,gemm_ms\nx-plain,1,5.0\n")
    with pytest.raises(ConfigError, match="rerun benchmarks/real_engine_accuracy.py"):
        GemmCosts(old, servers=("x-plain",), **kwargs)


def test_the_h100_curve_is_checked_on_the_servers_it_was_not_solved_from() -> None:
    """Solved from the accept-3.x servers (and the baseline); the chain of 3 at 2.0 and the 16-token tree at 2.5
    (same shapes, other servers) are the check: within the tables' own server-to-server spread (5%)."""
    profile = load_profile("h100-llama3-8b-sglang0517-triton")
    gemm = profile.physics.gemm
    assert gemm is not None and "l8b-tree16-acc2.5" not in gemm.servers
    check = acc.gemm_check(pd.read_csv(TABLE))
    solved, held = check[check.solved_from], check[~check.solved_from]
    assert len(solved) == 15 and len(held) == 4
    assert (solved.error_ms.abs() <= 0.11).all()
    assert (held.error_ms.abs() / held.measured_ms <= 0.05).all()
    # at batch 8 the 16-token tree's 128 verify rows cost the target 0.3-0.4 ms more than the chain's 32
    bound = sheet_bounds(
        profile.physics.gpu, profile.physics.interconnect, profile.physics.target, profile.physics.draft
    )
    extra = gemm.target_ms(128, bound["target"]) - gemm.target_ms(32, bound["target"])
    assert 0.3 < extra < 0.4


def test_only_profiles_that_name_a_gemm_table_charge_it() -> None:
    assert load_profile("h100-llama3-8b-eagle3").physics.gemm is None
    assert load_profile("h100-qwen3-30b-a3b-sglang0517-triton").physics.gemm is None
    real = load_profile("h100-llama3-8b-sglang0517-triton")
    cost = real.cost_for({"tp_size": 1})
    groups = cost.forward_groups(8, 8, 8 * 256, 8)
    bound = sheet_bounds(real.physics.gpu, real.physics.interconnect, real.physics.target, real.physics.draft)
    assert groups["dense"] + groups["lm_head"] == pytest.approx(real.physics.gemm.target_ms(8, bound["target"]))
    spec = SpecConfig("EAGLE3", num_steps=3, topk=4, num_draft_tokens=16, spec_v2=True)
    assert cost.spec_decode_ms(8, 8 * 256, spec, 24) > cost.decode_ms(8, 8 * 256)


def test_the_moe_table_disagrees_with_the_model_shapes_so_no_curve_is_built_from_it() -> None:
    """The Qwen3-30B-A3B servers' GEMMs at 1,024 rows would beat the data sheet for the GEMMs the model counts (the
    trace's gemm category does not hold them all): refused, and the MoE profile names no GEMM table."""
    profile = load_profile("h100-qwen3-30b-a3b-sglang0517-triton")
    phys = profile.physics
    bound = sheet_bounds(phys.gpu, phys.interconnect, phys.target, phys.draft)
    servers = tuple(
        s.replace("l8b-", "q30b-") for s in load_profile("h100-llama3-8b-sglang0517-triton").physics.gemm.servers
    )
    with pytest.raises(ConfigError, match=r"1\.09 at 1024 rows of the data-sheet roofline"):
        GemmCosts(TABLE, servers=servers, target_bound=bound["target"], draft_bound=bound["draft"])
