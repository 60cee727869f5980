"""Per-level summaries derived from request rows (pure pandas; no I/O, no clock).

Input: the requests table (one row per request, as built by
:func:`workbench.bench._frames.records_to_frame` plus the level columns the sweep adds:
``level_index``, ``mode``, ``concurrency``, ``request_rate_req_s``). Required columns:
``level_index``, ``error``, ``error_type``, ``output_tokens``, ``prompt_tokens``,
``ttft_ms``, ``tpot_ms``, ``e2e_ms``, ``itl_ms``, ``tokens_per_chunk``,
``spec_verify_ct``, ``start_s``, ``end_s``; ``server_e2e_ms`` is optional (rows of the
simulator's offline mode have none). Output: one row
per level (per ``(run_id, level_index, repeat)``, with the keys present: a ``run_id``
column for several runs, a ``repeat`` column for levels measured more than once).

Definitions follow sglang ``bench_serving.py`` 0.5.x ``calculate_metrics`` unless noted
(``sglang/bench_serving.py`` in 0.5.9; ``sglang/benchmark/serving.py`` from 0.5.16):

- ``completed``: rows with no error; ``failed``: the rest. Latency and token
  statistics use completed rows only.
- ``duration_s``: first request start to last request end over *all* rows of the
  level (engine time). bench_serving times the whole benchmark call instead.
- ``output_throughput_tok_s`` = sum(output_tokens) / duration_s;
  ``request_throughput_req_s`` = completed / duration_s.
- ``per_request_tok_s`` (per row) = output_tokens / (e2e_ms / 1000); the level reports
  its mean and percentiles. (Not in bench_serving; the investigation's per-request speed.)
- ``ttft_ms``, ``tpot_ms``, ``e2e_ms``: per-request values; TPOT only for requests with
  at least 2 output tokens.
- ``itl_ms``: every gap between consecutive content reads of every request (a chunk
  may hold several tokens under speculative decoding; chunks that arrived in one
  network read share one time and give no gap, :mod:`workbench.bench._record`).
- ``itl_per_token_ms``: bench_serving's ITL: each gap divided by the tokens its read
  added (``tokens_per_read``; rows stored before reads were recorded: ``tokens_per_chunk``),
  repeated once per token; requests whose stream did not give tokens per chunk add none.
- ``multi_chunk_read_fraction``: share of content reads that carried more than one
  chunk (the client, or the network, batched them); ``max_chunks_per_read``.
- ``kernel_stamped_read_fraction``: share of content reads timed by the kernel's receive
  stamp (:mod:`workbench.bench._rxstamp`) rather than when the client's event loop got to
  them; NaN for rows stored before it was recorded.
- ``client_wait_ms``, ``user_ttft_ms``, ``user_e2e_ms``: mean/p50/p90/p99 of the time a
  request waited in the client before it was sent, and TTFT/E2E with it (what the user
  behind the request experienced); NaN for rows stored before they were recorded.
- ``error_kind_counts``: failed requests per ``error_kind`` (``timeout: 2, http_status: 1``).
- ``achieved_concurrency``: sum(e2e) / duration (bench_serving's ``concurrency`` key).
- ``accept_length``: token-weighted, sum(output_tokens) / sum(spec_verify_ct) over
  completed requests that report ``spec_verify_ct`` (> 0); NaN when none do. This is
  SGLang's per-request formula applied to the level's totals.
- ``server_accept_length``: from the level info (``/server_info`` after the level), NaN
  when absent.
- ``mean_e2e_over_server_ms``: mean of ``e2e_ms - server_e2e_ms`` (the server's own
  ``meta_info.e2e_latency``): time the client saw beyond what the server counted
  (HTTP, queueing before the server's clock starts, client scheduling). A diagnostic:
  with ``time_scale`` s it includes s times the wall-clock overheads.
- ``sim_behind_schedule_wall_s`` (level info): wall seconds a simulated engine fell
  behind its own schedule during the level; > 0 means the machine, not the model,
  set some of the timings.
- ``sim_schedule_problem`` (simulated levels only; None elsewhere and when the level kept
  time): why the level's figures are not the model's, when either bound is passed: the
  engine fell behind its schedule for more than :data:`MAX_BEHIND_SCHEDULE_SHARE` of the
  level's wall time (overload: too many streams for this machine's CPU), or more than
  :data:`MAX_OUTSIDE_SERVER_SHARE` of the mean client E2E was spent outside the server
  (``mean_e2e_over_server_ms``: the wall-clock HTTP and client overheads, multiplied by the
  time scale; a time scale too high for this machine). Measured on the seed profile
  (docs/PERFORMANCE.md): at 2x both shares stay below 0.5%; at 50x figures are 25-40% low.

Statistics are ``mean``, ``p50``, ``p90``, ``p99`` (numpy ``percentile``, linear
interpolation, as bench_serving), NaN for no data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "STATS",
    "LEVEL_INFO_COLUMNS",
    "MAX_BEHIND_SCHEDULE_SHARE",
    "MAX_OUTSIDE_SERVER_SHARE",
    "add_request_columns",
    "schedule_problem",
    "summarize_level",
    "summarize_levels",
    "itl_per_token",
]

#: Statistic names and the percentile each takes (None: the mean).
STATS: dict[str, float | None] = {"mean": None, "p50": 50.0, "p90": 90.0, "p99": 99.0}

#: Per-request metrics summarized with :data:`STATS` (column name = metric name).
SUMMARIZED = ("ttft_ms", "tpot_ms", "e2e_ms", "per_request_tok_s")

#: Columns copied from the first row of each level when present.
DESCRIPTORS = (
    "run_id",
    "variant",
    "engine",
    "simulated",
    "level_index",
    "repeat",
    "mode",
    "concurrency",
    "request_rate_req_s",
    "max_new_tokens",
    "time_scale",
    "backend",
    "input_len",
    "temperature",
    "sweep",
    "sweep_value",
)

#: Per-request metrics summarized when the rows have them (older runs lack them).
SUMMARIZED_IF_PRESENT = ("client_wait_ms", "user_ttft_ms", "user_e2e_ms")

#: Columns a level-info table may carry (joined onto the summary).
LEVEL_INFO_COLUMNS = (
    "flush_ok",
    "flush_attempts",
    "flush_error",
    "server_accept_length",
    "server_gen_throughput_tok_s",
    "server_info_error",
    "sim_behind_schedule_wall_s",
    "observe_problems",
)
_NAN_INFO = ("server_accept_length", "server_gen_throughput_tok_s", "sim_behind_schedule_wall_s")

#: A simulated level whose engine fell behind its schedule for more than this share of the level's
#: wall time is marked (``sim_schedule_problem``): the CPU, not the model, set that much of its timing.
MAX_BEHIND_SCHEDULE_SHARE = 0.02

#: A simulated level whose mean client E2E lies more than this share outside the server's own E2E
#: is marked: the wall-clock overheads, times the time scale, are part of its figures.
MAX_OUTSIDE_SERVER_SHARE = 0.05


def schedule_problem(level: dict[str, Any]) -> str | None:
    """Why a simulated level's timings are not the model's (see ``sim_schedule_problem``), or None.

    Args:
        level: one level's columns: ``simulated``, ``time_scale``, ``duration_s`` (engine s),
            ``sim_behind_schedule_wall_s``, ``mean_e2e_over_server_ms``, ``mean_e2e_ms``;
            missing or NaN values pass.
    """
    simulated = level.get("simulated")
    if not isinstance(simulated, (bool, np.bool_)) or not simulated:
        return None
    problems = []
    scale = _number(level.get("time_scale"))
    behind, duration = _number(level.get("sim_behind_schedule_wall_s")), _number(level.get("duration_s"))
    if scale > 0 and duration > 0 and behind / (duration / scale) > MAX_BEHIND_SCHEDULE_SHARE:
        problems.append(
            f"the simulator fell {behind:.2f} wall s behind its schedule, "
            f"{behind / (duration / scale):.0%} of the level (bound {MAX_BEHIND_SCHEDULE_SHARE:.0%}: "
            "more streams than this machine's CPU keeps up with)"
        )
    outside, e2e = _number(level.get("mean_e2e_over_server_ms")), _number(level.get("mean_e2e_ms"))
    if e2e > 0 and outside / e2e > MAX_OUTSIDE_SERVER_SHARE:
        problems.append(
            f"{outside / e2e:.0%} of the mean E2E was spent outside the server (bound "
            f"{MAX_OUTSIDE_SERVER_SHARE:.0%}: wall-clock HTTP and client overheads x the time scale "
            f"{scale:g}; use a lower time scale)"
        )
    return "; ".join(problems) or None


def _number(value: Any) -> float:
    """``value`` as a float, NaN when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _stats(values: Iterable[float], name: str) -> dict[str, float]:
    arr = np.asarray(list(values), dtype=float)
    arr = arr[~np.isnan(arr)]
    out = {}
    for stat, q in STATS.items():
        if arr.size == 0:
            out[f"{stat}_{name}"] = float("nan")
        elif q is None:
            out[f"{stat}_{name}"] = float(arr.mean())
        else:
            out[f"{stat}_{name}"] = float(np.percentile(arr, q))
    return out


