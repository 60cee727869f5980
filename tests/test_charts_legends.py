"""Legends a reader can decode: levels in numeric order, line samples and distinct dashes, no entry without
data, and one colour per variant in every chart of every report (workbench.charts._colours)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from workbench.charts import (
    accept_distribution_chart,
    accept_length_chart,
    latency_chart,
    policy_envelope_chart,
    position_rate_chart,
    server_series_chart,
    throughput_chart,
    whatif_chart,
)
from workbench.charts._tradeoff import BASELINE_GREY, PALETTE

LEVELS = [1, 2, 4, 8, 16, 32, 64]


def _layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every unit spec of a (possibly layered, faceted or concatenated) Vega-Lite spec."""
    out = []
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for part in spec.get(key, []):
            out.extend(_layers(part))
    if "spec" in spec:
        out.extend(_layers(spec["spec"]))
    if "mark" in spec:
        out.append(spec)
    return out


def _encodings(spec: dict[str, Any], channel: str) -> list[dict[str, Any]]:
    return [layer["encoding"][channel] for layer in _layers(spec) if channel in layer.get("encoding", {})]


def _rates() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "variant": "eagle3-topk4",
                "concurrency": c,
                "position": p,
                "rate": 0.8**p - c / 400,
                "per_request_rate": 0.8**p,
                "per_request_rate_lo": math.nan,
                "per_request_rate_hi": math.nan,
                "n_requests": 10,
                "verifies": 100,
            }
            for c in LEVELS
            for p in (1, 2, 3)
        ]
    )


def _means(variants: list[str]) -> pd.DataFrame:
    rows = []
    for i, v in enumerate(variants):
        for c in (1, 4, 16):
            rows.append(
                {
                    "variant": v,
                    "concurrency": c,
                    "output_throughput_tok_s": 100.0 * c + i,
                    "p50_ttft_ms": 40.0 * c + i,
                    "p90_ttft_ms": 70.0 * c + i,
                    "accept_length": 2.4 if "eagle" in v else math.nan,
                }
            )
    return pd.DataFrame(rows)


def test_levels_are_in_numeric_order_in_the_acceptance_legends() -> None:
    spec = position_rate_chart(
        _rates(), subtitle="S", variants=["baseline", "eagle3-topk4"], baseline="baseline"
    ).to_dict()
    (dash,) = _encodings(spec, "strokeDash")
    names = [f"concurrency {c}" for c in LEVELS]
    assert dash["sort"] == names and dash["scale"]["domain"] == names  # today: the text order 1, 16, 2, 32, ...
    dist = pd.DataFrame(
        [
            {
                "variant": "eagle3-topk4",
                "concurrency": c,
                "accept_length": k,
                "share": 0.5,
                "verifies": 10,
                "n_requests": 2,
            }
            for c in (16, 2, 1)
            for k in (1, 2)
        ]
    )
    facet = accept_distribution_chart(dist, subtitle="S").to_dict()["facet"]["row"]
    assert facet["sort"] == ["concurrency 1", "concurrency 2", "concurrency 16"]


def test_levels_are_drawn_with_distinct_dashes_and_line_samples_not_identical_dots() -> None:
    spec = position_rate_chart(_rates(), subtitle="S").to_dict()
    (dash,) = _encodings(spec, "strokeDash")
    patterns = [tuple(p) for p in dash["scale"]["range"]]
    assert len(patterns) == len(LEVELS) == len(set(patterns))
    assert dash["legend"]["symbolType"] == "stroke"
    # a line whose points are an overlay turns a dash legend into dots: lines and points are separate layers
    marks = {
        (layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]): layer["mark"]
        for layer in _layers(spec)
    }
    assert "point" in marks and not (isinstance(marks["line"], dict) and marks["line"].get("point"))


def test_the_latency_percentile_legend_has_line_samples_and_only_the_percentiles_drawn() -> None:
    spec = latency_chart(
        _means(["baseline", "eagle3-topk4"]),
        "ttft_ms",
        subtitle="S",
        variants=["baseline", "eagle3-topk4"],
        baseline="baseline",
    ).to_dict()
    (dash,) = _encodings(spec, "strokeDash")
    assert dash["legend"]["symbolType"] == "stroke" and dash["legend"]["symbolStrokeColor"]
    assert dash["scale"]["domain"] == ["p50", "p90"]  # no p99 column: no p99 entry
    line = next(layer for layer in _layers(spec) if layer["mark"] == "line" or layer["mark"].get("type") == "line")
    assert not (isinstance(line["mark"], dict) and line["mark"].get("point"))
    for colour in _encodings(spec, "color"):
        assert colour["legend"]["symbolType"] == "stroke"


def test_legends_list_no_variant_without_data() -> None:
    variants = ["baseline", "eagle3-topk4", "eagle3-topk1-v2"]
    means = _means(["baseline", "eagle3-topk4"])  # eagle3-topk1-v2 measured nothing
    for chart in (
        throughput_chart(means, subtitle="S", variants=variants, baseline="baseline"),
        latency_chart(means, "ttft_ms", subtitle="S", variants=variants, baseline="baseline"),
    ):
        for colour in _encodings(chart.to_dict(), "color"):
            assert colour["scale"]["domain"] == ["baseline", "eagle3-topk4"]
    # accept length: the baseline has none
    for colour in _encodings(
        accept_length_chart(means, subtitle="S", variants=variants, baseline="baseline").to_dict(), "color"
    ):
        assert colour["scale"]["domain"] == ["eagle3-topk4"] and colour["scale"]["range"] == [PALETTE[0]]


