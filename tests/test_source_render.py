"""source_panes / highlight_lines: real definitions from SGLang wheels rendered to offline HTML."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd
import pytest

from workbench.source import HTMLFragment, find_definition, highlight_lines, sglang_release, source_panes


@pytest.fixture(scope="module")
def alloc() -> pd.DataFrame:
    return find_definition("get_alloc_len_per_decode", versions=["0.5.2", "0.5.9", "0.5.23"])


def visible_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_panes_are_headed_by_version_path_and_lines(alloc: pd.DataFrame) -> None:
    fragment = source_panes(alloc)
    assert isinstance(fragment, HTMLFragment) and fragment._repr_html_() == fragment.html
    text = visible_text(fragment.html)
    assert "0.5.9 · srt/managers/utils.py · lines 182-206" in text
    v23 = alloc.iloc[2]
    assert f"0.5.23 · srt/mem_cache/allocation_sizing.py · lines {v23['start_line']}-{v23['end_line']}" in text
    assert "get_alloc_len_per_decode is not defined in 0.5.2 (searched" in text
    assert "display: flex" in fragment.html


def test_line_numbers_are_the_real_file_lines(alloc: pd.DataFrame) -> None:
    pre = highlight_lines(alloc.iloc[1]["source"], first_line=182)
    rows = visible_text(pre).split("\n")[1:-1]
    real = (sglang_release("0.5.9").package_dir / "srt/managers/utils.py").read_text(encoding="utf-8").split("\n")
    assert len(rows) == 206 - 182 + 1
    for row in rows:
        number = re.match(r"\d+", row).group(0)
        assert row[len(number) :] == real[int(number) - 1]


def test_rows_never_split_a_tag_even_inside_docstrings(alloc: pd.DataFrame) -> None:
    v23 = alloc.iloc[2]
    assert '"""' in v23["source"]  # 0.5.23's function has a multi-line docstring
    for wrap in (True, False):
        block = highlight_lines(v23["source"], first_line=int(v23["start_line"]), wrap=wrap)
        rows = block.split("\n")[1:-1]  # the first and last lines open and close the block
        assert len(rows) == v23["end_line"] - v23["start_line"] + 1
        for row in rows:
            assert row.count("<span") == row.count("</span>") and row.count("<div") == row.count("</div>") == 1


def test_html_is_self_contained(alloc: pd.DataFrame, tmp_path: Path) -> None:
    markup = source_panes(alloc, layout="stacked").html
    for forbidden in ("<script", "<link", "<style", "url(", "class=", "http://", "https://"):
        assert forbidden not in markup
    assert 'style="color: #008000; font-weight: bold"' in markup  # Pygments colours, inline
    page = HTMLFragment(markup).save(tmp_path / "panes.html", title="get_alloc_len_per_decode")
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_identical_sources_are_marked_and_long_ones_cut(tmp_path: Path) -> None:
    tree = sglang_release("0.5.9").package_dir
    df = find_definition("EAGLEWorkerV2", versions=["0.5.9"], tree=str(tree), tree_label="copy of 0.5.9")
    markup = source_panes(df, max_lines=20)
    text = visible_text(markup.html)
    assert "identical to 0.5.9" in text
    total = int(df.iloc[0]["end_line"] - df.iloc[0]["start_line"] + 1)
    assert f"... {total - 20} more lines" in text and "max_lines=None" in text
    assert len(visible_text(source_panes(df, max_lines=None).html)) > len(text)


def test_panes_need_the_source_column(alloc: pd.DataFrame) -> None:
    with pytest.raises(KeyError, match="include_source=True"):
        source_panes(alloc.drop(columns=["source"]))
    with pytest.raises(ValueError, match="layout"):
        source_panes(alloc, layout="diagonal")  # type: ignore[arg-type]
