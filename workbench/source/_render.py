"""Render found definitions as HTML panes, one column per version, for notebooks and reports.

Every pane is headed by the version, the file path and the line range; its code is
highlighted with Pygments and numbered with the real file's line numbers. All
styling is inline (no stylesheet, no scripts, no fonts fetched), so the HTML
works in JupyterLab, in nbconvert's exported report and offline.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

if TYPE_CHECKING:
    from workbench.source._history import Change

#: Pygments style used for highlighting (a light theme that reads well on white).
DEFAULT_STYLE = "default"

_FONT = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace;"
_SANS = "font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif;"
_PANE = "border: 1px solid #d0d7de; border-radius: 6px; overflow: hidden; background: #ffffff; margin-bottom: 10px;"
_HEAD = (
    f"{_SANS} background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: 6px 10px; font-size: 13px;"
    " color: #1f2328;"
)
_SUB = "color: #57606a; font-size: 12px; margin-top: 2px; overflow-wrap: anywhere;"
_CODE = (
    f"{_FONT} font-size: 12px; line-height: 1.45; margin: 0; padding: 0 0 6px 0; background: #ffffff;"
    " color: #1f2328; overflow-x: auto; text-align: left;"
)
_ROW_CODE = (
    "margin: 0; padding: 0; border: 0; border-radius: 0; background: transparent; color: inherit;"
    " font: inherit; line-height: inherit; overflow: visible;"
)
_LINENO = (
    "position: sticky; left: 0; box-sizing: border-box; padding: 0 8px 0 4px; margin-right: 8px;"
    " text-align: right; color: #8c959f; background: #f6f8fa; border-right: 1px solid #d0d7de;"
    " white-space: pre; user-select: none; -webkit-user-select: none;"
)
_MISSING = f"{_SANS} padding: 14px 10px; color: #57606a; font-size: 13px; background: #fff8c5;"


@dataclasses.dataclass(frozen=True, repr=False)
class HTMLFragment:
    """A piece of self-contained HTML that notebooks display and reports embed.

    Attributes:
        html: the markup (inline styles only).
    """

    html: str

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html

    def __repr__(self) -> str:  # short, so a notebook's text/plain copy stays small
        return f"<HTMLFragment: {len(self.html)} characters of HTML>"

    def save(self, path: str | Path, *, title: str = "Source") -> Path:
        """Write a standalone UTF-8 HTML page holding the fragment; return its path."""
        target = Path(path)
        page = (
            f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>\n'
            f'<body style="margin: 16px;">\n{self.html}\n</body></html>\n'
        )
        target.write_text(page, encoding="utf-8")
        return target


def highlight_lines(source: str, *, first_line: int = 1, style: str = DEFAULT_STYLE, wrap: bool = True) -> str:
    """Pygments-highlighted ``source`` with line numbers starting at ``first_line``, inline styles only.

    Each source line is one row: an unselectable number (so copied code is clean)
    and the highlighted code. Pygments' HTML formatter closes its spans at every
    line end, so rows never split a tag.

    Args:
        source: Python source text (whole lines).
        first_line: number shown for the first line (the line in the real file).
        style: Pygments style name.
        wrap: wrap long lines under the code column (default True), or keep them on
            one line and let the block scroll sideways with the numbers pinned.

    Returns:
        HTML for one ``<div>`` block.
    """
    formatter = HtmlFormatter(nowrap=True, noclasses=True, style=style)
    body = highlight(source, PythonLexer(stripnl=False, ensurenl=True), formatter)
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    width = len(str(first_line + max(len(lines) - 1, 0))) + 2.5
    number = f'<span style="{_LINENO} flex: none; width: {width:.1f}ch;">'
    if wrap:
        row = "display: flex;"
        code = f"{_ROW_CODE} white-space: pre-wrap; overflow-wrap: anywhere; flex: 1 1 auto; min-width: 0;"
    else:
        row, code = "display: flex; width: max-content; min-width: 100%;", f"{_ROW_CODE} white-space: pre; flex: none;"
    # The code is a <pre> per row: HTML rewriters (nbconvert's HTML export parses and
    # re-serialises outputs with BeautifulSoup) collapse whitespace-only text between
    # tags, i.e. indentation, everywhere except inside <pre>.
    rows = [
        f'<div style="{row}">{number}{first_line + i}</span><pre style="{code}">{line}</pre></div>'
        for i, line in enumerate(lines)
    ]
    return f'<div style="{_CODE}">\n' + "\n".join(rows) + "\n</div>"


def source_panes(
    df: pd.DataFrame,
    *,
    layout: Literal["side-by-side", "stacked"] = "side-by-side",
    max_lines: int | None = 400,
    wrap: bool = True,
    style: str = DEFAULT_STYLE,
) -> HTMLFragment:
    """HTML panes of the definitions in ``df``: one column per version, matches stacked in it.

    Args:
        df: a frame from :func:`workbench.source.find_definition` (needs ``source``).
        layout: ``"side-by-side"`` (columns, default) or ``"stacked"`` (one under another).
        max_lines: show at most this many lines per match, with a note on what was
            cut (default 400; None shows everything).
        wrap: wrap long lines under the code column (default True), or scroll them
            sideways with the line numbers pinned.
        style: Pygments style name.

    Returns:
        An :class:`HTMLFragment` (displays itself in Jupyter).

    Raises:
        KeyError: ``df`` lacks the ``source`` column (searched with include_source=False).
    """
    if "source" not in df.columns:
        raise KeyError("source_panes needs the 'source' column; search with include_source=True")
    name = str(df.attrs.get("name", ""))
    searches = df.attrs.get("searches", {})
    first_seen: dict[str, str] = {}
    columns = []
    for version in dict.fromkeys(df["version"]):
        scanned = searches.get(version, {}).get("files_scanned")
        panes = [
            _pane(row, first_seen, name=name, scanned=scanned, max_lines=max_lines, wrap=wrap, style=style)
            for _, row in df[df["version"] == version].iterrows()
        ]
        columns.append("".join(panes))
    if layout == "side-by-side":
        cells = "".join(f'<div style="flex: 1 1 0; min-width: 0;">{c}</div>' for c in columns)
        body = f'<div style="display: flex; gap: 12px; align-items: flex-start; width: 100%;">{cells}</div>'
    elif layout == "stacked":
        body = "".join(f"<div>{c}</div>" for c in columns)
    else:
        raise ValueError(f"layout must be 'side-by-side' or 'stacked', not {layout!r}")
    title = ""
    if name:
        versions = ", ".join(str(v) for v in dict.fromkeys(df["version"]))
        title = (
            f'<div style="{_SANS} font-size: 15px; font-weight: 600; margin: 4px 0 8px;">'
            f"<code>{html.escape(name)}</code> in {html.escape(versions)}</div>"
        )
    return HTMLFragment(f'<div style="{_SANS}">{title}{body}</div>')


def _pane(
    row: pd.Series,
    first_seen: dict[str, str],
    *,
    name: str,
    scanned: object,
    max_lines: int | None,
    wrap: bool,
    style: str,
) -> str:
    """One version's pane for one match, or the 'not defined' pane."""
    version = html.escape(str(row["version"]))
    if not row["found"]:
        what = f"<code>{html.escape(name)}</code>" if name else "The name"
        searched = f" (searched {scanned} Python files)" if isinstance(scanned, int) else ""
        return (
            f'<div style="{_PANE}"><div style="{_HEAD}"><b>{version}</b></div>'
            f'<div style="{_MISSING}">{what} is not defined in {version}{searched}.</div></div>'
        )
    lines = str(row["source"]).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    start, end = int(row["start_line"]), int(row["end_line"])
    note = ""
    if max_lines is not None and len(lines) > max_lines:
        note = (
            f'<div style="{_SUB} padding: 4px 10px 8px;">... {len(lines) - max_lines} more lines '
            f"({start + max_lines}-{end}) not shown; pass max_lines=None to see them.</div>"
        )
        lines = lines[:max_lines]
    code = highlight_lines("\n".join(lines) + "\n", first_line=start, style=style, wrap=wrap)
    sha = str(row["sha256"])
    same = first_seen.setdefault(sha, str(row["version"]))
    same_note = f" &middot; identical to {html.escape(same)}" if same != str(row["version"]) else ""
    sub = f"{html.escape(str(row['kind']))} <code>{html.escape(str(row['qualname']))}</code>"
    if isinstance(row.get("signature"), str) and row["signature"]:
        sub += f"<code>{html.escape(row['signature'])}</code>"
    head = (
        f'<div style="{_HEAD}"><b>{version}</b> &middot; <code>{html.escape(str(row["path"]))}</code>'
        f" &middot; lines {start}-{end}"
        f'<div style="{_SUB}">{sub} &middot; sha256 {html.escape(sha[:12])}{same_note}</div></div>'
    )
    return f'<div style="{_PANE}">{head}{code}{note}</div>'


