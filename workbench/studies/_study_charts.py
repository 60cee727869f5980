"""The charts of a spec-versus-baseline study, drawn from its tables.

:func:`study_charts` is a function of a :class:`workbench.studies._tables.StudyTables` (the notebook
reaches it as :meth:`workbench.studies.Study.charts`): means over repeats with interval bars when n > 1,
a spec/baseline ratio chart per speculative variant, acceptance in detail where the runs recorded it.
Each chart is a pure function of :mod:`workbench.charts`; every subtitle says where the figures come
from (SIMULATED, stand-ins), the workload shown and what a point is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from workbench import charts
from workbench.analysis import MIN_TEST_REPEATS, not_tested_text
from workbench.studies._tables import StudyTables

if TYPE_CHECKING:  # altair is imported by workbench.charts when a chart is drawn
    import altair as alt

__all__ = ["study_charts"]


def study_charts(study: StudyTables) -> dict[str, alt.TopLevelMixin]:
    """Every chart of the study, by file stem (means over repeats, with interval bars when n > 1).

    Stems: ``throughput``, ``per_request`` (where recorded), ``latency_<ttft|tpot|e2e>``, ``ratio_<spec>``
    per speculative variant, ``accept_length``, ``accept_positions`` and ``accept_distribution`` (where
    the runs recorded them).
    """
    means = study.means()
    lines = [*study.subtitle_lines, study.repeats_line]
    names, base = study.variants, study.baseline
    out: dict[str, alt.TopLevelMixin] = {
        "throughput": charts.throughput_chart(means, subtitle=lines, variants=names, baseline=base),
    }
    if means.get("mean_per_request_tok_s", pd.Series(dtype=float)).notna().any():
        out["per_request"] = charts.per_request_chart(means, subtitle=lines, variants=names, baseline=base)
    for metric in charts.LATENCIES:
        if any(f"{p}_{metric}" in means for p in ("p50", "p90", "p99")):
            out[f"latency_{metric.removesuffix('_ms')}"] = charts.latency_chart(
                means, metric, subtitle=lines, variants=names, baseline=base
            )
    unfair = study.comparability()
    n = study.max_repeats
    for spec in study.spec_variants:
        ratios = study.ratios(spec)
        differs = unfair[(unfair["variant"] == spec) & ~unfair["setting"].str.startswith("preflight")]
        fairness = (
            [
                "NOT LIKE-FOR-LIKE: "
                + "; ".join(
                    f"{r.setting} {r.baseline_value} (baseline) vs {r.spec_value}" for r in differs.itertuples()
                )
            ]
            if len(differs)
            else []
        )
        if "mean_per_request_tok_s" not in study.compared(spec):
            ci = None  # not recorded for both (e.g. an imported sglang.bench_serving run)
            ratio_lines = [*study.subtitle_lines, "per-request tok/s not recorded for both: total output only"]
        elif n > 1:
            m = "mean_per_request_tok_s"
            ci = (
                ratios[[study.load, f"{m}_ratio_lo", f"{m}_ratio_hi"]]
                .rename(columns={f"{m}_ratio_lo": "ratio_lo", f"{m}_ratio_hi": "ratio_hi"})
                .dropna()
            )
            ratio_lines = [
                *study.subtitle_lines,
                f"bars: 95% interval over n={n} paired repeats"
                + ("" if n >= MIN_TEST_REPEATS else f" ({not_tested_text(n)}: {MIN_TEST_REPEATS} needed)"),
            ]
        else:
            ci = study.per_request_ci(spec)
            ratio_lines = [
                *study.subtitle_lines,
                f"{not_tested_text(n)}; bars: spread of the requests of that one repeat (bootstrap 95%), not a test",
            ]
        out[f"ratio_{spec}"] = charts.ratio_chart(
            ratios, study.crossovers(spec), spec=spec, subtitle=[*ratio_lines, *fairness], ci=ci
        )
    if study.levels.get("accept_length", pd.Series(dtype=float)).notna().any():
        out["accept_length"] = charts.accept_length_chart(means, subtitle=lines, variants=names, baseline=base)
    rates = study.position_rates()
    if len(rates):
        out["accept_positions"] = charts.position_rate_chart(
            rates, subtitle=lines, load=study.load, variants=names, baseline=base
        )
    dist = study.accept_distribution()
    if len(dist):
        out["accept_distribution"] = charts.accept_distribution_chart(
            dist, subtitle=lines, load=study.load, variants=names, baseline=base
        )
    return out
