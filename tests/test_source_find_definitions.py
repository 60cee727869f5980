"""remote/find_definitions.py run as a real subprocess on a hostile tree (spaces, quotes, encodings)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "remote" / "find_definitions.py"
HOSTILE_DIR = 'dir with space/it\'s "q"'
HOSTILE_FILE = "mod 'one'.py"

MAIN_SOURCE = '''\
"""Module docstring."""
import functools
from helpers import target as imported_target


@functools.lru_cache(maxsize=None)
@staticmethod  # a comment after a decorator
def target(a, b: "int" = 1, *args, c=(1,), **kw) -> "str":
    """First line.

    More text.
    """
    return str(a)


class Outer:
    """Outer doc."""

    class Inner:
        @property
        def target(self):
            return 1

        async def run(self):
            return await self.target


    def target(self, x):  # comment
        def target(y):
            return y

        return target(x) + self.target


def multi(
    a,  # first
    b=[1,
       2],
):
    pass
'''


def make_tree(root: Path) -> Path:
    """A small tree with hostile names, nested classes, decorators and unparsable files."""
    pkg = root / HOSTILE_DIR
    pkg.mkdir(parents=True)
    (pkg / HOSTILE_FILE).write_text(MAIN_SOURCE, encoding="utf-8")
    (root / "broken.py").write_text("def target(:\n    pass\n", encoding="utf-8")
    hidden = root / ".hidden"
    hidden.mkdir()
    (hidden / "skip.py").write_text("def target():\n    pass\n", encoding="utf-8")
    cache = root / "__pycache__"
    cache.mkdir()
    (cache / "skip.py").write_text("def target():\n    pass\n", encoding="utf-8")
    # Latin-1 with a coding cookie; CRLF line ends; a form feed (str.splitlines would split there).
    (root / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\r\n# caf\xe9 \x0c page break\r\n\r\ndef target():\r\n    return '\xe9'\r\n"
    )
    (root / "\u00fcn\u00efc\u00f6de.py").write_text("x = 1\n\n\ndef target():\n    return '\u00e9'\n", encoding="utf-8")
    (root / "nothing_here.py").write_text("def other():\n    pass\n", encoding="utf-8")
    return root


#: The index directory of the running test (a fresh one per test, see ``fresh_index``).
INDEX_DIR: list[Path] = []


@pytest.fixture(autouse=True)
def fresh_index(tmp_path: Path) -> Iterator[Path]:
    """Every test starts with an empty on-host index of its own (records are shared by content)."""
    INDEX_DIR.append(tmp_path / "index")
    yield INDEX_DIR[-1]
    INDEX_DIR.pop()


def run_script(request: dict, *, python: str = sys.executable) -> tuple[int, dict]:
    """Run the script with ``python`` (index in the test's own directory unless given); return (status, answer)."""
    if isinstance(request, dict) and INDEX_DIR:
        request = {"index_dir": str(INDEX_DIR[-1]), **request}
    proc = subprocess.run(
        [python, str(SCRIPT)], input=json.dumps(request).encode(), capture_output=True, timeout=60, check=False
    )
    return proc.returncode, json.loads(proc.stdout)


def by_qualname(answer: dict, index: int = 0) -> dict:
    return {m["qualname"] + "@" + m["path"]: m for m in answer["results"][index]["matches"]}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("hostile tree 'x'"))


