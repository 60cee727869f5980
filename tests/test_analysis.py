"""Crossover, ratios and policy: pure functions on hand-made level tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workbench.analysis import best_policy, find_crossover, ratio_table
from workbench.errors import ConfigError


def _levels() -> pd.DataFrame:
    rows = []
    for c, b, s in [(1, 90.0, 99.0), (2, 170.0, 170.0 * 1.02), (4, 300.0, 240.0), (8, 440.0, 260.0)]:
        rows.append(
            {"variant": "baseline", "concurrency": c, "output_throughput_tok_s": b, "mean_per_request_tok_s": b / c}
        )
        rows.append(
            {"variant": "spec", "concurrency": c, "output_throughput_tok_s": s, "mean_per_request_tok_s": s / c}
        )
    return pd.DataFrame(rows)


def test_crossover_interpolates_on_log_concurrency() -> None:
    # ratio 1.02 at 2, 0.8 at 4: crosses 1 at log2 = 1 + 0.02/0.22
    c = find_crossover([1, 2, 4, 8], [1.1, 1.02, 0.8, 0.6], metric="m")
    assert c.kind == "interpolated" and (c.lower, c.upper) == (2, 4)
    assert c.concurrency == pytest.approx(2 ** (1 + 0.02 / 0.22))
    assert "between concurrency 2 and 4 (≈ 2.1, interpolated" in c.description and "stops beating" in c.description


def test_crossover_edge_cases() -> None:
    assert find_crossover([1, 2, 4], [0.9, 0.8, 0.7], metric="m").kind == "below_range"
    assert "below the smallest level (1)" in find_crossover([1, 2], [0.9, 0.8], metric="m").description
    none = find_crossover([1, 2, 4], [1.2, 1.1, 1.05], metric="m")
    assert none.kind == "none_in_range" and none.concurrency is None
    assert "no crossover in range" in none.description
    tie = find_crossover([1, 2, 4], [1.1, 1.0, 1.0], metric="m")
    assert tie.kind == "at_level" and tie.concurrency == 2
    # NaN levels skipped; unsorted input sorted; several crossings reported
    multi = find_crossover([8, 1, 2, 4], [1.1, 1.1, 0.9, float("nan")], metric="m")
    assert multi.kind == "interpolated" and len(multi.crossings) == 2 and "2 times" in multi.description
    starts = find_crossover([1, 2], [0.9, 1.1], metric="m")
    assert "starts beating" in starts.description
    with pytest.raises(ConfigError):
        find_crossover([1], [float("nan")], metric="m")
    with pytest.raises(ConfigError):
        find_crossover([0, 1], [1.1, 0.9], metric="m")


def test_ratio_table_and_errors() -> None:
    table = ratio_table(_levels(), baseline="baseline", spec="spec", metrics=("output_throughput_tok_s",))
    assert list(table["concurrency"]) == [1, 2, 4, 8]
    assert table["output_throughput_tok_s_ratio"].tolist() == pytest.approx([1.1, 1.02, 0.8, 260 / 440])
    with pytest.raises(ConfigError, match="not in the level table"):
        ratio_table(_levels(), baseline="nope", spec="spec", metrics=("output_throughput_tok_s",))
    with pytest.raises(ConfigError, match="lacks columns"):
        ratio_table(_levels(), baseline="baseline", spec="spec", metrics=("ttft_ms",))


def test_best_policy_envelope() -> None:
    pol = best_policy(_levels(), metric="output_throughput_tok_s")
    assert pol["best_variant"].tolist() == ["spec", "spec", "baseline", "baseline"]
    assert pol.loc[0, "margin"] == pytest.approx(0.1)
    single = best_policy(_levels()[_levels()["variant"] == "spec"], metric="output_throughput_tok_s")
    assert math.isnan(single.loc[0, "margin"]) and single.loc[0, "runner_up"] is None
