"""Charts: altair charts from tidy DataFrames, rendered and saved offline."""

from workbench.charts.render import RENDERER_NAME, chart_mimebundle, enable_offline_renderer, save_chart

__all__ = ["RENDERER_NAME", "chart_mimebundle", "enable_offline_renderer", "save_chart"]
