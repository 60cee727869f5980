"""Charts: altair charts from tidy DataFrames, rendered and saved offline."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "accept_distribution_chart": "_acceptance",
    "accept_length_chart": "_tradeoff",
    "breakdown_chart": "_whatif",
    "calibration_fit_chart": "_calibration",
    "chart_mimebundle": "_render",
    "crossover_chart": "_whatif",
    "crossover_label": "_tradeoff",
    "enable_offline_renderer": "_render",
    "gain_chart": "_policy",
    "envelope_chart": "_whatif",
    "kernel_group_chart": "_calibration",
    "METRIC_TITLES": "_policy",
    "pareto_chart": "_policy",
    "latency_chart": "_tradeoff",
    "LATENCIES": "_tradeoff",
    "per_request_chart": "_tradeoff",
    "policy_chart": "_whatif",
    "policy_envelope_chart": "_policy",
    "position_rate_chart": "_acceptance",
    "provenance_subtitle": "_tradeoff",
    "ratio_chart": "_tradeoff",
    "ratio_heatmap": "_whatif",
    "residual_chart": "_calibration",
    "RENDERER_NAME": "_render",
    "save_chart": "_render",
    "save_charts": "_render",
    "spec_ratio_chart": "_policy",
    "server_series_chart": "_server",
    "throughput_chart": "_tradeoff",
    "variant_scale": "_policy",
    "whatif_chart": "_calibration",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
