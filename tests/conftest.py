"""Shared pytest fixtures."""

from __future__ import annotations

import importlib.util
import signal
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


#: The test modules that take longest (seconds, loaded 2-core runs of 2026-12-02, ``--durations``), run first:
#: pytest-xdist's ``--dist loadfile`` hands modules out in collection order (``--no-loadscope-reorder``,
#: the Makefile's), and a long module handed out last runs alone at the end while the other workers idle
#: (test_fleet.py about 530-860 s before it was split in two, test_policy_study.py's notebook 20-320 s depending on the
#: load). Longest first is the usual greedy rule for packing jobs onto workers; the Ray modules are interleaved with
#: others so that at most two clusters start at once on three workers.
SLOWEST_FIRST = (
    "test_fleet.py",
    "test_fleet_interrupts.py",
    "test_policy_study.py",
    "test_fleet_ssh.py",
    "test_e2e_spec_vs_baseline.py",
    "test_fleet_multinode.py",
    "test_report_from_runs.py",
    "test_e2e_report_injection.py",
    "test_faults.py",
    "test_e2e_notebook_over_ssh.py",
    "test_servers_ssh.py",
    "test_report_beside.py",
    "test_sim_predict_agreement.py",
    "test_lab_browser.py",
    "test_fleet_pinned_host.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the modules of :data:`SLOWEST_FIRST` first, in that order; the others keep their order."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_configure(config: pytest.Config) -> None:
    """Let SIGINT reach what the tests start, as in a terminal.

    A non-interactive shell starts a background command with SIGINT ignored (bash: asynchronous commands ignore
    SIGINT and SIGQUIT), every child inherits that across exec, and Python then installs no KeyboardInterrupt
    handler: the tests that press Ctrl-C on a `workbench report` or a fleet driver saw it ignored (a suite run
    as `make test &` in a script, 2026-12-02). A handler, unlike SIG_IGN, is reset to the default at exec.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
