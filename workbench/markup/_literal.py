"""Data placed in markdown so that it displays literally: the one escaping helper of every report.

A report's words (a verdict, comparability, findings) are markdown that the workbench writes,
with data placed inside: variant names, labels, settings, imported fields such as a
``sglang.bench_serving`` tag or a server's ``model_path``, error messages. Markdown passes raw HTML
through, so data placed as it is could carry ``<img src=x onerror=...>`` into a shared report,
and ``*``, ``_``, ``[...](...)`` or ``$`` in a name would turn into emphasis, links or math.

- :func:`literal` for data in running text: HTML's special characters and markdown's punctuation
  are backslash-escaped (CommonMark 0.31 section 2.4: any ASCII punctuation may be), so the text
  shows exactly as it is in JupyterLab, nbconvert (with or without raw HTML) and any CommonMark
  renderer. Not entities: a renderer that escapes raw HTML (mistune's ``escape=True``) shows an
  entity as its source, ``&lt;``.
- :func:`code` for data shown as code (``` `max-running-requests` ```): a code span whose fence
  is longer than any run of backticks inside, so nothing inside ends it early.

HTML built by hand is escaped with :func:`html.escape` where it is built; tables are pandas'
HTML, which escapes. The report export is the second line: it renders markdown *outputs* with
raw HTML escaped and harmful link targets dropped (``workbench.report``'s ``export_html``).
"""

from __future__ import annotations

import re

__all__ = ["code", "literal"]

#: Characters that markdown, its GFM tables and strike-through, or nbconvert's math give a meaning
#: anywhere in a line; ``_`` only where it could open or close emphasis (not between two letters
#: or digits, CommonMark 0.31 section 6.2), so ``max_running_requests`` stays as it is.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*\[\]|~$<>&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
#: A heading's mark at the start of a value (a value placed after ``- `` would head a list item).
_HEADING = re.compile(r"^(\s*)#")
_LINE_BREAKS = re.compile(r"[\r\n]+")


def literal(value: object) -> str:
    """``value`` as markdown text that displays literally (``str(value)``, on one line).

    HTML's ``& < >`` and markdown's punctuation (``\\ ` * [ ] | ~ $``, and ``_`` outside a word)
    are backslash-escaped, as is a ``#`` the value starts with; line breaks become spaces, so a
    value cannot start a block (heading, list, table row) of its own (builders place values after
    their own words or list marks, never first on a line). Letters, digits, ``-``, ``.`` and ``_``
    inside a word stay as they are, so a valid name (:mod:`workbench.names`) is unchanged.

    Example: ``literal("<img src=x>](javascript:alert(1))")`` is
    ``"\\<img src=x\\>\\](javascript:alert(1))"``, shown as the text itself.
    """
    text = _LINE_BREAKS.sub(" ", str(value))
    text = _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)
    return _HEADING.sub(r"\1\\#", text)


def code(value: object) -> str:
    """``value`` as a markdown code span (``str(value)``, on one line) that nothing inside can end.

    Inside a code span markdown shows everything literally (HTML too) except a backtick run of
    the fence's length; the fence here is one backtick longer than the longest run inside, padded
    with spaces when the text starts or ends with a backtick (CommonMark 0.31, section 6.1).
    """
    text = _LINE_BREAKS.sub(" ", str(value))
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"
