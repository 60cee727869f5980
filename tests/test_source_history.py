"""definition_history / history_diffs on real SGLang wheels, checked against the files' text."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from workbench.source import (
    definition_history,
    diff_panes,
    history_diffs,
    history_events,
    history_table,
    sglang_release,
)
from workbench.source._history import HISTORY_COLUMNS, STATUSES, TABLE_COLUMNS, unified_diff

#: A handful of releases spanning every state of get_alloc_len_per_decode (the whole 0.5.x run is the notebook's).
VERSIONS = ["0.5.2", "0.5.4", "0.5.9", "0.5.16", "0.5.23"]
#: The releases on each side of its first appearance and its two moves.
BOUNDARIES = ["0.5.8.post1", "0.5.9", "0.5.12.post1", "0.5.13", "0.5.15.post1", "0.5.16"]


@pytest.fixture(scope="module")
def history() -> pd.DataFrame:
    return definition_history("get_alloc_len_per_decode", versions=VERSIONS)


def file_text(version: str, path: str) -> list[str]:
    return (sglang_release(version).package_dir / path).read_text(encoding="utf-8").split("\n")


def test_history_table_shows_absence_first_appearance_move_and_change(history: pd.DataFrame) -> None:
    assert list(history.columns) == HISTORY_COLUMNS and history.attrs["versions"] == VERSIONS
    table = history[["version", "found", "status", "path", "changed_since_previous", "moved", "previous_path"]]
    assert table.astype(object).where(table.notna(), None).values.tolist() == [
        ["0.5.2", False, "absent", None, False, False, None],
        ["0.5.4", False, "absent", None, False, False, None],
        ["0.5.9", True, "added", "srt/managers/utils.py", True, False, None],
        ["0.5.16", True, "moved+changed", "srt/mem_cache/allocation_sizing.py", True, True, "srt/managers/utils.py"],
        ["0.5.23", True, "changed", "srt/mem_cache/allocation_sizing.py", True, False,
         "srt/mem_cache/allocation_sizing.py"],
    ]  # fmt: skip
    assert set(history["status"]) <= set(STATUSES)
    assert list(history["previous_version"].iloc[1:]) == VERSIONS[:-1]
    for _, row in history[history["found"]].iterrows():  # line ranges and digests are the files' own
        lines = file_text(row["version"], row["path"])
        assert lines[row["start_line"] - 1].startswith("def get_alloc_len_per_decode(")
        assert row["source"] == "\n".join(lines[row["start_line"] - 1 : row["end_line"]]) + "\n"
    v9 = history.iloc[2]
    assert (v9["start_line"], v9["end_line"]) == (182, 206)
    assert history.iloc[3]["previous_sha256"] == v9["sha256"] != history.iloc[3]["sha256"]


def test_first_appearance_and_both_moves_happen_exactly_at_these_releases() -> None:
    df = definition_history("get_alloc_len_per_decode", versions=BOUNDARIES, include_source=False)
    assert "source" not in df.columns
    assert list(zip(df["version"], df["status"], df["path"].fillna(""), strict=True)) == [
        ("0.5.8.post1", "absent", ""),
        ("0.5.9", "added", "srt/managers/utils.py"),
        ("0.5.12.post1", "unchanged", "srt/managers/utils.py"),
        ("0.5.13", "moved+changed", "srt/mem_cache/common.py"),
        ("0.5.15.post1", "changed", "srt/mem_cache/common.py"),
        ("0.5.16", "moved+changed", "srt/mem_cache/allocation_sizing.py"),
    ]


def test_before_the_function_the_length_was_a_class_attribute_of_eagle_draft_input() -> None:
    # 0.5.9 drops the ClassVar declaration when get_alloc_len_per_decode arrives (two workers still assign it).
    df = definition_history("EagleDraftInput.ALLOC_LEN_PER_DECODE", versions=["0.5.2", "0.5.4", "0.5.9"])
    assert list(df["status"]) == ["absent", "added", "removed"]
    assert list(df["changed_since_previous"]) == [False, True, True]
    v4 = df.iloc[1]
    assert (v4["path"], v4["kind"], v4["signature"]) == ("srt/speculative/eagle_info.py", "attribute", "ClassVar[int]")
    assert v4["source"].strip() == "ALLOC_LEN_PER_DECODE: ClassVar[int] = None"


def test_history_table_and_events_for_display(history: pd.DataFrame) -> None:
    table = history_table(history)
    assert list(table.columns) == TABLE_COLUMNS and len(table) == len(history)
    assert table.iloc[0].tolist() == ["0.5.2", "absent", "", "", "", False, False, ""]
    events = history_events(history)
    assert list(events["version"]) == ["0.5.9", "0.5.16", "0.5.23"]
    ranges = [f"{s}-{e}" for s, e in history[["start_line", "end_line"]].values[3:]]
    assert list(events["lines"]) == ["182-206", *ranges]
    assert all(len(h) == 12 for h in events["sha256"])


def test_diffs_cite_the_real_files_line_numbers(history: pd.DataFrame) -> None:
    changes = history_diffs(history)
    assert [(c.old_version, c.new_version, c.moved) for c in changes] == [
        ("0.5.9", "0.5.16", True),
        ("0.5.16", "0.5.23", False),
    ]
    for change in changes:
        old_lines, new_lines = (
            file_text(change.old_version, change.old_path),
            file_text(change.new_version, change.new_path),
        )
        assert change.diff.startswith(f"--- {change.old_version}/{change.old_path}\n+++ {change.new_version}/")
        for header in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$", change.diff, re.M):
            old_no, new_no = int(header.group(1)), int(header.group(3))
            body = change.diff[header.end() + 1 :].split("\n@@")[0].split("\n")
            for line in body:  # every context and removed line is the old file's line at that number
                if line.startswith((" ", "-")):
                    assert old_lines[old_no - 1] == line[1:]
                    old_no += 1
                if line.startswith((" ", "+")):
                    assert new_lines[new_no - 1] == line[1:]
                    new_no += 1
    html = diff_panes(changes).html
    assert "0.5.9 &rarr; 0.5.16" in html and "srt/managers/utils.py</code> &rarr; <code>srt/mem_cache" in html
    assert changes[0]._repr_html_().count("moved and changed") == 1


def test_history_diffs_needs_the_source() -> None:
    df = definition_history("get_alloc_len_per_decode", versions=["0.5.9"], include_source=False)
    assert list(df["status"]) == ["first"]
    with pytest.raises(KeyError, match="include_source=True"):
        history_diffs(df)
    assert "No body changed" in diff_panes([]).html


def test_unified_diff_matches_difflib_apart_from_the_offsets() -> None:
    import difflib

    old = "".join(f"line {i}\n" for i in range(20))
    new = old.replace("line 3\n", "line three\n").replace("line 15\n", "") + "tail\n"
    ours = unified_diff(old, new, fromfile="a", tofile="b")
    theirs = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a", "b"))
    assert ours == theirs
    shifted = unified_diff(old, new, old_start=100, new_start=200, fromfile="a", tofile="b")
    headers = re.findall(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@$", theirs, re.M)
    assert len(headers) == 2 and re.findall(r"^@@ .* @@$", shifted, re.M) == [
        f"@@ -{int(a) + 99},{b} +{int(c) + 199},{d} @@" for a, b, c, d in headers]  # fmt: skip
    assert unified_diff(old, old) == ""
    assert unified_diff("", "x\n", fromfile="a", tofile="b").splitlines()[2] == "@@ -0,0 +1 @@"


def test_a_rename_that_came_with_a_move_is_linked_both_ways() -> None:
    # 0.5.12: auto_choose_speculative_params in srt/server_args.py; by 0.5.19 _auto_choose_speculative_params in
    # srt/arg_groups/speculative_hook.py, its `self` replaced by (server_args, model_arch): same job, new name and path
    df = definition_history("auto_choose_speculative_params", versions=["0.5.12", "0.5.19", "0.5.23"])
    moved = df.iloc[1]
    assert (moved["status"], moved["path"], moved["qualname"]) == (
        "moved+changed",
        "srt/arg_groups/speculative_hook.py",
        "_auto_choose_speculative_params",
    )
    assert moved["renamed"] and moved["previous_qualname"] == "auto_choose_speculative_params"
    assert moved["previous_path"] == "srt/server_args.py" and df.iloc[2]["status"] == "unchanged"
    [change] = history_diffs(df)
    assert (
        change.old_path == "srt/server_args.py"
        and "-def auto_choose_speculative_params(self: ServerArgs):" in change.diff
    )
    back = definition_history("_auto_choose_speculative_params", versions=["0.5.12", "0.5.19"], include_source=False)
    assert list(back["status"]) == ["absent", "moved+changed"] and back.iloc[1]["renamed"]
    assert back.iloc[1]["previous_qualname"] == "auto_choose_speculative_params"
    plain = definition_history("get_alloc_len_per_decode", versions=["0.5.9", "0.5.16"], include_source=False)
    assert not plain["renamed"].any()  # a move alone is not a rename
