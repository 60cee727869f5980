"""The report's "what the server saw" section: each run's server series, summarized and charted.

One call from a notebook (``wb.show_server_series(runs)``) displays a per-level table and a
small chart when the runs hold observations (``server_series.parquet``: ``/metrics``,
batch log lines, GPU telemetry; :mod:`workbench.bench._series`), or one line saying why
there are none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from workbench import charts
from workbench.markup import literal
from workbench.store import load_run

__all__ = ["server_series", "server_series_summary", "server_series_table", "show_server_series"]

#: Columns of the per-level table: series name -> column (the mean over the level's samples).
#: SGLang's ``token_usage`` is a fraction of the KV pool; the table shows it in per cent (:data:`PERCENT`).
TABLE_SERIES = {
    "num_running_reqs": "mean_running_reqs",
    "num_queue_reqs": "mean_queued_reqs",
    "token_usage": "mean_token_usage_pct",
    "gen_throughput": "mean_server_gen_tok_s",
    "spec_accept_length": "mean_server_accept_length",
    "gpu_util_pct": "mean_gpu_util_pct",
    "power_w": "mean_gpu_power_w",
}

#: Series given as fractions (0..1) that the table shows in per cent.
PERCENT = frozenset({"token_usage"})


def server_series(runs: Sequence[str | Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(series, levels)`` of ``runs``: every observation with ``variant``, ``concurrency`` and
    ``level`` (its label: ``"c=4"``, with a sweep dimension ``"c=4, input_len=1024"``) joined from
    its level, and the runs' level rows (for provenance)."""
    frames, levels = [], []
    for run in runs:
        stored = load_run(run)
        levels.append(stored.levels)
        if len(stored.series):
            keys = stored.levels[["level_index", "repeat", "concurrency"]].drop_duplicates()
            keys["level"] = [
                _level_label(row) for _, row in stored.levels.drop_duplicates(["level_index", "repeat"]).iterrows()
            ]
            frames.append(
                stored.series.merge(keys, on=["level_index", "repeat"], how="left").assign(
                    variant=stored.manifest.get("variant"), run_id=stored.run_id
                )
            )
    series = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return series, (pd.concat(levels, ignore_index=True) if levels else pd.DataFrame())


def _level_label(level: pd.Series) -> str:
    """``"c=4"``, or with a sweep dimension ``"c=4, input_len=1024"``."""
    label = f"c={level.get('concurrency')}"
    sweep = level.get("sweep")
    if isinstance(sweep, str) and sweep:
        label += f", {sweep}={level.get('sweep_value'):g}"
    return label


def server_series_table(series: pd.DataFrame) -> pd.DataFrame:
    """Per variant, level and repeat: the mean of each series over the level's samples, with
    the number of samples ``n_samples`` (per series, the most of any) and the sources used. Each
    series comes from the source that sampled it most often in its run (``/metrics`` is sampled
    every 0.5 s, the log has a line per batch); an accept length of 0 (no speculation) is left out;
    the KV pool's token usage is in per cent (``mean_token_usage_pct``)."""
    if series.empty:
        return pd.DataFrame()
    keep = series[series["name"].isin(list(TABLE_SERIES))].copy()
    keep.loc[keep["name"].isin(PERCENT), "value"] *= 100.0
    # SGLang reports accept length 0 when nothing was speculated: not a value
    keep = keep[~((keep["name"] == "spec_accept_length") & (keep["value"] == 0))]
    counts = keep.groupby(["run_id", "name", "source"])["value"].transform("size")
    best = keep[counts == counts.groupby([keep["run_id"], keep["name"]]).transform("max")]
    best = best[best["source"] == best.groupby(["run_id", "name"])["source"].transform("min")]  # a tie: one source
    keys = ["variant", "level_index", "level", "concurrency", "repeat"]
    table = best.pivot_table(index=keys, columns="name", values="value", aggfunc="mean").rename(columns=TABLE_SERIES)
    table["n_samples"] = best.groupby([*keys, "name"]).size().groupby(level=keys).max()
    table["sources"] = best.groupby(keys)["source"].agg(lambda s: ", ".join(sorted(set(s))))
    return table.reset_index()


