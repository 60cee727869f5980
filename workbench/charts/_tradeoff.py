"""Spec-versus-baseline charts: pure functions from tidy level tables to altair charts.

Every function takes the per-level table (one row per variant and concurrency, as
:func:`workbench.bench._metrics.summarize_levels` builds it, or the means over repeats
of :func:`workbench.analysis.repeat_table`, whose ``<metric>_lo``/``_hi`` columns are drawn
as 95% interval bars) and returns a chart;
nothing is saved here (see :func:`workbench.charts.save_chart`). Concurrency is
drawn on a log2 axis, since sweeps double it. When any row is simulated, the
subtitle says so: figures from the simulated engine are never unlabelled.
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from workbench.analysis import Crossover

WIDTH, HEIGHT = 520, 300

#: Colours of the two ratio lines, kept apart from the variant palette (tableau10).
RATIO_COLOURS = ["#222222", "#8c8c8c"]


def variant_colour(variants: list[str] | None) -> alt.Color:
    """Colour by variant with a fixed domain, so one variant has one colour in every chart."""
    scale = alt.Scale(domain=list(variants), scheme="tableau10") if variants else alt.Undefined
    return alt.Color("variant:N", title="Variant", scale=scale)


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


def _x() -> alt.X:
    return alt.X("concurrency:Q", scale=alt.Scale(type="log", base=2), axis=alt.Axis(values=[1, 2, 4, 8, 16, 32, 64, 128, 256]), title="Concurrency (requests in flight)")


Subtitle = str | list[str]


def _lines_of(subtitle: Subtitle) -> list[str]:
    return [subtitle] if isinstance(subtitle, str) else list(subtitle)


def _title(text: str, subtitle: Subtitle) -> alt.TitleParams:
    return alt.TitleParams(text=text, subtitle=_lines_of(subtitle), anchor="start")


def _lines(levels: pd.DataFrame, column: str, title: str, y_title: str, subtitle: Subtitle,
           variants: list[str] | None) -> alt.Chart | alt.LayerChart:
    if column not in levels.columns:
        raise KeyError(f"level table has no column {column!r}")
    bounds = [f"{column}_lo", f"{column}_hi"]
    has_ci = all(b in levels.columns for b in bounds) and levels[bounds].notna().all(axis=1).any()
    extra = [c for c in ["n", *bounds] if c in levels.columns] if has_ci else [c for c in ["n"] if c in levels]
    data = levels[["variant", "concurrency", column, *extra]].dropna(subset=[column])
    tooltip = ["variant", "concurrency", alt.Tooltip(f"{column}:Q", format=".1f"),
               *[alt.Tooltip(f"{c}:Q", format=".1f" if c != "n" else "d") for c in extra]]
    line = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=_x(),
            y=alt.Y(f"{column}:Q", title=y_title),
            color=variant_colour(variants),
            tooltip=tooltip,
        )
    )
    if not has_ci:
        return line.properties(title=_title(title, subtitle), width=WIDTH, height=HEIGHT)
    bars = (
        alt.Chart(data.dropna(subset=bounds))
        .mark_errorbar(ticks=True)
        .encode(x=_x(), y=alt.Y(f"{bounds[0]}:Q", title=y_title), y2=f"{bounds[1]}:Q", color=variant_colour(variants),
                tooltip=tooltip)
    )
    return alt.layer(line, bars, title=_title(title, subtitle), width=WIDTH, height=HEIGHT)


def throughput_chart(levels: pd.DataFrame, *, subtitle: Subtitle, variants: list[str] | None = None) -> alt.Chart | alt.LayerChart:
    """Total output throughput (tok/s, all requests) against concurrency, one line per variant.

    ``variants`` fixes the colour order (pass the same list to every chart).
    """
    return _lines(levels, "output_throughput_tok_s", "Total output throughput", "Output tok/s (all requests)",
                  subtitle, variants)


def per_request_chart(levels: pd.DataFrame, *, subtitle: Subtitle, variants: list[str] | None = None) -> alt.Chart | alt.LayerChart:
    """Mean per-request speed (output tokens / E2E latency, tok/s) against concurrency."""
    return _lines(levels, "mean_per_request_tok_s", "Per-request speed", "Mean per-request tok/s", subtitle, variants)


def accept_length_chart(levels: pd.DataFrame, *, subtitle: Subtitle, variants: list[str] | None = None) -> alt.Chart:
    """Accept length (tokens per verify, bonus included) against concurrency, speculative variants.

    Draws the client-side figure (sum output tokens / sum spec_verify_ct) as lines
    and the server's ``avg_spec_accept_length`` as hollow points where present.
    """
    cols = [c for c in ("accept_length", "server_accept_length") if c in levels.columns]
    long = levels.melt(id_vars=["variant", "concurrency"], value_vars=cols, var_name="source", value_name="accept_len").dropna()
    long["source"] = long["source"].map({"accept_length": "client (meta_info)", "server_accept_length": "server (/server_info)"})
    base = alt.Chart(long, title=_title("Accept length", subtitle), width=WIDTH, height=HEIGHT).encode(
        x=_x(),
        y=alt.Y("accept_len:Q", title="Accept length (tokens per verify)",
                scale=alt.Scale(domain=[1, max(3.0, float(long["accept_len"].max()) + 0.25)] if len(long) else [1, 3])),
        color=variant_colour(variants),
        tooltip=["variant", "concurrency", "source", alt.Tooltip("accept_len:Q", format=".2f")],
    )
    client = base.transform_filter(alt.datum.source == "client (meta_info)").mark_line(point=True)
    server = base.transform_filter(alt.datum.source == "server (/server_info)").mark_point(filled=False, size=90, shape="diamond")
    return alt.layer(client, server)


def ratio_chart(
    ratios: pd.DataFrame,
    crossovers: dict[str, Crossover],
    *,
    spec: str,
    subtitle: Subtitle,
    ci: pd.DataFrame | None = None,
) -> alt.LayerChart:
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
    metrics = [m for m in crossovers if f"{m}_ratio" in ratios.columns]
    long = ratios.melt(id_vars=["concurrency"], value_vars=[f"{m}_ratio" for m in metrics], var_name="metric", value_name="ratio")
    long["metric"] = long["metric"].str.removesuffix("_ratio").map(lambda m: names.get(m, m))
    lines = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=_x(),
            y=alt.Y("ratio:Q", title=f"{spec} / baseline", scale=alt.Scale(zero=False)),
            color=alt.Color("metric:N", title="Ratio of", scale=alt.Scale(range=RATIO_COLOURS)),
            tooltip=["concurrency", "metric", alt.Tooltip("ratio:Q", format=".3f")],
        )
    )
    one = alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(color="gray", strokeDash=[2, 2]).encode(y="ratio:Q")
    points = [(m, x) for m, c in crossovers.items() if c.concurrency is not None
              for x in ([cx for _, _, cx in c.crossings] or [c.concurrency])]
    marks = [{"concurrency": x, "label": f"crossover, {names.get(m, m)}: {x:.2f}", "row": i}
             for i, (m, x) in enumerate(points)]
    notes = [f"{names.get(m, m)}: {c.description}" for m, c in crossovers.items() if c.concurrency is None]
    layers = [lines, one]
    if ci is not None and len(ci):
        layers.append(
            alt.Chart(ci.assign(metric=names["mean_per_request_tok_s"]))
            .mark_errorbar(ticks=True)
            .encode(x="concurrency:Q", y=alt.Y("ratio_lo:Q", title=""), y2="ratio_hi:Q",
                    color=alt.Color("metric:N", title="Ratio of", scale=alt.Scale(range=RATIO_COLOURS)),
                    tooltip=["concurrency", alt.Tooltip("ratio_lo:Q", format=".3f"), alt.Tooltip("ratio_hi:Q", format=".3f")])
        )
    if marks:
        mark_df = pd.DataFrame(marks)
        layers.append(alt.Chart(mark_df).mark_rule(color="firebrick", strokeDash=[6, 3]).encode(x="concurrency:Q"))
        lo, hi = math.log2(ratios["concurrency"].min()), math.log2(ratios["concurrency"].max())
        for mark in marks:  # one text layer per label, stacked from the top so they never overlap
            right_half = math.log2(mark["concurrency"]) > (lo + hi) / 2  # label inward, away from the legend
            layers.append(
                alt.Chart(pd.DataFrame([mark]))
                .mark_text(align="right" if right_half else "left", dx=-4 if right_half else 4, color="firebrick")
                .encode(x="concurrency:Q", y=alt.value(12 + 16 * mark["row"]), text="label:N")
            )
    full_subtitle = [*_lines_of(subtitle), *notes]
    return alt.layer(*layers, title=_title(f"Speculation vs baseline: {spec}", full_subtitle), width=WIDTH, height=HEIGHT)
