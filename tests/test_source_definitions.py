"""find_definition / find_references on real SGLang wheels (0.5.2, 0.5.9, 0.5.23) and on a tree."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from workbench.errors import HelperError, SourceError
from workbench.source import find_definition, find_references, sglang_release, summary_table
from workbench.source._definitions import DEFINITION_COLUMNS, REFERENCE_COLUMNS

VERSIONS = ["0.5.2", "0.5.9", "0.5.23"]


@pytest.fixture(scope="module")
def alloc() -> pd.DataFrame:
    return find_definition("get_alloc_len_per_decode", versions=VERSIONS)


def file_lines(version: str, path: str) -> list[str]:
    return (sglang_release(version).package_dir / path).read_text(encoding="utf-8").split("\n")


def test_get_alloc_len_per_decode_moves_between_releases(alloc: pd.DataFrame) -> None:
    assert list(alloc.columns) == DEFINITION_COLUMNS
    assert list(alloc["version"]) == VERSIONS
    assert list(alloc["found"]) == [False, True, True]
    missing, v9, v23 = (alloc.iloc[i] for i in range(3))
    assert pd.isna(missing["path"]) and pd.isna(missing["start_line"])
    # SGLang 0.5.9: srt/managers/utils.py line 182 (DESIGN.md); 0.5.23: srt/mem_cache/allocation_sizing.py.
    assert (v9["path"], v9["start_line"], v9["def_line"]) == ("srt/managers/utils.py", 182, 182)
    assert v9["signature"] == "(server_args: Optional[ServerArgs] = None) -> int"
    assert v23["path"] == "srt/mem_cache/allocation_sizing.py" and v23["signature"] == "() -> int"
    assert v9["sha256"] != v23["sha256"]
    assert set(alloc["kind"].dropna()) == {"function"} and set(alloc["host"]) == {"local"}


def test_lines_and_source_are_the_real_file_text(alloc: pd.DataFrame) -> None:
    for _, row in alloc[alloc["found"]].iterrows():
        lines = file_lines(row["version"], row["path"])
        expected = "\n".join(lines[row["start_line"] - 1 : row["end_line"]]) + "\n"
        assert row["source"] == expected
        assert row["sha256"] == hashlib.sha256(expected.encode("utf-8")).hexdigest()
        assert lines[row["def_line"] - 1].lstrip().startswith("def get_alloc_len_per_decode(")
        assert row["source"].rstrip("\n").split("\n")[-1].strip() != ""  # ends on code, not a blank line


def test_qualified_method_and_class_across_versions() -> None:
    df = find_definition("EAGLEWorkerV2.forward_batch_generation", versions=VERSIONS, include_source=False)
    assert "source" not in df.columns
    assert list(df["found"]) == [False, True, True]  # 0.5.2 has no eagle_worker_v2.py
    for _, row in df[df["found"]].iterrows():
        assert row["path"] == "srt/speculative/eagle_worker_v2.py"
        assert (row["kind"], row["enclosing_class"]) == ("method", "EAGLEWorkerV2")
        line = file_lines(row["version"], row["path"])[row["def_line"] - 1]
        assert line.strip().startswith("def forward_batch_generation(")
    cls = find_definition("EAGLEWorkerV2", versions=["0.5.23"], include_source=False)
    assert (cls.iloc[0]["kind"], cls.iloc[0]["start_line"]) == ("class", 1297)  # eagle_worker_v2.py, 0.5.23


def test_references_find_the_callers() -> None:
    df = find_references("get_alloc_len_per_decode", versions=VERSIONS)
    assert list(df.columns) == REFERENCE_COLUMNS
    assert not df[df["version"] == "0.5.2"]["found"].any()
    calls = df[df["kind"] == "call"]
    callers = set(zip(calls["version"], calls["path"], calls["enclosing"], strict=True))
    assert ("0.5.9", "srt/speculative/eagle_info_v2.py", "EagleDraftInputV2Mixin.prepare_for_decode") in callers
    assert ("0.5.23", "srt/mem_cache/allocation_sizing.py", "get_alloc_reserve_per_decode") in callers
    for _, row in calls.iterrows():
        line = file_lines(row["version"], row["path"])[row["line"] - 1]
        assert line[row["col"] :].startswith("get_alloc_len_per_decode(")
    imports = df[df["kind"] == "import"]
    assert len(imports) and imports["enclosing"].isna().all()  # module level: None in the frame ...
    shown = summary_table(df)
    assert (shown.loc[imports.index, "enclosing"] == "<module>").all()  # ... "<module>" on display, as callers_table
    assert shown.loc[~df["found"], "enclosing"].isna().all()  # a version without references stays blank


def test_a_tree_on_the_host_is_searched_next_to_releases(tmp_path: Path) -> None:
    tree = tmp_path / "my checkout"
    (tree / "srt").mkdir(parents=True)
    (tree / "srt" / "patched.py").write_text(
        "\n\ndef get_alloc_len_per_decode() -> int:\n    return 3\n", encoding="utf-8"
    )
    df = find_definition("get_alloc_len_per_decode", versions=["0.5.9"], tree=str(tree), tree_label="patched")
    assert list(df["version"]) == ["0.5.9", "patched"]
    row = df.iloc[1]
    assert (row["path"], row["start_line"], row["end_line"], row["root"]) == ("srt/patched.py", 3, 4, str(tree))
    default_label = find_definition("get_alloc_len_per_decode", versions=(), tree=str(tree))
    assert list(default_label["version"]) == [f"local:{tree}"]
    assert default_label.attrs["searches"][f"local:{tree}"]["files_scanned"] == 1


def test_missing_tree_is_a_source_error(tmp_path: Path) -> None:
    """The helper's refusal (a HelperError from workbench.hosts) is translated where the source package calls it."""
    with pytest.raises(SourceError, match="does not exist") as info:
        find_definition("x", versions=(), tree=str(tmp_path / "nope"))
    assert isinstance(info.value.__cause__, HelperError) and info.value.__cause__.helper == "find_definitions"


def test_summary_table_is_short(alloc: pd.DataFrame) -> None:
    table = summary_table(alloc)
    v23 = alloc.iloc[2]
    assert "source" not in table.columns
    assert list(table["lines"]) == ["", "182-206", f"{v23['start_line']}-{v23['end_line']}"]
    assert all(len(h) == 12 for h in table["sha256"].dropna())


def test_unparsable_candidate_files_are_warned_about(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("def wanted():\n    pass\n", encoding="utf-8")
    (tmp_path / "new_syntax.py").write_text("def wanted(:\n", encoding="utf-8")
    with pytest.warns(UserWarning, match=r"1 file\(s\) mentioning 'wanted' could not be parsed.*new_syntax\.py"):
        df = find_definition("wanted", versions=(), tree=str(tmp_path), tree_label="t")
    assert list(df["path"]) == ["ok.py"]
    assert df.attrs["searches"]["t"]["unparsable"][0]["path"] == "new_syntax.py"
