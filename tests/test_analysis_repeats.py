"""Intervals over repeats: exact values against hand-computed examples and published t tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench.analysis import (
    crossover_interval,
    interval_text,
    mean_interval,
    ratio_intervals,
    readable_table,
    repeat_table,
    t_quantile,
)
from workbench.analysis._readable import readable_value
from workbench.analysis._repeats import NON_NEGATIVE, UNBOUNDED, metric_support
from workbench.errors import ConfigError


@pytest.mark.parametrize(
    "df, expected",
    [
        (1, 12.706205),
        (2, 4.302653),
        (3, 3.182446),
        (4, 2.776445),
        (9, 2.262157),
        (30, 2.042272),
    ],
)
def test_t_quantile_matches_the_published_table(df: int, expected: float) -> None:
    # 97.5% quantiles (two-sided 95%), e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)


def test_t_quantile_other_points() -> None:
    assert t_quantile(0.5, 5) == 0.0
    assert t_quantile(0.025, 2) == pytest.approx(-4.302653, abs=1e-6)  # symmetric
    assert t_quantile(0.95, 1) == pytest.approx(6.313752, abs=1e-6)
    assert t_quantile(0.975, 100_000) == pytest.approx(1.959988, abs=1e-5)  # towards the normal's 1.959964
    with pytest.raises(ConfigError):
        t_quantile(1.0, 3)
    with pytest.raises(ConfigError):
        t_quantile(0.9, 0)


def test_mean_interval_by_hand() -> None:
    # [10, 12, 14]: mean 12, s = 2, half width 4.302653 * 2 / sqrt(3) = 4.968275
    iv = mean_interval([10.0, 12.0, 14.0])
    assert (iv.n, iv.mean) == (3, 12.0)
    assert iv.lo == pytest.approx(7.031725, abs=1e-6) and iv.hi == pytest.approx(16.968275, abs=1e-6)
    assert iv.text() == "12.0 (95% CI 7.0–17.0, n=3)"
    # two values: 1 degree of freedom; [1, 3]: mean 2, s = sqrt(2), half 12.706205 * sqrt(2) / sqrt(2)
    two = mean_interval([1.0, 3.0])
    assert two.half_width == pytest.approx(12.706205, abs=1e-6)


def test_one_repeat_has_no_interval_and_says_so() -> None:
    iv = mean_interval([812.3, float("nan")])
    assert iv.n == 1 and iv.mean == 812.3 and math.isnan(iv.lo) and math.isnan(iv.hi)
    assert iv.text() == "812.3 (n=1, no interval)"
    assert mean_interval([]).n == 0


def _levels(rows: list[tuple[str, int, int, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["variant", "concurrency", "repeat", "x"])


def test_repeat_table_means_and_intervals() -> None:
    levels = _levels([("b", 1, 0, 10.0), ("b", 1, 1, 12.0), ("b", 1, 2, 14.0), ("b", 2, 0, 20.0)])
    table = repeat_table(levels, ["x"])
    first, second = table.to_dict("records")
    assert first["n"] == 3 and first["x"] == 12.0 and first["x_lo"] == pytest.approx(7.031725, abs=1e-6)
    assert second["n"] == 1 and second["x"] == 20.0 and math.isnan(second["x_lo"]) and second["x_n"] == 1
    with pytest.raises(ConfigError, match="lacks columns"):
        repeat_table(levels, ["nope"])


def test_ratio_interval_pairs_repeats_on_the_log_scale() -> None:
    # paired ratios 1.1, 1.2, 1.0: logs mean 0.092543, s 0.091192 -> 1.0970 (0.8746–1.3759)
    levels = _levels(
        [("b", 1, r, 100.0) for r in range(3)] + [("s", 1, 0, 110.0), ("s", 1, 1, 120.0), ("s", 1, 2, 100.0)]
    )
    (row,) = ratio_intervals(levels, baseline="b", spec="s", metric="x").to_dict("records")
    assert row["n"] == 3
    assert row["ratio"] == pytest.approx(1.096961, abs=1e-6)
    assert row["ratio_lo"] == pytest.approx(0.874599, abs=1e-6)
    assert row["ratio_hi"] == pytest.approx(1.375859, abs=1e-6)
    assert row["verdict"] == "not distinguishable at this level"


def test_ratio_interval_verdicts_and_pairing_by_repeat_index() -> None:
    levels = _levels(
        [
            ("b", 1, 0, 100.0),
            ("b", 1, 1, 101.0),
            ("b", 1, 2, 99.0),
            ("s", 1, 2, 108.9),
            ("s", 1, 0, 110.0),
            ("s", 1, 1, 111.1),  # 1.1 each, any row order
            ("b", 8, 0, 100.0),
            ("b", 8, 1, 100.0),
            ("s", 8, 0, 50.0),
            ("s", 8, 1, 52.0),
            ("s", 8, 5, 10.0),  # repeat 5 has no pair
            ("b", 16, 0, 100.0),
            ("s", 16, 0, 90.0),
        ]
    )
    table = ratio_intervals(levels, baseline="b", spec="s", metric="x").set_index("concurrency")
    assert table.loc[1, "ratio"] == pytest.approx(1.1) and table.loc[1, "verdict"] == "spec ahead"
    assert table.loc[1, "ratio_lo"] == pytest.approx(1.1) and table.loc[1, "ratio_hi"] == pytest.approx(1.1)
    assert table.loc[8, "n"] == 2 and table.loc[8, "ratio"] == pytest.approx(math.sqrt(0.5 * 0.52))
    # 2 pairs, 1 degree of freedom: log ratios ln .5, ln .52; half width 12.706205 * s / sqrt(2)
    half = 12.706205 * abs(math.log(0.52) - math.log(0.5)) / math.sqrt(2) / math.sqrt(2)
    assert math.log(table.loc[8, "ratio_hi"]) - math.log(table.loc[8, "ratio"]) == pytest.approx(half, abs=1e-6)
    # an interval, but 2 repeats are below the rule's 3: not tested, however far from 1 it lies
    assert table.loc[8, "ratio_hi"] < 1.0 and table.loc[8, "verdict"] == "not tested: 2 repeats"
    assert table.loc[16, "n"] == 1 and math.isnan(table.loc[16, "ratio_lo"])
    assert table.loc[16, "verdict"] == "not tested: 1 repeat"


def _ratios(rows: list[tuple[int, float, float, float, str]], n: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"concurrency": c, "n": n, "ratio": r, "ratio_lo": lo, "ratio_hi": hi, "verdict": v}
            for c, r, lo, hi, v in rows
        ]
    )


def test_crossover_interval_by_hand() -> None:
    table = _ratios([(1, 1.05, 1.02, 1.08, "spec ahead"), (4, 0.95, 0.92, 0.98, "baseline ahead")])
    c = crossover_interval(table, metric="x")
    # point: log2 c = 2 * 0.05 / 0.10 = 1; lower curve: 2 * 0.02 / 0.10 = 0.4; upper: 2 * 0.08 / 0.10 = 1.6
    assert c.kind == "claimed" and c.concurrency == pytest.approx(2.0) and c.n == 3
    assert c.log2_lo == pytest.approx(0.4) and c.log2_hi == pytest.approx(1.6)
    assert c.lo == pytest.approx(2**0.4) and c.hi == pytest.approx(2**1.6)
    assert "near concurrency 2.0 (95% interval 1.3–3.0" in c.description and "n=3" in c.description


def test_crossover_spans_levels_that_are_not_distinguishable() -> None:
    table = _ratios(
        [
            (1, 1.10, 1.05, 1.15, "spec ahead"),
            (2, 1.01, 0.97, 1.05, "not distinguishable at this level"),
            (4, 0.90, 0.85, 0.95, "baseline ahead"),
            (8, 0.80, 0.78, 0.82, "baseline ahead"),
        ]
    )
    c = crossover_interval(table, metric="x")
    assert c.kind == "claimed"
    # point: between 2 (1.01) and 4 (0.90): log2 = 1 + 0.01 / 0.11; band: lower curve between 1 and 2
    # (1.05 -> 0.97: 0.05 / 0.08 = 0.625), upper between 2 and 4 (1.05 -> 0.95: 1 + 0.05 / 0.10 = 1.5)
    assert math.log2(c.concurrency) == pytest.approx(1 + 0.01 / 0.11)
    assert c.log2_lo == pytest.approx(0.625) and c.log2_hi == pytest.approx(1.5)
    assert "not distinguishable at this level at concurrency 2" in c.description


def test_no_crossover_is_claimed_when_intervals_do_not_separate() -> None:
    table = _ratios(
        [(1, 1.03, 0.98, 1.08, "not distinguishable at this level"), (2, 0.90, 0.85, 0.95, "baseline ahead")]
    )
    c = crossover_interval(table, metric="x")
    assert c.kind == "not_claimed" and c.concurrency is None and c.lo is None
    assert c.description.startswith("No crossover can be claimed on x")
    assert "not distinguishable at this level at concurrency 1" in c.description


@pytest.mark.parametrize("n", [1, 2])
def test_fewer_than_three_repeats_claim_nothing(n: int) -> None:
    table = _ratios(
        [
            (1, 1.05, 1.02 if n > 1 else math.nan, 1.08 if n > 1 else math.nan, f"not tested: {n} repeat"),
            (4, 0.9, 0.88 if n > 1 else math.nan, 0.92 if n > 1 else math.nan, "not tested"),
        ],
        n=n,
    )
    c = crossover_interval(table, metric="x")
    assert c.kind == "not_tested" and c.concurrency is None
    assert c.description == (
        f"On x: not tested: {n} repeat{'s' if n > 1 else ''} at some level, so no crossover is "
        "claimed; measure 3 or more repeats (repeats=3) to test one."
    )


def _repeats_of(values: dict[str, list[float]]) -> pd.DataFrame:
    """One level (variant b, concurrency 8) measured len(values[...]) times, one column per metric."""
    n = len(next(iter(values.values())))
    return pd.DataFrame({"variant": ["b"] * n, "concurrency": [8] * n, "repeat": list(range(n)), **values})


def test_intervals_of_the_issue_cases_stay_at_or_above_zero() -> None:
    # the report's cells: TTFT p50 3000 (-1000–6000), queued reqs 2 (-2–6), token usage 0.1 (-0.2–0.3)
    levels = _repeats_of(
        {"p50_ttft_ms": [1500.0, 3000.0, 4500.0], "mean_queued_reqs": [0.0, 2.0, 4.0], "token_usage": [0.0, 0.1, 0.2]}
    )
    row = repeat_table(levels, ["p50_ttft_ms", "mean_queued_reqs", "token_usage"]).iloc[0]
    for m in ("p50_ttft_ms", "mean_queued_reqs", "token_usage"):
        assert row[f"{m}_lo"] >= 0.0 and row[f"{m}_lo"] <= row[m] <= row[f"{m}_hi"], m
    # TTFT is strictly positive: the log-scale t interval of the mean (modified Cox), by hand:
    # logs of 1500, 3000, 4500: mean 7.910474, s^2 0.308634; centre 7.910474 + 0.154317,
    # half width 4.302653 * sqrt(0.308634 / 3 + 0.308634^2 / 4) = 1.531477
    assert row["p50_ttft_ms"] == 3000.0
    assert row["p50_ttft_ms_lo"] == pytest.approx(math.exp(8.064791 - 1.531477), rel=1e-5)
    assert row["p50_ttft_ms_hi"] == pytest.approx(math.exp(8.064791 + 1.531477), rel=1e-5)
    # a zero among the counts: no log scale; the t interval (2 ± 4.968) clipped at 0
    assert row["mean_queued_reqs_lo"] == 0.0 and row["mean_queued_reqs_hi"] == pytest.approx(6.968275, abs=1e-6)
    assert row["token_usage_lo"] == 0.0 and row["token_usage_hi"] == pytest.approx(0.348414, abs=1e-6)
    shown = [
        interval_text(row[m], row[f"{m}_lo"], row[f"{m}_hi"])
        for m in ("p50_ttft_ms", "mean_queued_reqs", "token_usage")
    ]
    assert shown == ["3000 (1000–15000)", "2 (0–7)", "0.1 (0–0.3)"] and not any("-" in s for s in shown)
    cells = readable_table(repeat_table(levels, ["p50_ttft_ms", "mean_queued_reqs", "token_usage"]))
    assert not cells.apply(lambda c: c.str.contains("-")).any().any()


def test_mean_interval_keeps_the_t_interval_inside_the_support_and_says_how_it_was_made() -> None:
    inside = mean_interval([10.0, 12.0, 14.0], support=NON_NEGATIVE)  # 7.03–16.97: nothing to change
    assert inside.method == "t" and inside.lo == pytest.approx(7.031725, abs=1e-6)
    assert mean_interval([1500.0, 3000.0, 4500.0]).lo < 0  # no support given: the plain t interval
    skewed = mean_interval([1500.0, 3000.0, 4500.0], support=NON_NEGATIVE)
    assert skewed.method == "log t" and 0 < skewed.lo < skewed.mean < skewed.hi
    clipped = mean_interval([0.0, 2.0, 4.0], support=NON_NEGATIVE)
    assert clipped.method == "t clipped" and clipped.lo == 0.0
    # a share near 1: clipped at the upper bound too (0.963 ± 0.136 would reach 1.098)
    share = mean_interval([0.9, 0.99, 0.999], support=(0.0, 1.0))
    assert share.method == "t clipped" and share.hi == 1.0 and share.lo == pytest.approx(0.9630 - 0.1356, abs=1e-3)
    with pytest.raises(ConfigError, match="lower < upper"):
        mean_interval([1.0, 2.0], support=(1.0, 0.0))


def test_log_scale_intervals_hold_their_mean_and_stay_positive() -> None:
    rng = np.random.default_rng(7)
    for n in (2, 3, 5, 10):
        for sigma in (0.05, 0.5, 1.5):
            values = rng.lognormal(mean=6.0, sigma=sigma, size=n)
            iv = mean_interval(values, support=NON_NEGATIVE)
            assert iv.lo > 0 and iv.lo <= iv.mean <= iv.hi, (n, sigma, iv)


def test_metric_support_from_the_column_name() -> None:
    for name in (
        "p50_ttft_ms",
        "mean_tpot_ms",
        "output_throughput_tok_s",
        "mean_queued_reqs",
        "accept_length",
        "mean_server_gen_tok_s",
        "output_throughput_tok_s_ratio",
        "goodput_req_s",
    ):
        assert metric_support(name) == NON_NEGATIVE, name
    assert metric_support("token_usage") == (0.0, 1.0) and metric_support("prefill_time_share") == (0.0, 1.0)
    assert metric_support("mean_token_usage_pct") == (0.0, 100.0) and metric_support("mean_gpu_util_pct") == (
        0.0,
        100.0,
    )
    for name in ("margin", "residual", "error_pct", "gain_over_baseline", "log_ratio"):
        assert metric_support(name) == UNBOUNDED, name
    # a signed metric keeps its t interval across 0; a support given by the caller wins over the name
    levels = _repeats_of({"margin": [-0.01, 0.02, 0.05], "x": [1500.0, 3000.0, 4500.0]})
    row = repeat_table(levels, ["margin", "x"], support={"x": UNBOUNDED}).iloc[0]
    assert row["margin_lo"] < 0 < row["margin_hi"] and row["x_lo"] == pytest.approx(-726.206568, abs=1e-6)


def test_percentages_never_show_a_negative_zero() -> None:
    # a margin of +12% whose interval starts just below 0 read "+12% (-0% to +25%)"
    assert readable_value(0.12, "change", -0.002, 0.25) == "+12% (-0.2% to +25%)"
    assert readable_value(0.5, "fraction", -0.001, 0.9) == "50% (-0.1% to 90%)"
    table = pd.DataFrame({"margin": [0.12, 0.31], "margin_lo": [-0.004, -0.0049], "margin_hi": [0.25, 0.6]})
    cells = readable_table(table)["margin"].tolist()
    assert cells == ["+12% (-0.4% to +25%)", "+31% (-0.5% to +60%)"]
    assert not any("-0%" in c for c in cells)
