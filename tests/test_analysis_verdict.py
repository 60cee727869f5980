"""The pure parts of a verdict (spans, rounding, brackets) and of fairness (settings that differ, queues)."""

from __future__ import annotations

import math

import pytest

from workbench.analysis import (
    MIN_TEST_REPEATS,
    SIGNIFICANCE_RULE,
    bracket_levels,
    bracket_text,
    levels_text,
    not_tested_text,
    queued_requests,
    ratio_spans,
    round_sig,
    round_to_interval,
    settings_differences,
)


def test_levels_text_joins_runs_of_measured_levels() -> None:
    measured = [1, 2, 4, 8, 16, 32, 64]
    assert levels_text([2, 4, 8, 16, 32, 64], measured) == "2–64"
    assert levels_text([1], measured) == "1"
    assert levels_text([1, 4, 8, 64], measured) == "1, 4–8 and 64"
    assert levels_text([1, 64], [1, 64]) == "1–64"  # consecutive in the sweep, whatever lies between
    assert levels_text([], measured) == ""


def test_ratio_spans_use_the_reported_rounding() -> None:
    assert ratio_spans([1, 2, 4, 64], [1.03, 1.004, 0.91, 0.46]) == {"ahead": [1], "behind": [4, 64], "even": [2]}
    assert ratio_spans([2, 1], [float("nan"), 0.9]) == {"ahead": [], "behind": [1], "even": []}


def test_rounding_to_what_the_measurement_supports() -> None:
    assert round_sig(773.46) == 773.0 and round_sig(1.22849) == 1.23 and round_sig(12345.0) == 12300.0
    assert round_to_interval(812.345, 23.1) == 810.0 and round_to_interval(1.2345, 0.012) == 1.23
    assert round_to_interval(812.345, None) == 812.0 and round_to_interval(812.345, math.nan) == 812.0


def test_words_of_the_rule() -> None:
    assert MIN_TEST_REPEATS == 3
    assert bracket_levels(1.228, [4, 1, 2]) == (1, 2) and bracket_levels(4.0, [1, 4, 16]) == (4, 4)
    assert bracket_levels(0.5, [1, 2]) == (1, 1)
    assert bracket_text(1.228499, [1, 2, 4]) == "between concurrency 1 and 2 (≈ 1.2)"
    assert bracket_text(4.0, [1, 4, 16]) == "at concurrency 4"
    assert not_tested_text(1) == "not tested: 1 repeat" and not_tested_text(2) == "not tested: 2 repeats"
    assert SIGNIFICANCE_RULE == (
        "a difference is called significant only with at least 3 paired repeats per level "
        "and a 95% Student t interval of the spec/baseline ratio that excludes 1"
    )


BASE = {
    "max_running_requests": 4096,
    "disable_overlap_schedule": False,
    "disable_cuda_graph": False,
    "tp_size": 8,
    "cuda_graph_max_bs": None,
    "port": 30000,
    "random_seed": 1,
    "speculative_algorithm": None,
    "max_total_num_tokens": 1_500_000,
    "chunked_prefill_size": 8192,
}


def test_settings_differences_name_each_difference_beyond_speculation() -> None:
    spec = {
        **BASE,
        "max_running_requests": 48,
        "disable_overlap_schedule": True,
        "port": 30001,
        "random_seed": 2,
        "speculative_algorithm": "EAGLE3",
        "max_total_num_tokens": 1_400_000,
        "chunked_prefill_size": 4096,
        "new_field_only_here": 1,
    }
    table = settings_differences(BASE, spec, spec="eagle3")
    # sorted by server_info key (disable_overlap_schedule is said positively); ports, seeds, KV size and
    # speculative keys are not differences; a key one server lacks is another version's field
    assert list(table["setting"]) == ["chunked_prefill_size", "overlap scheduling", "max_running_requests"]
    rows = table.set_index("setting")
    assert (rows.loc["max_running_requests", "baseline_value"], rows.loc["max_running_requests", "spec_value"]) == (
        "4096",
        "48",
    )
    assert rows.loc["max_running_requests", "effect"].startswith(
        "above concurrency 48, requests wait in eagle3's queue while the other server still admits them"
    )
    assert (rows.loc["overlap scheduling", "baseline_value"], rows.loc["overlap scheduling", "spec_value"]) == (
        "on",
        "off",
    )
    assert "cannot be turned back on" in rows.loc["overlap scheduling", "equalise"]
    assert rows.loc["chunked_prefill_size", "equalise"] == "give both servers the same --chunked-prefill-size"
    assert settings_differences(BASE, dict(BASE), spec="x").empty


def test_eager_against_graphs_is_a_difference() -> None:
    table = settings_differences(BASE, {**BASE, "disable_cuda_graph": True}, spec="eager-spec")
    (row,) = table.to_dict("records")
    assert row["setting"] == "CUDA graphs" and (row["baseline_value"], row["spec_value"]) == ("on", "off")
    assert row["effect"].startswith("eager-spec runs eager (no CUDA graphs)")


@pytest.mark.parametrize(
    ("concurrency", "cap", "queued"), [(64, 48, 16), (32, 48, 0), (64, None, 0), (64, math.nan, 0), (48, 48, 0)]
)
def test_queued_requests(concurrency: int, cap: float | None, queued: int) -> None:
    assert queued_requests(concurrency, cap) == queued


def test_interval_text_rounds_to_the_interval_and_drops_a_missing_one() -> None:
    from workbench.analysis import interval_text

    assert interval_text(812.345, 789.6, 835.1) == "810 (790–840)"  # half width 22.75: tens
    assert interval_text(9.775, 9.767, 9.783) == "9.775 (9.767–9.783)"  # half width 0.008: thousandths
    assert interval_text(1.2345) == "1.23" and interval_text(1.2345, float("nan"), float("nan")) == "1.23"
    assert interval_text(float("nan"), 1.0, 2.0) == ""
