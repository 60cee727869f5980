"""``<out_dir>/index.html``: one offline page listing the reports in an output folder.

The page opens with the answer: the **In short** paragraph of the first report, in reading order
(:data:`READING_ORDER`: spec_vs_baseline first), that displayed one, whole, with a link to its report.
Then one row per report (``<stem>.html`` beside its executed ``<stem>.ipynb``), in reading order: its
title (the notebook's first markdown heading), what it answers (the **In short** paragraph a cell
displayed, else the opening paragraph of the first markdown cell, else its first line; in whole
sentences, never cut inside one), the model, GPU and workload it measured (``_scope.py``: from the
report's own runs or parameters) and a relative link. Under the table, a paragraph says why two
reports can disagree, naming the models, GPUs and workloads that differ between these reports.
Nothing on it is fetched.
"""

from __future__ import annotations

import dataclasses
import html
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from pathlib import Path

import nbformat

from workbench.report._scope import ReportScope, report_parameters, report_scope, scope_differences

__all__ = ["READING_ORDER", "IndexEntry", "brief", "disagreement", "index_entry", "index_page", "write_index"]

INDEX_NAME = "index.html"

#: The order a reader takes the reports in (stems; the rest follow alphabetically): the answer first (where
#: speculation pays against plain decoding), then when to stop drafting, which settings to try, the workloads side
#: by side, whether the variants start and are like-for-like, how far the simulator is trusted, and SGLang's source.
READING_ORDER = (
    "spec_vs_baseline",
    "dynamic_disable",
    "what_if",
    "workloads",
    "variants",
    "calibration",
    "inspect_source",
)

#: The lead of a verdict's first paragraph (``workbench.studies._openings.LEAD`` and the like).
_IN_SHORT = re.compile(r"^\s*\*\*In short\*\*\s*[—:-]?\s*", re.IGNORECASE)
_MARKDOWN_PUNCT = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|~])")
_MARKDOWN_EMPHASIS = re.compile(r"\*\*|__|`")
_MARKDOWN_ITALIC = re.compile(r"(?<![\w*\\])[*_]([^*_\s][^*_]*)[*_](?![\w*])")
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
#: A sentence ends at ``.``, ``!`` or ``?`` followed by a space and a capital, a code mark or emphasis (variant
#: names open sentences in backquotes: split before the marks are dropped).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_(\[])")
#: About how long a row's summary is, in characters: whole sentences up to it, the first always whole.
SUMMARY_CHARS = 320


@dataclasses.dataclass(frozen=True)
class IndexEntry:
    """One report's row on the index page.

    Attributes:
        href: the page's path relative to the index (``spec_vs_baseline.html``).
        title: the notebook's first heading, or the file's stem.
        summary: what the report answers, plain text (may be empty).
        failed: whether the run failed (the page holds partial output).
        scope: the model, GPU and workload it measured (empty fields where it names none).
        answer: its **In short** paragraph whole, plain text (``""``: it displayed none); the page opens with the
            first report's.
    """

    href: str
    title: str
    summary: str
    failed: bool = False
    scope: ReportScope = ReportScope()
    answer: str = ""


def _plain(markdown: str) -> str:
    """Markdown as the plain text a reader sees: escapes, emphasis, code marks and link targets dropped."""
    text = _MARKDOWN_LINK.sub(r"\1", markdown)
    text = _MARKDOWN_ITALIC.sub(r"\1", _MARKDOWN_EMPHASIS.sub("", text))
    text = _MARKDOWN_PUNCT.sub(r"\1", text)
    return " ".join(text.split())


def brief(markdown: str, limit: int = SUMMARY_CHARS) -> str:
    """Whole sentences of a markdown paragraph as plain text, as many as fit in about ``limit`` characters: the
    first always (however long: a sentence is never cut), then each next one while the total stays within
    ``limit``. Nothing is cut inside a sentence, so no word is ever cut."""
    sentences = [_plain(x) for x in _SENTENCE_END.split(" ".join(markdown.split()))]
    sentences = [x for x in sentences if x]
    if not sentences:
        return ""
    kept = [sentences[0]]
    for sentence in sentences[1:]:
        if len(" ".join([*kept, sentence])) > limit:
            break
        kept.append(sentence)
    return " ".join(kept)


