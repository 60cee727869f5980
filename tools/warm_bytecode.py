"""Write the bytecode (``.pyc``) of every module a ``make report`` process imports, once, at install time.

uv installs packages without bytecode (pip compiles at install), and where the environment sets
``PYTHONDONTWRITEBYTECODE`` no process writes any either: then every notebook kernel compiles pandas,
altair, IPython and the workbench from source at its start (about 5 s of CPU each on this 2-core
machine), and every simulated server aiohttp and numpy (about 0.5 s). This script imports what
those processes import (each workbench module, the Jupyter stack papermill runs, the notebooks'
libraries) with bytecode writing on, so each imported module's ``.pyc`` is written where Python looks
for it. That compiles about a third of what ``uv pip install --compile-bytecode`` would (the whole
site-packages: 34 s of CPU against 12 s here, docs/PERFORMANCE.md). A module it misses is only
compiled in memory when imported, as before.

Run (``make report``'s install does)::

    python tools/warm_bytecode.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

#: Imported by a report's processes besides the workbench: papermill and its kernel, the HTML export,
#: the notebooks' tables and charts, the simulated server's HTTP stack.
THIRD_PARTY = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "papermill",
    "nbclient",
    "nbconvert.exporters.html",
    "altair",
    "vl_convert",
    "pandas",
    "pyarrow.parquet",
    "aiohttp.web",
    "IPython",
    "ipywidgets",
    "tqdm.auto",
    "uvloop",
    "orjson",
    "tokenizers",
    "typer",
    "yaml",
    "paramiko",
    "pygments",
)


def warm() -> int:
    """Import every workbench module and :data:`THIRD_PARTY` with bytecode writing on; the count of modules loaded.

    Raises:
        ImportError: a module of the workbench or of :data:`THIRD_PARTY` cannot be imported (the install is
            incomplete: re-run ``make venv``).
    """
    sys.dont_write_bytecode = False
    import workbench

    for module in pkgutil.walk_packages(workbench.__path__, "workbench."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    for name in THIRD_PARTY:
        importlib.import_module(name)
    return len(sys.modules)


if __name__ == "__main__":
    print(f"bytecode written for the {warm()} modules a report imports")
