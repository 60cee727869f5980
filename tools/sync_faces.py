"""Rewrite each face's ``if typing.TYPE_CHECKING:`` block from its ``_NAMES`` / ``_MODULES`` tables.

A face (``workbench/__init__.py``, ``workbench/<package>/__init__.py``) exports its names lazily
through ``lazy_face``; its TYPE_CHECKING block imports the same names from the same modules so
mypy and editors see their real types. ``tests/test_exports.py`` checks that the block matches the
tables; after adding a name to a table, run::

    .venv/bin/python tools/sync_faces.py          # rewrite the blocks that differ
    .venv/bin/python tools/sync_faces.py --check  # exit 1 and name the faces that differ
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = (
    "if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)"
)
CALL = "__all__, __getattr__, __dir__ = _lazy_face("


def _tables(tree: ast.Module) -> tuple[dict[str, str], dict[str, str]]:
    """The face's ``_NAMES`` and ``_MODULES`` literals (read from the source, nothing imported)."""
    found: dict[str, dict[str, str]] = {"_NAMES": {}, "_MODULES": {}}
    for node in tree.body:
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        for name in targets:
            if name in found and node.value is not None:
                found[name] = ast.literal_eval(node.value)
    return found["_NAMES"], found["_MODULES"]


def face_block(path: Path) -> tuple[str, str]:
    """``(current source, source with the TYPE_CHECKING block rewritten from the tables)`` of a face."""
    text = path.read_text(encoding="utf-8")
    package = "workbench" if path.parent.name == "workbench" else f"workbench.{path.parent.name}"
    names, modules = _tables(ast.parse(text))
    lines = [f"    from {package}.{module} import {name} as {name}" for name, module in names.items()]
    lines += [f"    from {package} import {module} as {name}" for name, module in modules.items()]
    start = text.index(HEADER)
    call = text.index(CALL, start)
    else_line = text.rindex("else:\n", start, call)
    block = HEADER + "\n" + "\n".join(lines) + "\n"
    return text, text[:start] + block + text[else_line:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report the faces whose block differs")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout holding workbench/ (default: this one)")
    args = parser.parse_args(argv)
    root = args.root
    faces = [root / "workbench" / "__init__.py", *sorted((root / "workbench").glob("*/__init__.py"))]
    stale = []
    for path in faces:
        old, new = face_block(path)
        if old != new:
            stale.append(str(path.relative_to(root)))
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for name in stale:
        print(f"{'differs' if args.check else 'rewrote'}: {name}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