def test_bare_name_finds_every_definition_with_lines_matching_the_file(tree: Path) -> None:
    status, answer = run_script({"root": str(tree), "queries": [{"name": "target"}]})
    assert status == 0 and answer["ok"] is True
    found = by_qualname(answer)
    rel = f"{HOSTILE_DIR}/{HOSTILE_FILE}"
    assert set(found) == {
        f"target@{rel}",
        f"Outer.Inner.target@{rel}",
        f"Outer.target@{rel}",
        f"Outer.target.target@{rel}",
        "target@latin.py",
        "target@\u00fcn\u00efc\u00f6de.py",
    }
    lines = MAIN_SOURCE.split("\n")
    for match in found.values():
        text = (tree / match["path"]).read_bytes()
        encoding = "latin-1" if match["path"] == "latin.py" else "utf-8"
        file_lines = text.decode(encoding).replace("\r\n", "\n").split("\n")
        expected = "\n".join(file_lines[match["start_line"] - 1 : match["end_line"]]) + "\n"
        assert match["source"] == expected
        assert match["sha256"] == hashlib.sha256(expected.encode("utf-8")).hexdigest()
    top = found[f"target@{rel}"]
    assert (top["start_line"], top["def_line"], top["end_line"]) == (6, 8, 13)
    assert lines[top["start_line"] - 1].startswith("@functools.lru_cache")
    assert top["kind"] == "function" and top["enclosing_class"] is None and top["is_async"] is False
    assert top["decorators"] == ["functools.lru_cache(maxsize=None)", "staticmethod"]
    assert top["signature"] == '(a, b: "int" = 1, *args, c=(1,), **kw) -> "str"'
    assert top["docstring"] == "First line."
    inner = found[f"Outer.Inner.target@{rel}"]
    assert inner["kind"] == "method" and inner["enclosing_class"] == "Outer.Inner"
    assert inner["decorators"] == ["property"] and inner["start_line"] == inner["def_line"] - 1
    nested = found[f"Outer.target.target@{rel}"]
    assert nested["kind"] == "function" and nested["enclosing_class"] == "Outer"
    latin = found["target@latin.py"]
    assert latin["def_line"] == 4 and "\u00e9" in latin["source"]  # form feed did not shift lines
    assert answer["files_unparsable"] == 1 and answer["unparsable"][0]["path"] == "broken.py"
    assert "SyntaxError" in answer["unparsable"][0]["error"]
    assert answer["files_scanned"] == 5  # hidden and __pycache__ directories are not entered
    assert answer["files_parsed"] == 4  # nothing_here.py never mentions 'target'


def test_qualified_names_classes_async_and_multiline_signatures(tree: Path) -> None:
    queries = [
        {"name": "Inner.target"},
        {"name": "Outer.target"},
        {"name": "Outer.Inner"},
        {"name": "run"},
        {"name": "multi"},
        {"name": "Missing.target"},
    ]
    status, answer = run_script({"root": str(tree), "queries": queries, "include_source": False})
    assert status == 0
    names = [[m["qualname"] for m in r["matches"]] for r in answer["results"]]
    assert names == [["Outer.Inner.target"], ["Outer.target"], ["Outer.Inner"], ["Outer.Inner.run"], ["multi"], []]
    cls = answer["results"][2]["matches"][0]
    assert cls["kind"] == "class" and cls["enclosing_class"] == "Outer" and cls["signature"] == ""
    assert answer["results"][3]["matches"][0]["is_async"] is True
    assert answer["results"][4]["matches"][0]["signature"] == "(a, b=[1, 2])"
    assert all("source" not in m for r in answer["results"] for m in r["matches"])
    assert [r["query"]["name"] for r in answer["results"]] == [q["name"] for q in queries]


def test_module_variables_and_class_attributes_are_definitions_too(tmp_path: Path) -> None:
    (tmp_path / "consts.py").write_text(
        "LIMIT = 4\n"
        "first, (LIMIT_B, *rest) = 1, (2, 3)\n"
        "class Draft:\n"
        "    LIMIT: ClassVar[int] = (\n"
        "        None)\n"
        "    def run(self):\n"
        "        LIMIT = 5  # a local: not a definition\n"
        "        self.LIMIT = 6  # an attribute store: not a definition either\n",
        encoding="utf-8",
    )
    queries = [{"name": "LIMIT"}, {"name": "Draft.LIMIT"}, {"name": "LIMIT_B"}]
    status, answer = run_script({"root": str(tmp_path), "queries": queries})
    assert status == 0
    bare, qualified, unpacked = (r["matches"] for r in answer["results"])
    assert [(m["qualname"], m["kind"], m["start_line"], m["end_line"]) for m in bare] == [
        ("LIMIT", "variable", 1, 1), ("Draft.LIMIT", "attribute", 4, 5)]  # fmt: skip
    assert qualified == [bare[1]] and qualified[0]["enclosing_class"] == "Draft"
    assert qualified[0]["signature"] == "ClassVar[int]" and qualified[0]["source"] == (
        "    LIMIT: ClassVar[int] = (\n        None)\n")  # fmt: skip
    assert [(m["qualname"], m["start_line"]) for m in unpacked] == [("LIMIT_B", 2)]


