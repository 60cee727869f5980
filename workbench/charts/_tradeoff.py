"""Spec-versus-baseline charts: pure functions from tidy level tables to altair charts.

Every function takes the per-level table (one row per variant and concurrency, as
:func:`workbench.bench._metrics.summarize_levels` builds it, or the means over repeats
of :func:`workbench.analysis.repeat_table`, whose ``<metric>_lo``/``_hi`` columns are drawn
as 95% interval bars) and returns a chart;
nothing is saved here (see :func:`workbench.charts.save_chart`). Concurrency is
drawn on a log2 axis, since sweeps double it; a table of open-loop levels (means with a
``request_rate_req_s`` column and no ``concurrency``, or rows whose ``mode`` is open) is
drawn against the request rate, also on log2. When any row is simulated, the
subtitle says so: figures from the simulated engine are never unlabelled.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import pandas as pd

from workbench.analysis import LOAD_AXES, Crossover, bracket_text, level_number, load_axis
from workbench.charts._colours import BASELINE_GREY as BASELINE_GREY  # defined here first: still importable
from workbench.charts._colours import PALETTE as PALETTE
from workbench.charts._colours import DASH_LEGEND, LINE_LEGEND, variant_colour

WIDTH, HEIGHT = 520, 300

#: Colours of the two ratio lines, kept apart from the variant palette (tableau10; ``_colours``).
RATIO_COLOURS = ["#222222", "#8c8c8c"]

#: Colour of the rings that mark levels where a server queued requests.
QUEUE_COLOUR = "#b00020"

#: The subtitle line that explains the rings.
QUEUE_NOTE = "red rings: levels where the server's queue held requests (concurrency above its max-running-requests)"


def _queue_rings(data: pd.DataFrame, y: str) -> alt.Chart | None:
    """Red rings on the rows whose ``queued_requests`` is above 0 (None when there are none)."""
    if "queued_requests" not in data.columns or not (data["queued_requests"].fillna(0) > 0).any():
        return None
    held = data[data["queued_requests"].fillna(0) > 0]
    load = _load_of(data)
    return (
        alt.Chart(held)
        .mark_point(shape="circle", size=260, filled=False, strokeWidth=2, color=QUEUE_COLOUR)
        .encode(
            x=_x(load),
            y=alt.Y(f"{y}:Q"),
            tooltip=["variant", load, alt.Tooltip("queued_requests:Q", title="queued requests")],
        )
    )


def provenance_subtitle(levels: pd.DataFrame, *, profile: str | None = None, time_scale: float | None = None) -> str:
    """Subtitle naming where the figures come from, starting with SIMULATED when they are."""
    simulated = bool(levels.get("simulated", pd.Series([False])).fillna(False).astype(bool).any())
    if simulated:
        parts = ["SIMULATED: workbench sim engine (SGLang HTTP API), not a GPU measurement"]
        if profile:
            parts.append(f"profile {profile}")
        if time_scale and time_scale != 1.0:
            parts.append(f"time scale {time_scale:g}x (times in simulated seconds)")
        return "; ".join(parts)
    engines = sorted(set(levels.get("engine", pd.Series(["sglang"])).dropna()))
    return "Measured on " + ", ".join(engines or ["sglang"])


def _load_of(table: pd.DataFrame) -> str:
    """The load column a chart's x axis is: ``request_rate_req_s`` for a table of open-loop levels
    (:func:`workbench.analysis.load_axis`; a table of means has only its own load column), else
    ``concurrency``."""
    if "request_rate_req_s" not in table.columns:
        return "concurrency"
    if "concurrency" not in table.columns:
        return "request_rate_req_s"
    return load_axis(table).column


def _x(load: str = "concurrency") -> alt.X:
    """The x axis: log2 concurrency with the doubling grid's ticks, or log2 request rate (req/s)."""
    if load == "concurrency":
        return alt.X(
            "concurrency:Q",
            scale=alt.Scale(type="log", base=2),
            axis=alt.Axis(values=[1, 2, 4, 8, 16, 32, 64, 128, 256]),
            title=LOAD_AXES[load].title,
        )
    return alt.X(f"{load}:Q", scale=alt.Scale(type="log", base=2), title=LOAD_AXES[load].title)


Subtitle = str | list[str]


def _lines_of(subtitle: Subtitle) -> list[str]:
    return [subtitle] if isinstance(subtitle, str) else list(subtitle)


