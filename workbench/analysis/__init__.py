"""Analysis of the spec-versus-baseline trade-off: pure functions on DataFrames."""

from workbench.analysis.crossover import Crossover, best_policy, find_crossover, ratio_table

__all__ = ["Crossover", "best_policy", "find_crossover", "ratio_table"]
