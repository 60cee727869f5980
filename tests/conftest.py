"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import nbformat
import pytest

NotebookWriter = Callable[..., Path]


def _write_notebook(
    path: Path,
    *,
    setup: Sequence[str] = (),
    parameters: str | None = None,
    cells: Sequence[str] = (),
) -> Path:
    """Write a Python notebook: ``setup`` code cells, a cell tagged ``parameters``, then ``cells``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell(f"# {path.stem}"))
    nb.cells.extend(nbformat.v4.new_code_cell(src) for src in setup)
    if parameters is not None:
        cell = nbformat.v4.new_code_cell(parameters)
        cell.metadata["tags"] = ["parameters"]
        nb.cells.append(cell)
    nb.cells.extend(nbformat.v4.new_code_cell(src) for src in cells)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


@pytest.fixture(scope="session")
def write_notebook() -> NotebookWriter:
    """``write_notebook(path, setup=[...], parameters="x = 1", cells=[...]) -> path``: a small real notebook."""
    return _write_notebook
