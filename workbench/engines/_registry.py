"""The known engines by name, and which one serves on a host when none is named.

``engine`` parameters (notebook parameters, ``--engine``, ``ServerHandle.start``)
take a name or an :class:`~workbench.engines.Engine`; :func:`resolve_engine`
turns either (or None) into the engine, at the edge, and everything below takes
the engine object. Adding an engine means one module in this package and one
entry in :data:`ENGINES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.engines._base import Engine
from workbench.engines._sglang import SGLANG_ENGINE
from workbench.engines._sim import SIM_ENGINE
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.hosts import Host

__all__ = ["ENGINES", "engine_names", "get_engine", "resolve_engine", "server_info_engine"]

#: Name -> engine, for every engine the workbench can launch.
ENGINES: dict[str, Engine] = {e.name: e for e in (SIM_ENGINE, SGLANG_ENGINE)}
#: The engine on this machine when none is named (no GPU needed), and on any other host.
LOCAL_DEFAULT = "sim"
REMOTE_DEFAULT = "sglang"


def engine_names() -> list[str]:
    """The known engines' names, in registry order (``["sim", "sglang"]``)."""
    return list(ENGINES)


def get_engine(engine: str | Engine) -> Engine:
    """The engine called ``engine`` (an :class:`Engine` is returned as is).

    Raises:
        ConfigError: no engine has that name (the message lists the known ones).
    """
    if isinstance(engine, str):
        found = ENGINES.get(engine)
        if found is None:
            known = ", ".join(repr(n) for n in ENGINES)
            raise ConfigError(f"Unknown engine {engine!r}; known engines: {known}")
        return found
    if isinstance(engine, Engine):
        return engine
    raise ConfigError(f"engine must be an engine name ({', '.join(map(repr, ENGINES))}) or an Engine, got {engine!r}")


def resolve_engine(host: str | Host | None, engine: str | Engine | None = None) -> Engine:
    """The engine that serves on ``host``: ``engine`` when given, else the default for the host.

    The default is the simulated engine on this machine (``host`` None, ``"local"``,
    ``"localhost"``, ``""`` or a :class:`~workbench.hosts.LocalHost`:
    :func:`workbench.hosts.is_local` decides) and SGLang on any other host.

    Args:
        host: where it would run (None: not named, i.e. this machine).
        engine: a name (``"sim"``, ``"sglang"``), an :class:`Engine`, or None for the default.

    Raises:
        ConfigError: an unknown engine name (the message lists the known ones).
    """
    if engine is not None:
        return get_engine(engine)
    from workbench.hosts import is_local  # imported here: resolving a name needs no SSH library

    return ENGINES[LOCAL_DEFAULT if host is None or is_local(host) else REMOTE_DEFAULT]


def server_info_engine(server_info: Mapping[str, Any] | None) -> Engine | None:
    """The engine whose server gave this ``/server_info`` answer (None for no answer).

    The first engine in :data:`ENGINES` that says it :meth:`~workbench.engines.Engine.answered`
    it: the simulator for an answer with a ``simulation`` block, SGLang for any other.
    """
    if server_info is None:
        return None
    return next((e for e in ENGINES.values() if e.answered(server_info)), None)
