"""Engines: what serves a variant (the simulated engine, SGLang), behind one :class:`Engine` protocol.

``resolve_engine(host, engine)`` turns an ``engine`` parameter (a name, an Engine or
None for the host's default) into the engine; nothing else in the workbench compares
an engine's name.
"""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "DEFAULT_SIM_REPEATS": "_sim",
    "DEFAULT_SIM_TIME_SCALE": "_sim",
    "MAX_SIM_TIME_SCALE": "_sim",
    "Engine": "_base",
    "engine_names": "_registry",
    "ENGINES": "_registry",
    "get_engine": "_registry",
    "resolve_engine": "_registry",
    "server_info_engine": "_registry",
    "SGLangEngine": "_sglang",
    "SimEngine": "_sim",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
