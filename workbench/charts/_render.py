"""Offline rendering of altair charts: in notebooks, in exported HTML, and to files.

Altair's default renderer emits HTML that loads Vega from a CDN, so a chart in an
exported report stays blank without network. :func:`enable_offline_renderer`
switches altair to a renderer whose output needs no JavaScript to be seen:

- ``image/svg+xml``: the chart drawn by vl-convert; nbconvert's HTML inlines it.
- ``application/vnd.vegalite.v<N>+json``: the Vega-Lite spec, for front ends that
  render it interactively.
- ``application/vnd.vega.v5+json`` (only for Vega-Lite 6 specs): the spec compiled
  to Vega by vl-convert. JupyterLab 4 ships a Vega 5 / Vega-Lite 5 renderer and no
  Vega-Lite 6 one; it renders this compiled spec interactively, and prefers it to
  the SVG.

:func:`save_chart` writes PNG and SVG files with vl-convert.

No network is used: vl-convert (the ``vl-convert-python`` wheel) carries Vega,
Vega-Lite and the Liberation Sans fonts inside its binary. The SVG keeps text as
``<text>`` elements with the spec's font names (default ``sans-serif``), drawn by
whatever shows the file; the PNG is rasterised with the bundled fonts. The one
exception is a chart whose data is a URL: Vega loads it. Keep data inline (altair's
default for DataFrames).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import altair as alt
import pandas as pd
import vl_convert as vlc

from workbench import paths
from workbench.errors import ConfigError, ReportError

__all__ = [
    "RENDERER_NAME",
    "chart_mimebundle",
    "enable_offline_renderer",
    "save_chart",
    "save_charts",
]

#: Name under which :func:`enable_offline_renderer` registers the renderer with altair.
RENDERER_NAME = "workbench-offline"

#: Mimetype of a Vega 5 spec, the newest JupyterLab 4 renders.
VEGA5_MIMETYPE = "application/vnd.vega.v5+json"

ChartFormat = Literal["png", "svg"]

_SCHEMA_VERSION = re.compile(r"/vega-lite/v(\d+)\.(\d+)")
_STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _vegalite_version(spec: dict[str, Any]) -> tuple[int, int]:
    """(major, minor) Vega-Lite version of ``spec``, from its ``$schema`` or altair's."""
    match = _SCHEMA_VERSION.search(str(spec.get("$schema", ""))) or _SCHEMA_VERSION.search(
        f"/vega-lite/{alt.SCHEMA_VERSION}"
    )
    if match is None:  # pragma: no cover - altair always declares a schema version
        raise ConfigError(f"cannot tell the Vega-Lite version of a chart spec (no $schema); altair {alt.__version__}")
    return int(match.group(1)), int(match.group(2))


def _vl_convert_version(spec: dict[str, Any]) -> str:
    """The vl-convert ``vl_version`` for ``spec``: its own minor version when bundled, else the newest same-major one.

    Raises:
        ReportError: vl-convert bundles no Vega-Lite of the spec's major version.
    """
    major, minor = _vegalite_version(spec)
    available = vlc.get_vegalite_versions()
    wanted = f"{major}.{minor}"
    if wanted in available:
        return wanted
    same_major = sorted(
        (v for v in available if v.split(".")[0] == str(major)),
        key=lambda v: tuple(int(p) for p in v.split(".")),
    )
    if not same_major:
        raise ReportError(
            f"vl-convert {getattr(vlc, '__version__', '?')} bundles Vega-Lite {', '.join(available)} but the chart "
            f"needs Vega-Lite {wanted}; upgrade vl-convert-python (pip install -U vl-convert-python)."
        )
    return same_major[-1]


def _to_spec(chart: alt.TopLevelMixin | dict[str, Any]) -> dict[str, Any]:
    """The Vega-Lite spec of ``chart`` (a dict is taken as the spec itself)."""
    if isinstance(chart, dict):
        return chart
    if not hasattr(chart, "to_dict"):
        raise ConfigError(f"expected an altair chart or a Vega-Lite dict, got {type(chart).__name__}")
    return chart.to_dict()


