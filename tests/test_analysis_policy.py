"""The policy analysis (workbench/analysis/_policy.py): exact values on small hand-made tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench.analysis import (
    envelope,
    find_threshold,
    best_threshold,
    goodput_levels,
    pareto_points,
    policy_gains,
    policy_rows,
    predicted_vs_measured,
    sglang_policy,
    spec_ratio_table,
    step_tiers,
    t_quantile,
    vllm_schedule,
)
from workbench.errors import ConfigError

M = "output_throughput_tok_s"


def levels(table: dict[str, dict[int, list[float]]], metric: str = M) -> pd.DataFrame:
    """{variant: {concurrency: [value of repeat 0, repeat 1, ...]}} -> level rows."""
    return pd.DataFrame(
        [
            {"variant": v, "concurrency": c, "repeat": r, metric: x}
            for v, by_c in table.items()
            for c, xs in by_c.items()
            for r, x in enumerate(xs)
        ]
    )


SWEEP = levels(
    {
        "baseline": {1: [100, 100], 4: [300, 310], 16: [600, 620]},
        "s1": {1: [120, 118], 4: [330, 335], 16: [560, 570]},  # topk 1, num_steps 1
        "s3": {1: [150, 148], 4: [320, 330], 16: [500, 505]},  # topk 1, num_steps 3
    }
)


def test_goodput_counts_requests_meeting_both_targets_per_second() -> None:
    req = pd.DataFrame(
        {
            "variant": ["a"] * 4,
            "concurrency": [2] * 4,
            "repeat": [0] * 4,
            "error": [None, None, None, "boom"],
            "tpot_ms": [10.0, 25.0, np.nan, 5.0],
            "e2e_ms": [900.0, 800.0, 2500.0, 100.0],
            "start_s": [0.0, 0.0, 1.0, 1.0],
            "end_s": [1.0, 1.0, 4.0, 1.1],
        }
    )
    out = goodput_levels(req, tpot_ms=20.0, e2e_ms=2000.0)
    row = out.iloc[0]
    # only the first request meets both (the second's TPOT 25 > 20, the third's E2E, the fourth failed)
    assert row["goodput_req_s"] == pytest.approx(1 / 4.0)
    assert row["goodput_fraction"] == pytest.approx(0.25) and row["goodput_requests"] == 4
    # a one-token request (no TPOT) passes the TPOT target
    assert goodput_levels(req, tpot_ms=20.0).iloc[0]["goodput_req_s"] == pytest.approx(2 / 4.0)
    with pytest.raises(ConfigError, match="needs a target"):
        goodput_levels(req)
    with pytest.raises(ConfigError, match="> 0"):
        goodput_levels(req, tpot_ms=-1)


def test_latency_ratio_is_baseline_over_spec() -> None:
    lv = levels({"baseline": {1: [100.0, 120.0, 110.0]}, "s": {1: [50.0, 60.0, 55.0]}}, metric="mean_ttft_ms")
    t = spec_ratio_table(lv, baseline="baseline", metric="mean_ttft_ms")
    row = t.iloc[0]
    assert row["ratio"] == pytest.approx(2.0) and row["orientation"] == "baseline/spec"
    assert row["ratio_lo"] == pytest.approx(2.0) and row["verdict"] == "spec ahead"  # identical paired ratios
    # two repeats: an interval, but below the significance rule's 3 paired repeats no verdict
    two = spec_ratio_table(lv[lv["repeat"] < 2], baseline="baseline", metric="mean_ttft_ms").iloc[0]
    assert two["ratio_lo"] == pytest.approx(2.0) and two["verdict"] == "not tested: 2 repeats"
    up = spec_ratio_table(SWEEP, baseline="baseline", metric=M, specs=["s1"])
    assert up.iloc[0]["ratio"] == pytest.approx(math.sqrt(1.2 * 1.18)) and up.iloc[0]["orientation"] == "spec/baseline"


def test_envelope_picks_the_best_mean_with_its_interval() -> None:
    env = envelope(SWEEP, metric=M).set_index("concurrency")
    assert list(env["best_variant"]) == ["s3", "s1", "baseline"]
    half = t_quantile(0.975, 1) * np.std([150, 148], ddof=1) / math.sqrt(2)
    assert env.loc[1, M] == pytest.approx(149.0)
    assert env.loc[1, f"{M}_lo"] == pytest.approx(149.0 - half) and env.loc[1, "n"] == 2
    assert env.loc[1, "runner_up"] == "s1" and env.loc[1, "margin"] == pytest.approx(149.0 / 119.0 - 1)


def test_threshold_is_the_last_level_of_the_leading_run_ahead() -> None:
    t = find_threshold(SWEEP, baseline="baseline", spec="s1", metric=M)
    assert (t.kind, t.no_draft_above) == ("threshold", 4)
    assert t.choice() == {1: "s1", 4: "s1", 16: "baseline"}
    assert "No drafting above 4" in t.description and "n=2" in t.description
    ahead = levels({"baseline": {1: [1, 1], 2: [1, 1]}, "s": {1: [2, 2], 2: [2, 2]}})
    assert find_threshold(ahead, baseline="baseline", spec="s", metric=M).kind == "always"
    behind = levels({"baseline": {1: [2, 2], 2: [2, 2]}, "s": {1: [1, 1], 2: [3, 3]}})
    never = find_threshold(behind, baseline="baseline", spec="s", metric=M)
    assert (never.kind, never.no_draft_above) == ("never", 0)
    # both stop drafting above 4; against the envelope (149, 332.5, 610) s3's policy loses only 2.3% at 4
    # (325 / 332.5), s1's 20% at 1 (119 / 149)
    assert best_threshold(SWEEP, baseline="baseline", specs=["s1", "s3"], metric=M).spec == "s3"


def test_threshold_of_point_predictions_n1() -> None:
    # what_if's input: one prediction per level and no repeat column; the point values decide alone
    points = SWEEP[SWEEP["repeat"] == 0].drop(columns="repeat")
    t = find_threshold(points, baseline="baseline", spec="s1", metric=M)
    assert (t.kind, t.no_draft_above) == ("threshold", 4) and "n=1" in t.description
    assert (t.crossover.kind, t.crossover.n) == ("not_tested", 1)  # no interval, so no crossover claimed
    # envelope (150, 330, 600): s3's policy gives up 320/330 at 4, s1's 120/150 at 1
    assert best_threshold(points, baseline="baseline", specs=["s1", "s3"], metric=M).spec == "s3"
    worse = points.assign(**{M: points[M].where(points["variant"] == "baseline", 1.0)})
    assert best_threshold(worse, baseline="baseline", specs=["s1", "s3"], metric=M).kind == "never"


def test_predicted_policy_gain_and_a_measurement_that_agrees() -> None:
    choice = {1: "s3", 4: "s1", 16: "baseline"}
    pred = policy_rows(SWEEP, choice, name="p (predicted)")
    assert list(pred["chosen_variant"]) == ["s3", "s3", "s1", "s1", "baseline", "baseline"]
    measured = pred.assign(variant="p (measured)", **{M: pred[M] * 0.98})
    rows = pd.concat([SWEEP, pred, measured], ignore_index=True)
    gains = policy_gains(rows, policy="p (predicted)", against=["baseline"], metric=M).set_index("concurrency")
    assert gains.loc[1, "gain"] == pytest.approx(math.sqrt(1.5 * 1.48))
    assert gains.loc[16, "gain"] == pytest.approx(1.0)
    pvm = predicted_vs_measured(
        rows, predicted="p (predicted)", measured="p (measured)", against=["baseline"], metric=M
    ).set_index("concurrency")
    assert pvm.loc[4, "measured_over_predicted"] == pytest.approx(0.98)
    # two repeats: below the significance rule, so no agreement is claimed either way
    assert set(pvm["agreement"]) == {"not tested: 2 repeats"}
    # a third repeat, every one 2% lower: the paired interval is exactly 0.98, which excludes 1
    third = rows[rows["repeat"] == 1].assign(repeat=2)
    pvm3 = predicted_vs_measured(
        pd.concat([rows, third], ignore_index=True),
        predicted="p (predicted)",
        measured="p (measured)",
        against=["baseline"],
        metric=M,
    )
    assert set(pvm3["agreement"]) == {"measured gain below the prediction"}
    assert pvm3["measured_over_predicted_lo"].tolist() == pytest.approx([0.98] * 3)
    with pytest.raises(ConfigError, match="not measured"):
        policy_rows(SWEEP, {32: "s1"}, name="x")


def test_tiers_and_their_sglang_and_vllm_forms() -> None:
    tiers = step_tiers(SWEEP, baseline="baseline", steps={"s1": 1, "s3": 3}, metric=M)
    # each tier after the first starts just above the last level of the one before (levels 1, 4, 16, 32)
    assert [(t.start, t.candidate_steps) for t in tiers] == [(1, (3,)), (2, (1,)), (5, (0,))]
    wide = step_tiers(SWEEP, baseline="baseline", steps={"s1": 1, "s3": 3}, metric=M, tolerance=0.03)
    assert wide[1].candidate_steps == (1, 3)  # s3 at 4 (325) is 2.3% below s1 (332.5)
    p = sglang_policy(tiers, None, sglang_version="0.5.16")
    assert p.kind == "adaptive_tiers"
    assert p.config == {
        "1": {"candidate_steps": [3], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
        "2": {"candidate_steps": [1], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
        "5": {"candidate_steps": [0], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
    }
    assert "--speculative-adaptive-config" in p.flags and p.flags[-1] == "3"
    t = find_threshold(SWEEP, baseline="baseline", spec="s1", metric=M)
    old = sglang_policy(tiers, t, sglang_version="0.5.12")
    assert (old.kind, old.config, old.no_draft_above) == ("threshold", None, 4)
    assert sglang_policy(tiers, t, sglang_version="0.5.23.post1").kind == "adaptive_tiers"
    assert vllm_schedule(tiers, max_batch_size=64) == [[1, 1, 3], [2, 4, 1], [5, 64, 0]]
    assert old.no_draft_above == 4 == vllm_schedule(tiers, max_batch_size=64)[1][1]  # the threshold's N, both ways
    with pytest.raises(ConfigError, match="below the last tier"):
        vllm_schedule(tiers, max_batch_size=4)
    with pytest.raises(ConfigError, match="not an SGLang version"):
        sglang_policy(tiers, t, sglang_version="latest")


def test_pareto_front_per_gpu() -> None:
    means = pd.DataFrame(
        {
            "variant": ["a", "a", "b"],
            "concurrency": [1, 8, 1],
            "output_throughput_tok_s": [80.0, 400.0, 100.0],
            "mean_per_request_tok_s": [80.0, 50.0, 100.0],
        }
    )
    pts = pareto_points(means, gpus={"a": 8, "b": 8}).set_index(["variant", "concurrency"])
    assert pts.loc[("a", 8), "output_tok_s_per_gpu"] == pytest.approx(50.0)
    assert list(pts["pareto"]) == [False, True, True]  # (a, 1) is beaten by (b, 1) on both axes
    with pytest.raises(ConfigError, match="no GPU count"):
        pareto_points(means, gpus={"a": 8})


def test_tiers_do_not_turn_drafting_on_again_on_a_return_within_the_spread() -> None:
    # issue 24: tiers that turned drafting off at 16 and on again at 32 beside "no drafting above 4"
    noisy = levels(
        {
            "baseline": {1: [100, 101], 4: [300, 302], 16: [600, 640], 32: [700, 760]},
            "s1": {1: [120, 119], 4: [330, 331], 16: [590, 600], 32: [770, 720]},  # 32: 1.10x then 0.95x
        }
    )
    tiers = step_tiers(noisy, baseline="baseline", steps={"s1": 1}, metric=M)
    assert [(t.start, t.candidate_steps) for t in tiers] == [(1, (1,)), (5, (0,))]
    assert "s1 measured 1.02x the baseline at 32 (95% interval" in tiers[-1].note and "won at 16" in tiers[-1].note
    t = find_threshold(noisy, baseline="baseline", spec="s1", metric=M)
    assert t.no_draft_above == 4  # the tiers now say what the threshold says
    p = sglang_policy(tiers, None, sglang_version="0.5.16")
    assert list(p.config) == ["1", "5"] and "Left off: s1 measured 1.02x" in p.note
    # a return that the repeats separate from the baseline is kept
    real = levels(
        {
            "baseline": {1: [100, 101, 99], 16: [600, 610, 605], 32: [700, 702, 698]},
            "s1": {1: [120, 119, 121], 16: [590, 600, 595], 32: [800, 805, 798]},
        }
    )
    kept = step_tiers(real, baseline="baseline", steps={"s1": 1}, metric=M)
    assert [(t.start, t.candidate_steps) for t in kept] == [(1, (1,)), (2, (0,)), (17, (1,))] and not kept[-1].note


def test_an_untested_threshold_says_it_may_move_between_runs_with_its_ratios() -> None:
    once = levels({"baseline": {1: [100], 4: [300], 16: [600]}, "s1": {1: [120], 4: [330], 16: [560]}})
    said = find_threshold(once, baseline="baseline", spec="s1", metric=M).description
    assert (
        "Not stable across runs until tested: the ratio is 1.10x (n=1, no interval) at 4 and 0.93x (n=1, "
        "no interval) at 16, so another run of the same sweep may put N at another level"
    ) in said
