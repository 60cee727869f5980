"""Every name a face exports is used by someone outside its package: another package, a notebook, a benchmark,
a tool or a test (docs/ARCHITECTURE.md, rule 1); a root name (``wb.X``) by a notebook, a script, a test or the
documentation's examples (``wb.X`` in README.md and docs/). A name nobody uses is dropped from the face (its
module keeps it), so a face says what the package offers others and nothing more."""

from __future__ import annotations

import importlib
import io
import json
import re
import tokenize
from pathlib import Path

import workbench

TREE = Path(workbench.__file__).resolve().parent.parent


def _names_in_code(text: str) -> set[str]:
    """The identifiers a Python source uses (NAME tokens: not the words of its strings and comments)."""
    try:
        return {t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.NAME}
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return set()


def _notebook_code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def _users() -> dict[str, set[str]]:
    """``{place: identifiers used there}``; a place is a package (``workbench.bench``), or ``outside`` (the
    notebooks, benchmarks, tools and tests). The root face re-exports names and is no user of them."""
    places: dict[str, set[str]] = {}
    for path in (TREE / "workbench").rglob("*.py"):
        parts = path.relative_to(TREE / "workbench").parts
        if parts == ("__init__.py",):
            continue
        place = f"workbench.{parts[0]}" if len(parts) > 1 else "workbench"
        places.setdefault(place, set()).update(_names_in_code(path.read_text(encoding="utf-8")))
    outside = places.setdefault("outside", set())
    for folder in ("benchmarks", "tools", "tests"):
        for path in (TREE / folder).rglob("*.py"):
            outside |= _names_in_code(path.read_text(encoding="utf-8"))
    for path in (TREE / "notebooks").glob("*.ipynb"):
        outside |= _names_in_code(_notebook_code(path))
    return places


def _documented_root_names() -> set[str]:
    """``wb.X`` in README.md and docs/*.md: the notebook API the documentation shows."""
    texts = [
        (TREE / "README.md").read_text(encoding="utf-8"),
        *(p.read_text(encoding="utf-8") for p in (TREE / "docs").glob("*.md")),
    ]
    return {m for text in texts for m in re.findall(r"\bwb\.([A-Za-z_]\w*)", text)}


def exported_but_unused() -> list[str]:
    """``package.name`` of every exported name without a user (see the module docstring)."""
    places = _users()
    root = importlib.import_module("workbench")
    used_at_root = {n for n in root._NAMES if n in places["outside"] or n in _documented_root_names()}
    unused = [f"workbench.{n}" for n in root._NAMES if n not in used_at_root]
    packages = sorted(p.name for p in (TREE / "workbench").iterdir() if (p / "__init__.py").is_file())
    for package in (f"workbench.{p}" for p in packages):
        face = importlib.import_module(package)
        for name in [*getattr(face, "_NAMES", {}), *getattr(face, "_MODULES", {})]:
            reexported = name in used_at_root and root._NAMES[name] == package.split(".")[1]
            if not reexported and not any(place != package and name in used for place, used in places.items()):
                unused.append(f"{package}.{name}")
    return unused


def test_every_exported_name_has_a_user_outside_its_package() -> None:
    unused = exported_but_unused()
    assert unused == [], (
        "exported but used by nobody outside the package: drop them from the face's table (and run tools/sync_faces.py)"
    )
