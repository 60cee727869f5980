"""Command-line pieces of the runs store that several commands share.

:data:`RunsDirOption` is the ``--runs-dir`` option of every command that reads or writes runs
(``workbench bench``, ``workbench runs ...``, ``workbench import``); the folder it names is
resolved by :func:`workbench.store.runs_root`, the one rule (the option, else
``$WORKBENCH_RUNS_DIR``, else ``data/runs``; relative paths under the project root).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

__all__ = ["RunsDirOption"]

RunsDirOption = Annotated[
    Optional[Path],
    typer.Option(
        "--runs-dir", help="Runs folder (default: $WORKBENCH_RUNS_DIR or data/runs; relative: to the project root)."
    ),
]
