"""SGLang's "Prefill batch" / "Decode batch" log lines, across versions, as points.

Formats read from the release wheels (the scheduler's logging of batch stats):

- 0.4.6 (``srt/managers/scheduler.py``)::

    [2025-05-01 10:00:00 TP0] Decode batch. #running-req: 8, #token: 9512, token usage: 0.02,
    accept len: 2.31, cuda graph: True, gen throughput (token/s): 812.40, #queue-req: 0

- 0.5.1 to 0.5.9 (``srt/managers/scheduler_metrics_mixin.py``), with an optional
  ``[<forward ct>]`` after ``batch`` and hybrid pools' ``#full token`` / ``full token usage``::

    [2026-01-10 09:12:03 DP1 TP0] Decode batch, #running-req: 64, #token: 70210, token usage: 0.12,
    accept len: 2.10, accept rate: 0.36, cuda graph: True, gen throughput (token/s): 2104.55, #queue-req: 3
    [2026-01-10 09:12:02 DP1 TP0] Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 0,
    token usage: 0.11, #running-req: 60, #queue-req: 3, input throughput (token/s): 0.00, cuda graph: False

- 0.5.16 to 0.5.23 (``srt/managers/scheduler_components/metrics_reporter.py``): the same
  fields plus ``#pending-token``, ``cap len``, ``block accept len`` and estimates.

The bracket holds the time (``%Y-%m-%d %H:%M:%S``, ``.mmm`` with ``SGLANG_LOG_MS``) and
the rank prefix SGLang's scheduler builds: ``DP<i>``, ``PP<i>``, ``ATTN_CP<i>``,
``MOE_DP<i>``, ``TP<i>``, ``EP<i>``, each only when that parallelism is on. The time is
the host's local time; it is read with this machine's time zone.

Fields become points named like the matching ``/metrics`` gauges: ``num_running_reqs``,
``num_queue_reqs``, ``num_used_tokens``, ``token_usage``, ``gen_throughput``,
``spec_accept_length``, ``spec_accept_rate``, and for prefill lines ``new_seqs``,
``new_tokens``, ``cached_tokens``, ``input_throughput``; the batch kind is ``batch``
(``"decode"``/``"prefill"``) in each point. Other fields are left out.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["LOG_FIELDS", "parse_batch_log", "parse_batch_line"]

#: Log field -> point name.
LOG_FIELDS: dict[str, str] = {
    "#running-req": "num_running_reqs",
    "#queue-req": "num_queue_reqs",
    "#token": "num_used_tokens",
    "#full token": "num_used_tokens",
    "token usage": "token_usage",
    "full token usage": "token_usage",
    "gen throughput (token/s)": "gen_throughput",
    "input throughput (token/s)": "input_throughput",
    "accept len": "spec_accept_length",
    "accept rate": "spec_accept_rate",
    "#new-seq": "new_seqs",
    "#new-token": "new_tokens",
    "#cached-token": "cached_tokens",
}

_LINE = re.compile(
    r"\[(?P<time>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?P<ms>\.\d+)?(?P<ranks>(?: [A-Z_]+\d+)*)\]\s+"
    r"(?P<kind>Decode|Prefill) batch(?: \[\d+\])?[.,]\s*(?P<rest>.*)$"
)
_RANK = re.compile(r"([A-Z_]+)(\d+)")
#: Rank parts kept in the label (as :func:`workbench.bench._observe.rank_label` writes them).
_KEPT_RANKS = ("DP", "PP", "TP", "EP")


def _epoch(stamp: str, ms: str | None) -> float:
    return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + (float(ms) if ms else 0.0)


def parse_batch_line(line: str) -> list[dict[str, Any]]:
    """The points of one log line (``[]`` when it is not a batch line).

    Each point: ``source="log"``, ``t_epoch_s``, ``rank`` (``"DP1 TP0"``; PP0/EP0 dropped,
    ``""`` without a prefix), ``name``, ``value``, ``batch``.
    """
    match = _LINE.search(line)
    if match is None:
        return []
    ranks = " ".join(
        f"{p}{n}" for p, n in _RANK.findall(match["ranks"]) if p in _KEPT_RANKS and not (p in ("PP", "EP") and n == "0")
    )
    t = _epoch(match["time"], match["ms"])
    batch = match["kind"].lower()
    out = []
    for part in match["rest"].split(", "):
        key, sep, value = part.partition(": ")
        name = LOG_FIELDS.get(key.strip())
        if not sep or name is None:
            continue
        try:
            number = float(value.strip().rstrip(",%"))
        except ValueError:
            continue
        out.append({"source": "log", "t_epoch_s": t, "rank": ranks, "name": name, "value": number, "batch": batch})
    return out


def parse_batch_log(
    lines: Iterable[str] | str, *, start_epoch_s: float | None = None, end_epoch_s: float | None = None
) -> list[dict[str, Any]]:
    """Points of every batch line, optionally only those stamped within ``[start, end]``.

    Log times have whole seconds unless ``SGLANG_LOG_MS`` is set, so the window is
    widened to the enclosing seconds.

    Args:
        lines: the log text or its lines.
        start_epoch_s, end_epoch_s: the level's window (Unix seconds), or None.
    """
    text_lines = lines.splitlines() if isinstance(lines, str) else lines
    lo = -float("inf") if start_epoch_s is None else float(int(start_epoch_s))
    hi = float("inf") if end_epoch_s is None else float(int(end_epoch_s)) + 1.0
    out = []
    for line in text_lines:
        for point in parse_batch_line(line):
            if lo <= point["t_epoch_s"] < hi:
                out.append(point)
    return out
