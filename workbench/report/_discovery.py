"""Which notebooks ``workbench report`` runs when given none, in what order, and where reports go."""

from __future__ import annotations

from pathlib import Path

from workbench.errors import ConfigError

__all__ = ["DEFAULT_OUT_DIR", "NOTEBOOK_ORDER", "default_notebooks", "find_notebooks_dir"]

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


def default_notebooks(directory: str | Path) -> list[Path]:
    """Notebooks in ``directory`` (not its subfolders) in report order.

    Order: :data:`NOTEBOOK_ORDER` first (those present), then the rest by name.

    Raises:
        ConfigError: the folder holds no notebook.
    """
    folder = Path(directory)
    found = {p.name: p for p in folder.glob("*.ipynb") if p.is_file() and not p.name.startswith(".")}
    if not found:
        raise ConfigError(f"no notebooks (*.ipynb) in {folder}; name the notebooks to run.")
    first = [found[name] for name in NOTEBOOK_ORDER if name in found]
    rest = [found[name] for name in sorted(found) if name not in NOTEBOOK_ORDER]
    return first + rest
