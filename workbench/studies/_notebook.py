"""Notebook display helpers: set a notebook up for reports, show a study's charts and words, save its charts.

The cells of the investigation notebooks call these through the root face (``wb.setup_notebook()``,
``wb.show_ratio_charts(study)``, ``wb.show_markdown(study.verdict())``, ``wb.show_text(...)``, ``wb.save_study_charts(...)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from workbench.analysis import readable_html
from workbench.markup import literal
from workbench.studies._shape import StudyShape

if TYPE_CHECKING:
    import pandas as pd

    from workbench.studies._study import Study


def _narrow_html(frame: pd.DataFrame) -> str:
    """A DataFrame's HTML as a person reads it (:func:`workbench.analysis.readable_html`: numbers rounded
    to what they support, fractions as %, units in the headings, missing as an em dash, no row numbers);
    the frame itself, and what is stored, stay as they are."""
    return readable_html(frame)


def setup_notebook() -> None:
    """Set a notebook up for reports: altair charts rendered offline (SVG for exported HTML, a Vega
    spec for JupyterLab); table text in full; floats to 4 significant figures in text output; tables
    shown through one formatter (:func:`workbench.analysis.readable_html`, in IPython only)."""
    import pandas as pd

    from workbench.charts import enable_offline_renderer

    enable_offline_renderer()
    pd.set_option("display.max_colwidth", None)  # crossover descriptions and findings in full
    pd.set_option("display.float_format", "{:.4g}".format)  # no six-decimal noise on model figures
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - notebooks always have IPython
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, _narrow_html)


def show_ratio_charts(study: Study) -> None:
    """Display the spec/baseline ratio chart of every speculative variant."""
    from IPython.display import display

    for stem, chart in study.charts().items():
        if stem.startswith("ratio_"):
            display(chart)


def show_markdown(text: str) -> None:
    """Display markdown the workbench wrote (a verdict, findings) in the notebook.

    The data inside it is already placed literally (:mod:`workbench.markup`); an exported report
    also shows any raw HTML in it as text (``workbench.report``'s ``export_html``).
    """
    from IPython.display import Markdown, display

    display(Markdown(text))


def show_text(text: str) -> None:
    """Display plain text (a sentence written from the data, such as a threshold's description)
    exactly as it is: as markdown with every markup character escaped (:func:`workbench.markup.literal`)."""
    show_markdown(literal(text))


def save_study_charts(study: StudyShape, report_dir: str | Path) -> pd.DataFrame:
    """Save every chart of a study (any of the four: :class:`workbench.studies._shape.StudyShape`) as PNG and SVG
    under ``report_dir`` (relative: to the project root).

    Returns:
        One row per chart: ``chart``, ``png`` and ``svg`` file names, and ``folder``.
    """
    return study.save_charts(report_dir)
