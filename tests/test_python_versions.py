"""Python 3.11 and 3.12 are both supported: the metadata says so, and every module compiles under 3.12
and imports only standard-library modules 3.12 still has.

This is the cheap check that runs in every ``make test`` (seconds): ``.venv`` is 3.11, so the suite
itself tests 3.11, and a 3.12 interpreter (``python3.12`` on PATH, or pyenv's) compiles every file
here without installing anything. The full check, installing the project into a 3.12 venv and
running a test subset there, is ``make check-py312`` (README).
"""

from __future__ import annotations

import ast
import glob
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("workbench/**/*.py"), *ROOT.glob("remote/*.py"), *ROOT.glob("tools/*.py")])


def _python312() -> str | None:
    """A working python3.12: on PATH, else pyenv's; None when there is none."""
    candidates = [
        shutil.which("python3.12"),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12"))),
    ]
    for exe in filter(None, candidates):
        ok = subprocess.run([exe, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"], capture_output=True)
        if ok.returncode == 0:
            return exe
    return None


def test_metadata_admits_311_and_312() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    spec = SpecifierSet(meta["requires-python"])
    assert "3.11.7" in spec and "3.12.1" in spec and "3.10.13" not in spec
    assert "3.12" in (ROOT / "README.md").read_text() and "check-py312" in (ROOT / "Makefile").read_text()


def _stdlib_imports() -> set[str]:
    """Top-level standard-library modules the sources import (by 3.11's list)."""
    found: set[str] = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found & set(sys.stdlib_module_names)


def test_every_module_compiles_and_finds_its_stdlib_under_312() -> None:
    exe = _python312()
    if exe is None:
        pytest.skip("no python3.12 here; `make check-py312 PYTHON312=...` checks an installed 3.12")
    script = (
        "import importlib.util, sys\n"
        "bad = []\n"
        "for path in sys.argv[2:]:\n"
        "    try:\n"
        "        compile(open(path, encoding='utf-8').read(), path, 'exec')\n"
        "    except SyntaxError as exc:\n"
        "        bad.append(f'{path}: {exc}')\n"
        "missing = [m for m in sys.argv[1].split(',') if importlib.util.find_spec(m) is None]\n"
        "print('\\n'.join(bad + [f'stdlib module gone in 3.12: {m}' for m in missing]))\n"
    )
    out = subprocess.run(
        [exe, "-c", script, ",".join(sorted(_stdlib_imports())), *map(str, SOURCES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
    assert len(SOURCES) > 100  # the whole package was compiled, not an empty glob