def server_series_summary(table: pd.DataFrame, order: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`server_series_table` over repeats, for reading: one row per variant and level with
    ``n`` (repeats), each series' mean of the repeats' means with its 95% Student t interval as text
    (``"1014 (1010–1018)"``; the mean alone for n=1; :func:`workbench.analysis.interval_text`) and
    ``n_samples`` (samples over all repeats). Variants in ``order`` (default: the table's)."""
    if table.empty:
        return table
    from workbench.analysis import interval_text, repeat_table

    keys = ["variant", "level_index", "level", "concurrency"]
    series = [c for c in TABLE_SERIES.values() if c in table.columns]
    stats = repeat_table(table, series, by=keys)
    out = stats[keys + ["n"]].copy()
    for col in series:
        out[col] = [interval_text(v, lo, hi) for v, lo, hi in zip(stats[col], stats[f"{col}_lo"], stats[f"{col}_hi"])]
    totals = table.groupby(keys)["n_samples"].sum()
    out["n_samples"] = [int(totals[tuple(k)]) for k in stats[keys].itertuples(index=False)]
    rank = {v: i for i, v in enumerate(dict.fromkeys([*(order or []), *table["variant"]]))}
    return (
        out.sort_values(["variant", "level_index"], key=lambda c: c.map(rank) if c.name == "variant" else c)
        .drop(columns="level_index")
        .reset_index(drop=True)
    )


def gen_throughput_note(levels: pd.DataFrame) -> str:
    """One line saying why ``mean server gen (tok/s)`` is above the client's output tok/s at the same level.

    SGLang's ``gen throughput`` (``/metrics`` ``gen_throughput`` and the "Decode batch" log line) is the tokens
    generated since its last decode log line over the wall time since then, logged every ``decode_log_interval``
    decode batches (SGLang's scheduler metrics mixin): a rate while batches run. The client's output tok/s divides
    every output token by the whole level, first request sent to last answer received. The simulated engine
    counts only its decode steps' time, prefill left out (said when ``levels`` hold simulated rows).
    """
    simulated = bool(levels.get("simulated", pd.Series([False])).fillna(False).astype(bool).any())
    engine = (
        " (the simulated engine counts its decode steps' time alone, so prefill is left out too)" if simulated else ""
    )
    return (
        "*Mean server gen (tok/s)* is the server's own rate while it was generating: tokens per second over "
        f"its last batch of decode steps{engine}, sampled only while requests ran. The client's output tok/s "
        "(the tables below) divides every output token by the whole level, prefill, waiting, ramp-up and the "
        "last requests' drain included, so at the same level the server's figure is the higher one."
    )


def show_server_series(runs: Sequence[str | Path]) -> None:
    """Display the section: a heading, the per-level table and the chart (repeat 0), or why there is none."""
    from IPython.display import Markdown, display

    series, levels = server_series(runs)
    display(
        Markdown(
            "## What the server saw\nSampled during each level: the server's `/metrics` (with "
            '`--enable-metrics`), its "Decode batch" / "Prefill batch" log lines, and the host\'s GPUs '
            "(nvidia-smi, where the load generator runs on the server's host). Each cell: the mean over "
            "the repeats of each repeat's mean over its samples, with its 95% interval over the n "
            "repeats (none for n=1); n_samples over all repeats. *mean_queued_reqs* is the server's own "
            "waiting queue (`num_queue_reqs`): requests it has received and not yet started, whether they wait "
            "for a free request slot or for their prefill. It can be above 0 where the results table's "
            "*over cap* is 0: that column counts only the requests beyond the server's max-running-requests."
        )
    )
    if series.empty:
        display(
            Markdown(
                "*No server-side observations in these runs* (the server served no `/metrics`, logged "
                "no batch lines within the levels, and no GPU was sampled)."
            )
        )
        return
    table = server_series_summary(server_series_table(series), order=list(dict.fromkeys(series["variant"])))
    display(table)
    if "mean_server_gen_tok_s" in table:
        display(Markdown(gen_throughput_note(levels)))
    first = series[series["repeat"] == series["repeat"].min()]
    try:
        display(
            charts.server_series_chart(
                first, subtitle=[charts.provenance_subtitle(levels), "repeat 1 of each level; one line per level"]
            )
        )
    except ValueError as exc:
        display(Markdown(f"*No chart: {literal(exc)}.*"))