def test_references_calls_attributes_imports_with_enclosing_scope(tree: Path) -> None:
    status, answer = run_script(
        {"root": str(tree), "queries": [{"name": "target", "type": "references", "path_glob": "dir with space/*"}]}
    )
    assert status == 0
    refs = {(m["line"], m["kind"], m["enclosing"]) for m in answer["results"][0]["matches"]}
    assert refs == {
        (3, "import", None),
        (25, "attribute", "Outer.Inner.run"),
        (32, "call", "Outer.target"),
        (32, "attribute", "Outer.target"),
    }
    call = next(m for m in answer["results"][0]["matches"] if m["kind"] == "call")
    assert call["text"] == "return target(x) + self.target" and call["col"] == 15


def test_max_matches_truncates(tree: Path) -> None:
    status, answer = run_script({"root": str(tree), "queries": [{"name": "target"}], "max_matches": 2})
    assert status == 0 and len(answer["results"][0]["matches"]) == 2 and answer["results"][0]["truncated"] is True


@pytest.mark.parametrize(
    "request_, needle",
    [
        ({"root": "/no/such/dir", "queries": [{"name": "x"}]}, "does not exist"),
        ({"root": ".", "queries": []}, "queries"),
        ({"root": ".", "queries": [{"name": "not a name"}]}, "dotted Python name"),
        ({"root": ".", "queries": [{"name": "x", "type": "callers"}]}, "query type"),
        ({"queries": [{"name": "x"}]}, "root"),
        ({"root": ".", "reads": [{"path": "x.py", "start": 0}]}, "'start' must be a line number"),
        ({"root": ".", "reads": [{"path": "x.py", "start": 5, "end": 4}]}, "'end' must be null"),
        ({"root": ".", "reads": [{"start": 1}]}, "string 'path'"),
    ],
)
def test_bad_requests_answer_json_errors_with_exit_2(request_: dict, needle: str) -> None:
    status, answer = run_script(request_)
    assert status == 2 and answer["ok"] is False and answer["kind"] == "request" and needle in answer["error"]


def test_reads_return_the_lines_the_search_numbers_without_walking(tree: Path) -> None:
    _, found = run_script({"root": str(tree), "queries": [{"name": "target"}]})
    latin = by_qualname(found)["target@latin.py"]
    rel = f"{HOSTILE_DIR}/{HOSTILE_FILE}"
    reads = [
        {"path": "latin.py", "start": latin["start_line"], "end": latin["end_line"]},
        {"path": str(tree / rel), "start": 40},  # absolute path, to the end of the file
        {"path": "missing 'x'.py"},
        {"path": "latin.py", "start": 2, "end": 999},
    ]
    status, answer = run_script({"root": str(tree), "reads": reads})
    assert status == 0 and answer["files_scanned"] == 0 and answer["results"] == []
    exact, tail, missing, clamped = answer["reads"]
    assert exact["text"] == latin["source"] and exact["error"] is None and exact["total_lines"] == 5
    assert tail["text"] == "".join(line + "\n" for line in MAIN_SOURCE.split("\n")[39:-1])
    assert (tail["end"], tail["total_lines"]) == (len(MAIN_SOURCE.split("\n")) - 1,) * 2
    assert missing["text"] is None and "No such file" in missing["error"]
    assert clamped["end"] == 5 and clamped["text"].startswith("# caf\u00e9 \x0c page break\n")


def test_invalid_json_is_answered_as_json() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], input=b"{not json", capture_output=True, timeout=60, check=False
    )
    assert proc.returncode == 2 and "not valid UTF-8 JSON" in json.loads(proc.stdout)["error"]


