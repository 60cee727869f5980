"""Analysis of the spec-versus-baseline trade-off: pure functions on DataFrames (ratios,
crossovers, the best policy, bootstrap intervals over requests, t intervals over repeats;
whether a pair is like-for-like, and the pure parts of a report's verdict; the envelope, the
no-drafting threshold and per-batch-size schedules for SGLang and vLLM)."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "accept_by_category": "_acceptance",
    "accept_length_distribution": "_acceptance",
    "imported_position_rates": "_acceptance",
    "position_rates": "_acceptance",
    "bracket_levels": "_verdict",
    "bracket_text": "_verdict",
    "choose_workload": "_load",
    "fleet_hosts": "_fleet_hosts",
    "HOST_COLUMNS": "_fleet_hosts",
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
    "readable_html": "_readable",
    "readable_table": "_readable",
    "round_sig": "_verdict",
    "same_outputs": "_same_work",
    "SameWork": "_same_work",
    "SAME_WORK_TOLERANCE": "_same_work",
    "round_to_interval": "_verdict",
    "settings_differences": "_fairness",
    "SIGNIFICANCE_RULE": "_verdict",
    "best_policy": "_crossover",
    "best_threshold": "_threshold",
    "Crossover": "_crossover",
    "crossover_interval": "_repeats",
    "CrossoverInterval": "_repeats",
    "envelope": "_policy",
    "find_crossover": "_crossover",
    "find_threshold": "_threshold",
    "goodput_levels": "_policy",
    "higher_is_better": "_policy",
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
    "sglang_policy": "_schedule",
    "SglangPolicy": "_schedule",
    "spec_ratio_table": "_policy",
    "step_tiers": "_schedule",
    "t_quantile": "_student_t",
    "Threshold": "_threshold",
    "Tier": "_schedule",
    "vllm_schedule": "_schedule",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.analysis._acceptance import accept_by_category as accept_by_category
    from workbench.analysis._acceptance import accept_length_distribution as accept_length_distribution
    from workbench.analysis._acceptance import imported_position_rates as imported_position_rates
    from workbench.analysis._acceptance import position_rates as position_rates
    from workbench.analysis._verdict import bracket_levels as bracket_levels
    from workbench.analysis._verdict import bracket_text as bracket_text
    from workbench.analysis._load import choose_workload as choose_workload
    from workbench.analysis._fleet_hosts import fleet_hosts as fleet_hosts
    from workbench.analysis._fleet_hosts import HOST_COLUMNS as HOST_COLUMNS
    from workbench.analysis._verdict import interval_text as interval_text
    from workbench.analysis._verdict import level_number as level_number
    from workbench.analysis._verdict import levels_text as levels_text
    from workbench.analysis._load import LOAD_AXES as LOAD_AXES
    from workbench.analysis._load import load_axis as load_axis
    from workbench.analysis._load import load_modes as load_modes
    from workbench.analysis._load import LoadAxis as LoadAxis
    from workbench.analysis._verdict import MIN_TEST_REPEATS as MIN_TEST_REPEATS
    from workbench.analysis._verdict import not_tested_text as not_tested_text
    from workbench.analysis._fairness import queued_requests as queued_requests
    from workbench.analysis._verdict import ratio_spans as ratio_spans
    from workbench.analysis._readable import readable_html as readable_html
    from workbench.analysis._readable import readable_table as readable_table
    from workbench.analysis._verdict import round_sig as round_sig
    from workbench.analysis._same_work import same_outputs as same_outputs
    from workbench.analysis._same_work import SameWork as SameWork
    from workbench.analysis._same_work import SAME_WORK_TOLERANCE as SAME_WORK_TOLERANCE
    from workbench.analysis._verdict import round_to_interval as round_to_interval
    from workbench.analysis._fairness import settings_differences as settings_differences
    from workbench.analysis._verdict import SIGNIFICANCE_RULE as SIGNIFICANCE_RULE
    from workbench.analysis._crossover import best_policy as best_policy
    from workbench.analysis._threshold import best_threshold as best_threshold
    from workbench.analysis._crossover import Crossover as Crossover
    from workbench.analysis._repeats import crossover_interval as crossover_interval
    from workbench.analysis._repeats import CrossoverInterval as CrossoverInterval
    from workbench.analysis._policy import envelope as envelope
    from workbench.analysis._crossover import find_crossover as find_crossover
    from workbench.analysis._threshold import find_threshold as find_threshold
    from workbench.analysis._policy import goodput_levels as goodput_levels
    from workbench.analysis._policy import higher_is_better as higher_is_better
    from workbench.analysis._repeats import mean_interval as mean_interval
    from workbench.analysis._policy import OBJECTIVES as OBJECTIVES
    from workbench.analysis._policy import pareto_points as pareto_points
    from workbench.analysis._uncertainty import per_request_ratio_ci as per_request_ratio_ci
    from workbench.analysis._policy import policy_gains as policy_gains
    from workbench.analysis._policy import policy_rows as policy_rows
    from workbench.analysis._policy import predicted_vs_measured as predicted_vs_measured
    from workbench.analysis._repeats import ratio_intervals as ratio_intervals
    from workbench.analysis._crossover import ratio_table as ratio_table
    from workbench.analysis._repeats import repeat_table as repeat_table
    from workbench.analysis._schedule import sglang_policy as sglang_policy
    from workbench.analysis._schedule import SglangPolicy as SglangPolicy
    from workbench.analysis._policy import spec_ratio_table as spec_ratio_table
    from workbench.analysis._schedule import step_tiers as step_tiers
    from workbench.analysis._student_t import t_quantile as t_quantile
    from workbench.analysis._threshold import Threshold as Threshold
    from workbench.analysis._schedule import Tier as Tier
    from workbench.analysis._schedule import vllm_schedule as vllm_schedule
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
