"""Charts: altair charts from tidy DataFrames, rendered and saved offline."""

import typing as _typing

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
    "variant_colours": "_colours",
    "whatif_chart": "_calibration",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.charts._acceptance import accept_distribution_chart as accept_distribution_chart
    from workbench.charts._tradeoff import accept_length_chart as accept_length_chart
    from workbench.charts._whatif import breakdown_chart as breakdown_chart
    from workbench.charts._calibration import calibration_fit_chart as calibration_fit_chart
    from workbench.charts._render import chart_mimebundle as chart_mimebundle
    from workbench.charts._whatif import crossover_chart as crossover_chart
    from workbench.charts._tradeoff import crossover_label as crossover_label
    from workbench.charts._render import enable_offline_renderer as enable_offline_renderer
    from workbench.charts._policy import gain_chart as gain_chart
    from workbench.charts._whatif import envelope_chart as envelope_chart
    from workbench.charts._calibration import kernel_group_chart as kernel_group_chart
    from workbench.charts._policy import METRIC_TITLES as METRIC_TITLES
    from workbench.charts._policy import pareto_chart as pareto_chart
    from workbench.charts._tradeoff import latency_chart as latency_chart
    from workbench.charts._tradeoff import LATENCIES as LATENCIES
    from workbench.charts._tradeoff import per_request_chart as per_request_chart
    from workbench.charts._whatif import policy_chart as policy_chart
    from workbench.charts._policy import policy_envelope_chart as policy_envelope_chart
    from workbench.charts._acceptance import position_rate_chart as position_rate_chart
    from workbench.charts._tradeoff import provenance_subtitle as provenance_subtitle
    from workbench.charts._tradeoff import ratio_chart as ratio_chart
    from workbench.charts._whatif import ratio_heatmap as ratio_heatmap
    from workbench.charts._calibration import residual_chart as residual_chart
    from workbench.charts._render import RENDERER_NAME as RENDERER_NAME
    from workbench.charts._render import save_chart as save_chart
    from workbench.charts._render import save_charts as save_charts
    from workbench.charts._policy import spec_ratio_chart as spec_ratio_chart
    from workbench.charts._server import server_series_chart as server_series_chart
    from workbench.charts._tradeoff import throughput_chart as throughput_chart
    from workbench.charts._colours import variant_colours as variant_colours
    from workbench.charts._calibration import whatif_chart as whatif_chart
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
