"""Which notebooks ``workbench report`` runs when given none, in what order, and where reports go.

A notebook that only renders stored runs (it has nothing to show without them) says so in its metadata::

    "metadata": {"workbench_report": {"needs_runs": true}, ...}

``make report`` (no ``--from-runs``) leaves it out; ``workbench report --from-runs RUN...`` may run it
(``workbench/report/_from_runs.py`` chooses by what the runs hold).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from workbench.errors import ConfigError

__all__ = ["DEFAULT_OUT_DIR", "NOTEBOOK_ORDER", "default_notebooks", "find_notebooks_dir", "report_metadata"]

#: The notebook metadata key of the workbench's report settings (``measures``, ``needs_runs``, ``compares``).
REPORT_KEY = "workbench_report"

#: Where reports go unless told otherwise (relative to the current directory).
DEFAULT_OUT_DIR = Path("reports")

#: Notebooks that run first, in this order; the others follow alphabetically.
NOTEBOOK_ORDER = ("inspect_source.ipynb", "spec_vs_baseline.ipynb")


def find_notebooks_dir(cwd: Path | None = None) -> Path:
    """The project's ``notebooks/`` folder.

    Looks in the current directory first, then in the source checkout the
    ``workbench`` package was installed from (``pip install -e .``).

    Args:
        cwd: the directory to start from (default: the current directory).

    Raises:
        ConfigError: neither place has a ``notebooks/`` folder.
    """
    here = (cwd or Path.cwd()) / "notebooks"
    if here.is_dir():
        return here.resolve()
    checkout = Path(__file__).resolve().parents[2] / "notebooks"
    if checkout.is_dir():
        return checkout
    raise ConfigError(
        f"no notebooks/ folder in {here.parent} or in the workbench checkout; "
        "run from the repository root or name the notebooks to run."
    )


def report_metadata(notebook: str | Path) -> Mapping[str, object]:
    """A notebook's ``workbench_report`` metadata (empty when it has none, or the file is not a notebook)."""
    import nbformat  # here, not at the top: `workbench report --help` need not pay for it

    try:
        meta = nbformat.read(str(notebook), as_version=4).metadata.get(REPORT_KEY) or {}
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, Mapping) else {}


def default_notebooks(directory: str | Path, *, with_runs: bool = False) -> list[Path]:
    """Notebooks in ``directory`` (not its subfolders) in report order.

    Order: :data:`NOTEBOOK_ORDER` first (those present), then the rest by name.

    Args:
        directory: the notebooks folder.
        with_runs: stored runs are given (``--from-runs``): the notebooks whose metadata says
            ``needs_runs`` are included; without, they are left out (they have nothing to show).

    Raises:
        ConfigError: the folder holds no notebook.
    """
    folder = Path(directory)
    found = {p.name: p for p in folder.glob("*.ipynb") if p.is_file() and not p.name.startswith(".")}
    if not found:
        raise ConfigError(f"no notebooks (*.ipynb) in {folder}; name the notebooks to run.")
    if not with_runs:
        found = {name: p for name, p in found.items() if report_metadata(p).get("needs_runs") is not True}
        if not found:
            raise ConfigError(
                f"every notebook in {folder} renders stored runs only (its metadata says needs_runs): "
                "give the runs with --from-runs RUN..., or name the notebooks to run."
            )
    first = [found[name] for name in NOTEBOOK_ORDER if name in found]
    rest = [found[name] for name in sorted(found) if name not in NOTEBOOK_ORDER]
    return first + rest
