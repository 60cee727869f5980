"""The tables a spec-versus-baseline report shows: a study's tables rounded and written for reading.

Functions of a :class:`workbench.studies._tables.StudyTables` (the notebook reaches them as
:meth:`workbench.studies.Study.summary`, ``table``, ``crossover_table`` and ``policy_table``). Each
figure keeps its interval where it has one, as text (``"812 (790–835)"``); the numbers themselves
are the tables' (:meth:`StudyTables.means`, :meth:`StudyTables.policy`, :meth:`StudyTables.crossovers`).
"""

from __future__ import annotations

import pandas as pd

from workbench.analysis import bracket_levels, interval_text
from workbench.errors import ConfigError
from workbench.studies._tables import INTERVAL_METRICS, StudyTables

__all__ = ["SUMMARY_COLUMNS", "TABLES", "crossover_table", "narrow_table", "policy_table", "summary"]

#: The report's narrow tables: name -> [(level column, shown column with its unit)].
TABLES = {
    "throughput": [
        ("output_throughput_tok_s", "output tok/s"),
        ("mean_per_request_tok_s", "per-request tok/s"),
        ("accept_length", "accept length (tok/verify)"),
    ],
    "latency": [
        ("p50_ttft_ms", "TTFT p50 ms"),
        ("p99_ttft_ms", "TTFT p99 ms"),
        ("p50_tpot_ms", "TPOT p50 ms"),
        ("p99_tpot_ms", "TPOT p99 ms"),
        ("p50_e2e_ms", "E2E p50 ms"),
        ("p99_e2e_ms", "E2E p99 ms"),
    ],
}

#: Columns of the compact per-level table shown in reports (one repeat).
SUMMARY_COLUMNS = (
    "variant",
    "concurrency",
    "completed",
    "failed",
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "mean_per_request_tok_s",
    "mean_ttft_ms",
    "p90_ttft_ms",
    "mean_tpot_ms",
    "p50_itl_ms",
    "p99_itl_ms",
    "mean_e2e_ms",
    "accept_length",
    "server_accept_length",
)


def summary(study: StudyTables) -> pd.DataFrame:
    """Compact per-level table, rounded for reading.

    One repeat: variant, concurrency, throughput, latencies, accept length (each n=1).
    Several: one row per (variant, concurrency) with ``n`` (repeats) and, for each of
    :data:`workbench.studies._tables.INTERVAL_METRICS`, the mean over repeats and its 95% interval
    (``_lo``, ``_hi``).
    """
    load = study.load
    if study.max_repeats == 1:
        cols = [c for c in SUMMARY_COLUMNS if c in study.levels.columns]
        if load not in cols:
            cols.insert(1, load)
        table = study.levels[cols].sort_values(["variant", load]).reset_index(drop=True)
        table.insert(2, "n", 1)
    else:
        means = study.means()
        cols = ["variant", load, "n"] + [f"{m}{s}" for m in INTERVAL_METRICS if m in means for s in ("", "_lo", "_hi")]
        table = means[cols]
    digits = {
        c: (2 if "accept" in c or "_req_s" in c else 1) for c in table.columns if pd.api.types.is_float_dtype(table[c])
    }
    return table.round(digits)


def narrow_table(study: StudyTables, kind: str = "throughput") -> pd.DataFrame:
    """A narrow table for reading: one row per (variant, concurrency), units in the column names.

    Args:
        study: the study's tables.
        kind: ``"throughput"`` (output tok/s, per-request tok/s, accept length) or
            ``"latency"`` (TTFT, TPOT and E2E p50 and p99 in ms); :data:`TABLES`.

    Returns:
        ``variant``, ``concurrency``, ``n`` (repeats), ``over cap`` (requests beyond the server's
        max-running-requests at that concurrency, which wait whatever the server does: not the server's own
        queue, which ``/metrics`` reports), then each metric as text: the mean rounded to its interval's first
        significant digit with the 95% interval, ``"812 (790–835)"``, or three significant
        figures without one (n=1).

    Raises:
        ConfigError: an unknown ``kind``.
    """
    if kind not in TABLES:
        raise ConfigError(f"table kind {kind!r} is not one of {sorted(TABLES)}")
    means = study.means()
    out = means[["variant", study.load, "n", "queued_requests"]].rename(columns={"queued_requests": "over cap"})
    for col, shown in TABLES[kind]:
        if col not in means or means[col].isna().all():
            continue
        out[shown] = [
            interval_text(getattr(row, col), getattr(row, f"{col}_lo"), getattr(row, f"{col}_hi"))
            for row in means.itertuples()
        ]
    return out.reset_index(drop=True)


