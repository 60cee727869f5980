"""What-if charts: predicted sweeps of many speculative configurations against a baseline.

Pure functions from tidy tables (one row per configuration and concurrency, as
:func:`workbench.sim.predict` returns them) to altair charts; nothing is saved here. Every
chart is a model prediction, and its subtitle (given by the caller) says so.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.charts._colours import variant_colour
from workbench.charts._tradeoff import HEIGHT, WIDTH, Subtitle, _title, _x

#: Colours of the step-breakdown parts, in stacking order.
PART_COLOURS = {
    "weights": "#4e79a7",
    "kv": "#76b7b2",
    "compute": "#59a14f",
    "communication": "#e15759",
    "draft": "#f28e2b",
    "overhead": "#9c755f",
}


def envelope_chart(
    levels: pd.DataFrame,
    *,
    metric: str,
    title: str,
    y_title: str,
    baseline: str,
    highlight: list[str],
    subtitle: Subtitle,
) -> alt.LayerChart | alt.FacetChart:
    """Every configuration as a thin light-grey line, the baseline in grey, ``highlight`` in colour.

    Args:
        levels: rows with ``variant``, ``concurrency`` and ``metric``.
        metric: the column drawn (e.g. ``output_throughput_tok_s``).
        baseline: the baseline's name.
        highlight: configurations drawn in colour (the best ones), in legend order.
    """
    data = levels[["variant", "concurrency", metric]].dropna()
    y = alt.Y(f"{metric}:Q", title=y_title)
    tooltip = ["variant", "concurrency", alt.Tooltip(f"{metric}:Q", format=".1f")]
    rest = data[~data["variant"].isin([baseline, *highlight])]
    grey = (
        alt.Chart(rest)
        .mark_line(color="#c8c8c8", strokeWidth=0.8)
        .encode(x=_x(), y=y, detail="variant:N", tooltip=tooltip)
    )
    named = data[data["variant"].isin([baseline, *highlight])]
    # the baseline grey and each configuration the colour of its name, as in every report
    colours = variant_colour([baseline, *highlight], baseline, present=named["variant"], title="Configuration")
    lines = alt.Chart(named).mark_line(point=True, strokeWidth=2).encode(x=_x(), y=y, color=colours, tooltip=tooltip)
    return alt.layer(grey, lines, title=_title(title, subtitle), width=WIDTH, height=HEIGHT)


def ratio_heatmap(ratios: pd.DataFrame, *, metric_title: str, subtitle: Subtitle) -> alt.Chart:
    """Configuration x concurrency, coloured by the predicted ratio to the baseline (white at 1).

    Args:
        ratios: rows with ``variant``, ``concurrency`` and ``ratio``; configurations are drawn
            in the order they first appear.
    """
    order = list(dict.fromkeys(ratios["variant"]))
    lo, hi = float(ratios["ratio"].min()), float(ratios["ratio"].max())
    scale = alt.Scale(scheme="redblue", domainMid=1.0, domain=[min(lo, 0.99), max(hi, 1.01)])
    base = alt.Chart(
        ratios,
        title=_title(f"Predicted {metric_title} / baseline, every configuration", subtitle),
        width=WIDTH,
        height=max(HEIGHT, 11 * len(order)),
    )
    cells = base.mark_rect().encode(
        x=alt.X("concurrency:O", title="Concurrency (requests in flight)"),
        y=alt.Y("variant:N", sort=order, title=None, axis=alt.Axis(labelFontSize=9)),
        color=alt.Color("ratio:Q", title="ratio", scale=scale),
        tooltip=["variant", "concurrency", alt.Tooltip("ratio:Q", format=".3f")],
    )
    text = base.mark_text(fontSize=7).encode(
        x="concurrency:O", y=alt.Y("variant:N", sort=order), text=alt.Text("ratio:Q", format=".2f")
    )
    return cells + text


def crossover_chart(crossovers: pd.DataFrame, *, subtitle: Subtitle) -> alt.Chart:
    """Each configuration's crossover concurrency (output throughput), coloured by topk.

    Args:
        crossovers: rows with ``variant``, ``topk``, ``crossover_concurrency`` (None/NaN when
            not in range) and ``crossover_kind``; those without a crossover in range are listed
            in the subtitle by kind, not drawn.
    """
    drawn = crossovers.dropna(subset=["crossover_concurrency"])
    order = list(drawn.sort_values("crossover_concurrency", ascending=False)["variant"])
    counts = crossovers[crossovers["crossover_concurrency"].isna()]["crossover_kind"].value_counts()
    notes = [f"not drawn: {n} {kind.replace('_', ' ')}" for kind, n in counts.items()]
    lines = [*([subtitle] if isinstance(subtitle, str) else subtitle), *notes]
    return (
        alt.Chart(
            drawn,
            title=_title("Predicted crossover concurrency (output throughput) per configuration", lines),
            width=WIDTH,
            height=max(HEIGHT, 11 * len(order)),
        )
        .mark_point(filled=True, size=60)
        .encode(
            x=alt.X(
                "crossover_concurrency:Q",
                scale=alt.Scale(type="log", base=2),
                title="Concurrency above which the baseline wins",
            ),
            y=alt.Y("variant:N", sort=order, title=None, axis=alt.Axis(labelFontSize=9)),
            color=alt.Color("topk:O", title="topk"),
            shape=alt.Shape("spec_v2:N", title="spec v2"),
            tooltip=["variant", alt.Tooltip("crossover_concurrency:Q", format=".2f"), "crossover_kind"],
        )
    )


def breakdown_chart(parts: pd.DataFrame, *, subtitle: Subtitle) -> alt.Chart:
    """Stacked decode-step time per output token, by part, for a few configurations at each concurrency.

    Args:
        parts: rows with ``variant``, ``concurrency``, ``part`` (one of :data:`PART_COLOURS`) and
            ``ms_per_token`` (the part's milliseconds divided by the tokens a request gains per step).
    """
    variants = list(dict.fromkeys(parts["variant"]))
    return (
        alt.Chart(
            parts,
            title=_title("Why: predicted decode-step time per output token, by part", subtitle),
            width=max(40, 18 * len(variants)),
            height=HEIGHT,
        )
        .mark_bar()
        .encode(
            x=alt.X("variant:N", sort=variants, title=None, axis=alt.Axis(labelAngle=-60, labelFontSize=8)),
            y=alt.Y("sum(ms_per_token):Q", title="ms per output token per request (one decode step)"),
            color=alt.Color(
                "part:N",
                title="Part",
                sort=list(PART_COLOURS),
                scale=alt.Scale(domain=list(PART_COLOURS), range=list(PART_COLOURS.values())),
            ),
            order=alt.Order("part_order:Q"),
            column=alt.Column("concurrency:O", title="Concurrency"),
            tooltip=["variant", "concurrency", "part", alt.Tooltip("ms_per_token:Q", format=".2f")],
        )
    )


def policy_chart(policies: pd.DataFrame, *, title: str, y_title: str, subtitle: Subtitle) -> alt.Chart:
    """Output throughput of the baseline, the envelope (best per level) and the recommended policies.

    Args:
        policies: rows with ``policy``, ``concurrency`` and ``output_throughput_tok_s``.
    """
    order = list(dict.fromkeys(policies["policy"]))
    return (
        alt.Chart(policies, title=_title(title, subtitle), width=WIDTH, height=HEIGHT)
        .mark_line(point=True)
        .encode(
            x=_x(),
            y=alt.Y("output_throughput_tok_s:Q", title=y_title),
            color=alt.Color(
                "policy:N",
                title="Policy",
                sort=order,
                scale=alt.Scale(scheme="tableau10"),
                legend=alt.Legend(
                    labelLimit=420,
                    orient="bottom",
                    direction="vertical",
                    symbolType="stroke",
                    symbolStrokeWidth=2.5,
                    symbolSize=400,
                ),
            ),
            strokeDash=alt.StrokeDash("policy:N", sort=order, legend=None),
            tooltip=["policy", "concurrency", alt.Tooltip("output_throughput_tok_s:Q", format=".1f")],
        )
    )