_DIFF_ROW = {"-": "background: #ffebe9;", "+": "background: #e6ffec;", " ": ""}
_DIFF_MARK = "flex: none; width: 2ch; text-align: center; user-select: none; -webkit-user-select: none;"


def diff_panes(changes: Sequence[Change], *, style: str = DEFAULT_STYLE, wrap: bool = True) -> HTMLFragment:
    """HTML panes of unified diffs (from :func:`workbench.source.history_diffs`), one per change.

    Each pane is headed by the two releases and files; each row shows the old and
    the new file's line number (blank on the side a line does not exist), a ``-`` or
    ``+`` mark on a red or green ground, and the highlighted code.

    Args:
        changes: the changes to show, in order.
        style: Pygments style name.
        wrap: wrap long lines (default True) or scroll them sideways.

    Returns:
        An :class:`HTMLFragment`; a note when there are no changes.
    """
    if not changes:
        return HTMLFragment(f'<div style="{_MISSING}">No body changed in the releases compared.</div>')
    return HTMLFragment("".join(_diff_pane(change, style=style, wrap=wrap) for change in changes))


def _diff_pane(change: Change, *, style: str, wrap: bool) -> str:
    formatter = HtmlFormatter(nowrap=True, noclasses=True, style=style)
    lexer = PythonLexer(stripnl=False, ensurenl=True)
    old_html = highlight(change.old_source, lexer, formatter).split("\n")
    new_html = highlight(change.new_source, lexer, formatter).split("\n")
    last = max(change.old_start + change.old_source.count("\n"), change.new_start + change.new_source.count("\n"))
    width = len(str(last)) + 2
    number = f"{_LINENO} flex: none; width: {width}ch; margin-right: 0;"
    code_css = (f"{_ROW_CODE} white-space: pre-wrap; overflow-wrap: anywhere; flex: 1 1 auto; min-width: 0;" if wrap
                else f"{_ROW_CODE} white-space: pre; flex: none;")  # fmt: skip
    rows, old_no, new_no = [], 0, 0
    for line in change.diff.splitlines()[2:]:
        if line.startswith("@@"):
            old_no, new_no = (int(part[1:].split(",")[0]) for part in line.split(" ")[1:3])
            rows.append(f'<div style="{_SANS} background: #ddf4ff; color: #57606a; padding: 2px 10px;">'
                        f"{html.escape(line)}</div>")  # fmt: skip
            continue
        mark, text = line[:1], line[1:]
        if mark == "-":
            left, right, code = str(old_no), "", old_html[old_no - change.old_start]
            old_no += 1
        elif mark == "+":
            left, right, code = "", str(new_no), new_html[new_no - change.new_start]
            new_no += 1
        else:
            left, right, code = str(old_no), str(new_no), new_html[new_no - change.new_start]
            old_no, new_no = old_no + 1, new_no + 1
        code = code if code or not text else html.escape(text)
        rows.append(
            f'<div style="display: flex; {_DIFF_ROW.get(mark, "")}"><span style="{number}">{left}</span>'
            f'<span style="{number} margin-right: 4px;">{right}</span>'
            f'<span style="{_DIFF_MARK}">{html.escape(mark)}</span>'
            f'<pre style="{code_css}">{code}</pre></div>'
        )
    where = (f"<code>{html.escape(change.old_path)}</code> &rarr; <code>{html.escape(change.new_path)}</code>"
             if change.moved else f"<code>{html.escape(change.new_path)}</code>")  # fmt: skip
    head = (
        f'<div style="{_HEAD}"><b>{html.escape(change.old_version)} &rarr; {html.escape(change.new_version)}</b>'
        f" &middot; {where}"
        f'<div style="{_SUB}"><code>{html.escape(change.qualname)}</code>'
        f"{' &middot; moved and changed' if change.moved else ' &middot; changed'}</div></div>"
    )
    return f'<div style="{_PANE}">{head}<div style="{_CODE}">' + "\n".join(rows) + "</div></div>"
