"""Analysis of the spec-versus-baseline trade-off: pure functions on DataFrames (ratios,
crossovers, the best policy, bootstrap intervals over requests, t intervals over repeats;
whether a pair is like-for-like, and the pure parts of a report's verdict; the envelope, the
no-drafting threshold and per-batch-size schedules for SGLang and vLLM)."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "bracket_levels": "_verdict",
    "bracket_text": "_verdict",
    "choose_workload": "_load",
    "interval_text": "_verdict",
    "level_number": "_verdict",
    "levels_text": "_verdict",
    "LOAD_AXES": "_load",
    "load_axis": "_load",
    "load_modes": "_load",
    "LoadAxis": "_load",
    "MIN_TEST_REPEATS": "_verdict",
    "not_tested_text": "_verdict",
    "queued_requests": "_fairness",
    "ratio_spans": "_verdict",
    "round_sig": "_verdict",
    "round_to_interval": "_verdict",
    "settings_differences": "_fairness",
    "SIGNIFICANCE_RULE": "_verdict",
    "best_policy": "_crossover",
    "best_threshold": "_policy",
    "Crossover": "_crossover",
    "crossover_interval": "_repeats",
    "CrossoverInterval": "_repeats",
    "envelope": "_policy",
    "find_crossover": "_crossover",
    "find_threshold": "_policy",
    "goodput_levels": "_policy",
    "higher_is_better": "_policy",
    "Interval": "_repeats",
    "mean_interval": "_repeats",
    "OBJECTIVES": "_policy",
    "pareto_points": "_policy",
    "per_request_ratio_ci": "_uncertainty",
    "policy_gains": "_policy",
    "policy_rows": "_policy",
    "predicted_vs_measured": "_policy",
    "ratio_intervals": "_repeats",
    "ratio_table": "_crossover",
    "repeat_table": "_repeats",
    "sglang_policy": "_policy",
    "SglangPolicy": "_policy",
    "spec_ratio_table": "_policy",
    "step_tiers": "_policy",
    "t_quantile": "_repeats",
    "Threshold": "_policy",
    "Tier": "_policy",
    "vllm_schedule": "_policy",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
