"""Server variants and their lifecycle on a host."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "classify_failure": "_failures",
    "server_died": "_failures",
    "ServerHandle": "_handle",
    "startup_timings": "_startup",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.servers._failures import classify_failure as classify_failure
    from workbench.servers._failures import server_died as server_died
    from workbench.servers._handle import ServerHandle as ServerHandle
    from workbench.servers._startup import startup_timings as startup_timings
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
