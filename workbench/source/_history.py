"""How one definition changed over a range of SGLang releases: where it lived, and what changed.

:func:`definition_history` searches every release in a range (see
:mod:`workbench.source._versions` for the range forms) and pairs each release's
definitions with the previous release's by qualified name, so a function that
moved to another file is followed, not lost. A definition renamed in the same release
it moved (as ``auto_choose_speculative_params`` in ``srt/server_args.py`` of 0.5.12
became ``_auto_choose_speculative_params`` in ``srt/arg_groups/speculative_hook.py`` by
0.5.19) is followed too: where the name disappears, the release's definitions of its
other spellings (a leading underscore added or dropped, and any ``also_named``) continue
it when their body is similar enough (:data:`RENAME_SIMILARITY`); the row says
``renamed`` and ``previous_qualname``. :func:`history_diffs` turns the
releases where a body changed into unified diffs numbered with the real files'
line numbers.

Facts the tests check (SGLang wheels from PyPI): ``get_alloc_len_per_decode`` is
absent up to 0.5.8.post1, first defined in 0.5.9 in ``srt/managers/utils.py``,
moved to ``srt/mem_cache/common.py`` in 0.5.13 and to
``srt/mem_cache/allocation_sizing.py`` in 0.5.16.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from typing import Any

import pandas as pd

from workbench.source._definitions import SEARCH_TIMEOUT_S, find_definition, line_ranges, short_digest
from workbench.source._versions import VersionSpec, select_versions

#: Columns of :func:`definition_history`'s frame, in order.
HISTORY_COLUMNS = [
    "version", "found", "status", "path", "start_line", "end_line", "qualname", "kind", "signature", "sha256",
    "changed_since_previous", "moved", "previous_version", "previous_path", "previous_sha256", "renamed",
    "previous_qualname", "source",
]  # fmt: skip
#: ``status`` values: the first release of the range; absent (before and now); first seen
#: after absent; gone after present; same body, same file; body changed; file changed; both.
STATUSES = ("first", "absent", "added", "removed", "unchanged", "changed", "moved", "moved+changed")
#: Lines of context around each change in :func:`history_diffs`.
DIFF_CONTEXT = 3
#: How alike (difflib's ratio of the bodies without their ``def`` line, 0 to 1) a definition under
#: another name must be to the one that disappeared to continue its history. The rename of
#: ``auto_choose_speculative_params`` (0.5.12 -> 0.5.19, the ``self`` argument replaced by two) scores
#: about 0.8; unrelated functions of one module score far lower.
RENAME_SIMILARITY = 0.6


def spellings(name: str) -> list[str]:
    """Other spellings a renamed ``name`` is looked for under: its last segment with a leading
    underscore dropped or added (``_f`` <-> ``f``; ``C._m`` <-> ``C.m``)."""
    head, _, last = name.rpartition(".")
    twin = last[1:] if last.startswith("_") and not last.startswith("__") else f"_{last}"
    return [f"{head}.{twin}" if head else twin] if twin else []


def definition_history(
    name: str,
    *,
    versions: VersionSpec = None,
    include_prereleases: bool = False,
    include_source: bool = True,
    timeout_s: float = SEARCH_TIMEOUT_S,
    also_named: Sequence[str] = (),
) -> pd.DataFrame:
    """Where ``name`` is defined in each release of a range, and what changed from release to release.

    Args:
        name: bare or qualified name (see :func:`workbench.source.find_definition`).
        versions: ``None`` (every 0.5.x final and post release on the index),
            ``"0.5.x"``, ``"0.5.2..0.5.23"``, one version, or a list of versions.
        include_prereleases: let series and ranges include pre-releases such as ``0.5.0rc0``.
        include_source: keep the ``source`` column (needed by :func:`history_diffs`).
        timeout_s: limit for each release's search, in seconds.
        also_named: names it may have been renamed to (or from), besides :func:`spellings`; searched in
            the same round trip, used only where the name itself disappears.

    Returns:
        One row per (release, definition found), oldest release first, with
        :data:`HISTORY_COLUMNS`; a release without the name has one row with
        ``found=False``. Each definition is paired with the previous release's
        definition of the same qualified name (in the same file when there is one
        there, else the one that moved); with a single definition on both sides the
        two are paired whatever their qualified names. ``changed_since_previous`` is
        True when the body's sha256 differs from its pair's, or the name appeared or
        disappeared; ``moved`` when the file differs from its pair's; ``renamed`` when its
        pair had another name (``previous_qualname``). ``status`` is one of
        :data:`STATUSES`. ``df.attrs`` holds ``name``, ``versions`` and ``searches``.

    Raises:
        ConfigError: a bad name or version range.
        SourceError: the index could not be listed or a release not fetched.
    """
    picked = select_versions(versions, include_prereleases=include_prereleases)
    others = [n for n in dict.fromkeys([*spellings(name), *also_named]) if n != name]
    found = find_definition([name, *others], versions=picked, include_source=True, timeout_s=timeout_s)
    return history_frame(name, picked, found, include_source=include_source)


def history_frame(name: str, picked: list[str], found: pd.DataFrame, *, include_source: bool = True) -> pd.DataFrame:
    """The history of ``name`` over the releases ``picked`` (oldest first), from their definitions.

    Pure: the work of :func:`definition_history` once the releases are searched.

    Args:
        name: the name looked up.
        picked: the releases, oldest first.
        found: a :func:`workbench.source.find_definition` frame (with ``source``) holding those releases;
            rows of other queries (its other spellings) continue the history only where the name followed
            so far disappears and such a row's body is alike (:func:`_renamed`).
        include_source: keep the ``source`` column.
    """
    rows: list[dict[str, Any]] = []
    previous: list[dict[str, Any]] = []
    followed = name  # the query whose definitions are the history now (changes at a rename)
    if "query" not in found:
        found = found.assign(query=name)
    for index, version in enumerate(picked):
        here = found[(found["version"] == version) & found["found"]]
        current = [dict(r) for _, r in here[here["query"] == followed].iterrows()]
        if not current and previous:
            current, followed = _renamed(
                previous, [dict(r) for _, r in here[here["query"] != followed].iterrows()], followed
            )
        prev_version = picked[index - 1] if index else None
        if current and not previous and index:  # first seen here: renamed from another spelling?
            before = found[(found["version"] == prev_version) & found["found"] & (found["query"] != followed)]
            previous = _renamed(current, [dict(r) for _, r in before.iterrows()], followed)[0]
        if not current:
            status = "first" if index == 0 else ("removed" if previous else "absent")
            rows.append({"version": version, "found": False, "status": "absent" if status == "first" else status,
                         "changed_since_previous": status == "removed", "moved": False,
                         "previous_version": prev_version})  # fmt: skip
        for row in current:
            pair = None if index == 0 else _pair(row, current, previous)
            base = {k: row[k] for k in HISTORY_COLUMNS if k in row}
            base.update(found=True, previous_version=prev_version)
            if index == 0:
                base.update(status="first", changed_since_previous=False, moved=False)
            elif pair is None:
                base.update(status="added", changed_since_previous=True, moved=False)
            else:
                changed, moved = pair["sha256"] != row["sha256"], pair["path"] != row["path"]
                status = "moved+changed" if moved and changed else "moved" if moved else (
                    "changed" if changed else "unchanged")  # fmt: skip
                renamed = pair["qualname"] != row["qualname"]
                base.update(status=status, changed_since_previous=changed, moved=moved,
                            previous_path=pair["path"], previous_sha256=pair["sha256"], renamed=renamed,
                            previous_qualname=pair["qualname"] if renamed else None)  # fmt: skip
            rows.append(base)
        previous = current
    frame = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    for column in ("start_line", "end_line"):
        frame[column] = frame[column].astype("Int64")
    frame["renamed"] = frame["renamed"].astype(object).fillna(False)  # all-None is float64: fill as objects
    for column in ("found", "changed_since_previous", "moved", "renamed"):
        frame[column] = frame[column].astype(bool)
    for column in frame.columns:
        if frame[column].dtype == "float64" or frame[column].isna().all():
            frame[column] = frame[column].astype(object)
    if not include_source:
        frame = frame.drop(columns=["source"])
    frame.attrs.update(name=name, versions=picked, searches=found.attrs.get("searches", {}))
    return frame


def _body(source: str) -> str:
    """A definition's text without its decorators and ``def``/``class`` line (what a rename keeps)."""
    lines = source.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def ", "class "))), 0)
    return "\n".join(lines[start + 1 :])


