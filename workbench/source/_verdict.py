"""The source report's answer: where a name is defined in each version, how it changed, who uses it.

Pure text from the tables :func:`workbench.source.inspect_name` returns (definitions,
references, history); nothing is read or run here. Names, paths and versions (a tree's label is
the user's text) are placed through :mod:`workbench.markup`, so they display as written.
"""

from __future__ import annotations

import pandas as pd

from workbench.markup import code, literal
from workbench.source._history import history_events

__all__ = ["inspection_verdict"]


def _where(row: pd.Series) -> str:
    return f"{code(row['path'])} lines {int(row['start_line'])}–{int(row['end_line'])} ({literal(row['kind'])})"


def inspection_verdict(
    name: str, definitions: pd.DataFrame, references: pd.DataFrame | None = None, history: pd.DataFrame | None = None
) -> str:
    """Markdown: the answer to "where is ``name`` defined, and how did it change?".

    Args:
        name: the name looked up (bare or ``Class.method``).
        definitions: :func:`workbench.source.find_definition`'s table (``version``, ``found``,
            ``path``, ``start_line``, ``end_line``, ``kind``, ``sha256``).
        references: the references table (``version``, ``path``), or None.
        history: :func:`workbench.source.definition_history`'s table, or None.

    Returns:
        A provenance line, then one line each: where it is defined per version (and where it is
        not), whether the versions' texts are identical, the history's events over the selected
        releases, the references per version, and the caveats. Example:
        ``"- **Defined** in 0.5.9: `srt/managers/utils.py` lines 182–206 (function)"``.
    """
    versions = list(dict.fromkeys(definitions["version"].astype(str)))
    lines = [
        f"**Verdict** — {code(name)} read from SGLang's source ({literal(', '.join(versions))}): parsed with `ast`, "
        "nothing imported or run.",
        "",
    ]
    found = definitions[definitions["found"].astype(bool)]
    where = [
        f"{literal(v)}: " + "; ".join(_where(r) for _, r in g.iterrows())
        for v, g in found.groupby(found["version"].astype(str), sort=False)
    ]
    if where:
        lines.append(f"- **Defined** in {' — '.join(where)}.")
    missing = [v for v in versions if v not in set(found["version"].astype(str))]
    if missing:
        lines.append(f"- **Not defined** in {literal(', '.join(missing))}.")
    digests = found.groupby(found["version"].astype(str), sort=False)["sha256"].first()
    if len(digests) > 1:
        same = digests.nunique() == 1
        lines.append(
            f"- **Text**: {'identical in every version shown' if same else 'differs between versions'} "
            f"({', '.join(f'{literal(v)} {d[:8]}' for v, d in digests.items())}, sha256)."
        )
    if history is not None and len(history):
        events = history_events(history)
        said = "; ".join(
            f"{r.status} in {literal(r.version)}"
            + (f" (from {code(r.previous_path)})" if r.moved and r.previous_path else "")
            for r in events.itertuples()
        )
        span = f"{literal(history['version'].iloc[0])} to {literal(history['version'].iloc[-1])}"
        lines.append(f"- **History** over {len(history)} selected releases ({span}): {said or 'no change'}.")
    if references is not None:
        refs = references[references["found"].astype(bool)] if "found" in references else references
        per = refs.groupby(refs["version"].astype(str), sort=False).agg(n=("path", "size"), files=("path", "nunique"))
        if len(per):
            lines.append(
                "- **Referenced** (calls, imports, attribute reads): "
                + "; ".join(
                    f"{literal(v)}: {r.n} in {r.files} file{'s' if r.files != 1 else ''}" for v, r in per.iterrows()
                )
                + "."
            )
    lines.append(
        "- **Caveats**: the history compares the listed releases only (a change in a release not listed "
        "shows at the next listed one); references are matched by the name's last part, so a method of "
        "the same name in another class counts too."
    )
    return "\n".join(lines)


def inspection_opening(name: str, definitions: pd.DataFrame, history: pd.DataFrame | None = None) -> str:
    """The report's first lines: at most five short sentences on where ``name`` is defined, how it
    changed, the caveat that matters most, and that nothing was measured (markdown).

    Args:
        name, definitions, history: as :func:`inspection_verdict`.
    """
    found = definitions[definitions["found"].astype(bool)]
    versions = list(dict.fromkeys(definitions["version"].astype(str)))
    sentences = []
    if len(found):
        first = found.groupby(found["version"].astype(str), sort=False).first()
        where = "; ".join(
            f"{literal(v)} in {code(r['path'])} lines {int(r['start_line'])}–{int(r['end_line'])}"
            for v, r in first.iterrows()
        )
        sentences.append(f"{code(name)} is defined in {where}.")
    missing = [v for v in versions if v not in set(found["version"].astype(str))]
    if missing:
        sentences.append(f"It is not defined in {', '.join(literal(v) for v in missing)}.")
    if history is not None and len(history):
        events = history_events(history)
        said = ", ".join(f"{r.status} in {literal(r.version)}" for r in events.itertuples()) or "unchanged"
        sentences.append(f"Over {len(history)} selected releases it was {said}.")
    sentences.append("Only the listed releases are compared: a change in another shows at the next listed one.")
    sentences.append("Read from SGLang's released source with `ast`: nothing was run or measured.")
    return "**In short** — " + " ".join(sentences[:5])
