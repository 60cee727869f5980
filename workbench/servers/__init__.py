"""Server variants and their lifecycle on a host."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "classify_failure": "_failures",
    "server_died": "_failures",
    "ServerHandle": "_handle",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