def _renamed(
    previous: list[dict[str, Any]], others: list[dict[str, Any]], followed: str
) -> tuple[list[dict[str, Any]], str]:
    """Where the followed name disappeared: the definition under another spelling that continues it
    (the most alike to one of ``previous``, at least :data:`RENAME_SIMILARITY`) and its query; else
    ``([], followed)``."""
    best, score = None, RENAME_SIMILARITY
    for candidate in others:
        for before in previous:
            ratio = difflib.SequenceMatcher(
                None, _body(str(before.get("source") or "")), _body(str(candidate.get("source") or "")), autojunk=False
            ).ratio()
            if ratio >= score:
                best, score = candidate, ratio
    if best is None:
        return [], followed
    return [best], str(best["query"])


def _pair(row: dict[str, Any], current: list[dict[str, Any]], previous: list[dict[str, Any]]) -> dict | None:
    """The previous release's definition that ``row`` continues, or None when it is new."""
    same_name = [p for p in previous if p["qualname"] == row["qualname"]]
    if not same_name and len(previous) == 1 and len(current) == 1:
        same_name = previous  # one definition on each side: renamed or re-nested, still the same thing
    for rule in (lambda p: p["path"] == row["path"], lambda p: p["sha256"] == row["sha256"], lambda p: True):
        for candidate in same_name:
            if rule(candidate):
                return candidate
    return None


