"""Trade-off charts are valid Vega-Lite, labelled SIMULATED when they should be, and mark crossovers."""

from __future__ import annotations

import json

import pandas as pd

from workbench.analysis import find_crossover, ratio_table
from workbench.charts import _tradeoff as tradeoff


def _levels(simulated: bool) -> pd.DataFrame:
    rows = []
    for c, b, s in [(1, 90.0, 99.0), (2, 170.0, 160.0), (4, 300.0, 240.0)]:
        for name, v in (("baseline", b), ("spec", s)):
            rows.append(
                {
                    "variant": name,
                    "concurrency": c,
                    "output_throughput_tok_s": v,
                    "mean_per_request_tok_s": v / c,
                    "accept_length": 2.7 if name == "spec" else float("nan"),
                    "server_accept_length": 2.68 if name == "spec" else float("nan"),
                    "simulated": simulated,
                    "engine": "sim" if simulated else "sglang",
                }
            )
    return pd.DataFrame(rows)


def test_subtitles_say_simulated_or_measured() -> None:
    assert tradeoff.provenance_subtitle(_levels(True), profile="p", time_scale=2.0).startswith("SIMULATED")
    assert "time scale 2x" in tradeoff.provenance_subtitle(_levels(True), time_scale=2.0)
    assert tradeoff.provenance_subtitle(_levels(False)) == "Measured on sglang"


def test_charts_compile_with_log_axis_and_subtitle() -> None:
    levels = _levels(True)
    sub = tradeoff.provenance_subtitle(levels)
    for chart in (
        tradeoff.throughput_chart(levels, subtitle=sub),
        tradeoff.per_request_chart(levels, subtitle=sub),
        tradeoff.accept_length_chart(levels, subtitle=sub),
    ):
        spec = chart.to_dict()
        text = json.dumps(spec)
        assert "SIMULATED" in text and '"type": "log"' in text


def test_ratio_chart_marks_interpolated_crossover() -> None:
    levels = _levels(True)
    table = ratio_table(
        levels, baseline="baseline", spec="spec", metrics=("output_throughput_tok_s", "mean_per_request_tok_s")
    )
    cross = {
        m: find_crossover(table["concurrency"], table[f"{m}_ratio"], metric=m)
        for m in ("output_throughput_tok_s", "mean_per_request_tok_s")
    }
    spec = tradeoff.ratio_chart(table, cross, spec="spec", subtitle="SIMULATED").to_dict()
    text = json.dumps(spec)
    # the label says where in measured levels; the interpolated point is marked as a concurrency (≈)
    labels = json.dumps(spec, ensure_ascii=False)
    assert "total output tok/s crossover: between concurrency 1 and 2 (≈ 1." in labels and "firebrick" in text
    below = {"output_throughput_tok_s": find_crossover([1, 2], [0.9, 0.8], metric="output_throughput_tok_s")}
    text = json.dumps(tradeoff.ratio_chart(table, below, spec="spec", subtitle="S").to_dict())
    assert "below the smallest level" in text and "firebrick" not in text


def test_crossover_label_reads_as_a_concurrency_not_a_throughput() -> None:
    assert (
        tradeoff.crossover_label("total output tok/s", 1.228499, [1, 2, 4])
        == "total output tok/s crossover: between concurrency 1 and 2 (≈ 1.2)"
    )
    assert (
        tradeoff.crossover_label("per-request tok/s", 4.0, [1, 4, 16])
        == "per-request tok/s crossover: at concurrency 4"
    )


def _latency_levels() -> pd.DataFrame:
    rows = []
    for c in (1, 4, 64):
        for name, scale, cap in (("baseline", 1.0, 4096), ("spec", 0.8, 48)):
            rows.append(
                {
                    "variant": name,
                    "concurrency": c,
                    "p50_ttft_ms": 50 * c * scale,
                    "p90_ttft_ms": 80 * c * scale,
                    "p99_ttft_ms": 120 * c * scale,
                    "queued_requests": max(0, c - cap),
                }
            )
    return pd.DataFrame(rows)


def test_latency_chart_draws_three_percentiles_baseline_grey_and_rings_queued_levels() -> None:
    spec = tradeoff.latency_chart(
        _latency_levels(), "ttft_ms", subtitle="SIMULATED", variants=["baseline", "spec"], baseline="baseline"
    ).to_dict()
    line, points, rings = spec["layer"]  # the points are a layer of their own (line samples in the legend)
    data = spec["datasets"][line["data"]["name"]]
    assert sorted({row["percentile"] for row in data}) == ["p50", "p90", "p99"] and len(data) == 18
    colour = line["encoding"]["color"]["scale"]
    assert colour["domain"] == ["baseline", "spec"] and colour["range"][0] == tradeoff.BASELINE_GREY
    assert line["encoding"]["y"]["scale"]["type"] == "log" and line["encoding"]["y"]["title"] == "TTFT (ms)"
    assert line["encoding"]["strokeDash"]["scale"]["domain"] == ["p50", "p90", "p99"]
    ringed = spec["datasets"][rings["data"]["name"]]
    assert [(r["variant"], r["concurrency"], r["queued_requests"]) for r in ringed] == [("spec", 64, 16)]
    assert any("red rings" in line_ for line_ in spec["title"]["subtitle"])


def test_latency_chart_refuses_unknown_metric_and_missing_columns() -> None:
    import pytest

    with pytest.raises(KeyError, match="not one of"):
        tradeoff.latency_chart(_latency_levels(), "itl_ms", subtitle="S")
    with pytest.raises(KeyError, match="none of p50/p90/p99_e2e_ms"):
        tradeoff.latency_chart(_latency_levels(), "e2e_ms", subtitle="S")


def test_throughput_chart_rings_queued_levels_only_when_there_are_some() -> None:
    levels = _levels(True).assign(queued_requests=0)
    assert "layer" not in tradeoff.throughput_chart(levels, subtitle="S").to_dict()
    levels.loc[(levels["variant"] == "spec") & (levels["concurrency"] == 4), "queued_requests"] = 2
    spec = tradeoff.throughput_chart(levels, subtitle="S", variants=["baseline", "spec"], baseline="baseline").to_dict()
    assert spec["layer"][-1]["mark"]["color"] == tradeoff.QUEUE_COLOUR