def _is_ok(rows: pd.DataFrame) -> pd.Series:
    return rows["error"].isna()


def add_request_columns(requests: pd.DataFrame) -> pd.DataFrame:
    """Copy of ``requests`` with derived per-row columns: ``ok`` and ``per_request_tok_s``.

    ``per_request_tok_s`` = output_tokens / (e2e_ms / 1000); NaN for failed rows.
    """
    out = requests.copy()
    out["ok"] = _is_ok(out)
    tokens = out["output_tokens"].astype("float64")
    speed = tokens / (out["e2e_ms"].astype("float64") / 1000.0)
    out["per_request_tok_s"] = speed.where(out["ok"], np.nan)
    return out


def itl_per_token(itl_ms: Sequence[float], tokens_per_chunk: Sequence[int]) -> list[float]:
    """bench_serving's ITL list for one request: gap / tokens, repeated per token.

    Args:
        itl_ms: gaps between consecutive content reads (length n - 1).
        tokens_per_chunk: tokens each content read added (``tokens_per_read``, length n;
            the first read's count does not enter ITL). Any other length (tokens not
            known per chunk) gives ``[]``: per-token ITL is never derived from chunk counts.
    """
    out: list[float] = []
    if len(tokens_per_chunk) != len(itl_ms) + 1:
        return out
    for gap, tokens in zip(itl_ms, list(tokens_per_chunk)[1:]):
        k = int(tokens)
        out.extend([float(gap) / k] * k)
    return out


