"""What ``workbench bench`` prints about a sweep: what it resumed, the summary table, the crossovers, the rest.

Before the sweep, a line per variant whose run is resumed (:func:`_resume_line`); after it, the table of
n repeats and the mean with its 95% interval of output tok/s, per-request tok/s and accept length per
(variant, level; with ``--sweep``, per swept value too) (:func:`summary_lines`), the provenance line and
one crossover per speculative variant and metric (:func:`_crossovers`), a warning per simulated level
whose timings are not the model's (:func:`schedule_lines`), and how many levels were measured now and how
many reused (:func:`_tally`). The command itself is :mod:`workbench.sweeps._bench_cli`.

Importing this module is cheap (standard library only); what reads runs and studies is imported
when a line is made, so ``workbench --help`` stays fast.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

__all__ = ["schedule_lines", "summary_lines"]

#: Metrics of the summary, with their column titles and decimals.
SUMMARY_METRICS = (
    ("output_throughput_tok_s", "output tok/s", 1),
    ("mean_per_request_tok_s", "per-request tok/s", 1),
    ("accept_length", "accept length", 2),
)


def _cell(mean: float, lo: float, hi: float, digits: int) -> str:
    if mean != mean:
        return "-"
    if lo != lo:  # one repeat: no interval (the n column says so)
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"  # the reports' notation


def summary_lines(means: Any, sweep: str | None = None) -> list[str]:
    """A text table of :func:`workbench.analysis.repeat_table` rows (variant, level, n, metrics).

    The level is the ``concurrency`` column, or ``request_rate_req_s`` (shown as
    ``request rate (req/s)``) for a table of open-loop levels without one. With ``sweep`` (a
    dimension of :data:`workbench.bench.SWEEP_DIMENSIONS`), the rows also carry ``sweep_value``,
    shown in a column named after the dimension, after the variant.
    """
    swept = [sweep] if sweep else []
    load = "concurrency" if "concurrency" in means else "request_rate_req_s"
    shown = {"concurrency": "concurrency", "request_rate_req_s": "request rate (req/s)"}[load]
    header = ["variant", *swept, shown, "n", *[f"{title} (95% CI)" for _, title, _ in SUMMARY_METRICS]]
    rows = [
        [
            str(r["variant"]),
            *[f"{r['sweep_value']:g}" for _ in swept],
            f"{float(r[load]):g}",
            str(int(r["n"])),
            *[_cell(r[m], r[f"{m}_lo"], r[f"{m}_hi"], d) for m, _, d in SUMMARY_METRICS],
        ]
        for r in means.to_dict("records")
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*header), *(fmt.format(*row) for row in rows)]


def _resume_line(variant: str, run: Path) -> str:
    """What a resumed run reuses and what is measured now, by level, for the terminal::

        baseline: reusing 2 of 3 levels from run R (stored since 2026-12-06 02:18 UTC): c=1, c=2; measuring now: c=4

    With repeats the counts are of (level, repeat) units and each level carries ``xN``, the repeats of it
    reused (or left to measure); with a swept dimension each level names its value (``input_len=128 c=4``).
    Read from the run's manifest (its plan and ``units_completed``) as the sweep opened it.
    """
    from workbench.store import load_run

    manifest = load_run(run).manifest
    plan = manifest.get("plan") or {}
    repeats = int(plan.get("repeats") or 1)
    rates, conc = plan.get("request_rates"), list(plan.get("concurrency_levels") or [])
    base = [f"{r:g} req/s" for r in rates] if rates is not None else [f"c={c}" for c in conc]
    swept = plan.get("sweep_values")
    names = ([f"{plan.get('sweep')}={v:g} {b}" for v in swept for b in base] if swept else base) or ["level 1"]
    units = [(int(r), int(i)) for r, i in manifest.get("units_completed") or []]
    stored = {i: sum(1 for _, j in units if j == i) for i in range(len(names))}

    def listed(counts: dict[int, int]) -> str:
        shown = [names[i] + (f" x{n}" if repeats > 1 else "") for i, n in counts.items() if n]
        return ", ".join(shown) or "nothing"

    left = {i: repeats - stored[i] for i in range(len(names))}
    what = "levels" if repeats == 1 else "levels x repeats"
    since = str(manifest.get("started_at") or "")[:16].replace("T", " ")
    return (
        f"{variant}: reusing {len(units)} of {len(names) * repeats} {what} from run {run.name}"
        + (f" (stored since {since} UTC)" if since else "")
        + f": {listed(stored)}; measuring now: {listed(left)}"
    )


def _units(paths: list[Path]) -> list[int]:
    """Units (level x repeat) each run holds."""
    from workbench.store import load_run

    return [len(load_run(p).manifest.get("units_completed") or []) for p in paths]


def _warning_lines(caught: list[Any], *, failed: set[str]) -> list[str]:
    """``warning: <message>`` per warning the sweep raised (no source path), first line of each; the
    "server failed" warnings of ``failed`` variants are left out (their ``error:`` line says it)."""
    lines = []
    for w in caught:
        if not issubclass(w.category, UserWarning):
            continue
        text = str(w.message)
        if any(text.startswith(f"{name}: server failed (") for name in failed):
            continue
        lines.append(f"warning: {text.splitlines()[0] if text else w.category.__name__}")
    return list(dict.fromkeys(lines))


def schedule_lines(paths: list[Path]) -> list[str]:
    """One ``WARNING`` line per stored simulated level whose timings are not the model's
    (``sim_schedule_problem``, :func:`workbench.bench.schedule_problem`), naming the variant and level."""
    from workbench.store import load_runs

    _, levels = load_runs(paths)
    if "sim_schedule_problem" not in levels:
        return []
    lines = []
    for row in levels[levels["sim_schedule_problem"].notna()].to_dict("records"):
        repeat = f" repeat {int(row['repeat']) + 1}" if row.get("repeat", 0) == row.get("repeat", 0) else ""
        rate = row.get("request_rate_req_s")
        level = (
            f"request rate {rate:g} req/s"
            if isinstance(rate, float) and math.isfinite(rate)
            else f"concurrency {int(row['concurrency'])}"
        )
        lines.append(
            f"WARNING {row['variant']} {level}{repeat}: figures not the model's: {row['sim_schedule_problem']}"
        )
    return lines


def _tally(paths: list[Path], opened: Any) -> str:
    """``"levels: 2 measured now, 5 reused from disk"``: units stored in ``paths`` now, against what their
    runs held when opened (``opened``: the :class:`~workbench.sweeps._investigation.SweepResume` of each variant)."""
    from workbench.store import load_run

    opened = list(opened)
    reused = sum(r.stored for r in opened)
    stored = sum(len(load_run(p).manifest.get("units_completed") or []) for p in paths)
    what = "levels" if all(r.repeats == 1 for r in opened) else "levels x repeats"
    return f"{what}: {stored - reused} measured now, {reused} reused from disk"


def _means(paths: list[Path], sweep: str | None) -> Any:
    """Means and intervals over repeats of the runs' levels (one row per variant, sweep value and level: the
    concurrency, or the request rate of open-loop runs)."""
    from workbench.analysis import repeat_table
    from workbench.store import load_runs

    from workbench.analysis import load_axis

    _, levels = load_runs(paths)
    for m, _, _ in SUMMARY_METRICS:
        if m not in levels:
            levels[m] = float("nan")
    load = load_axis(levels).column
    by = ("variant", "sweep_value", load) if sweep else ("variant", load)
    return repeat_table(levels, [m for m, _, _ in SUMMARY_METRICS], by=by)


def _crossovers(paths: list[Path], names: list[str], sweep: str | None, baseline: str | None = None) -> list[str]:
    """Where the figures come from (SIMULATED or measured: the charts' provenance line), then one line
    per speculative variant and metric against ``baseline`` (default: the first of ``names``, the variants
    and grid points measured, as in the notebooks); no crossover with one variant or with a ``sweep`` (a
    crossover over concurrency would mix the sweep's values)."""
    from workbench.studies import load_study

    base = baseline or (names[0] if names else None)
    try:
        study = load_study(paths, baseline=base if base in names else None)
    except ConfigError as exc:  # e.g. the baseline's server failed: no comparison to print
        return [f"(no crossover: {exc})"]
    lines = ["figures: " + study.subtitle]
    if len(names) < 2:
        return lines
    if sweep:
        return [
            *lines,
            f"(no crossover: the levels vary {sweep} as well as the concurrency; a crossover is over "
            f"the concurrency at one setting, so sweep one {sweep} at a time for it)",
        ]
    return [
        *lines,
        f"crossovers against {study.baseline}:",
        *(f"  {row.variant}, {row.metric}: {row.description}" for row in study.crossover_table().itertuples()),
    ]
