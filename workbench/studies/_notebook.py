"""Notebook display helpers: set a notebook up for reports, show a study's charts and words, save its charts.

The cells of the investigation notebooks call these through the root face (``wb.setup_notebook()``,
``wb.show_ratio_charts(study)``, ``wb.show_markdown(study.verdict())``, ``wb.show_text(...)``, ``wb.save_study_charts(...)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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


#: The altair renderer :func:`setup_notebook` enables: the offline one, each subtitle line drawn once a page.
PAGE_RENDERER = "workbench-page"


class _PageSubtitles:
    """The page's chart renderer: :func:`workbench.charts.chart_mimebundle` (offline SVG and the Vega spec), with the
    first chart's subtitle block (the lines after its provenance mark: workload, stand-ins, what a point is) drawn
    above that chart only. A report's charts share that block; said above every chart it is five lines a reader
    skips. Each chart keeps its first line (SIMULATED, MEASURED, MODEL PREDICTION: every figure says where it comes
    from) and its own lines (a pair's caveat, its crossover); a chart drawn again (a cell re-run in JupyterLab) keeps
    its block; saved chart files (``save_charts``) keep every line."""

    def __init__(self) -> None:
        self.owner: str | None = None  # the title of the page's first chart, which draws the block
        self.block: set[str] = set()

    def trim(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``spec`` without the lines of the page's shared block, unless it is the chart that draws them."""

        def walk(node: Any) -> Any:
            if isinstance(node, list):
                return [walk(item) for item in node]
            if not isinstance(node, dict):
                return node
            out = {key: walk(value) for key, value in node.items()}
            title = out.get("title")
            if isinstance(title, dict) and title.get("subtitle"):
                lines = [title["subtitle"]] if isinstance(title["subtitle"], str) else list(title["subtitle"])
                name = str(title.get("text"))
                if self.owner is None:
                    self.owner, self.block = name, {str(line) for line in lines[1:]}
                elif name != self.owner:
                    out["title"] = {**title, "subtitle": lines[:1] + [x for x in lines[1:] if str(x) not in self.block]}
            return out

        trimmed: dict[str, Any] = walk(spec)
        return trimmed

    def __call__(self, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
        from workbench.charts import chart_mimebundle

        return chart_mimebundle(self.trim(spec), **metadata)


def setup_notebook() -> None:
    """Set a notebook up for reports: altair charts rendered offline (SVG for exported HTML, a Vega
    spec for JupyterLab), each subtitle line drawn once a page (:class:`_PageSubtitles`); table text in full;
    floats to 4 significant figures in text output; tables shown through one formatter
    (:func:`workbench.analysis.readable_html`, in IPython only)."""
    import altair as alt
    import pandas as pd

    from workbench.charts import enable_offline_renderer

    enable_offline_renderer()
    alt.renderers.register(PAGE_RENDERER, _PageSubtitles())  # a new page: no line drawn yet
    alt.renderers.enable(PAGE_RENDERER)
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