def chart_mimebundle(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """Render a Vega-Lite spec into a Jupyter mimebundle that needs no network.

    This is the renderer function altair calls (``metadata`` carries the renderer
    options and is ignored).

    Args:
        spec: a Vega-Lite spec, as produced by ``chart.to_dict()``.

    Returns:
        ``{"image/svg+xml": str, "application/vnd.vegalite.v<N>+json": spec,
        "text/plain": str}``, plus ``"application/vnd.vega.v5+json"`` (the compiled
        Vega spec) when the spec is Vega-Lite 6 or newer.

    Raises:
        ReportError: vl-convert could not compile or draw the spec (the message has
            vl-convert's reason).
    """
    del metadata
    major, _ = _vegalite_version(spec)
    vl_version = _vl_convert_version(spec)
    try:
        svg = vlc.vegalite_to_svg(spec, vl_version=vl_version)
        bundle: dict[str, Any] = {
            "image/svg+xml": svg,
            f"application/vnd.vegalite.v{major}+json": spec,
            "text/plain": f"<altair chart (Vega-Lite {vl_version}), rendered offline as SVG>",
        }
        if major >= 6:
            bundle[VEGA5_MIMETYPE] = vlc.vegalite_to_vega(spec, vl_version=vl_version)
    except ValueError as exc:
        raise ReportError(
            f"vl-convert could not render a chart (Vega-Lite {vl_version}): {exc}. "
            "Check the chart spec (chart.to_dict()); data given as a URL must be reachable."
        ) from exc
    return bundle


def enable_offline_renderer() -> None:
    """Register the offline renderer with altair and make it the active one.

    Call it once at the top of a notebook (idempotent). Afterwards every displayed
    chart carries an SVG drawing (so nbconvert's HTML shows it with no JavaScript)
    and a Vega spec (so JupyterLab shows it interactively). The renderer is
    registered as :data:`RENDERER_NAME`.
    """
    if RENDERER_NAME not in alt.renderers.names():
        alt.renderers.register(RENDERER_NAME, chart_mimebundle)
    alt.renderers.enable(RENDERER_NAME)


def save_chart(
    chart: alt.TopLevelMixin | dict[str, Any],
    out_dir: str | Path,
    stem: str,
    *,
    formats: tuple[ChartFormat, ...] = ("png", "svg"),
    scale: float = 2.0,
) -> dict[str, Path]:
    """Write ``chart`` as ``<out_dir>/<stem>.png`` and ``<out_dir>/<stem>.svg`` with vl-convert.

    Args:
        chart: an altair chart (any top-level chart) or a Vega-Lite spec dict.
        out_dir: directory for the files; created when missing.
        stem: file name without extension (letters, digits, ``.``, ``_``, ``-``).
        formats: which files to write; default both.
        scale: PNG pixel density relative to the chart's size in CSS pixels
            (default 2.0; the SVG is unaffected).

    Returns:
        ``{"png": Path, "svg": Path}`` (only the formats asked for), absolute paths.

    Raises:
        ConfigError: ``stem`` is not a plain file name, a format is unknown, or
            ``chart`` is not a chart.
        ReportError: vl-convert could not render the chart.
    """
    if not _STEM.match(stem):
        raise ConfigError(f"chart file stem {stem!r} must be a plain file name (letters, digits, '.', '_', '-')")
    unknown = [f for f in formats if f not in ("png", "svg")]
    if unknown:
        raise ConfigError(f"unknown chart format(s) {unknown}; use 'png' and/or 'svg'")
    spec = _to_spec(chart)
    vl_version = _vl_convert_version(spec)
    directory = Path(out_dir).expanduser().resolve()
    directory.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for fmt in formats:
        path = directory / f"{stem}.{fmt}"
        try:
            if fmt == "png":
                path.write_bytes(vlc.vegalite_to_png(spec, vl_version=vl_version, scale=scale))
            else:
                path.write_text(vlc.vegalite_to_svg(spec, vl_version=vl_version), encoding="utf-8")
        except ValueError as exc:
            raise ReportError(
                f"vl-convert could not write chart {path}: {exc}. Check the chart spec (chart.to_dict())."
            ) from exc
        written[fmt] = path
    return written


def save_charts(charts: Mapping[str, alt.TopLevelMixin], out_dir: str | Path, *, prefix: str = "") -> pd.DataFrame:
    """:func:`save_chart` for each chart of ``charts`` (stem -> chart) as ``<prefix><stem>.png`` and ``.svg``.

    Returns:
        One row per chart: ``chart`` (its stem), ``png`` and ``svg`` (file names) and ``folder``.

    Raises:
        As :func:`save_chart`.
    """
    folder = Path(out_dir).expanduser().resolve()
    rows = []
    for stem, chart in charts.items():
        files = save_chart(chart, folder, f"{prefix}{stem}")
        rows.append({"chart": stem, **{fmt: p.name for fmt, p in files.items()}, "folder": paths.shown(folder)})
    return pd.DataFrame(rows)