def _find_python38() -> str | None:
    """A working Python 3.8 (the oldest the script supports), or None."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3")))
    candidates.append(shutil.which("python3.8"))
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 8))"], capture_output=True, check=False
        )
        if probe.stdout.strip() == b"True":
            return candidate
    return None


PYTHON38 = _find_python38()


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 interpreter on this machine")
def test_python38_gives_the_same_answer(tree: Path) -> None:
    """The script promises Python 3.8+: the oldest interpreter must answer identically."""
    queries = [{"name": "target"}, {"name": "multi"}, {"name": "target", "type": "references"}]
    request = {"root": str(tree), "queries": queries}
    _, new = run_script(request)
    status, old = run_script(request, python=PYTHON38)
    assert status == 0 and old["python_version"].startswith("3.8")
    assert old["results"] == new["results"]


# -- the on-host index -------------------------------------------------------------------


def test_a_second_call_answers_from_the_index_without_parsing(tree: Path, fresh_index: Path) -> None:
    queries = [{"name": "target"}, {"name": "Outer.Inner"}, {"name": "target", "type": "references"}]
    _, cold = run_script({"root": str(tree), "queries": queries})
    assert cold["files_parsed"] == 4 and cold["files_from_index"] == 0 and cold["index"]["state"] == "new"
    assert cold["index"]["records_written"] == 4 and cold["index"]["dir"] == str(fresh_index)
    _, warm = run_script({"root": str(tree), "queries": queries})
    assert warm["files_parsed"] == 0 and warm["files_from_index"] == 4 and warm["index"]["state"] == "loaded"
    assert warm["results"] == cold["results"] and warm["unparsable"] == cold["unparsable"]
    _, plain = run_script({"root": str(tree), "queries": queries, "index": False})
    assert plain["results"] == cold["results"] and plain["index"] == {"state": "off"} and plain["files_parsed"] == 4
    assert not (tree / ".cache").exists() and sorted(p.name for p in fresh_index.iterdir()) == ["files", "trees"]


def test_a_changed_file_is_parsed_again_and_a_new_one_is_found(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    (root / "b.py").write_text("def f():\n    return 2\n", encoding="utf-8")
    request = {"root": str(root), "queries": [{"name": "f"}]}
    _, first = run_script(request)
    assert first["files_parsed"] == 2
    (root / "a.py").write_text("\n\ndef f(x):\n    return x\n", encoding="utf-8")  # same second: see RACY_NS
    (root / "c.py").write_text("class f:\n    pass\n", encoding="utf-8")
    _, second = run_script(request)
    assert second["files_parsed"] == 2 and second["files_from_index"] == 1  # a.py changed, c.py new; b.py kept
    assert [(m["path"], m["def_line"], m["signature"]) for m in second["results"][0]["matches"]] == [
        ("a.py", 3, "(x)"), ("b.py", 1, "()"), ("c.py", 1, "")]  # fmt: skip
    (root / "b.py").unlink()
    _, third = run_script(request)
    assert [m["path"] for m in third["results"][0]["matches"]] == ["a.py", "c.py"] and third["files_parsed"] == 0


def test_a_corrupt_index_is_ignored_and_rebuilt(tree: Path, fresh_index: Path) -> None:
    request = {"root": str(tree), "queries": [{"name": "target"}, {"name": "Outer", "type": "references"}]}
    _, first = run_script(request)
    [tree_file] = (fresh_index / "trees").iterdir()
    tree_file.write_text('{"format": 1, "files": {', encoding="utf-8")  # cut short
    records = sorted((fresh_index / "files").rglob("*.json"))
    records[0].write_bytes(b"\x00not json")
    records[1].write_text('{"defs": "not a list"}', encoding="utf-8")
    status, second = run_script(request)
    assert status == 0 and second["index"]["state"] == "corrupt" and second["results"] == first["results"]
    assert 1 <= second["files_parsed"] <= 2  # the damaged records' files
    _, third = run_script(request)
    assert third["index"]["state"] == "loaded" and third["files_parsed"] == 0 and third["results"] == first["results"]
    assert not [p for p in (fresh_index / "trees").iterdir() if p.name.startswith(".tmp-")]


def test_an_unwritable_index_still_answers(tree: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not a directory"
    blocker.write_text("x", encoding="utf-8")
    status, answer = run_script({"root": str(tree), "queries": [{"name": "target"}], "index_dir": str(blocker)})
    assert status == 0 and len(answer["results"][0]["matches"]) == 6 and answer["index"]["errors"]


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 interpreter on this machine")
def test_python38_builds_and_reads_the_index(tree: Path) -> None:
    queries = [{"name": "target"}, {"name": "target", "type": "references"}]
    _, new = run_script({"root": str(tree), "queries": queries})
    _, cold = run_script({"root": str(tree), "queries": queries}, python=PYTHON38)
    _, warm = run_script({"root": str(tree), "queries": queries}, python=PYTHON38)
    assert cold["files_parsed"] == 4 and warm["files_parsed"] == 0  # its own records: keyed by Python version
    assert cold["results"] == warm["results"] == new["results"]
