"""Analysis of the spec-versus-baseline trade-off: pure functions on DataFrames."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "best_policy": "_crossover",
    "Crossover": "_crossover",
    "find_crossover": "_crossover",
    "per_request_ratio_ci": "_uncertainty",
    "ratio_table": "_crossover",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
