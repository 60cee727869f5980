"""workbench.analysis._load: a level's load axis (closed or open loop) and the choice of workload."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workbench.analysis import LOAD_AXES, choose_workload, crossover_interval, find_crossover, load_axis, load_modes
from workbench.analysis import ratio_intervals
from workbench.errors import ConfigError


def test_modes_from_the_mode_column_or_the_levels() -> None:
    rows = pd.DataFrame(
        {"concurrency": [4.0, math.nan, 8.0, math.nan], "request_rate_req_s": [math.inf, 2.0, 4.0, math.inf]}
    )
    # no mode column: a finite concurrency with no finite rate is closed; a capped rate is open
    assert list(load_modes(rows)) == ["closed", "open", "open", "open"]
    given = rows.assign(mode=["closed", "open", "trace", None])
    assert list(load_modes(given)) == ["closed", "open", "open", "open"]


def test_axis_of_closed_and_open_levels_and_mixing_refused() -> None:
    closed = pd.DataFrame(
        {"variant": ["a", "b"], "mode": "closed", "concurrency": [1, 2], "request_rate_req_s": math.inf}
    )
    opened = pd.DataFrame({"variant": ["c"], "mode": "open", "concurrency": [math.nan], "request_rate_req_s": [0.5]})
    assert load_axis(closed) is LOAD_AXES["concurrency"]
    axis = load_axis(opened)
    assert axis.column == "request_rate_req_s" and axis.text(0.5) == "0.5 req/s" and axis.value(0.5) == 0.5
    with pytest.raises(
        ConfigError,
        match=r"closed-loop runs \(fixed concurrency: a, b\) and open-loop runs "
        r"\(request rate: c\).*Study them apart",
    ):
        load_axis(pd.concat([closed, opened], ignore_index=True))
    all_at_once = opened.assign(request_rate_req_s=math.inf)
    with pytest.raises(ConfigError, match="no finite request rate"):
        load_axis(all_at_once)


def test_ratio_and_crossover_on_request_rate_keep_fractional_rates() -> None:
    levels = pd.DataFrame(
        {
            "variant": ["base"] * 9 + ["spec"] * 9,
            "request_rate_req_s": [0.5, 0.5, 0.5, 2.0, 2.0, 2.0, 8.0, 8.0, 8.0] * 2,
            "repeat": [0, 1, 2] * 6,
            "tok_s": [100, 101, 99, 300, 302, 298, 500, 505, 495, 130, 131, 129, 301, 299, 300, 400, 404, 396],
        }
    )
    table = ratio_intervals(levels, baseline="base", spec="spec", metric="tok_s", load="request_rate_req_s")
    assert list(table["request_rate_req_s"]) == [0.5, 2.0, 8.0]  # 0.5 req/s is not truncated to 0
    assert list(table["verdict"]) == ["spec ahead", "not distinguishable at this level", "baseline ahead"]
    iv = crossover_interval(table, metric="tok_s", load="request_rate_req_s")
    assert iv.kind == "claimed" and 0.5 < iv.concurrency < 8.0
    assert "near request rate" in iv.description and "req/s" in iv.description
    assert "speculation ahead at request rate 0.5 req/s" in iv.description
    point = find_crossover(table["request_rate_req_s"], table["ratio"], metric="tok_s", load="request_rate_req_s")
    assert point.kind == "interpolated" and point.lower == 2.0 and point.upper == 8.0
    assert "between request rate 2 and 8 req/s" in point.description


def test_choose_workload() -> None:
    labels = pd.Series(["a", "a", "b", "b", "b"])
    variants = pd.Series(["base", "spec", "base", "base", "base"])
    assert choose_workload(labels, variants) == ("a", ["b"])  # measured by both variants
    assert choose_workload(labels, variants, "b") == ("b", ["a"])
    with pytest.raises(ConfigError, match=r"workload 'c' is not in these runs; they hold: 'a'; 'b'"):
        choose_workload(labels, variants, "c")
