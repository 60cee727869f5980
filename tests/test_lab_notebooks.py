"""``make lab`` serves working copies (``lab/``, tools/lab_notebooks.py): running a notebook there writes its
outputs into the copy, never into the committed notebook."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import nbformat
from conftest import ROOT, load_tool
from nbclient import NotebookClient

lab_notebooks = load_tool("lab_notebooks")


def test_make_lab_serves_the_copies_not_the_committed_notebooks() -> None:
    dry = subprocess.run(
        ["make", "-n", "lab", "STAMP=Makefile"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    sync, serve = dry.index("tools/lab_notebooks.py"), dry.index("jupyter lab")
    assert sync < serve and "--ServerApp.root_dir=lab " in dry and "root_dir=notebooks" not in dry
    assert "/lab/" in (ROOT / ".gitignore").read_text().splitlines()


def test_running_a_copy_leaves_the_committed_notebook_unchanged(tmp_path: Path, write_notebook) -> None:
    committed = write_notebook(tmp_path / "notebooks" / "tiny.ipynb", parameters="x = 2", cells=["print(x * 21)"])
    before = committed.read_bytes()
    assert lab_notebooks.sync(committed.parent, tmp_path / "lab") == ["copied tiny.ipynb to lab/"]
    copy = tmp_path / "lab" / "tiny.ipynb"
    nb = nbformat.read(copy, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()  # run as JupyterLab's kernel would
    nbformat.write(nb, copy)  # and saved
    assert committed.read_bytes() == before
    assert "42" in copy.read_text()
    # the copy holds the user's work now: a later sync keeps it, and says when the committed one is newer
    later = time.time() + 5
    os.utime(committed, (later, later))
    assert lab_notebooks.sync(committed.parent, tmp_path / "lab") == [
        "kept your lab/tiny.ipynb; notebooks/tiny.ipynb is newer: delete the copy to take it"
    ]
    assert "42" in copy.read_text()
