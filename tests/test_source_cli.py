"""`workbench inspect` through typer's CliRunner: real wheels, a local tree, a tree on a real sshd."""

from __future__ import annotations

import json
from pathlib import Path

from sshd_fixture import sshd  # noqa: F401  (pytest fixture)
from typer.testing import CliRunner

from workbench.cli import app
from workbench.source.cli import format_table

runner = CliRunner()
TREE_SOURCE = (
    "class Pool:\n    def get_alloc_len_per_decode(self):\n        return helper()\n\n\ndef helper():\n    return 4\n"
)


def test_json_reports_both_locations() -> None:
    result = runner.invoke(app, ["inspect", "get_alloc_len_per_decode", "--sglang", "0.5.9", "--sglang", "0.5.23",
                                 "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    found = [(d["version"], d["path"], d["start_line"], d["end_line"]) for d in report["definitions"]]
    assert found[0] == ("0.5.9", "srt/managers/utils.py", 182, 206)
    assert found[1][:2] == ("0.5.23", "srt/mem_cache/allocation_sizing.py")
    assert all("source" not in d for d in report["definitions"])
    assert set(report) == {"name", "definitions"}  # references and history only when asked for


def test_human_output_is_a_compact_table() -> None:
    result = runner.invoke(app, ["inspect", "get_alloc_len_per_decode", "--sglang", "0.5.2", "--sglang", "0.5.9"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "get_alloc_len_per_decode: definitions"
    assert lines[1].split() == ["version", "found", "path", "lines", "kind", "qualname", "signature", "sha256"]
    assert lines[2].split() == ["0.5.2", "no"]
    assert lines[3].split()[:4] == ["0.5.9", "yes", "srt/managers/utils.py", "182-206"]


def test_history_in_json_and_as_a_table() -> None:
    args = ["inspect", "get_alloc_len_per_decode", "--history", "0.5.12.post1..0.5.13"]
    report = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert report["definitions"] == []
    assert [(h["version"], h["status"], h["path"]) for h in report["history"]] == [
        ("0.5.12.post1", "first", "srt/managers/utils.py"),
        ("0.5.13", "moved+changed", "srt/mem_cache/common.py"),
    ]
    table = runner.invoke(app, args).output.splitlines()
    assert table[0] == "get_alloc_len_per_decode: history (0.5.12.post1..0.5.13)"
    assert table[-1].split() == ["0.5.13", "moved+changed", "srt/mem_cache/common.py", "155-182", "d3a6c4655902",
                                 "srt/managers/utils.py"]  # fmt: skip


def test_a_local_tree_with_references_and_source(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pool.py").write_text(TREE_SOURCE, encoding="utf-8")
    result = runner.invoke(app, ["inspect", "helper", "--tree", str(tree), "--references", "--source"])
    assert result.exit_code == 0, result.output
    out = result.output
    lines = out.splitlines()
    label = f"local:{tree}" if len(f"local:{tree}") <= 60 else f"local:{tree}"[:57] + "..."
    assert lines[2].split() == [label, "yes", "pool.py", "6-7", "function", "helper", "()", lines[2].split()[-1]]
    assert "pool.py:6-7\n6  def helper():\n7      return 4\n" in out
    refs = lines[lines.index("helper: references") + 2].split()
    assert refs[1:] == ["pool.py", "3", "call", "Pool.get_alloc_len_per_decode", "return", "helper()"]


def test_module_level_references_are_shown_as_module(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("from pool import helper\n\nVALUE = helper()\n", encoding="utf-8")
    result = runner.invoke(app, ["inspect", "helper", "--tree", str(tmp_path), "--references"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    rows = [ln.split()[1:5] for ln in lines[lines.index("helper: references") + 2 :] if ln.strip()]
    assert rows == [["main.py", "1", "import", "<module>"], ["main.py", "3", "call", "<module>"]]
    as_json = json.loads(runner.invoke(app, ["inspect", "helper", "--tree", str(tmp_path), "--references",
                                             "--json"]).output)  # fmt: skip
    assert [r["enclosing"] for r in as_json["references"]] == [None, None]  # the data keeps None


def test_a_tree_on_an_ssh_host_by_alias(sshd, tmp_path: Path) -> None:  # noqa: F811, ANN001
    tree = tmp_path / "remote tree $x"
    tree.mkdir()
    (tree / "pool.py").write_text(TREE_SOURCE, encoding="utf-8")
    result = runner.invoke(app, ["inspect", "Pool.get_alloc_len_per_decode", "--host", sshd.alias, "--ssh-config",
                                 str(sshd.config_file), "--tree", str(tree), "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)["definitions"]
    assert (row["host"], row["version"], row["path"], row["kind"]) == (
        "wbtest", f"wbtest:{tree}", "pool.py", "method")  # fmt: skip


def test_mistakes_are_one_line_errors_with_exit_status_2() -> None:
    bad_name = runner.invoke(app, ["inspect", "a b", "--sglang", "0.5.9"])
    assert bad_name.exit_code == 2 and "'a b' is not a Python name" in bad_name.output
    no_tree = runner.invoke(app, ["inspect", "x", "--host", "gpu1"])
    assert no_tree.exit_code == 2 and "--host gpu1 needs --tree" in no_tree.output
    bad_range = runner.invoke(app, ["inspect", "x", "--history", "0.5.23..0.5.2"])
    assert bad_range.exit_code == 2 and "runs backwards" in bad_range.output


def test_format_table_cuts_long_cells() -> None:
    import pandas as pd

    text = format_table(pd.DataFrame({"a": ["x" * 80, None], "bb": [1, 2]}), title="t")
    assert text.splitlines() == ["t", "a" + " " * 59 + "  bb", "x" * 57 + "...  1", " " * 60 + "  2"]
    assert format_table(pd.DataFrame({"a": []})).splitlines() == ["a", "(none)"]
