"""What ``notebooks/variants.ipynb`` shows: the variants and the findings as tables, and patch diffs.

HTML with inline styles only (no scripts, no fetched fonts), so it works in
JupyterLab, in exported reports and offline, like :mod:`workbench.source._render`.
Table cells wrap (``white-space: normal``): descriptions and stand-in labels are
shown whole, where a DataFrame's display would cut them at 50 characters.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.variants._variant import Variant, list_variants, load_variant
from workbench.source import HTMLFragment, diff_panes
from workbench.variants._check import variants_table
from workbench.variants._findings import SEVERITIES, Finding, count_line, sort_findings
from workbench.variants._patchcheck import patched_changes, trial_apply
from workbench.variants._patchfile import load_patch

_SANS = "font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif; font-size: 13px;"
_COLOURS = {"error": "#cf222e", "warning": "#9a6700", "info": "#57606a"}
_CELL = (
    "border-bottom: 1px solid #d0d7de; padding: 4px 8px; vertical-align: top; text-align: left; white-space: normal;"
)
_TABLE = "border-collapse: collapse;"
#: Columns of prose get room to read (the others are as wide as their longest word).
_WIDE = {"description": " min-width: 14em;", "sim_stand_in": " min-width: 14em;"}


def _breakable(text: str) -> str:
    """``text`` escaped, with line-break opportunities after ``_`` and ``=`` (``SGLANG_SPEC_OFF_ABOVE=8``)."""
    return html.escape(text).replace("_", "_<wbr>").replace("=", "=<wbr>")


def variants_html(variants: Sequence[str | Path | Variant] | None = None) -> HTMLFragment:
    """The :func:`~workbench.variants._check.variants_table` of ``variants`` as an HTML table with wrapping cells.

    Args:
        variants: names (``data/variants/<name>.toml``), files or :class:`Variant` objects
            (default: every shipped variant).
    """
    table = variants_table(variants)
    columns = [str(c) for c in table.columns]
    head = "".join(f'<th style="{_CELL}">{_breakable(c)}</th>' for c in columns)
    rows = []
    for row in table.itertuples(index=False):
        cells = [(_breakable(str(v)) if c == "env" else html.escape(str(v)), _CELL + _WIDE.get(c, ""))
                 for c, v in zip(columns, row)]  # fmt: skip
        rows.append("<tr>" + "".join(f'<td style="{style}">{text}</td>' for text, style in cells) + "</tr>")
    body = "".join(rows)
    return HTMLFragment(f'<div style="{_SANS}"><table style="{_TABLE}"><thead><tr>{head}</tr></thead>'
                        f"<tbody>{body}</tbody></table></div>")  # fmt: skip


def findings_html(findings: Sequence[Finding], *, min_severity: str = "info") -> HTMLFragment:
    """A table of findings (errors first, severity in colour) headed by the counts.

    The counts read as the CLI's (:func:`~workbench.variants._findings.count_line`:
    ``info`` findings are counted as notes); a finding about the variant as a whole
    (no flag) has an empty flag cell.

    Args:
        findings: what :func:`workbench.variants.check_variants` returned.
        min_severity: leave out findings milder than this (``"error"``, ``"warning"``, ``"info"``).
    """
    keep = SEVERITIES[: SEVERITIES.index(min_severity) + 1]  # type: ignore[arg-type]
    rows = [f for f in sort_findings(findings) if f.severity in keep]
    counts = count_line(findings)
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("severity", "variant", "flag", "message"))
    body = "".join(_finding_row(f) for f in rows)
    return HTMLFragment(f'<div style="{_SANS}"><p><b>{counts}</b></p><table style="{_TABLE}">'
                        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")  # fmt: skip


def _finding_row(f: Finding) -> str:
    flag = f"<code>{html.escape(f.flag)}</code>" if f.flag else ""  # no empty code pill without a flag
    fix = f"<br><b>Fix:</b> {html.escape(f.fix)}" if f.fix else ""
    return (f'<tr><td style="{_CELL} color: {_COLOURS[f.severity]}; font-weight: 600;">{f.severity}</td>'
            f'<td style="{_CELL}">{html.escape(f.variant)}</td><td style="{_CELL}">{flag}</td>'
            f'<td style="{_CELL}">{html.escape(f.problem)}{fix}</td></tr>')  # fmt: skip


def patch_diffs_html(
    variants: Sequence[str | Path | Variant] | None = None,
    *,
    sglang_version: str | None = None,
    host: str = "local",
) -> HTMLFragment:
    """For each patched variant: what its patch says, whether it applies, and the functions it changes.

    Args:
        variants: variants to show (default: every shipped one); unpatched ones are skipped.
        sglang_version: the release to apply the patches to (default: each variant's base).
        host: the host a ``host:`` checkout base refers to.
    """
    parts = []
    for item in list(variants) if variants else list_variants():
        v = item if isinstance(item, Variant) else load_variant(item)
        if not v.patches:
            continue
        title = f'<h4 style="margin: 12px 0 4px;">{html.escape(v.name)}: {", ".join(p.name for p in v.patches)}</h4>'
        try:
            trial = trial_apply(v, version=sglang_version, host=host)
        except WorkbenchError as exc:
            parts.append(f"{title}<p>Could not try the patches: {html.escape(str(exc))}</p>")
            continue
        status = "".join(
            f"<p>{html.escape(c.patch)}: " + ("applies cleanly to " + html.escape(trial.target) if c.ok
                                              else f'<b style="color: {_COLOURS["error"]}">'
                                              f"{html.escape(c.message)}</b>") + "</p>"
            for c in trial.checks
        )  # fmt: skip
        headers = [load_patch(p).header for p in v.patches]
        notes = "".join(f'<pre style="white-space: pre-wrap; background: #f6f8fa; padding: 6px;">'
                        f"{html.escape(h)}</pre>" for h in headers if h)  # fmt: skip
        changes = patched_changes(trial)
        parts.append(title + status + notes + (diff_panes(changes).html if changes else ""))
    if not parts:
        return HTMLFragment(f'<div style="{_SANS}">None of these variants has patches.</div>')
    return HTMLFragment(f'<div style="{_SANS}">' + "".join(parts) + "</div>")
