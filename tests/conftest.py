"""Shared pytest fixtures."""

from __future__ import annotations

import importlib.util
import types
from collections.abc import Callable, Sequence
from pathlib import Path

import nbformat
import pytest

#: The repository root (tests/ is one level below it).
ROOT = Path(__file__).resolve().parent.parent


def load_tool(name: str) -> types.ModuleType:
    """Import ``tools/<name>.py`` (build tools are scripts, not part of the package)."""
    spec = importlib.util.spec_from_file_location(f"tools_{name}", ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

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
