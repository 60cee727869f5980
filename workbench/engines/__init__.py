"""Engines: what serves a variant (the simulated engine, SGLang), behind one :class:`Engine` protocol.

``resolve_engine(host, engine)`` turns an ``engine`` parameter (a name, an Engine or
None for the host's default) into the engine; nothing else in the workbench compares
an engine's name.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "DEFAULT_SIM_TIME_SCALE": "_sim",
    "Engine": "_base",
    "engine_names": "_registry",
    "ENGINES": "_registry",
    "get_engine": "_registry",
    "resolve_engine": "_registry",
    "server_info_engine": "_registry",
    "SGLangEngine": "_sglang",
    "SimEngine": "_sim",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.engines._sim import DEFAULT_SIM_TIME_SCALE as DEFAULT_SIM_TIME_SCALE
    from workbench.engines._base import Engine as Engine
    from workbench.engines._registry import engine_names as engine_names
    from workbench.engines._registry import ENGINES as ENGINES
    from workbench.engines._registry import get_engine as get_engine
    from workbench.engines._registry import resolve_engine as resolve_engine
    from workbench.engines._registry import server_info_engine as server_info_engine
    from workbench.engines._sglang import SGLangEngine as SGLangEngine
    from workbench.engines._sim import SimEngine as SimEngine
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
