"""One colour per variant in every chart of every report, and legends that show what a line looks like.

A variant's colour is a function of its name, not of its place in a chart's list, so
``eagle3-topk4`` is the same blue in the spec-versus-baseline report and in the policy report
whatever else each shows (:func:`variant_colours`):

- the chart's baseline (what the others are compared with) is grey (:data:`BASELINE_GREY`);
- the variants shipped in ``data/variants/`` have pinned colours (:data:`PINNED`), chosen so the
  variants a shipped report shows together never share one;
- any other name takes the palette colour its name hashes to (SHA-1, so the same in every
  process and on every machine); where two names of one chart hash to the same colour, the one
  later in name order takes the next free colour (so does a second pinned name of one colour in
  one chart): the only cases in which a name's colour depends on its company.

Legends list only what the chart draws (:func:`variant_colour` takes the rows' variants), in the
caller's order, and draw a line sample (:data:`LINE_LEGEND`) for a line's encodings.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

import altair as alt

__all__ = [
    "BASELINE_GREY",
    "DASH_LEGEND",
    "LEVEL_DASHES",
    "LINE_LEGEND",
    "OTHER_PLAIN_GREY",
    "PALETTE",
    "PINNED",
    "level_order",
    "natural_key",
    "variant_colour",
    "variant_colours",
    "variant_scale",
]

#: The baseline's colour in every chart that is told which variant it is.
BASELINE_GREY = "#9a9a9a"

#: Tableau 10 without its grey (the baseline's): the colours of every other variant.
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]

#: A plain-decoding variant that is not the chart's baseline (the seed's uncapped ``baseline`` beside
#: ``baseline-cap48``): a darker grey, so it still reads as "no speculation".
OTHER_PLAIN_GREY = "#555555"

#: The shipped variants' colours (``data/variants/``): the reports that show them together
#: (spec_vs_baseline, dynamic_disable, calibration) never give two of them one colour.
PINNED: dict[str, str] = {
    "baseline": OTHER_PLAIN_GREY,
    "baseline-cap48": OTHER_PLAIN_GREY,
    "llama3-8b-baseline": OTHER_PLAIN_GREY,
    "qwen3-30b-a3b-baseline": OTHER_PLAIN_GREY,
    "eagle3-topk4": PALETTE[0],
    "eagle3-topk1-v2": PALETTE[1],
    "eagle3-topk4-off-above-8": PALETTE[2],
    "eagle3-topk4-steps1": PALETTE[3],
    "eagle3-topk1-steps1": PALETTE[4],
    "eagle3-topk1-steps3": PALETTE[6],
    "adaptive": PALETTE[8],
    "llama3-8b-eagle3": PALETTE[0],
    "llama3-8b-eagle3-bs1": PALETTE[1],
    "qwen3-30b-a3b-eagle3-3x3-4": PALETTE[0],
    "qwen3-30b-a3b-eagle3-3x3-8": PALETTE[1],
    "qwen3-30b-a3b-eagle3-6x4-12": PALETTE[2],
    "qwen3-30b-a3b-eagle3-7x4-16": PALETTE[3],
    "qwen3-30b-a3b-eagle3-8x8-60": PALETTE[4],
    "qwen3-30b-a3b-eagle3-chain3": PALETTE[6],
}

#: A colour legend whose symbols are short line samples in the line's colour, not dots.
LINE_LEGEND = alt.Legend(symbolType="stroke", symbolStrokeWidth=2.5, symbolSize=400)

#: A legend of line styles (dashes: levels, percentiles): line samples in a dark grey, long enough
#: to show the dash.
DASH_LEGEND = alt.Legend(symbolType="stroke", symbolStrokeWidth=2, symbolSize=700, symbolStrokeColor="#333333")

#: Dash patterns of levels (or percentiles) drawn as line styles: solid first, each one distinct.
LEVEL_DASHES: list[list[float]] = [[1, 0], [8, 3], [2, 2], [10, 3, 2, 3], [4, 4], [12, 2, 2, 2, 2, 2], [1, 4], [6, 2]]


def _hashed(name: str) -> int:
    return int.from_bytes(hashlib.sha1(name.encode("utf-8")).digest()[:8], "big") % len(PALETTE)


def variant_colours(variants: Iterable[str], baseline: str | None = None) -> dict[str, str]:
    """Each variant's colour (the module docstring), in the order given.

    Example: ``variant_colours(["baseline", "eagle3-topk4"], "baseline")`` ->
    ``{"baseline": "#9a9a9a", "eagle3-topk4": "#4e79a7"}``; with ``baseline="baseline-cap48"``,
    ``baseline`` is :data:`OTHER_PLAIN_GREY`.
    """
    names = list(dict.fromkeys(variants))
    colours = {baseline: BASELINE_GREY} if baseline in names else {}
    taken = set(colours.values())
    for name in sorted(v for v in names if v in PINNED and v not in colours):
        if PINNED[name] not in taken:  # two pinned names of one colour in one chart: the later one probes
            colours[name] = PINNED[name]
            taken.add(PINNED[name])
    for name in sorted(v for v in names if v not in colours):
        start = _hashed(name)
        free = [c for c in (PALETTE[(start + i) % len(PALETTE)] for i in range(len(PALETTE))) if c not in taken]
        colours[name] = free[0] if free else PALETTE[start]
        taken.add(colours[name])
    return {v: colours[v] for v in names}


def variant_scale(
    variants: Sequence[str], baseline: str | None = None, *, present: Iterable[str] | None = None
) -> alt.Scale:
    """The colour scale of a chart's variants: the baseline first, then ``variants``' order, then any
    other variant in ``present``; only those in ``present`` (the rows drawn) when it is given, so the
    legend has no entry without data."""
    drawn = None if present is None else list(dict.fromkeys(present))
    first = [baseline] if baseline is not None and baseline in variants else []
    shown: list[str] = list(dict.fromkeys([*first, *variants, *(drawn or [])]))
    if drawn is not None:
        shown = [v for v in shown if v in set(drawn)]
    colours = variant_colours(shown, baseline)
    return alt.Scale(domain=shown, range=[colours[v] for v in shown])


def variant_colour(
    variants: Sequence[str] | None,
    baseline: str | None = None,
    *,
    present: Iterable[str] | None = None,
    line: bool = True,
    title: str = "Variant",
) -> alt.Color:
    """The ``variant`` colour channel: :func:`variant_scale` in the legend's order, a line sample in
    the legend for line charts (``line``)."""
    scale = variant_scale(list(variants or []), baseline, present=present)
    sort = list(scale.domain) if isinstance(scale.domain, list) else None
    if line:
        return alt.Color("variant:N", title=title, scale=scale, sort=sort, legend=LINE_LEGEND)
    return alt.Color("variant:N", title=title, scale=scale, sort=sort)


def natural_key(label: str) -> list[tuple[int, float | str]]:
    """A sort key that reads the numbers in a label as numbers: ``"c=2"`` before ``"c=16"``,
    ``"concurrency 4"`` before ``"concurrency 32"``, ``"0.5 req/s"`` before ``"2 req/s"``."""
    parts = re.split(r"(\d+(?:\.\d+)?)", label)
    return [(0, float(p)) if i % 2 else (1, p) for i, p in enumerate(parts) if p != ""]


def level_order(labels: Iterable[str]) -> list[str]:
    """Distinct level labels in numeric order (:func:`natural_key`), never as text (1, 16, 2, ...)."""
    return sorted(set(labels), key=natural_key)
