"""Data placed in markdown displays literally (workbench.markup), and exported markdown outputs carry no markup.

Rendered with nbconvert's own markdown renderer (mistune, as ``workbench report`` exports), with raw
HTML passed through (JupyterLab-like) and escaped (the export), so each case is checked where it
is shown.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from workbench.markup import code, literal
from workbench.report import export_html

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "x](javascript:alert(1))",
    "[click](javascript:alert(1))",
    "**bold** _em_ *em* ~~gone~~ $x^2$ a|b `tick` \\back",
    "&lt;entity&gt; & amp",
    "# heading",
    "line one\nline two",
]


def _render(markdown: str, *, escape: bool) -> str:
    return MarkdownWithMath(renderer=IPythonRenderer(escape=escape)).render(markdown)


def _text_of(html: str) -> str:
    import html as h
    import re

    return h.unescape(re.sub(r"<[^>]+>", "", html)).strip()


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("escape", [False, True])
def test_literal_text_renders_as_exactly_the_value(value: str, escape: bool) -> None:
    html = _render(f"- **{literal(value)}** against base", escape=escape)
    assert _text_of(html) == f"{value.replace(chr(10), ' ')} against base"
    assert "<img" not in html and "<script" not in html and "href" not in html and "<em>" not in html


@pytest.mark.parametrize("value", [*HOSTILE, "``double`` and `single`", "`", " "])
def test_code_spans_hold_anything(value: str) -> None:
    html = _render(f"setting {code(value)} differs", escape=False)
    assert html.count("<code>") == 1 and "<img" not in html and "<script" not in html
    shown = _text_of(html.split("<code>")[1].split("</code>")[0])
    assert shown.strip() == value.replace("\n", " ").strip()


def test_valid_names_and_setting_names_are_unchanged() -> None:
    for name in ("eagle3-topk4", "baseline-cap48", "max_running_requests", "v0.5.9", "a_b.c-d"):
        assert literal(name) == name
    assert code("max-running-requests") == "`max-running-requests`"


def test_exported_markdown_outputs_escape_raw_html_and_drop_script_links(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("Author's text with <b>raw html</b>."),
        nbformat.v4.new_code_cell(
            "show()",
            outputs=[
                nbformat.v4.new_output(
                    "display_data",
                    data={
                        "text/markdown": "**Verdict** <img src=x onerror=alert(1)> "
                        "[click](javascript:alert(2)) <script>alert(3)</script>",
                        "text/plain": "<Markdown>",
                    },
                )
            ],
        ),
    ]
    html = export_html(nb, tmp_path / "page.html").read_text()
    assert "<b>" in html and "&lt;b&gt;" not in html  # the notebook author's markdown renders as nbconvert does
    assert "<strong>Verdict</strong>" in html  # markdown still renders
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html and "<script>alert(3)" not in html
    assert 'href="javascript:' not in html and "#harmful-link" in html
