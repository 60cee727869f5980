"""The one table formatter (workbench.analysis._readable): each report's kind of table, as a person
reads it, rounded to what it supports; the frame and the stored data left as they are."""

from __future__ import annotations

import math

import pandas as pd

from workbench.analysis import interval_text, readable_html, readable_table
from workbench.analysis._readable import MISSING, column_title, readable_value


def test_dynamic_disable_envelope_margin_is_a_percentage_not_a_bare_fraction() -> None:
    envelope = pd.DataFrame(
        {
            "concurrency": [1, 4],
            "best_variant": ["eagle3-topk1-steps1", "baseline"],
            "output_throughput_tok_s": [45.26, 64.39],
            "output_throughput_tok_s_lo": [37.11, 9.914],
            "output_throughput_tok_s_hi": [53.41, 118.9],
            "n": [2, 2],
            "runner_up": ["baseline", None],
            "margin": [0.03227, 0.2695],
            "separated": [False, True],
        }
    )
    shown = readable_table(envelope)
    assert list(shown.columns) == [
        "concurrency",
        "best variant",
        "output throughput (tok/s)",
        "n",
        "runner up",
        "margin",
        "separated",
    ]
    assert list(shown["margin"]) == ["+3.2%", "+27%"]
    # bounds to the interval; the mean too, unless that moves it by more than 5% (64 -> 60): two figures of its own
    assert list(shown["output throughput (tok/s)"]) == ["45 (37–53)", "64 (10–120)"]
    assert list(shown["separated"]) == ["no", "yes"] and shown["runner up"].iloc[1] == MISSING
    assert envelope["margin"].iloc[0] == 0.03227 and "output_throughput_tok_s_lo" in envelope  # untouched


def test_calibration_residuals_and_errors_are_percentages_and_times_carry_ms() -> None:
    residuals = pd.DataFrame(
        {
            "point": ["lm_head:T1:q1:C0"],
            "measured_ms": [0.26581],
            "model_ms": [0.25642],
            "residual": [-0.03516],
            "fitted": [False],
        }
    )
    shown = readable_table(residuals)
    assert list(shown.columns) == ["point", "measured (ms)", "model (ms)", "residual", "fitted"]
    assert shown.iloc[0].tolist() == ["lm_head:T1:q1:C0", "0.266", "0.256", "-3.5%", "no"]
    errors = pd.DataFrame({"median_abs_error_pct": [18.5731], "context": [32768], "measured_knee_tokens": [math.nan]})
    shown = readable_table(errors)
    assert list(shown.columns) == ["median abs error (%)", "context", "measured knee tokens"]
    assert shown.iloc[0].tolist() == ["18.6", "32768", MISSING]  # no "NaN"


def test_what_if_ratios_have_two_decimals_and_gains_over_baseline_are_percent() -> None:
    grid = pd.DataFrame(
        {
            "variant": ["topk1-steps1-draft2-v2"],
            "ratio_at_lowest_level": [1.15689],
            "best_ratio": [0.93327],
            "crossover_concurrency": [6.71923],
            "per_request_crossover_kind": ["interpolated"],
            "gain_over_baseline": [0.3412],
            "predicted_gain": [1.0956],
            "predicted_gain_lo": [0.389],
            "predicted_gain_hi": [3.088],
        }
    )
    shown = readable_table(grid).iloc[0]
    assert shown["ratio at lowest level"] == "1.16" and shown["best ratio"] == "0.93"
    assert shown["crossover concurrency"] == "6.72" and shown["gain over baseline"] == "+34%"
    assert shown["predicted gain"] == "1.10 (0.39–3.09)"


def test_spec_vs_baseline_seed_figures_and_crossovers_show_no_none_nan_or_row_numbers() -> None:
    seed = pd.DataFrame(
        {
            "figure": ["saturation output tok/s"],
            "variant": ["baseline"],
            "seed": [773],
            "measured": ["60 (40–70)"],
            "error_pct": [-92.2381],
            "within": [False],
        }
    )
    page = readable_html(seed)
    assert "<th>error (%)</th>" in page and "<td>-92.2</td>" in page and "<td>no</td>" in page
    assert "<th>0</th>" not in page and "NaN" not in page
    crossovers = pd.DataFrame(
        {
            "variant": ["eagle3-topk4"],
            "kind": ["not_claimed"],
            "between": [None],
            "crossover_concurrency": [None],
            "crossover_lo": [None],
            "crossover_hi": [None],
        }
    )
    shown = readable_table(crossovers)
    assert list(shown.columns) == [
        "variant",
        "kind",
        "between",
        "crossover concurrency",
        "crossover lo",
        "crossover hi",
    ]
    assert "None" not in shown.to_string() and shown["between"].iloc[0] == MISSING


def test_a_meaningful_index_stays_and_markup_is_escaped() -> None:
    pivot = pd.DataFrame({"static": [1.13412], "goodput": [0.59512]}, index=pd.Index([1], name="batch"))
    page = readable_html(pivot)
    assert "batch" in page and "1.13" in page and "0.595" in page
    hostile = readable_html(pd.DataFrame({"variant": ["<img src=x onerror=alert(1)>"]}))
    assert "<img" not in hostile and "&lt;img" in hostile


def test_cells_and_titles() -> None:
    assert readable_value(2.0) == "2" and readable_value(12345.678) == "12300" and readable_value("x") == "x"
    assert readable_value(-0.0001, "change") == "-0.0%" and readable_value(0.0, "change") == "0.0%"
    assert readable_value(0.3681, "fraction") == "37%" and readable_value(0.0, "ratio") == "0.00"
    assert (
        column_title("num_draft_tokens") == "num draft tokens"
        and column_title("prefill_time_share") == "prefill time share"
    )
    assert column_title("ttft_p50_ms") == "ttft p50 (ms)" and column_title("n") == "n"
    assert column_title("mean_token_usage_pct") == "mean token usage (%)"
    assert interval_text(2, -0.3, 4) == "2 (0–4)"  # no "-0"


def test_inspect_source_tables_show_yes_no_and_a_dash_not_true_false_none() -> None:
    history = pd.DataFrame(
        {
            "version": ["0.5.2", "0.5.13"],
            "status": ["absent", "moved+changed"],
            "path": [None, "srt/mem_cache/common.py"],
            "changed_since_previous": [False, True],
            "moved": [False, True],
            "line": [13, 951],
        }
    )
    shown = readable_table(history)
    assert list(shown.columns) == ["version", "status", "path", "changed since previous", "moved", "line"]
    assert shown.iloc[0].tolist() == ["0.5.2", "absent", MISSING, "no", "no", "13"]
    assert shown.iloc[1].tolist() == ["0.5.13", "moved+changed", "srt/mem_cache/common.py", "yes", "yes", "951"]


def test_a_mean_beside_an_interval_wider_than_itself_keeps_two_figures() -> None:
    """A report's latency table read 'TTFT p99 ms 0 (0–40000)' (one slow repeat of three) and a p99 of 14,000 ms
    as '10000 (10000–40000)', below its p50 of '11000 (5000–17000)': the mean keeps two significant figures."""
    assert readable_value(250.0, "number", -39500.0, 40000.0) == "250 (-40000–40000)"
    assert readable_value(14000.0, "number", 9000.0, 41000.0) == "14000 (10000–40000)"
    assert readable_value(11000.0, "number", 5000.0, 17000.0) == "11000 (5000–17000)"
    assert readable_value(812.345, "number", 789.6, 835.1) == "810 (790–840)"  # a narrow interval: as before
