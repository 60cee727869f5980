"""Acceptance charts: the rate at each draft position and the accept-length distribution, per level.

Pure functions from the tables of :mod:`workbench.analysis._acceptance` to altair charts;
nothing is saved here. Each level is one line (positions) or one facet row (distribution),
named by its load (concurrency, or request rate in req/s).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.analysis import LOAD_AXES
from workbench.charts._colours import DASH_LEGEND, LEVEL_DASHES, variant_colour
from workbench.charts._tradeoff import HEIGHT, WIDTH, Subtitle, _lines_of, _title

__all__ = ["accept_distribution_chart", "position_rate_chart"]


def _level_names(table: pd.DataFrame, load: str) -> pd.Series:
    axis = LOAD_AXES[load]
    return table[load].map(axis.text)


def _level_order(table: pd.DataFrame, load: str) -> list[str]:
    """The levels' names in numeric order of their load (1, 2, 4, 16, never 1, 16, 2, 4)."""
    return [LOAD_AXES[load].text(v) for v in sorted(set(table[load]))] if len(table) else []


def position_rate_chart(
    rates: pd.DataFrame,
    *,
    subtitle: Subtitle,
    load: str = "concurrency",
    variants: list[str] | None = None,
    baseline: str | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """Acceptance rate at each draft position (share of verifies accepting at least that many drafts).

    Args:
        rates: :func:`workbench.analysis.position_rates` rows (``variant``, the ``load`` column,
            ``position``, ``rate``, ``per_request_rate`` and its ``_lo``/``_hi`` bounds) and/or
            :func:`workbench.analysis.imported_position_rates` rows, optionally with ``source``.
        subtitle: provenance lines.
        load: the level column.
        variants, baseline: the colour order (as every study chart).

    Returns:
        Lines of the pooled rate, one per (variant, level), the level in the tooltip and as the
        stroke dash; interval bars of the per-request mean where it has one.
    """
    data = rates.assign(level=_level_names(rates, load)) if len(rates) else rates.assign(level=[])
    tooltip = [
        "variant",
        "level",
        "position",
        alt.Tooltip("rate:Q", format=".3f", title="rate (pooled)"),
        alt.Tooltip("per_request_rate:Q", format=".3f", title="per-request mean"),
        alt.Tooltip("n_requests:Q", title="requests"),
        alt.Tooltip("verifies:Q", title="verifies"),
    ]
    x = alt.X("position:O", title="Draft position (1 = the first drafted token)")
    y = alt.Y("rate:Q", title="Acceptance rate (share of verifies reaching it)", scale=alt.Scale(domain=[0, 1]))
    colour = variant_colour(variants, baseline, present=data["variant"] if len(data) else [])
    order = _level_order(rates, load)
    styles = [LEVEL_DASHES[i % len(LEVEL_DASHES)] for i in range(len(order))]
    # each level its own dash, shown as a line sample in the legend; the points are a layer of their
    # own (a line's point overlay would turn the legend into identical dots)
    lines = (
        alt.Chart(data)
        .mark_line()
        .encode(
            x=x,
            y=y,
            color=colour,
            strokeDash=alt.StrokeDash(
                "level:N", title="Level", sort=order, scale=alt.Scale(domain=order, range=styles), legend=DASH_LEGEND
            ),
            detail="level:N",
            tooltip=tooltip,
        )
    )
    points = (
        alt.Chart(data)
        .mark_point(filled=True, opacity=1)
        .encode(x=x, y=y, color=colour, detail="level:N", tooltip=tooltip)
    )
    layers: list[alt.Chart] = [lines, points]
    bars = data.dropna(subset=["per_request_rate_lo", "per_request_rate_hi"]) if len(data) else data
    if len(bars):
        layers.append(
            alt.Chart(bars)
            .mark_errorbar(ticks=False, opacity=0.6)
            .encode(
                x=x,
                y=alt.Y("per_request_rate_lo:Q", title=""),
                y2="per_request_rate_hi:Q",
                color=colour,
                detail="level:N",
                tooltip=tooltip,
            )
        )
    lines_of = [
        *_lines_of(subtitle),
        "lines: pooled over the level's verifies (vLLM's per-position definition); "
        "bars: 95% interval of the per-request mean (Student t over requests)",
    ]
    return alt.layer(*layers, title=_title("Acceptance by draft position", lines_of), width=WIDTH, height=HEIGHT)


def accept_distribution_chart(
    dist: pd.DataFrame,
    *,
    subtitle: Subtitle,
    load: str = "concurrency",
    variants: list[str] | None = None,
    baseline: str | None = None,
) -> alt.FacetChart:
    """Share of verify steps at each accept length, one facet row per level.

    Args:
        dist: :func:`workbench.analysis.accept_length_distribution` rows.
        subtitle: provenance lines.
        load: the level column.
        variants, baseline: the colour order.
    """
    data = dist.assign(level=_level_names(dist, load)) if len(dist) else dist.assign(level=[])
    order = _level_order(dist, load)
    base = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("accept_length:O", title="Accept length (tokens per verify, bonus included)"),
            xOffset="variant:N",
            y=alt.Y("share:Q", title="Share of verifies", axis=alt.Axis(format="%")),
            color=variant_colour(variants, baseline, present=data["variant"] if len(data) else [], line=False),
            tooltip=[
                "variant",
                "level",
                "accept_length",
                alt.Tooltip("share:Q", format=".1%"),
                alt.Tooltip("verifies:Q", title="verifies"),
                alt.Tooltip("n_requests:Q", title="requests"),
            ],
        )
        .properties(width=WIDTH, height=max(80, HEIGHT // 3))
    )
    return base.facet(row=alt.Row("level:N", title=None, sort=order)).properties(
        title=_title("Accept-length distribution", subtitle)
    )