#: A crossover's kind as the table says it (:class:`workbench.analysis.CrossoverInterval` when tested, else
#: :func:`workbench.analysis.find_crossover`'s, untested): words, not the analysis' enum values.
_KIND_WORDS = {
    "not_claimed": "not claimed (the intervals overlap)",
    "interpolated": "between two levels (untested)",
    "at_level": "at a measured level (untested)",
    "below_range": "below the lowest level (untested)",
    "none_in_range": "none within the levels (untested)",
}


def crossover_table(study: StudyTables) -> pd.DataFrame:
    """One row per (speculative variant, metric): crossover kind, ``between`` (the measured levels
    that bracket it, ``"1–2"``), the interpolated concurrency and its interval (one decimal: a
    concurrency, not a measurement), n, description."""
    load = study.load
    rows = []
    for spec in study.spec_variants:
        intervals = study.crossover_intervals(spec)
        measured = sorted(study.axis.value(c) for c in study.ratios(spec)[load])
        for metric, c in study.crossovers(spec).items():
            iv = intervals[metric]
            between = None
            if c.concurrency is not None:
                lo, hi = bracket_levels(c.concurrency, measured)
                between = f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"
            kind = c.kind if iv.kind == "not_tested" else iv.kind
            rows.append(
                {
                    "variant": spec,
                    "metric": metric,
                    "kind": _KIND_WORDS.get(kind, kind),
                    "between": between,
                    f"crossover_{load}": None if c.concurrency is None else round(c.concurrency, 1),
                    "crossover_lo": None if iv.lo is None else round(iv.lo, 1),
                    "crossover_hi": None if iv.hi is None else round(iv.hi, 1),
                    "n": iv.n,
                    "description": c.description,
                }
            )
    return pd.DataFrame(rows)


def policy_table(study: StudyTables, metric: str = "output_throughput_tok_s") -> pd.DataFrame:
    """:meth:`StudyTables.policy` for reading: ``concurrency``, ``best variant``, ``n``, the best mean with its
    interval (``"143 (140–145)"``), ``runner-up``, the margin over it in per cent with its paired
    interval (``"+52% (+45% to +60%)"``) and whether the best is ahead under the significance rule."""
    pol = study.policy(metric)
    shown = {
        "output_throughput_tok_s": "output tok/s",
        "mean_per_request_tok_s": "per-request tok/s",
        "goodput_req_s": f"goodput req/s ({study.goodput.words})",
    }.get(metric, metric)

    def margin(row: tuple) -> str:
        m, lo, hi = row
        if m != m:
            return ""
        if lo != lo:
            return f"{m:+.1%}"
        return f"{m:+.1%} ({lo:+.1%} to {hi:+.1%})"

    return pd.DataFrame(
        {
            study.load: pol[study.load],
            "best variant": pol["best_variant"],
            "n": pol["n"],
            shown: [
                interval_text(v, lo, hi)
                for v, lo, hi in zip(pol[f"best_{metric}"], pol[f"best_{metric}_lo"], pol[f"best_{metric}_hi"])
            ],
            "runner-up": pol["runner_up"],
            "margin over runner-up": [margin(r) for r in zip(pol["margin"], pol["margin_lo"], pol["margin_hi"])],
            "best vs runner-up": [
                _versus(study, level, best, runner, verdict)
                for level, best, runner, verdict in zip(
                    pol[study.load], pol["best_variant"], pol["runner_up"], pol["margin_verdict"]
                )
            ],
        }
    )


def _versus(study: StudyTables, level: float, best: str, runner: object, verdict: object) -> object:
    """The policy table's "best vs runner-up": the significance rule's words, or, where the two are one server at
    this level (:meth:`StudyTables.same_server_below`), that they are, whatever noise set their means apart."""
    below = study.same_server_below(best, runner) if isinstance(runner, str) else None
    if below is not None and study.load == "concurrency" and level <= below:
        return f"the same server below {below} running requests: either"
    return verdict
