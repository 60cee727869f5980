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
            rows.append({"variant": name, "concurrency": c, "output_throughput_tok_s": v,
                         "mean_per_request_tok_s": v / c, "accept_length": 2.7 if name == "spec" else float("nan"),
                         "server_accept_length": 2.68 if name == "spec" else float("nan"),
                         "simulated": simulated, "engine": "sim" if simulated else "sglang"})
    return pd.DataFrame(rows)


def test_subtitles_say_simulated_or_measured() -> None:
    assert tradeoff.provenance_subtitle(_levels(True), profile="p", time_scale=2.0).startswith("SIMULATED")
    assert "time scale 2x" in tradeoff.provenance_subtitle(_levels(True), time_scale=2.0)
    assert tradeoff.provenance_subtitle(_levels(False)) == "Measured on sglang"


def test_charts_compile_with_log_axis_and_subtitle() -> None:
    levels = _levels(True)
    sub = tradeoff.provenance_subtitle(levels)
    for chart in (tradeoff.throughput_chart(levels, subtitle=sub), tradeoff.per_request_chart(levels, subtitle=sub),
                  tradeoff.accept_length_chart(levels, subtitle=sub)):
        spec = chart.to_dict()
        text = json.dumps(spec)
        assert "SIMULATED" in text and '"type": "log"' in text


def test_ratio_chart_marks_interpolated_crossover() -> None:
    levels = _levels(True)
    table = ratio_table(levels, baseline="baseline", spec="spec", metrics=("output_throughput_tok_s", "mean_per_request_tok_s"))
    cross = {m: find_crossover(table["concurrency"], table[f"{m}_ratio"], metric=m)
             for m in ("output_throughput_tok_s", "mean_per_request_tok_s")}
    spec = tradeoff.ratio_chart(table, cross, spec="spec", subtitle="SIMULATED").to_dict()
    text = json.dumps(spec)
    assert "crossover, total output tok/s" in text and "firebrick" in text
    below = {"output_throughput_tok_s": find_crossover([1, 2], [0.9, 0.8], metric="output_throughput_tok_s")}
    text = json.dumps(tradeoff.ratio_chart(table, below, spec="spec", subtitle="S").to_dict())
    assert "below the smallest level" in text and "firebrick" not in text
