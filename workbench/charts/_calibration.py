"""GPU calibration charts: measured kernel timings against the fitted roofline, and the what-if.

Pure functions from the tidy tables of :mod:`workbench.calibration` to altair charts. Subtitles
say which marks are MEASURED (a GPU, a date) and which are the MODEL FIT, and the what-if says
it is the SIMULATOR's prediction.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.charts._colours import variant_colour
from workbench.charts._tradeoff import Subtitle, _title

WIDTH, HEIGHT = 520, 300


def _tokens_x() -> alt.X:
    return alt.X(
        "tokens:Q",
        scale=alt.Scale(type="log", base=2),
        title="Tokens per step (decode: requests)",
        axis=alt.Axis(values=[1, 4, 16, 64, 256, 1024, 4096]),
    )


def calibration_fit_chart(
    points: pd.DataFrame, knees: pd.DataFrame, *, subtitle: Subtitle, model: pd.DataFrame | None = None
) -> alt.LayerChart | alt.FacetChart:
    """Decode step time against tokens per step, one colour per context: measured points, the
    fitted model's line (``model``: ``tokens``, ``context``, ``model_ms`` on a fine grid; else the
    model at the measured points) and a tick at each measured knee.

    Args:
        points: :attr:`CalibrationFit.points` (``family``, ``tokens``, ``context``, ``measured_ms``,
            ``model_ms``, ``fitted``).
        knees: :meth:`CalibrationFit.knees`.
        subtitle: provenance lines.
        model: the model on a finer grid (optional).
    """
    dec = points[points["family"] == "decode"].assign(
        set=lambda d: d["fitted"].map({True: "fitted", False: "held out"})
    )
    line = model if model is not None else dec[["tokens", "context", "model_ms"]]
    colour = alt.Color("context:O", title="Context (tokens)", scale=alt.Scale(scheme="viridis"))
    y = alt.Y("ms:Q", scale=alt.Scale(type="log"), title="Step time (ms, one forward, kernels only)")
    lines = (
        alt.Chart(line.rename(columns={"model_ms": "ms"}))
        .mark_line(strokeDash=[5, 3])
        .encode(x=_tokens_x(), y=y, color=colour, tooltip=["context", "tokens", alt.Tooltip("ms:Q", format=".3f")])
    )
    marks = (
        alt.Chart(dec.rename(columns={"measured_ms": "ms"}))
        .mark_point(filled=True, size=45)
        .encode(
            x=_tokens_x(),
            y=y,
            color=colour,
            shape=alt.Shape("set:N", title="Point"),
            tooltip=[
                "point",
                alt.Tooltip("ms:Q", format=".3f", title="measured ms"),
                alt.Tooltip("model_ms:Q", format=".3f"),
                alt.Tooltip("residual:Q", format="+.1%"),
            ],
        )
    )
    k = knees.dropna(subset=["measured_knee_tokens"]).assign(ms=lambda d: d["floor_ms"] * 1.1)
    ticks = (
        alt.Chart(k)
        .mark_point(shape="triangle-down", size=140, filled=False, strokeWidth=2)
        .encode(
            x="measured_knee_tokens:Q",
            y="ms:Q",
            color=colour,
            tooltip=["context", alt.Tooltip("measured_knee_tokens:Q", format=".0f", title="measured knee")],
        )
    )
    return alt.layer(lines, marks, ticks).properties(
        width=WIDTH,
        height=HEIGHT,
        title=_title("Decode step: measured points, fitted roofline (dashed), knees (▽)", subtitle),
    )


def residual_chart(points: pd.DataFrame, *, subtitle: Subtitle) -> alt.Chart:
    """Residual (model / measured - 1) of every point, by family and tokens; fitted points filled."""
    pts = points.dropna(subset=["residual"]).assign(set=lambda d: d["fitted"].map({True: "fitted", False: "held out"}))
    return (
        alt.Chart(pts)
        .mark_point(size=50)
        .encode(
            x=_tokens_x(),
            y=alt.Y("residual:Q", axis=alt.Axis(format="+%"), title="Model / measured - 1"),
            color=alt.Color("family:N", title="Family"),
            shape=alt.Shape("set:N", title="Point"),
            tooltip=[
                "point",
                alt.Tooltip("measured_ms:Q", format=".3f"),
                alt.Tooltip("model_ms:Q", format=".3f"),
                alt.Tooltip("residual:Q", format="+.1%"),
            ],
        )
        .properties(width=WIDTH, height=HEIGHT, title=_title("Residual per point (fitted and held out)", subtitle))
    )


def kernel_group_chart(groups: pd.DataFrame, *, subtitle: Subtitle) -> alt.Chart:
    """Measured and model time per kernel group, side by side, for a few points.

    Args:
        groups: long table: ``point``, ``group``, ``source`` (``MEASURED`` or ``MODEL FIT``), ``ms``.
    """
    return (
        alt.Chart(groups)
        .mark_bar()
        .encode(
            x=alt.X("source:N", title=None, axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("ms:Q", title="ms per forward"),
            color=alt.Color(
                "source:N",
                title="Source",
                scale=alt.Scale(domain=["MEASURED", "MODEL FIT"], range=["#4c78a8", "#f58518"]),
            ),
            column=alt.Column("group:N", title=None, sort=["dense", "experts", "attention", "lm_head", "fixed"]),
            row=alt.Row("point:N", title=None),
            tooltip=["point", "group", "source", alt.Tooltip("ms:Q", format=".3f")],
        )
        .properties(width=60, height=110, title=_title("Kernel groups: measured alone vs the model's share", subtitle))
        .resolve_scale(y="independent")
    )


def whatif_chart(speedups: pd.DataFrame, *, subtitle: Subtitle) -> alt.LayerChart | alt.FacetChart:
    """EAGLE-3 over plain decoding (tokens per ms) against batch, per variant, with the tie at 1."""
    x = alt.X(
        "batch:Q",
        scale=alt.Scale(type="log", base=2),
        axis=alt.Axis(values=[1, 2, 4, 8, 16, 32, 64, 128]),
        title="Running requests (batch)",
    )
    lines = (
        alt.Chart(speedups)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("speedup:Q", title="EAGLE-3 / baseline, output tok/s"),
            color=variant_colour(None, present=speedups["variant"]),  # each variant's colour in every report
            tooltip=[
                "variant",
                "batch",
                alt.Tooltip("speedup:Q", format=".2f"),
                alt.Tooltip("accept_length:Q", format=".2f"),
                alt.Tooltip("baseline_ms:Q", format=".2f"),
                alt.Tooltip("spec_ms:Q", format=".2f"),
            ],
        )
    )
    tie = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(color="#888", strokeDash=[4, 4]).encode(y="y:Q")
    return alt.layer(lines, tie).properties(
        width=WIDTH, height=HEIGHT, title=_title("What-if: EAGLE-3 speedup by batch (step level)", subtitle)
    )