def _paragraphs(markdown: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", markdown) if p.strip()]


def _markdown_outputs(cell: nbformat.NotebookNode) -> Iterable[str]:
    for output in cell.get("outputs", ()):
        text = output.get("data", {}).get("text/markdown")
        if text:
            yield text if isinstance(text, str) else "".join(text)


def index_entry(notebook: nbformat.NotebookNode, href: str) -> IndexEntry:
    """The index row of one executed notebook: the node's own text, and its scope from the runs or simulator
    profile its recorded parameters name (:func:`workbench.report._scope.report_scope`).

    Args:
        notebook: the executed notebook.
        href: its HTML page's path relative to the index.
    """
    markdown = [
        c.source
        for c in notebook.cells
        if c.cell_type == "markdown" and c.source.strip() and "papermill-error-cell" not in c.source
    ]  # papermill's notes in a failed notebook
    first = markdown[0] if markdown else ""
    lines = [line.strip() for line in first.splitlines() if line.strip()]
    heading = next((line for line in lines if line.startswith("#")), "")
    title = _plain(heading.lstrip("#")) or Path(urllib.parse.unquote(href)).stem
    lead = ""
    for cell in notebook.cells:  # the verdict's "In short" paragraph, where a cell displayed one
        for text in _markdown_outputs(cell):
            lead = next((_IN_SHORT.sub("", p) for p in _paragraphs(text) if _IN_SHORT.match(p)), "")
            if lead:
                break
        if lead:
            break
    if lead:
        summary = brief(lead)
    else:  # else the opening paragraph under the heading, else the first line
        opening = [p for p in _paragraphs(first) if not p.lstrip().startswith("#")]
        summary = brief(opening[0]) if opening else _plain(lines[0].lstrip("#")) if lines else ""
    record = notebook.metadata.get("workbench", {})
    failed = record.get("status") == "failed"
    return IndexEntry(
        href=href,
        title=title,
        summary=summary,
        failed=failed,
        scope=report_scope(report_parameters(record)),
        answer=_plain(lead),
    )


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Reports</title>
<style>
body {{ font-family: sans-serif; margin: 24px; max-width: 70em; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ text-align: left; vertical-align: top; padding: 6px 10px; border-bottom: 1px solid #ddd; }}
.note {{ color: #555; }}
.failed {{ color: #b00020; font-weight: bold; }}
.scope {{ white-space: nowrap; }}
.sim {{ color: #8a5a00; }}
.answer {{ font-size: 1.1em; line-height: 1.5; border-left: 4px solid #2a6; padding: 4px 14px; margin: 0 0 8px 0; }}
</style>
</head>
<body>
<h1>Reports</h1>
{answer}
<h2>Every report, in the order to read them</h2>
<table>
<thead><tr><th>Report</th><th>What it answers</th><th>Model</th><th>GPU</th><th>Workload</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
<p class="note">{disagree}</p>
</body>
</html>
"""


#: What a report that names no model, GPU or workload shows in those cells.
_NO_SCOPE = "none: measures no model"


def disagreement(entries: Sequence[IndexEntry]) -> str:
    """Why two of these reports can disagree, as plain text: the models, GPUs and workloads that differ
    between them (each named with its reports), or, where they agree, what would make them differ."""
    names = {Path(urllib.parse.unquote(e.href)).stem: e.scope for e in entries}
    differ = scope_differences(names)
    simulated = sorted(name for name, scope in names.items() if scope.simulated)
    said = (
        "Two reports can disagree without either being wrong: each answers for the model, GPU and workload it "
        "measured (the columns above, read from each report's own runs or parameters; its header and opening "
        "say the rest), and where speculation pays moves with all three (a larger model or a slower GPU makes a "
        "decode step costlier, a longer output gives drafts more steps to pay back)."
    )
    if differ:
        said += " These reports differ in " + "; and in ".join(differ) + "."
    elif sum(s.measured for s in names.values()) > 1:
        said += (
            " These reports share their model, GPU and workload, so a difference between them comes from "
            "what each varies (its variants, loads, repeats)."
        )
    if simulated:
        said += f" Figures of {', '.join(simulated)} come from the simulator, on the GPU's data sheet, not from a card."
    return said


def _scope_cells(scope: ReportScope) -> str:
    if not scope.measured:
        return f'<td class="scope" colspan="3">{_NO_SCOPE}</td>'
    gpu = html.escape(scope.gpu or "not recorded") + (
        ' <span class="sim">(simulated)</span>' if scope.simulated else ""
    )
    return (
        f"<td>{html.escape(scope.model or 'not recorded')}</td><td>{gpu}</td>"
        f"<td>{html.escape(scope.workload or 'not recorded')}</td>"
    )


def _answer(entries: Sequence[IndexEntry]) -> str:
    """The page's opening: the first report's **In short** paragraph whole (in the entries' order), with a link to
    it and the scope it answers for; a line saying where to start when no report displayed one."""
    first = next((e for e in entries if e.answer and not e.failed), None)
    if first is None:
        return '<p class="note">No report here opens with an answer; start with the first one below.</p>'
    scope = [
        f"{words} {value}"
        for words, value in (("model", first.scope.model), ("GPU", first.scope.gpu), ("workload", first.scope.workload))
        if value
    ]
    said = f" It answers for {'; '.join(scope)}." if scope else ""
    return (
        f'<h2>The answer</h2>\n<p class="answer">{html.escape(first.answer)}</p>\n'
        f'<p class="note">From <a href="{html.escape(first.href)}">{html.escape(first.title)}</a>, where the '
        f"verdict, charts and tables behind it are.{html.escape(said)}</p>"
    )


def index_page(entries: Sequence[IndexEntry]) -> str:
    """The index page's HTML (pure; every text escaped, links relative, nothing fetched): the answer, then a row
    per report in the given order, then why two reports can disagree."""
    rows = []
    for entry in entries:
        failed = ' <span class="failed">FAILED (partial output)</span>' if entry.failed else ""
        rows.append(
            f'<tr><td><a href="{html.escape(entry.href)}">{html.escape(entry.title)}</a>{failed}</td>'
            f"<td>{html.escape(entry.summary)}</td>{_scope_cells(entry.scope)}</tr>"
        )
    if not rows:
        rows.append('<tr><td colspan="5">No reports in this folder.</td></tr>')
    return _PAGE.format(rows="\n".join(rows), disagree=html.escape(disagreement(entries)), answer=_answer(entries))


def write_index(out_dir: str | Path, order: Sequence[str] = READING_ORDER) -> Path:
    """Write ``<out_dir>/index.html`` over every report in ``out_dir``.

    A report is a ``<stem>.html`` whose executed ``<stem>.ipynb`` lies beside it; an unreadable
    notebook still gets a row (its stem as title).

    Args:
        out_dir: the reports folder.
        order: stems listed first, in this order (default: :data:`READING_ORDER`, what a reader takes first,
            not the order the notebooks ran); the rest follow alphabetically.

    Returns:
        The index's path.
    """
    folder = Path(out_dir)
    stems = sorted(p.stem for p in folder.glob("*.html") if p.name != INDEX_NAME and p.with_suffix(".ipynb").is_file())
    rank = {stem: i for i, stem in enumerate(order)}
    stems.sort(key=lambda stem: (rank.get(stem, len(rank)), stem))
    entries = []
    for stem in stems:
        href = urllib.parse.quote(f"{stem}.html")
        try:
            notebook = nbformat.read(str(folder / f"{stem}.ipynb"), as_version=4)
        except (OSError, ValueError):
            entries.append(IndexEntry(href=href, title=stem, summary=""))
            continue
        entries.append(index_entry(notebook, href))
    target = folder / INDEX_NAME
    target.write_text(index_page(entries), encoding="utf-8")
    return target
