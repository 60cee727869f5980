"""Command-line pieces of the engines that several commands share.

:data:`EngineOpt` is the ``--engine`` option of every command that runs or checks a variant on an engine
(``workbench bench``, ``workbench variants check``); the name it gives is resolved by
:func:`workbench.engines.resolve_engine` (None: the simulated engine on this machine, SGLang on a host).
Importing this module is cheap (typer only).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

__all__ = ["EngineOpt"]

EngineOpt = Annotated[
    Optional[str],
    typer.Option(
        "--engine", help="'sim' or 'sglang': what serves the variants (default: sim on this machine, sglang on a host)."
    ),
]