def _title(text: str, subtitle: Subtitle) -> alt.TitleParams:
    return alt.TitleParams(text=text, subtitle=_lines_of(subtitle), anchor="start")


def _lines(
    levels: pd.DataFrame,
    column: str,
    title: str,
    y_title: str,
    subtitle: Subtitle,
    variants: list[str] | None,
    baseline: str | None = None,
) -> alt.Chart | alt.LayerChart | alt.FacetChart:
    if column not in levels.columns:
        raise KeyError(f"level table has no column {column!r}")
    load = _load_of(levels)
    bounds = [f"{column}_lo", f"{column}_hi"]
    has_ci = all(b in levels.columns for b in bounds) and levels[bounds].notna().all(axis=1).any()
    extra = [c for c in ["n", *bounds] if c in levels.columns] if has_ci else [c for c in ["n"] if c in levels]
    extra += [c for c in ["queued_requests"] if c in levels.columns]
    data = levels[["variant", load, column, *extra]].dropna(subset=[column])
    rings = _queue_rings(data, column)
    colour = variant_colour(variants, baseline, present=data["variant"])
    if rings is not None:
        subtitle = [*_lines_of(subtitle), QUEUE_NOTE]
    tooltip = [
        "variant",
        load,
        alt.Tooltip(f"{column}:Q", format=".1f"),
        *[alt.Tooltip(f"{c}:Q", format=".1f" if c != "n" else "d") for c in extra],
    ]
    line = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=_x(load),
            y=alt.Y(f"{column}:Q", title=y_title),
            color=colour,
            tooltip=tooltip,
        )
    )
    layers = [line]
    if has_ci:
        layers.append(
            alt.Chart(data.dropna(subset=bounds))
            .mark_errorbar(ticks=True)
            .encode(
                x=_x(load), y=alt.Y(f"{bounds[0]}:Q", title=y_title), y2=f"{bounds[1]}:Q", color=colour, tooltip=tooltip
            )
        )
    if rings is not None:
        layers.append(rings)
    if len(layers) == 1:
        return line.properties(title=_title(title, subtitle), width=WIDTH, height=HEIGHT)
    return alt.layer(*layers, title=_title(title, subtitle), width=WIDTH, height=HEIGHT)


def throughput_chart(
    levels: pd.DataFrame, *, subtitle: Subtitle, variants: list[str] | None = None, baseline: str | None = None
) -> alt.Chart | alt.LayerChart | alt.FacetChart:
    """Total output throughput (tok/s, all requests) against concurrency, one line per variant.

    ``variants`` fixes the colour order (pass the same list to every chart); ``baseline`` draws
    that variant in grey. Rows with ``queued_requests`` > 0 get a red ring (see :data:`QUEUE_NOTE`).
    """
    return _lines(
        levels,
        "output_throughput_tok_s",
        "Total output throughput",
        "Output tok/s (all requests)",
        subtitle,
        variants,
        baseline,
    )


def per_request_chart(
    levels: pd.DataFrame, *, subtitle: Subtitle, variants: list[str] | None = None, baseline: str | None = None
) -> alt.Chart | alt.LayerChart | alt.FacetChart:
    """Mean per-request speed (output tokens / E2E latency, tok/s) against concurrency (as :func:`throughput_chart`)."""
    return _lines(
        levels, "mean_per_request_tok_s", "Per-request speed", "Mean per-request tok/s", subtitle, variants, baseline
    )


#: Latency metrics :func:`latency_chart` draws: column stem -> (title, axis title).
LATENCIES = {
    "ttft_ms": ("Time to first token (TTFT)", "TTFT (ms)"),
    "tpot_ms": ("Time per output token (TPOT)", "TPOT (ms)"),
    "e2e_ms": ("End-to-end latency (E2E)", "E2E latency (ms)"),
}

#: Percentiles drawn, as the level table names them, with their stroke dash.
PERCENTILES = {"p50": [1, 0], "p90": [6, 3], "p99": [2, 2]}


