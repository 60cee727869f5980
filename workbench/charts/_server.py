"""What the server saw during each level, as small multiples (pure: a DataFrame in, a chart out)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.charts._tradeoff import Subtitle, _title

__all__ = ["SERVER_CHART_NAMES", "server_series_chart"]

#: Series shown, in order, with their axis titles (the first of each source present is used).
SERVER_CHART_NAMES: dict[str, str] = {
    "num_running_reqs": "running reqs",
    "num_queue_reqs": "queued reqs",
    "token_usage": "KV token usage",
    "gen_throughput": "gen tok/s (server)",
    "spec_accept_length": "accept length (server)",
    "gpu_util_pct": "GPU util %",
}


def server_series_chart(series: pd.DataFrame, *, subtitle: Subtitle, width: int = 150, height: int = 60) -> alt.Chart:
    """Lines of the server's view over each level: one row per series, one column per variant,
    one line per level (time since the level's first request, wall seconds).

    Args:
        series: rows of ``server_series.parquet`` (``variant``, ``level`` (its label, e.g. ``"c=4"``),
            ``t_s``, ``name``, ``value``, ``source``) of one repeat; several ranks of one series are averaged.
        subtitle: provenance lines.
        width, height: of each panel (pixels).

    Raises:
        ValueError: none of :data:`SERVER_CHART_NAMES` is in ``series``.
    """
    shown = series[series["name"].isin(list(SERVER_CHART_NAMES))]
    if shown.empty:
        raise ValueError(f"no series to chart: none of {list(SERVER_CHART_NAMES)} was observed")
    data = (shown.groupby(["variant", "level", "name", "source", "t_s"], as_index=False)["value"].mean()
            .assign(series=lambda d: d["name"].map(SERVER_CHART_NAMES) + " (" + d["source"] + ")"))
    order = [f"{SERVER_CHART_NAMES[n]} ({s})" for n in SERVER_CHART_NAMES for s in ("metrics", "log", "gpu")]
    return alt.Chart(data, title=_title("What the server saw during each level", subtitle)).mark_line(
        point=alt.OverlayMarkDef(size=12)).encode(
        x=alt.X("t_s:Q", title="seconds into the level (wall)"),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("level:N", title="level", sort=None),
        tooltip=["variant", "level", "series", "t_s", "value"],
    ).properties(width=width, height=height).facet(
        row=alt.Row("series:N", sort=[o for o in order if o in set(data["series"])], title=None,
                    header=alt.Header(labelAngle=0, labelAlign="left")),
        column=alt.Column("variant:N", title=None),
    ).resolve_scale(y="independent", x="independent")
