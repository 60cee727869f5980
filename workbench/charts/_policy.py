"""Policy charts: the envelope, the spec/baseline ratios, the Pareto front and predicted-versus-measured gains.

Pure functions from aggregated tables (means over repeats from
:func:`workbench.analysis.repeat_table`, or the tables of :mod:`workbench.analysis._policy`: a
few rows per variant and concurrency, never per request, so altair's 5,000-row limit is never
reached) to altair charts. The baseline is drawn in grey and speculative variants in colour,
with one colour per variant in every chart and every report
(:func:`workbench.charts._colours.variant_colours`). Nothing is saved here.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.charts._colours import BASELINE_GREY, LINE_LEGEND, PALETTE, variant_colour
from workbench.charts._tradeoff import HEIGHT, WIDTH, Subtitle, _title, _x

#: Axis titles of the level metrics the policy charts draw (column -> title).
METRIC_TITLES = {
    "output_throughput_tok_s": "Total output tok/s (all requests)",
    "mean_per_request_tok_s": "Mean per-request tok/s",
    "goodput_req_s": "Goodput (requests/s meeting the targets)",
    "mean_ttft_ms": "Mean TTFT (ms)",
    "mean_tpot_ms": "Mean TPOT (ms)",
    "p90_tpot_ms": "p90 TPOT (ms)",
    "mean_e2e_ms": "Mean E2E latency (ms)",
}

#: Policies' colours, in order (tableau10 without its grey: the variants' palette).
SPEC_COLOURS = PALETTE
#: The envelope (best per level) and the threshold rule.
ENVELOPE_COLOUR, THRESHOLD_COLOUR = "#111111", "firebrick"


def _interval_layers(
    data: pd.DataFrame, x: alt.X, y: str, lo: str, hi: str, y_title: str, colour: alt.Color, tooltip: list
) -> list[alt.Chart]:
    line = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(x=x, y=alt.Y(f"{y}:Q", title=y_title), color=colour, tooltip=tooltip)
    )
    bars = data.dropna(subset=[lo, hi])
    if bars.empty:
        return [line]
    return [
        line,
        alt.Chart(bars)
        .mark_errorbar(ticks=True)
        .encode(x=x, y=alt.Y(f"{lo}:Q", title=y_title), y2=f"{hi}:Q", color=colour, tooltip=tooltip),
    ]


def policy_envelope_chart(
    means: pd.DataFrame,
    best: pd.DataFrame,
    *,
    metric: str,
    y_title: str,
    baseline: str,
    variants: list[str],
    subtitle: Subtitle,
    no_draft_above: int | None = None,
    title: str = "Best of the variants per concurrency",
) -> alt.LayerChart | alt.FacetChart:
    """Each variant's mean (with its interval), the envelope (best per level) and the threshold.

    Args:
        means: :func:`workbench.analysis.repeat_table` rows (``variant``, ``concurrency``,
            ``<metric>``, ``<metric>_lo``, ``<metric>_hi``, ``n``).
        best: :func:`workbench.analysis.envelope` rows (``concurrency``, ``best_variant``, ``<metric>``).
        metric: the objective's column.
        baseline: drawn grey; ``variants`` fixes the colour order.
        no_draft_above: the threshold, drawn as a vertical rule (None: none).
    """
    lo, hi = f"{metric}_lo", f"{metric}_hi"
    data = means[means["variant"].isin(variants)][["variant", "concurrency", metric, lo, hi, "n"]].dropna(
        subset=[metric]
    )
    colour = variant_colour(variants, baseline, present=data["variant"])
    tooltip = [
        "variant",
        "concurrency",
        alt.Tooltip(f"{metric}:Q", format=".2f"),
        alt.Tooltip(f"{lo}:Q", format=".2f"),
        alt.Tooltip(f"{hi}:Q", format=".2f"),
        "n",
    ]
    layers = _interval_layers(data, _x(), metric, lo, hi, y_title, colour, tooltip)
    env = best[["concurrency", "best_variant", metric]].rename(columns={"best_variant": "best"})
    layers.insert(
        0,
        alt.Chart(env)
        .mark_line(color=ENVELOPE_COLOUR, strokeWidth=7, opacity=0.18)
        .encode(
            x=_x(),
            y=alt.Y(f"{metric}:Q", title=y_title),
            tooltip=["concurrency", "best", alt.Tooltip(f"{metric}:Q", format=".2f")],
        ),
    )
    notes = ["thick grey band: the envelope (best variant at each level)"]
    if no_draft_above:
        rule = pd.DataFrame({"concurrency": [no_draft_above], "label": [f"no drafting above {no_draft_above}"]})
        layers.append(alt.Chart(rule).mark_rule(color=THRESHOLD_COLOUR, strokeDash=[6, 3]).encode(x="concurrency:Q"))
        layers.append(
            alt.Chart(rule)
            .mark_text(align="left", dx=4, color=THRESHOLD_COLOUR)
            .encode(x="concurrency:Q", y=alt.value(10), text="label:N")
        )
    lines = [subtitle] if isinstance(subtitle, str) else list(subtitle)
    return alt.layer(*layers, title=_title(title, [*lines, *notes]), width=WIDTH, height=HEIGHT)


def spec_ratio_chart(
    ratios: pd.DataFrame,
    *,
    baseline: str,
    variants: list[str],
    subtitle: Subtitle,
    y_title: str,
    no_draft_above: int | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """Oriented spec/baseline ratio per variant and concurrency with intervals, a rule at 1.

    Args:
        ratios: :func:`workbench.analysis.spec_ratio_table` rows.
        baseline: its name (for the colours; it has no row).
        variants: the colour order (baseline first or not).
    """
    data = ratios[["variant", "concurrency", "ratio", "ratio_lo", "ratio_hi", "n", "verdict"]]
    colour = variant_colour(variants, baseline, present=data["variant"].dropna())
    tooltip = [
        "variant",
        "concurrency",
        alt.Tooltip("ratio:Q", format=".3f"),
        alt.Tooltip("ratio_lo:Q", format=".3f"),
        alt.Tooltip("ratio_hi:Q", format=".3f"),
        "n",
        "verdict",
    ]
    layers = _interval_layers(data, _x(), "ratio", "ratio_lo", "ratio_hi", y_title, colour, tooltip)
    layers.append(
        alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(color=BASELINE_GREY, strokeDash=[2, 2]).encode(y="ratio:Q")
    )
    if no_draft_above:
        layers.append(
            alt.Chart(pd.DataFrame({"concurrency": [no_draft_above]}))
            .mark_rule(color=THRESHOLD_COLOUR, strokeDash=[6, 3])
            .encode(x="concurrency:Q")
        )
    return alt.layer(
        *layers,
        title=_title(f"Speculation against {baseline} (above 1: speculation better)", subtitle),
        width=WIDTH,
        height=HEIGHT,
    )


def pareto_chart(
    points: pd.DataFrame, *, baseline: str, variants: list[str], subtitle: Subtitle
) -> alt.LayerChart | alt.FacetChart:
    """Per-request tok/s against total output tok/s per GPU: each variant's sweep and the Pareto front.

    Args:
        points: one row per (variant, concurrency): ``output_tok_s_per_gpu``,
            ``mean_per_request_tok_s``, ``pareto`` (bool: on the front), ``n``.
    """
    data = points[points["variant"].isin(variants)]
    colour = variant_colour(variants, baseline, present=data["variant"])
    x = alt.X("output_tok_s_per_gpu:Q", title="Total output tok/s per GPU")
    y = alt.Y("mean_per_request_tok_s:Q", title="Per-request tok/s (mean)")
    tooltip = [
        "variant",
        "concurrency",
        alt.Tooltip("output_tok_s_per_gpu:Q", format=".1f"),
        alt.Tooltip("mean_per_request_tok_s:Q", format=".1f"),
        "n",
        "pareto",
    ]
    lines = (
        alt.Chart(data)
        .mark_line(point=True, opacity=0.8)
        .encode(x=x, y=y, color=colour, order="concurrency:Q", tooltip=tooltip)
    )
    labels = alt.Chart(data).mark_text(dx=6, dy=-6, fontSize=9).encode(x=x, y=y, text="concurrency:Q", color=colour)
    front = data[data["pareto"]].sort_values("output_tok_s_per_gpu")
    frontier = (
        alt.Chart(front)
        .mark_line(color=ENVELOPE_COLOUR, strokeDash=[4, 3])
        .encode(x=x, y=y, order="output_tok_s_per_gpu:Q")
    )
    lines_text = [subtitle] if isinstance(subtitle, str) else list(subtitle)
    return alt.layer(
        lines,
        labels,
        frontier,
        title=_title(
            "Per-request speed against throughput per GPU (labels: concurrency)",
            [*lines_text, "dashed: the Pareto front (no other point is better on both axes)"],
        ),
        width=WIDTH,
        height=HEIGHT,
    )


def gain_chart(gains: pd.DataFrame, *, subtitle: Subtitle, y_title: str) -> alt.FacetChart:
    """Predicted and measured gain of each policy over each reference, with intervals, one panel per reference.

    Args:
        gains: rows with ``policy``, ``against``, ``source`` ("predicted" / "measured"),
            ``concurrency``, ``gain``, ``gain_lo``, ``gain_hi``, ``n``.
    """
    colour = alt.Color("policy:N", title="Policy", scale=alt.Scale(range=SPEC_COLOURS), legend=LINE_LEGEND)
    dash = alt.StrokeDash(
        "source:N",
        title="",
        sort=["predicted", "measured"],
        scale=alt.Scale(domain=["predicted", "measured"], range=[[5, 3], [1, 0]]),
    )
    shape = alt.Shape(
        "source:N",
        title="",
        sort=["predicted", "measured"],
        scale=alt.Scale(domain=["predicted", "measured"], range=["circle", "square"]),
    )
    tooltip = [
        "policy",
        "against",
        "source",
        "concurrency",
        alt.Tooltip("gain:Q", format=".3f"),
        alt.Tooltip("gain_lo:Q", format=".3f"),
        alt.Tooltip("gain_hi:Q", format=".3f"),
        "n",
    ]
    x = _x()
    line = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("gain:Q", title=y_title, scale=alt.Scale(zero=False)),
            color=colour,
            strokeDash=dash,
            shape=shape,
            tooltip=tooltip,
        )
    )
    bars = (
        alt.Chart()
        .mark_errorbar(ticks=True)
        .encode(x=x, y=alt.Y("gain_lo:Q", title=y_title), y2="gain_hi:Q", color=colour, tooltip=tooltip)
    )
    one = alt.Chart().mark_rule(color=BASELINE_GREY, strokeDash=[2, 2]).encode(y=alt.datum(1.0))
    data = gains.assign(panel="over " + gains["against"].astype(str))
    return (
        alt.layer(line, bars, one, data=data)
        .properties(width=WIDTH - 120, height=HEIGHT - 60)
        .facet(column=alt.Column("panel:N", title=None), title=_title("Policy gain, predicted and measured", subtitle))
    )