def summarize_level(rows: pd.DataFrame) -> dict[str, Any]:
    """Summary of one level's request rows (all rows, completed and failed).

    Returns:
        A dict of the level's columns (see the module docstring for definitions).
    """
    rows = add_request_columns(rows) if "per_request_tok_s" not in rows else rows
    ok = rows[rows["ok"]]
    out: dict[str, Any] = {c: rows[c].iloc[0] for c in DESCRIPTORS if c in rows and len(rows)}
    out["num_requests"] = len(rows)
    out["completed"] = int(len(ok))
    out["failed"] = int(len(rows) - len(ok))
    duration = float(rows["end_s"].max() - rows["start_s"].min()) if len(rows) else float("nan")
    out["duration_s"] = duration
    total_out = float(ok["output_tokens"].astype("float64").sum())
    out["total_output_tokens"] = int(total_out)
    out["total_prompt_tokens"] = int(ok["prompt_tokens"].astype("float64").sum())
    valid_duration = duration > 0
    out["output_throughput_tok_s"] = total_out / duration if valid_duration else float("nan")
    out["request_throughput_req_s"] = len(ok) / duration if valid_duration else float("nan")
    out["achieved_concurrency"] = float(ok["e2e_ms"].sum()) / 1000.0 / duration if valid_duration else float("nan")
    for name in SUMMARIZED:
        out.update(_stats(ok[name].astype("float64"), name))
    for name in SUMMARIZED_IF_PRESENT:
        out.update(_stats(ok[name].astype("float64") if name in ok else [], name))
    gaps: list[float] = []
    per_token: list[float] = []
    per_read = ok["tokens_per_read"] if "tokens_per_read" in ok else pd.Series([[]] * len(ok), index=ok.index)
    for itl, tpr, tpc in zip(ok["itl_ms"], per_read, ok["tokens_per_chunk"]):
        gaps.extend(float(g) for g in itl)
        # rows stored before reads were recorded have one chunk per gap: tokens_per_chunk then fits
        per_token.extend(itl_per_token(itl, list(tpr) if len(tpr) else list(tpc)))
    out.update(_stats(gaps, "itl_ms"))
    out.update(_stats(per_token, "itl_per_token_ms"))
    reads = [int(c) for cells in (ok["chunks_per_read"] if "chunks_per_read" in ok else []) for c in cells]
    out["multi_chunk_read_fraction"] = (sum(c > 1 for c in reads) / len(reads)) if reads else float("nan")
    out["max_chunks_per_read"] = max(reads) if reads else float("nan")
    stamped = float(ok["kernel_stamped_reads"].sum()) if "kernel_stamped_reads" in ok else float("nan")
    out["kernel_stamped_read_fraction"] = stamped / len(reads) if reads else float("nan")
    over = (ok["e2e_ms"] - ok["server_e2e_ms"]) if "server_e2e_ms" in ok else pd.Series(dtype="float64")
    out["mean_e2e_over_server_ms"] = float(over.mean()) if over.notna().any() else float("nan")
    spec = ok[ok["spec_verify_ct"].astype("float64") > 0]
    verify = float(spec["spec_verify_ct"].astype("float64").sum())
    out["accept_length"] = float(spec["output_tokens"].astype("float64").sum()) / verify if verify > 0 else float("nan")
    errors = rows.loc[~rows["ok"], "error_type"].dropna()
    out["error_counts"] = ", ".join(f"{k}: {v}" for k, v in errors.value_counts().sort_index().items()) or None
    first = rows.loc[~rows["ok"], "error"]
    out["first_error"] = str(first.iloc[0]) if len(first) else None
    kinds = rows.loc[~rows["ok"], "error_kind"].dropna() if "error_kind" in rows else pd.Series(dtype="str")
    out["error_kind_counts"] = ", ".join(f"{k}: {v}" for k, v in kinds.value_counts().sort_index().items()) or None
    return out


