"""What a rendered report page must not show (issue 33, item 2 of its Deliver list): notebook plumbing, raw dumps,
a JupyterLab panel's placeholder, subtitle lines repeated above chart after chart, legends naming series with no data.

:func:`page_problems` reads an exported page (and, for the legends, the executed notebook's Vega-Lite specs) and
returns one line per problem, so a test that renders a report asserts ``page_problems(...) == []`` and a failure
says what was found where. The render tests of every report call it (tests/test_report_pages.py lists them).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup

#: Classes nbconvert gives a code cell's visible source and its prompts.
_CODE_CLASSES = ("jp-InputArea-editor", "jp-CodeMirrorEditor")
_PROMPT_CLASSES = ("jp-InputPrompt", "jp-OutputPrompt")
#: A pandas DataFrame's text repr: its shape line, or a header row over index-numbered rows.
_FRAME_SHAPE = re.compile(r"\[\d+ rows x \d+ columns\]")
_FRAME_ROWS = re.compile(r"^\s*\d+\s{2,}\S", re.MULTILINE)
#: ipywidgets' text reprs, which a page without widgets shows in a panel's place.
_WIDGET_REPR = re.compile(r"^\s*(VBox|HBox|Tab|Accordion|interactive|Output)\(", re.MULTILINE)


def _text_outputs(soup: BeautifulSoup) -> list[str]:
    """The text of every plain-text, stdout and stderr output on the page."""
    out = []
    for node in soup.select(".jp-OutputArea-output"):
        mime = node.get("data-mime-type") or ""
        if mime in ("text/plain", "application/vnd.jupyter.stdout", "application/vnd.jupyter.stderr") or (
            not mime and node.find("pre") is not None
        ):
            out.append(node.get_text())
    return out


def _json_dump(text: str) -> bool:
    """True when ``text`` opens with a JSON object or list spread over lines (a ``json.dumps(..., indent=...)``)."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        value, end = json.JSONDecoder().raw_decode(stripped)
    except ValueError:
        return False
    return isinstance(value, (dict, list)) and "\n" in stripped[:end]


def _subtitles(soup: BeautifulSoup) -> list[list[str]]:
    """Each chart's subtitle lines, in page order (Vega draws one ``tspan`` per line, or one ``text``)."""
    charts = []
    for svg in soup.find_all("svg"):
        lines: list[str] = []
        for group in svg.find_all("g", class_="role-title-subtitle"):
            for text in group.find_all("text"):
                spans = text.find_all("tspan")
                lines += [s.get_text() for s in spans] if spans else [text.get_text()]
        charts.append(lines)
    return charts


def _specs(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    """Every Vega-Lite spec the executed notebook displayed."""
    found = []
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            for mime, data in (output.get("data") or {}).items():
                if "vegalite" in mime and isinstance(data, dict):
                    found.append(data)
    return found


def _empty_legend_entries(spec: dict[str, Any]) -> list[str]:
    """Colour-legend entries (a colour scale's explicit domain) that no row of the chart's data holds."""
    datasets = spec.get("datasets") or {}
    rows = [r for values in datasets.values() if isinstance(values, list) for r in values if isinstance(r, dict)]
    problems = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            color = (node.get("encoding") or {}).get("color") if isinstance(node.get("encoding"), dict) else None
            if isinstance(color, dict) and isinstance(color.get("field"), str) and color.get("legend") is not None:
                domain = (color.get("scale") or {}).get("domain")
                if isinstance(domain, list):
                    held = {str(r.get(color["field"])) for r in rows if color["field"] in r}
                    problems.extend(str(d) for d in domain if str(d) not in held)
            for key, value in node.items():
                if key != "datasets":
                    walk(value)

    walk(spec)
    return sorted(set(problems))


def page_problems(html: str | Path, executed: str | Path | None = None) -> list[str]:
    """What a reader should not see on a report page; ``[]`` for a clean page.

    Args:
        html: the exported page (its path, or its text).
        executed: the executed notebook (``.ipynb``) the page was made from, for the legends' check; None: skipped.

    Returns:
        One line per problem: code cells, In/Out prompts, a DataFrame's text repr or a JSON dump printed as text, a
        JupyterLab panel's placeholder or widget repr, subtitle lines repeated above chart after chart (a line of
        the first chart's subtitle block, after its provenance mark, drawn above a later chart; any line above
        most of the page's charts), a colour legend naming a series the chart has no data for.
    """
    text = (
        Path(html).read_text(encoding="utf-8") if isinstance(html, Path) or str(html).endswith(".html") else str(html)
    )
    soup = BeautifulSoup(text, "html.parser")
    problems = []
    for cls in _CODE_CLASSES:
        if soup.select(f".{cls}"):
            problems.append(f"code cell on the page ({len(soup.select('.' + cls))} x .{cls})")
    for cls in _PROMPT_CLASSES:
        if soup.select(f".{cls}"):
            problems.append(f"prompt on the page (.{cls})")
    body = str(soup.body or soup)
    if re.search(r"\b(In|Out)(&nbsp;|\s)?\[\d*\]:", body):
        problems.append("an In [n]: / Out [n]: prompt in the page's text")
    for output in _text_outputs(soup):
        first = output.strip().splitlines()[0][:80] if output.strip() else ""
        if _FRAME_SHAPE.search(output) or len(_FRAME_ROWS.findall(output)) >= 3:
            problems.append(f"a DataFrame printed as text: {first!r}")
        if _json_dump(output):
            problems.append(f"a JSON dump printed as text: {first!r}")
        if "JupyterLab only" in output or _WIDGET_REPR.search(output):
            problems.append(f"a JupyterLab panel's placeholder: {first!r}")
    for heading in soup.find_all(["h1", "h2", "h3"]):
        if "JupyterLab" in heading.get_text():
            problems.append(f"a section for JupyterLab only: {heading.get_text().strip(' ¶')!r}")
    charts = [lines for lines in _subtitles(soup) if lines]
    seen: dict[str, int] = defaultdict(int)
    for lines in charts:
        for line in dict.fromkeys(lines[1:]):
            seen[line] += 1
    block = set(charts[0][1:]) if charts else set()  # the page's first chart says the shared lines
    problems += [
        f"subtitle line of the first chart above {n - 1} more: {line[:70]!r}"
        for line, n in seen.items()
        if line in block and n > 1
    ]
    problems += [
        f"subtitle line above {n} of {len(charts)} charts: {line[:70]!r}"
        for line, n in seen.items()
        if line not in block and n >= 3 and 2 * n > len(charts)
    ]
    if executed is not None:
        notebook = json.loads(Path(executed).read_text(encoding="utf-8"))
        for spec in _specs(notebook):
            empty = _empty_legend_entries(spec)
            if empty:
                title = spec.get("title", {})
                name = title.get("text") if isinstance(title, dict) else title
                problems.append(f"legend of {name!r} lists {empty} with no data")
    return problems
