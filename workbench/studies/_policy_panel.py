"""The JupyterLab panel of a :class:`~workbench.studies._policy_study.PolicyStudy`: widgets that redraw its charts.

Pick the speculative variants, the metric drawn and the objective, and slide the "no drafting
above N" threshold; the envelope chart (with the slid threshold) and the predicted gain of that
threshold policy are recomputed by the study's own methods, which the static charts use too.
Widgets need a live kernel: exported HTML shows the static charts instead (:func:`show_panel` displays
the panel with a plain-text stand-in).
"""

from __future__ import annotations

import html
from typing import Any

from workbench.analysis import OBJECTIVES
from workbench.charts import METRIC_TITLES
from workbench.studies._policy_study import PolicyStudy

__all__ = ["PANEL_FALLBACK", "build_panel", "show_panel"]

#: What an exported report shows where the live panel would be.
PANEL_FALLBACK = (
    "Interactive panel (variants, metric, objective, threshold slider): live in JupyterLab only "
    "(make lab); the static charts above stand in for it here."
)


def _gain_html(study: PolicyStudy, variants: list[str], limit: int, metric: str) -> str:
    """The slid threshold's predicted gain table (HTML), drafting with the best of ``variants`` at the lowest level."""
    if not variants:
        return "<p>Pick at least one speculative variant.</p>"
    table = study.threshold_gains(variants, limit, metric)
    spec = table.attrs.get("spec", "?")
    rows = "".join(
        f"<tr><td>{html.escape(str(r.against))}</td><td>{int(r.concurrency)}</td><td>{r.gain:.3f}</td>"
        f"<td>{'' if r.gain_lo != r.gain_lo else f'{r.gain_lo:.3f}–{r.gain_hi:.3f}'}</td><td>{int(r.n)}</td></tr>"
        for r in table.itertuples()
    )
    return (
        f"<p class='wb-threshold'>No drafting above <b>{limit}</b> running requests, drafting with "
        f"<b>{html.escape(spec)}</b>: predicted gain on {html.escape(metric)} (above 1: better)</p>"
        f"<table><tr><th>over</th><th>concurrency</th><th>gain</th><th>95% CI</th><th>n</th></tr>{rows}</table>"
    )


def build_panel(study: PolicyStudy) -> Any:
    """The panel of a :class:`~workbench.studies._policy_study.PolicyStudy` as an ``ipywidgets.VBox`` (see the module
    docstring; ipywidgets ships no types, so the box is typed ``Any``)."""
    import ipywidgets as w
    from IPython.display import display

    levels = sorted(int(c) for c in set(study.levels["concurrency"]))
    metrics = [m for m in METRIC_TITLES if m in study.levels]
    objectives = [k for k, col in OBJECTIVES.items() if col in study.levels]
    pick = w.SelectMultiple(
        options=study.spec_variants,
        value=tuple(study.spec_variants),
        description="Variants",
        rows=min(8, max(2, len(study.spec_variants))),
    )
    metric = w.Dropdown(options=[(METRIC_TITLES[m], m) for m in metrics], value=study.metric, description="Metric")
    objective = w.Dropdown(options=objectives, value=study.objective, description="Objective")
    recommended = study.threshold().no_draft_above
    start = levels[-1] if recommended is None else (recommended or levels[0])
    slider = w.SelectionSlider(
        options=levels,
        value=start if start in levels else levels[0],
        description="No drafting above",
        continuous_update=False,
        style={"description_width": "initial"},
    )
    chart = w.Output()
    gains = w.HTML()
    note = w.HTML()

    quiet = {"on": False}  # set while the objective moves the metric and the slider: one redraw, not three

    def redraw(_: Any = None) -> None:
        if quiet["on"]:
            return
        chosen = [v for v in pick.value]
        limit = int(slider.value)
        with chart:
            chart.clear_output(wait=True)
            display(study.envelope_chart(metric=metric.value, variants=chosen, no_draft_above=limit))
        gains.value = _gain_html(study, chosen, limit, OBJECTIVES[objective.value])

    def on_objective(_: Any = None) -> None:
        col = OBJECTIVES[objective.value]
        quiet["on"] = True
        try:
            if col in metrics:
                metric.value = col
            chosen = list(pick.value)
            if chosen:
                best = study.threshold(col, specs=chosen).no_draft_above
                note.value = (
                    f"<p>Recommended for {html.escape(objective.value)}: "
                    f"{'keep drafting at every level' if best is None else f'no drafting above {best}'}</p>"
                )
                if best in levels:
                    slider.value = best
        finally:
            quiet["on"] = False
        redraw()

    for widget in (pick, metric, slider):
        widget.observe(redraw, names="value")
    objective.observe(on_objective, names="value")
    on_objective()
    return w.VBox([w.HBox([pick, w.VBox([objective, metric, slider])]), note, chart, gains])


def show_panel(study: PolicyStudy) -> None:
    """Display the panel of ``study`` (:func:`build_panel`), with a plain-text stand-in for front ends without widgets.

    Returns:
        None (the panel is displayed, not returned, so a cell ending with this call shows it once).
    """
    from IPython.display import display

    panel = build_panel(study)
    bundle = panel._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    display({**data, "text/plain": PANEL_FALLBACK}, raw=True)