def _colours_of(spec: dict[str, Any]) -> dict[str, str]:
    (scale,) = {(tuple(c["scale"]["domain"]), tuple(c["scale"]["range"])) for c in _encodings(spec, "color")}
    return dict(zip(*scale))


def test_a_variant_keeps_its_colour_across_charts_with_different_variants() -> None:
    # the spec-versus-baseline report's set and the policy report's set share eagle3-topk4 and eagle3-topk1-v2
    first = ["baseline-cap48", "eagle3-topk4", "eagle3-topk1-v2", "eagle3-topk4-off-above-8", "baseline"]
    second = ["baseline", "eagle3-topk4-steps1", "eagle3-topk4", "eagle3-topk1-steps1", "eagle3-topk1-v2"]
    one = _colours_of(
        throughput_chart(_means(first), subtitle="S", variants=first, baseline="baseline-cap48").to_dict()
    )
    means = _means(second).assign(n=3, output_throughput_tok_s_lo=math.nan, output_throughput_tok_s_hi=math.nan)
    best = means.groupby("concurrency", as_index=False).first().rename(columns={"variant": "best_variant"})
    two = _colours_of(
        policy_envelope_chart(
            means,
            best,
            metric="output_throughput_tok_s",
            y_title="tok/s",
            baseline="baseline",
            variants=second,
            subtitle="S",
        ).to_dict()
    )
    assert one["eagle3-topk4"] == two["eagle3-topk4"] == PALETTE[0]
    assert one["eagle3-topk1-v2"] == two["eagle3-topk1-v2"]
    assert one["baseline-cap48"] == two["baseline"] == BASELINE_GREY  # each chart's baseline is grey
    for colours in (one, two):
        assert len(set(colours.values())) == len(colours)  # no two variants of a chart share a colour
    # today the colour is the place in the list: the second report's second variant took the first's blue
    assert two["eagle3-topk4-steps1"] != one["eagle3-topk4"]


def test_unpinned_names_hash_to_a_colour_that_does_not_depend_on_the_others_or_their_order() -> None:
    from workbench.charts import variant_colours

    grid = ["topk1-steps3-draft4-v2", "topk4-steps5-draft8", "my-variant"]
    alone = {v: variant_colours([v])[v] for v in grid}
    together = variant_colours(list(reversed(grid)) + ["eagle3-topk4"], "eagle3-topk4")
    for v in grid:
        if alone[v] not in {alone[w] for w in grid if w != v}:
            assert together[v] == alone[v], v
    assert together["eagle3-topk4"] == BASELINE_GREY
    # two names hashing to one colour: both drawn, each its own colour, the earlier name (in name order) keeps its own
    names = [f"v{i}" for i in range(40)]
    a, b = next((x, y) for x in names for y in names if x < y and variant_colours([x])[x] == variant_colours([y])[y])
    pair = variant_colours([b, a])
    assert pair[a] == variant_colours([a])[a] and pair[b] != pair[a]


def test_calibration_and_what_if_variants_take_the_same_fixed_colours() -> None:
    from workbench.charts import variant_colours
    from workbench.charts._colours import variant_scale

    speedups = pd.DataFrame(
        [
            {
                "variant": v,
                "batch": b,
                "speedup": 1.5 / b**0.2,
                "accept_length": 3.0,
                "baseline_ms": 10.0,
                "spec_ms": 12.0,
            }
            for v in ("llama3-8b-eagle3", "llama3-8b-eagle3-bs1")
            for b in (1, 8)
        ]
    )
    (colour,) = _encodings(whatif_chart(speedups, subtitle="S").to_dict(), "color")
    expected = variant_colours(["llama3-8b-eagle3", "llama3-8b-eagle3-bs1"])
    assert dict(zip(colour["scale"]["domain"], colour["scale"]["range"])) == expected
    scale = variant_scale(["x", "y"], "x", present=["y"]).to_dict()
    assert scale["domain"] == ["y"] and scale["range"] == [variant_colours(["y"])["y"]]


def test_server_series_levels_in_numeric_order_with_line_samples() -> None:
    from workbench.charts._colours import level_order

    series = pd.DataFrame(
        [
            {
                "variant": "baseline",
                "level": f"c={c}",
                "t_s": t,
                "name": "num_running_reqs",
                "value": float(c),
                "source": "metrics",
            }
            for c in (16, 2, 1, 32, 4)
            for t in (0, 1)
        ]
    )
    (colour,) = _encodings(server_series_chart(series, subtitle="S").to_dict(), "color")
    assert colour["sort"] == ["c=1", "c=2", "c=4", "c=16", "c=32"] == colour["scale"]["domain"]
    assert colour["legend"]["symbolType"] == "stroke"
    assert level_order(["c=4, input_len=1024", "c=4, input_len=512", "c=16", "c=2"]) == [
        "c=2",
        "c=4, input_len=512",
        "c=4, input_len=1024",
        "c=16",
    ]
