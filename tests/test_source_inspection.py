"""inspect_name and `workbench inspect`: every question about a name costs one helper process per release or tree.

Real wheels (cached after the first download), the real helper; helper processes are
counted where they start (``LocalHost.run`` with ``remote/find_definitions.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.hosts import LocalHost
from workbench.source import (
    definition_history,
    find_definition,
    find_references,
    inspect_name,
    read_lines,
    sglang_release,
)

HISTORY = ["0.5.2", "0.5.9", "0.5.13", "0.5.23"]


@pytest.fixture
def helper_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    """Counts the search helper's processes per root (``Counter({root: runs})``)."""
    runs: Counter = Counter()
    run = LocalHost.run

    def counting(self, argv, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(argv, list) and str(argv[-1]).endswith("find_definitions.py"):
            runs[json.loads(kwargs["stdin"])["root"]] += 1
        return run(self, argv, **kwargs)

    monkeypatch.setattr(LocalHost, "run", counting)
    yield runs


def roots(*versions: str) -> dict[str, str]:
    return {v: str(sglang_release(v).package_dir) for v in versions}


def test_one_helper_process_per_release_for_definitions_references_lines_and_history(helper_runs: Counter) -> None:
    found = inspect_name("get_alloc_len_per_decode", versions=["0.5.9", "0.5.23"], references=True, history=HISTORY,
                         lines=[("srt/managers/utils.py", 182, 184)])  # fmt: skip
    where = roots("0.5.2", "0.5.9", "0.5.13", "0.5.23")
    assert helper_runs == Counter({where[v]: 1 for v in HISTORY})  # 0.5.9 and 0.5.23 answer all three questions once
    assert found.helper_runs == {v: 1 for v in ["0.5.9", "0.5.23", "0.5.2", "0.5.13"]}
    # the same frames as the one-question functions give
    helper_runs.clear()
    alone = find_definition("get_alloc_len_per_decode", versions=["0.5.9", "0.5.23"])
    refs = find_references("get_alloc_len_per_decode", versions=["0.5.9", "0.5.23"])
    history = definition_history("get_alloc_len_per_decode", versions=HISTORY)
    lines = read_lines("srt/managers/utils.py", 182, 184, version="0.5.9")
    assert sum(helper_runs.values()) == 2 + 2 + 4 + 1  # one question each: a process per release per question
    assert found.definitions.equals(alone) and found.references.equals(refs) and found.history.equals(history)
    assert found.lines[0] == lines and found.lines[0].text.startswith("def get_alloc_len_per_decode")
    assert list(found.history["status"]) == ["absent", "added", "moved+changed", "moved+changed"]


def test_workbench_inspect_with_references_and_history_starts_one_helper_per_release(helper_runs: Counter) -> None:
    result = CliRunner().invoke(app, ["inspect", "get_alloc_len_per_decode", "--sglang", "0.5.9", "--sglang", "0.5.23",
                                      "--references", "--history", "0.5.9..0.5.13", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert {r["version"] for r in report["history"]} == {"0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12",
                                                        "0.5.12.post1", "0.5.13"}  # fmt: skip
    assert report["references"] and report["definitions"][0]["path"] == "srt/managers/utils.py"
    assert set(helper_runs.values()) == {1} and len(helper_runs) == 8  # 7 history releases and 0.5.23


def test_a_second_inspection_parses_nothing(helper_runs: Counter, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))  # a fresh index (no release is needed)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text("def f():\n    return g()\n\n\ndef g():\n    return 1\n", encoding="utf-8")
    first = inspect_name("g", versions=(), tree=str(tree), references=True)
    second = inspect_name("g", versions=(), tree=str(tree), references=True)
    stats = [f.definitions.attrs["searches"][f"local:{tree}"] for f in (first, second)]
    assert [(s["files_parsed"], s["files_from_index"]) for s in stats] == [(1, 0), (0, 1)]
    assert (tmp_path / "cache" / "index" / "trees").is_dir() and second.references.equals(first.references)
    assert helper_runs == Counter({str(tree): 2})