def latency_chart(
    levels: pd.DataFrame,
    metric: str,
    *,
    subtitle: Subtitle,
    variants: list[str] | None = None,
    baseline: str | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """p50, p90 and p99 of a latency against concurrency, one colour per variant (the baseline grey).

    Args:
        levels: per-level rows (or means over repeats) with ``variant``, ``concurrency`` and
            ``p50_<metric>``, ``p90_<metric>``, ``p99_<metric>`` in ms (those present are drawn);
            ``queued_requests`` rings the levels where the server queued requests.
        metric: ``"ttft_ms"``, ``"tpot_ms"`` or ``"e2e_ms"`` (:data:`LATENCIES`).
        subtitle: provenance lines.
        variants: the colour order; ``baseline``: the variant drawn in grey.

    Returns:
        A layer chart: solid p50, dashed p90, dotted p99 (legend "Percentile"), on a log
        latency axis (queueing moves TTFT by orders of magnitude).

    Raises:
        KeyError: ``metric`` is not one of :data:`LATENCIES`, or the table has none of its percentiles.
    """
    if metric not in LATENCIES:
        raise KeyError(f"latency metric {metric!r} is not one of {sorted(LATENCIES)}")
    cols = [f"{p}_{metric}" for p in PERCENTILES if f"{p}_{metric}" in levels.columns]
    if not cols:
        raise KeyError(f"level table has none of p50/p90/p99_{metric}")
    load = _load_of(levels)
    keep = ["variant", load, *[c for c in ["queued_requests"] if c in levels.columns]]
    long = levels.melt(id_vars=keep, value_vars=cols, var_name="percentile", value_name="latency_ms").dropna(
        subset=["latency_ms"]
    )
    long = long[long["latency_ms"] > 0]
    long["percentile"] = long["percentile"].str.split("_").str[0]
    title, y_title = LATENCIES[metric]
    y = alt.Y("latency_ms:Q", title=y_title, scale=alt.Scale(type="log"))
    colour = variant_colour(variants, baseline, present=long["variant"])
    drawn = [p for p in PERCENTILES if p in set(long["percentile"])]  # no legend entry without a line
    tooltip = ["variant", load, "percentile", alt.Tooltip("latency_ms:Q", format=".1f", title=y_title)]
    # the points are a layer of their own: a line's point overlay would turn the dash legend into dots
    lines = (
        alt.Chart(long)
        .mark_line()
        .encode(
            x=_x(load),
            y=y,
            color=colour,
            strokeDash=alt.StrokeDash(
                "percentile:N",
                title="Percentile",
                legend=DASH_LEGEND,
                sort=drawn,
                scale=alt.Scale(domain=drawn, range=[PERCENTILES[p] for p in drawn]),
            ),
            detail="percentile:N",
            tooltip=tooltip,
        )
    )
    points = (
        alt.Chart(long)
        .mark_point(filled=True, opacity=1)
        .encode(x=_x(load), y=y, color=colour, detail="percentile:N", tooltip=tooltip)
    )
    layers: list[alt.Chart] = [lines, points]
    bars = _latency_bars(
        levels, metric, cols, y_title, colour, floor=float(long["latency_ms"].min()) / 2 if len(long) else 1.0
    )
    if bars is not None:
        layers.append(bars)
    rings = _queue_rings(
        long[long["percentile"] == "p50"].rename(columns={"latency_ms": "p50_latency_ms"}), "p50_latency_ms"
    )
    lines_of = _lines_of(subtitle)
    if rings is not None:
        layers.append(rings)
        lines_of = [*lines_of, QUEUE_NOTE + " (on p50)"]
    return alt.layer(*layers, title=_title(title, lines_of), width=WIDTH, height=HEIGHT)


def _latency_bars(
    levels: pd.DataFrame, metric: str, cols: list[str], y_title: str, colour: alt.Color, *, floor: float
) -> alt.Chart | None:
    """Interval bars of each percentile where ``<col>_lo``/``_hi`` are present (means over repeats).

    On the log axis a lower bound at or below 0 is drawn from ``floor`` (half the smallest latency
    drawn); the tooltip gives the bound itself.
    """
    load = _load_of(levels)
    frames = []
    for col in cols:
        lo, hi = f"{col}_lo", f"{col}_hi"
        if lo not in levels.columns or hi not in levels.columns:
            continue
        part = (
            levels[["variant", load, col, lo, hi]]
            .dropna()
            .rename(columns={col: "latency_ms", lo: "lo_ms", hi: "hi_ms"})
        )
        frames.append(part.assign(percentile=col.split("_")[0]))
    data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if data.empty:
        return None
    data["lo_drawn_ms"] = data["lo_ms"].clip(lower=floor)
    return (
        alt.Chart(data)
        .mark_errorbar(ticks=True, opacity=0.7)
        .encode(
            x=_x(load),
            y=alt.Y("lo_drawn_ms:Q", title=y_title, scale=alt.Scale(type="log")),
            y2="hi_ms:Q",
            color=colour,
            detail="percentile:N",
            tooltip=[
                "variant",
                load,
                "percentile",
                alt.Tooltip("latency_ms:Q", format=".1f", title="mean (ms)"),
                alt.Tooltip("lo_ms:Q", format=".1f", title="95% low (ms)"),
                alt.Tooltip("hi_ms:Q", format=".1f", title="95% high (ms)"),
            ],
        )
    )


def accept_length_chart(
    levels: pd.DataFrame, *, subtitle: Subtitle, variants: list[str] | None = None, baseline: str | None = None
) -> alt.Chart | alt.LayerChart | alt.FacetChart:
    """Accept length (tokens per verify, bonus included) against concurrency, speculative variants.

    Draws the client-side figure (sum output tokens / sum spec_verify_ct) as lines
    and the server's ``avg_spec_accept_length`` as hollow points where present.
    """
    load = _load_of(levels)
    cols = [c for c in ("accept_length", "server_accept_length") if c in levels.columns]
    long = levels.melt(id_vars=["variant", load], value_vars=cols, var_name="source", value_name="accept_len").dropna()
    long["source"] = long["source"].map(
        {"accept_length": "client (meta_info)", "server_accept_length": "server (/server_info)"}
    )
    if "server (/server_info)" in set(long["source"]):
        subtitle = [
            *_lines_of(subtitle),
            "lines: the client's figure (output tokens / spec_verify_ct); hollow "
            "diamonds: the server's avg_spec_accept_length (/server_info after each level)",
        ]
    colour = variant_colour(
        variants, baseline, present=long["variant"]
    )  # speculative variants only: no entry without data
    base = alt.Chart(long, title=_title("Accept length", subtitle), width=WIDTH, height=HEIGHT).encode(
        x=_x(load),
        y=alt.Y(
            "accept_len:Q",
            title="Accept length (tokens per verify)",
            scale=alt.Scale(domain=[1, max(3.0, float(long["accept_len"].max()) + 0.25)] if len(long) else [1, 3]),
        ),
        color=colour,
        tooltip=["variant", load, "source", alt.Tooltip("accept_len:Q", format=".2f")],
    )
    client = base.transform_filter(alt.datum.source == "client (meta_info)").mark_line(point=True)
    server = base.transform_filter(alt.datum.source == "server (/server_info)").mark_point(
        filled=False, size=90, shape="diamond"
    )
    layers = [client, server]
    if {"accept_length_lo", "accept_length_hi"} <= set(levels.columns):
        bounds = levels[["variant", load, "accept_length", "accept_length_lo", "accept_length_hi"]].dropna()
        if len(bounds):
            layers.append(
                alt.Chart(bounds)
                .mark_errorbar(ticks=True)
                .encode(
                    x=_x(load),
                    y=alt.Y("accept_length_lo:Q", title="Accept length (tokens per verify)"),
                    y2="accept_length_hi:Q",
                    color=colour,
                    tooltip=[
                        "variant",
                        load,
                        alt.Tooltip("accept_length:Q", format=".3f"),
                        alt.Tooltip("accept_length_lo:Q", format=".3f"),
                        alt.Tooltip("accept_length_hi:Q", format=".3f"),
                    ],
                )
            )
    return alt.layer(*layers)


def crossover_label(metric_name: str, concurrency: float, measured: list[float], load: str = "concurrency") -> str:
    """The label of a crossover's rule: the measured levels that bracket it, the point only as a concurrency.

    Example: ``crossover_label("total output tok/s", 1.228, [1, 2, 4])`` ->
    ``"total output tok/s crossover: between concurrency 1 and 2 (≈ 1.2)"``.
    """
    return f"{metric_name} crossover: {bracket_text(concurrency, measured, load=load)}"


def ratio_chart(
    ratios: pd.DataFrame,
    crossovers: dict[str, Crossover],
    *,
    spec: str,
    subtitle: Subtitle,
    ci: pd.DataFrame | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """Spec/baseline ratio per metric against concurrency, a rule at 1, crossovers marked.

    Args:
        ratios: :func:`workbench.analysis.ratio_table` output (``<metric>_ratio`` columns).
        crossovers: metric -> :class:`Crossover`; every crossing gets a dashed
            vertical rule and a label; a metric without one gets a subtitle note.
        spec: the speculative variant's name (for the title).
        subtitle: provenance subtitle.
        ci: optional :func:`workbench.analysis._uncertainty.per_request_ratio_ci` output;
            drawn as error bars on the per-request ratio.
    """
    names = {"output_throughput_tok_s": "total output tok/s", "mean_per_request_tok_s": "per-request tok/s"}
    load = _load_of(ratios)
    metrics = [m for m in crossovers if f"{m}_ratio" in ratios.columns]
    long = ratios.melt(
        id_vars=[load], value_vars=[f"{m}_ratio" for m in metrics], var_name="metric", value_name="ratio"
    )
    long["metric"] = long["metric"].str.removesuffix("_ratio").map(lambda m: names.get(m, m))
    lines = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=_x(load),
            y=alt.Y("ratio:Q", title=f"{spec} / baseline", scale=alt.Scale(zero=False)),
            color=alt.Color("metric:N", title="Ratio of", scale=alt.Scale(range=RATIO_COLOURS), legend=LINE_LEGEND),
            tooltip=[load, "metric", alt.Tooltip("ratio:Q", format=".3f")],
        )
    )
    one = alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(color="gray", strokeDash=[2, 2]).encode(y="ratio:Q")
    points = [
        (m, x)
        for m, c in crossovers.items()
        if c.concurrency is not None
        for x in ([cx for _, _, cx in c.crossings] or [c.concurrency])
    ]
    measured = sorted(level_number(c) for c in ratios[load])
    marks: list[dict[str, Any]] = [
        {load: x, "label": crossover_label(names.get(m, m), x, measured, load), "row": i}
        for i, (m, x) in enumerate(points)
    ]
    notes = [f"{names.get(m, m)}: {c.description}" for m, c in crossovers.items() if c.concurrency is None]
    layers = [lines, one]
    notes_queue = []
    if "queued_requests" in ratios.columns and (ratios["queued_requests"].fillna(0) > 0).any():
        held = long.merge(ratios[[load, "queued_requests"]], on=load)
        held = held[held["queued_requests"] > 0]
        layers.append(
            alt.Chart(held)
            .mark_point(shape="circle", size=260, filled=False, strokeWidth=2, color=QUEUE_COLOUR)
            .encode(
                x=_x(load),
                y="ratio:Q",
                tooltip=[load, "metric", alt.Tooltip("queued_requests:Q", title="requests queued (either server)")],
            )
        )
        notes_queue = [QUEUE_NOTE.replace("the server's queue", "either server's queue")]
    if ci is not None and len(ci):
        layers.append(
            alt.Chart(ci.assign(metric=names["mean_per_request_tok_s"]))
            .mark_errorbar(ticks=True)
            .encode(
                x=f"{load}:Q",
                y=alt.Y("ratio_lo:Q", title=""),
                y2="ratio_hi:Q",
                color=alt.Color("metric:N", title="Ratio of", scale=alt.Scale(range=RATIO_COLOURS), legend=LINE_LEGEND),
                tooltip=[load, alt.Tooltip("ratio_lo:Q", format=".3f"), alt.Tooltip("ratio_hi:Q", format=".3f")],
            )
        )
    if marks:
        mark_df = pd.DataFrame(marks)
        layers.append(alt.Chart(mark_df).mark_rule(color="firebrick", strokeDash=[6, 3]).encode(x=f"{load}:Q"))
        lo, hi = math.log2(ratios[load].min()), math.log2(ratios[load].max())
        for mark in marks:  # one text layer per label, stacked from the top so they never overlap
            right_half = math.log2(mark[load]) > (lo + hi) / 2  # label inward, away from the legend
            layers.append(
                alt.Chart(pd.DataFrame([mark]))
                .mark_text(align="right" if right_half else "left", dx=-4 if right_half else 4, color="firebrick")
                .encode(x=f"{load}:Q", y=alt.value(12 + 16 * mark["row"]), text="label:N")
            )
    full_subtitle = [*_lines_of(subtitle), *notes, *notes_queue]
    return alt.layer(
        *layers, title=_title(f"Speculation vs baseline: {spec}", full_subtitle), width=WIDTH, height=HEIGHT
    )
