"""Give ``make lab`` working copies of the committed notebooks, so running them never writes into tracked files.

JupyterLab saves a notebook's outputs (and its kernel's metadata) into the file it opened; opened
from ``notebooks/`` that is the committed notebook itself, committed without outputs. ``make lab``
therefore serves ``lab/`` (ignored by git) instead: this script copies each ``notebooks/*.ipynb``
there when the copy is missing, and keeps a copy that exists (it may hold your work), saying which
copies are older than their committed notebook so you can delete them to take the new one.

Run (``make lab`` does)::

    python tools/lab_notebooks.py                       # notebooks/ -> lab/
    python tools/lab_notebooks.py --source S --dest D
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sync(source: Path, dest: Path) -> list[str]:
    """Copy every ``source/*.ipynb`` missing from ``dest`` (created if needed); returns one line per notebook.

    A copy already in ``dest`` is never overwritten; its line says when the committed notebook is
    newer than it (modification times).
    """
    dest.mkdir(parents=True, exist_ok=True)
    lines = []
    for notebook in sorted(source.glob("*.ipynb")):
        copy = dest / notebook.name
        if not copy.exists():
            shutil.copy2(notebook, copy)
            lines.append(f"copied {notebook.name} to {dest.name}/")
        elif notebook.stat().st_mtime > copy.stat().st_mtime:
            lines.append(
                f"kept your {dest.name}/{notebook.name}; {source.name}/{notebook.name} is newer: delete "
                "the copy to take it"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--dest", type=Path, default=ROOT / "lab")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"error: {args.source} is not a folder of notebooks", file=sys.stderr)
        return 2
    for line in sync(args.source, args.dest):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