def summarize_levels(requests: pd.DataFrame, level_info: pd.DataFrame | None = None) -> pd.DataFrame:
    """One summary row per level (per run, level and repeat when ``run_id`` and ``repeat`` are present).

    Args:
        requests: request rows with a ``level_index`` column (and optionally ``run_id``
            and ``repeat``).
        level_info: per-level server observations with the same key columns and any
            of :data:`LEVEL_INFO_COLUMNS`; joined on the keys. Missing columns are NaN/None.

    Returns:
        DataFrame sorted by keys; columns per :func:`summarize_level` plus level info and
        ``sim_schedule_problem`` (:func:`schedule_problem`).
    """
    keys = [k for k in ("run_id", "level_index", "repeat") if k in requests]
    if "level_index" not in keys:
        raise ValueError("summarize_levels: requests need a 'level_index' column")
    rows = add_request_columns(requests)
    summaries = [summarize_level(group) for _, group in rows.groupby(keys, sort=True, dropna=False)]
    levels = pd.DataFrame(summaries)
    if levels.empty:
        levels = pd.DataFrame(columns=keys)
    info = level_info if level_info is not None else pd.DataFrame(columns=keys)
    if "repeat" in keys and "repeat" not in info:
        info = info.assign(repeat=0)
    info_cols = [c for c in LEVEL_INFO_COLUMNS if c in info]
    levels = levels.merge(info[keys + info_cols], on=keys, how="left") if len(levels) else levels
    for col in LEVEL_INFO_COLUMNS:
        if col not in levels:
            levels[col] = np.nan if col in _NAN_INFO else None
    levels["sim_schedule_problem"] = pd.Series(
        [schedule_problem(r) for r in levels.to_dict("records")], index=levels.index, dtype=object
    )
    return levels.sort_values(keys).reset_index(drop=True)
