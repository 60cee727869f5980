"""Invariants an imported level must keep before it may be charted.

A level that breaks one is not dropped and not charted: it goes to the quarantine table
with every reason found (its ``reason`` column, reasons joined by ``"; "``). The checks,
each on the level's own figures (NaN figures are not checked):

- **no completed request**: ``completed`` is 0;
- **TTFT above E2E**: mean TTFT above mean E2E latency, or median above median (a request's
  first token cannot come after its last);
- **output throughput above what the request throughput and lengths allow**: output tok/s
  above request throughput x mean output tokens per completed request, by more than
  :data:`RATE_SLACK` (both are counts over the same duration, so they agree to rounding);
- **output throughput above what the offered request rate allows**: with a finite request
  rate r, output tok/s above r x mean output tokens per request x :data:`OFFERED_RATE_SLACK`
  (a short Poisson run may run somewhat ahead of its rate, not by half);
- **ITL of 0 on a streamed run**: a mean or median ITL (per chunk or per token) of exactly 0
  while requests produced more than one token and the tool streamed (a tool that reports 0
  where it measured nothing);
- **negative latency or throughput**: any latency or throughput below 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["RATE_SLACK", "OFFERED_RATE_SLACK", "violations"]

#: Relative slack of output tok/s over request throughput x mean output length (rounding only).
RATE_SLACK = 0.02
#: Factor of slack of output tok/s over the offered request rate x mean output length.
OFFERED_RATE_SLACK = 1.5

_LATENCY_PREFIXES = ("mean_", "p50_", "p90_", "p99_")


def _finite(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key)
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def violations(row: Mapping[str, Any], *, streamed: bool | None) -> list[str]:
    """The invariants ``row`` (an imported level, our column names) breaks; empty when none.

    Args:
        row: the level's columns (:meth:`workbench.imports._rows.ImportedLevel.row`).
        streamed: whether the tool streamed the responses (None: unknown, the ITL check
            then applies only where the tool reported an ITL at all).
    """
    reasons: list[str] = []
    completed = _finite(row, "completed")
    if completed is not None and completed <= 0:
        reasons.append("no completed request (completed = 0)")
    for stat in ("mean", "p50"):
        ttft, e2e = _finite(row, f"{stat}_ttft_ms"), _finite(row, f"{stat}_e2e_ms")
        if ttft is not None and e2e is not None and ttft > e2e:
            reasons.append(f"TTFT above E2E ({stat} TTFT {ttft:.6g} ms > {stat} E2E {e2e:.6g} ms)")
            break
    out_rate = _finite(row, "output_throughput_tok_s")
    req_rate = _finite(row, "request_throughput_req_s")
    total_out = _finite(row, "total_output_tokens")
    mean_out = total_out / completed if total_out is not None and completed else None
    if out_rate is not None and req_rate is not None and mean_out is not None:
        allowed = req_rate * mean_out
        if out_rate > allowed * (1 + RATE_SLACK) + 1e-9:
            reasons.append(
                f"output throughput above what its request throughput and lengths allow "
                f"({out_rate:.6g} tok/s > {req_rate:.6g} req/s x {mean_out:.6g} tokens = {allowed:.6g})"
            )
    offered = _finite(row, "request_rate_req_s")
    if out_rate is not None and offered is not None and math.isfinite(offered) and mean_out is not None:
        allowed = offered * mean_out * OFFERED_RATE_SLACK
        if out_rate > allowed:
            reasons.append(
                f"output throughput above what its request rate and lengths allow ({out_rate:.6g} "
                f"tok/s > {OFFERED_RATE_SLACK:g} x {offered:.6g} req/s x {mean_out:.6g} tokens)"
            )
    if streamed is not False and (mean_out is None or mean_out > 1):
        for metric in ("itl_ms", "itl_per_token_ms"):
            zero = [s for s in ("mean", "p50") if _finite(row, f"{s}_{metric}") == 0.0]
            if zero:
                reasons.append(f"ITL of 0 on a streamed run ({zero[0]}_{metric} = 0)")
                break
    negative = sorted(
        k for k in row if (k.startswith(_LATENCY_PREFIXES) or k.endswith("_tok_s")) and (_finite(row, k) or 0.0) < 0
    )
    if negative:
        reasons.append(f"negative latency or throughput ({', '.join(negative)})")
    return reasons