#: Columns of :func:`history_table` (and :func:`history_events`).
TABLE_COLUMNS = ["version", "status", "path", "lines", "sha256", "changed_since_previous", "moved", "previous_path"]


def history_table(df: pd.DataFrame) -> pd.DataFrame:
    """The history for display: one row per release and definition, blanks for missing values.

    Args:
        df: a frame from :func:`definition_history`.

    Returns:
        :data:`TABLE_COLUMNS` (``lines`` as ``"182-206"``, ``sha256`` cut to 12 digits).
    """
    table = df.assign(lines=line_ranges(df), sha256=df["sha256"].map(lambda h: short_digest(h, "")))
    table = table[TABLE_COLUMNS].copy()
    for column in ("path", "previous_path"):
        table[column] = table[column].map(lambda v: v if isinstance(v, str) else "")
    return table.reset_index(drop=True)


def history_events(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`history_table` where something happened (first seen, added, removed, changed, moved).

    Args:
        df: a frame from :func:`definition_history`.
    """
    table = history_table(df)
    return table[~table["status"].isin(["unchanged", "absent"])].reset_index(drop=True)


@dataclasses.dataclass(frozen=True)
class Change:
    """One definition's change from one release to the next, as a unified diff.

    Attributes:
        qualname: the definition's qualified name in the newer release.
        old_version, new_version: the two releases.
        old_path, new_path: its file in each (they differ when it moved).
        old_start, new_start: the first line of the definition in each file.
        old_source, new_source: its text in each.
        diff: unified diff text; hunk headers carry the real files' line numbers.
    """

    qualname: str
    old_version: str
    new_version: str
    old_path: str
    new_path: str
    old_start: int
    new_start: int
    old_source: str
    new_source: str
    diff: str

    @property
    def moved(self) -> bool:
        """True when the definition changed files."""
        return self.old_path != self.new_path

    def _repr_html_(self) -> str:
        from workbench.source._render import diff_panes

        return diff_panes([self]).html


def history_diffs(df: pd.DataFrame, *, context: int = DIFF_CONTEXT) -> list[Change]:
    """One :class:`Change` per release where a definition's body changed, oldest first.

    Args:
        df: a frame from :func:`definition_history` (with its ``source`` column).
        context: lines of unchanged context around each hunk (default 3).

    Returns:
        The changes (moves without a body change are not included: their diff is empty; nor is a rename
        from a spelling whose release the frame holds no row of, e.g. the first release where a name
        asked for appears, renamed from another).

    Raises:
        KeyError: ``df`` has no ``source`` column (made with ``include_source=False``).
    """
    if "source" not in df.columns:
        raise KeyError("history_diffs needs the 'source' column; call definition_history(include_source=True)")
    changes = []
    for _, row in df[df["found"] & df["status"].isin(["changed", "moved+changed"])].iterrows():
        olds = df[(df["version"] == row["previous_version"]) & (df["sha256"] == row["previous_sha256"])]
        if olds.empty:
            continue
        old = olds.iloc[0]
        diff = unified_diff(
            old["source"], row["source"], old_start=int(old["start_line"]), new_start=int(row["start_line"]),
            fromfile=f"{old['version']}/{old['path']}", tofile=f"{row['version']}/{row['path']}", context=context,
        )  # fmt: skip
        changes.append(Change(
            qualname=row["qualname"], old_version=old["version"], new_version=row["version"], old_path=old["path"],
            new_path=row["path"], old_start=int(old["start_line"]), new_start=int(row["start_line"]),
            old_source=old["source"], new_source=row["source"], diff=diff,
        ))  # fmt: skip
    return changes


def unified_diff(
    old: str,
    new: str,
    *,
    old_start: int = 1,
    new_start: int = 1,
    fromfile: str = "a",
    tofile: str = "b",
    context: int = DIFF_CONTEXT,
) -> str:
    """A unified diff of two texts whose first lines are lines ``old_start`` and ``new_start`` of their files.

    Same format as ``diff -u`` (and :func:`difflib.unified_diff`), except that hunk
    headers count from the given first lines, so they cite the real files.

    Returns:
        The diff text (empty when the texts are equal), each line ending in ``\\n``.
    """
    a, b = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(context):
        if not out:
            out += [f"--- {fromfile}", f"+++ {tofile}"]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_hunk_range(old_start + i1, i2 - i1)} +{_hunk_range(new_start + j1, j2 - j1)} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in a[a1:a2]]
                continue
            out += ["-" + line for line in a[a1:a2]]
            out += ["+" + line for line in b[b1:b2]]
    return "".join(line + "\n" for line in out)


def _hunk_range(first: int, length: int) -> str:
    """``first,length`` as unified diffs write it (``first`` alone for one line; ``first-1,0`` for none)."""
    if length == 1:
        return str(first)
    return f"{first - 1 if length == 0 else first},{length}"
