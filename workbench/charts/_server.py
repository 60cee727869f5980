"""What the server saw during each level, as small multiples (pure: a DataFrame in, a chart out)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.charts._colours import LINE_LEGEND, level_order
from workbench.charts._tradeoff import Subtitle, _title

__all__ = ["SERVER_CHART_NAMES", "server_series_chart"]

#: Series shown, in order, with their row titles.
SERVER_CHART_NAMES: dict[str, str] = {
    "num_running_reqs": "running reqs",
    "gen_throughput": "server gen tok/s",
    "spec_accept_length": "server accept length",
    "gpu_util_pct": "GPU util %",
}


def server_series_chart(
    series: pd.DataFrame, *, subtitle: Subtitle, width: int = 170, height: int = 55
) -> alt.VConcatChart:
    """Lines of the server's view over each level: one row per series (:data:`SERVER_CHART_NAMES`
    that were observed), one column per variant, one line per level (time since the level's
    first request, wall seconds). Each series is drawn from the source that sampled it most
    often for that variant (``/metrics``, the batch log or nvidia-smi; named in the row title).

    Args:
        series: rows of ``server_series.parquet`` (``variant``, ``level`` (its label, e.g. ``"c=4"``),
            ``t_s``, ``name``, ``value``, ``source``) of one repeat; several ranks of one series are averaged.
        subtitle: provenance lines.
        width, height: of each panel (pixels).

    Raises:
        ValueError: none of :data:`SERVER_CHART_NAMES` is in ``series``.
    """
    shown = series[series["name"].isin(list(SERVER_CHART_NAMES))]
    shown = shown[~((shown["name"] == "spec_accept_length") & (shown["value"] == 0))]  # 0: nothing speculated
    if shown.empty:
        raise ValueError(f"no series to chart: none of {list(SERVER_CHART_NAMES)} was observed")
    counts = shown.groupby(["variant", "name", "source"]).size().rename("n").reset_index()
    best = counts.sort_values(["n", "source"], ascending=[False, True]).drop_duplicates(["variant", "name"])
    shown = shown.merge(best[["variant", "name", "source"]], on=["variant", "name", "source"])
    data = (
        shown.groupby(["variant", "level", "name", "t_s"], as_index=False)
        .agg(value=("value", "mean"), source=("source", "first"))
        .assign(series=lambda d: d["name"].map(SERVER_CHART_NAMES))
    )
    variants = list(dict.fromkeys(data["variant"]))
    levels = level_order(data["level"].astype(str))  # c=1, c=2, c=4, c=16: numbers in order, not as text
    rows: list[alt.FacetChart] = []
    for name, title in SERVER_CHART_NAMES.items():
        part = data[data["name"] == name]
        if part.empty:
            continue
        missing = [v for v in variants if v not in set(part["variant"])]  # keep every variant's column
        part = pd.concat(
            [part, pd.DataFrame({"variant": missing, "level": levels[0], "value": [None] * len(missing)})],
            ignore_index=True,
        )
        # one row per series, faceted by variant with a shared y (a facet with independent scales
        # misplaces cells when one is empty, as a variant without speculation is for accept length)
        rows.append(
            alt.Chart(part)
            .mark_line(point=alt.OverlayMarkDef(size=10))
            .encode(
                x=alt.X("t_s:Q", title="seconds into the level (wall)"),
                y=alt.Y("value:Q", title=title),
                color=alt.Color(
                    "level:O",
                    title="level",
                    sort=levels,
                    scale=alt.Scale(domain=levels, scheme={"name": "viridis", "extent": [0.0, 0.85]}),
                    legend=LINE_LEGEND,
                ),
                tooltip=["variant", "level", "series", "source", "t_s", "value"],
            )
            .properties(width=width, height=height)
            .facet(
                column=alt.Column(
                    "variant:N",
                    title=None,
                    sort=variants,
                    header=alt.Header(labelFontSize=11) if not rows else alt.Header(labels=False),
                )
            )
        )
    return alt.vconcat(*rows, title=_title("What the server saw during each level", subtitle))
