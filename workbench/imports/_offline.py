"""Offline throughput levels compared workload by workload, side by side.

sglang.bench_serving's default mode sends every request at once (``--request-rate inf``, no
``--max-concurrency``), and one file often holds several workloads (input and output lengths,
datasets), one level each. Such a level has no place on a concurrency or request-rate axis
(:func:`workbench.analysis.load_axis` refuses it), but the workloads compare fine with each other:
:func:`offline_workloads` is that table, one row per (workload, variant), with each variant's ratio
to the baseline on the same workload where the baseline measured it.
"""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["OFFLINE_FIGURES", "offline_levels", "offline_workloads", "offline_lines"]

#: The figures the table compares (our level columns), higher-is-better first.
OFFLINE_FIGURES = (
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p99_tpot_ms",
    "mean_e2e_ms",
    "accept_length",
)
#: Figures whose ratio to the baseline the table gives (``<figure>_ratio``: variant / baseline).
RATIO_FIGURES = ("output_throughput_tok_s", "mean_ttft_ms", "mean_tpot_ms")


def offline_levels(levels: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``levels`` that sent every request at once: open loop, infinite request rate and no
    cap on requests in flight (sglang.bench_serving's and vLLM's default offline mode)."""
    if not len(levels) or "request_rate_req_s" not in levels:
        return levels.iloc[0:0]
    rate = pd.to_numeric(levels["request_rate_req_s"], errors="coerce")
    conc = pd.to_numeric(levels.get("concurrency", pd.Series(math.nan, index=levels.index)), errors="coerce")
    mode = levels.get("mode", pd.Series("open", index=levels.index))
    return levels[(rate == math.inf) & conc.isna() & (mode != "closed")]


def offline_workloads(levels: pd.DataFrame, *, baseline: str | None = None) -> pd.DataFrame:
    """One row per (workload, variant) of the offline levels, the workloads side by side.

    Args:
        levels: level rows (``ImportResult.levels``, or ``workbench.store.load_runs(...)[1]``) with ``variant`` and
            ``workload``; rows that are not offline (:func:`offline_levels`) are left out.
        baseline: the variant the others are compared with, per workload; None: the first variant.

    Returns:
        Columns ``workload``, ``variant``, ``n`` (levels averaged: repeats), ``completed`` (summed),
        :data:`OFFLINE_FIGURES` (means over repeats, NaN where not recorded) and, for every variant
        on a workload its baseline also measured, ``<figure>_ratio`` (variant / baseline) for
        :data:`RATIO_FIGURES` (NaN for the baseline's own rows and where the baseline did not measure the
        workload). Sorted by workload, the baseline first.
    """
    rows = offline_levels(levels)
    columns = ["workload", "variant", "n", "completed", *OFFLINE_FIGURES, *(f"{f}_ratio" for f in RATIO_FIGURES)]
    if not len(rows):
        return pd.DataFrame(columns=columns)
    rows = rows.assign(
        **{
            c: pd.to_numeric(rows[c], errors="coerce") if c in rows else math.nan
            for c in (*OFFLINE_FIGURES, "completed")
        }
    )
    if "workload" not in rows:
        rows = rows.assign(workload="default")
    variants = list(dict.fromkeys(rows["variant"]))
    base = baseline if baseline is not None else variants[0]
    table = rows.groupby(["workload", "variant"], sort=False).agg(
        n=("variant", "size"), completed=("completed", "sum"), **{f: (f, "mean") for f in OFFLINE_FIGURES}
    )
    table = table.reset_index()
    reference = table[table["variant"] == base].set_index("workload")
    for figure in RATIO_FIGURES:
        ref = table["workload"].map(reference[figure]) if len(reference) else math.nan
        table[f"{figure}_ratio"] = (table[figure] / ref).where(table["variant"] != base)
    order = {v: i for i, v in enumerate([base, *(v for v in variants if v != base)])}
    table = table.sort_values(["workload", "variant"], key=lambda s: s.map(order) if s.name == "variant" else s)
    return table[columns].reset_index(drop=True)


def _cell(value: float, digits: int = 1) -> str:
    return "-" if value != value else f"{value:,.{digits}f}"


def offline_lines(table: pd.DataFrame) -> list[str]:
    """:func:`offline_workloads`' table as text lines: per workload, each variant's throughput, TTFT and
    TPOT, and its ratio to the baseline (``x1.35``) where there is one."""
    lines: list[str] = []
    for workload, rows in table.groupby("workload", sort=False):
        lines.append(f"workload {workload}:")
        for row in rows.itertuples():
            ratio = getattr(row, "output_throughput_tok_s_ratio")
            versus = (
                ""
                if ratio != ratio
                else (
                    f"  vs baseline: throughput x{ratio:.2f}, TTFT x{getattr(row, 'mean_ttft_ms_ratio'):.2f}, "
                    f"TPOT x{getattr(row, 'mean_tpot_ms_ratio'):.2f}"
                )
            )
            lines.append(
                f"  {row.variant}: {_cell(row.output_throughput_tok_s)} output tok/s, mean TTFT "
                f"{_cell(row.mean_ttft_ms)} ms, mean TPOT {_cell(row.mean_tpot_ms, 2)} ms, "
                f"{int(row.completed) if row.completed == row.completed else '-'} requests{versus}"
            )
    return lines
