"""Analysis of the spec-versus-baseline trade-off: pure functions on DataFrames (ratios,
crossovers, the best policy, bootstrap intervals over requests, t intervals over repeats,
whether a pair is like-for-like, and the pure parts of a report's verdict)."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "bracket_levels": "_verdict",
    "bracket_text": "_verdict",
    "levels_text": "_verdict",
    "MIN_TEST_REPEATS": "_verdict",
    "not_tested_text": "_verdict",
    "queued_requests": "_fairness",
    "ratio_spans": "_verdict",
    "round_sig": "_verdict",
    "round_to_interval": "_verdict",
    "settings_differences": "_fairness",
    "SIGNIFICANCE_RULE": "_verdict",
    "best_policy": "_crossover",
    "Crossover": "_crossover",
    "crossover_interval": "_repeats",
    "CrossoverInterval": "_repeats",
    "find_crossover": "_crossover",
    "Interval": "_repeats",
    "mean_interval": "_repeats",
    "per_request_ratio_ci": "_uncertainty",
    "ratio_intervals": "_repeats",
    "ratio_table": "_crossover",
    "repeat_table": "_repeats",
    "t_quantile": "_repeats",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
