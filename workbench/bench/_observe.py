"""What the server saw during a level: its ``/metrics``, its batch log lines, the host's GPUs.

Each source becomes *points*, one JSON-ready dict per observed value::

    {"source": "metrics" | "log" | "gpu", "t_epoch_s": 1733000000.25,
     "rank": "TP0" | "DP1 TP0" | "gpu0" | "", "name": "num_running_reqs", "value": 12.0}

so a level's observations travel through the host-side results file unchanged and
become one long table (:mod:`workbench.bench._series`). Metric names drop SGLang's
``sglang:`` prefix; the log's fields are named after the metrics they match.

- ``/metrics`` (Prometheus text; SGLang serves it with ``--enable-metrics``):
  :class:`MetricsSampler` scrapes it at the level's start, every ``interval_s`` and at
  its end; samples named ``sglang:*`` are kept except histogram buckets (``_sum`` and
  ``_count`` stay, so means can be derived). Parsed with ``prometheus_client`` (a
  dependency of SGLang itself, so present on a GPU host).
- Batch log lines: :func:`parse_batch_log` (see :mod:`workbench.bench._batchlog`).
- GPUs: :class:`GpuSampler` runs ``nvidia-smi --query-gpu`` (:mod:`workbench.bench._gpu`).

No pandas here: the host-side load generator imports it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

import aiohttp

__all__ = [
    "DEFAULT_OBSERVE_INTERVAL_S",
    "MetricsSampler",
    "Point",
    "metric_points",
    "parse_prometheus",
    "rank_label",
    "scrape_metrics",
]

#: One observed value (see the module docstring).
Point = dict[str, Any]

#: Seconds (wall) between two samples of a level's observations.
DEFAULT_OBSERVE_INTERVAL_S = 0.5

#: Labels naming a rank, in the order SGLang's log prefix writes them (``srt/managers/scheduler.py``).
_RANK_LABELS = (("dp_rank", "DP"), ("pp_rank", "PP"), ("tp_rank", "TP"), ("moe_ep_rank", "EP"))


def rank_label(labels: dict[str, str]) -> str:
    """``"DP1 TP0"`` from a sample's labels (ranks 0 of PP and EP are left out; ``""`` for none)."""
    parts = []
    for key, prefix in _RANK_LABELS:
        value = labels.get(key)
        if value is None or (prefix in ("PP", "EP") and value == "0"):
            continue
        parts.append(f"{prefix}{value}")
    return " ".join(parts)


def parse_prometheus(text: str) -> list[tuple[str, dict[str, str], float]]:
    """``(name, labels, value)`` of every sample in Prometheus text exposition format.

    Raises:
        ValueError: the text is not valid exposition format.
        ImportError: ``prometheus_client`` is not installed.
    """
    from prometheus_client.parser import text_string_to_metric_families

    return [
        (s.name, dict(s.labels), float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def metric_points(samples: Iterable[tuple[str, dict[str, str], float]], t_epoch_s: float) -> list[Point]:
    """Points of SGLang's samples (``sglang:*``, histogram buckets and ``_created`` left out)."""
    out = []
    for name, labels, value in samples:
        if not name.startswith("sglang:") or name.endswith(("_bucket", "_created")):
            continue
        out.append(
            {
                "source": "metrics",
                "t_epoch_s": t_epoch_s,
                "rank": rank_label(labels),
                "name": name.removeprefix("sglang:"),
                "value": value,
            }
        )
    return out


async def scrape_metrics(
    session: aiohttp.ClientSession, base_url: str, *, timeout_s: float = 10.0
) -> tuple[list[Point], str | None]:
    """``GET /metrics`` once: ``(points, None)``, or ``([], why not)``.

    A 404 means the server runs without ``--enable-metrics``; the reason says so.
    """
    url = base_url.rstrip("/") + "/metrics"
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            text = await resp.text(errors="replace")
            t = time.time()
            if resp.status == 404:
                return [], f"{url}: 404 (the server serves /metrics only with --enable-metrics)"
            if resp.status != 200:
                return [], f"{url}: HTTP {resp.status}"
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        return [], f"{url}: {type(exc).__name__}: {exc}"
    try:
        return metric_points(parse_prometheus(text), t), None
    except ImportError:
        return [], "prometheus_client is not installed here, so /metrics cannot be parsed"
    except ValueError as exc:
        return [], f"{url}: not Prometheus text ({exc})"


class MetricsSampler:
    """Samples one source during a level: at :meth:`start`, every ``interval_s``, and at :meth:`stop`.

    Args:
        sample: an async callable returning ``(points, problem)`` (``problem`` None when fine).
        interval_s: wall seconds between samples.

    Attributes:
        points: every point gathered so far.
        problem: the first problem reported (None when every sample worked). A source
            whose first sample fails is not sampled again (it is not offered).
    """

    def __init__(self, sample: Callable[[], Any], *, interval_s: float = DEFAULT_OBSERVE_INTERVAL_S) -> None:
        self._sample = sample
        self._interval_s = interval_s
        self._task: asyncio.Task | None = None
        self.points: list[Point] = []
        self.problem: str | None = None
        self._offered = True

    async def _take(self) -> None:
        if not self._offered:
            return
        points, problem = await self._sample()
        if problem is not None and self.problem is None:
            self.problem = problem
            self._offered = bool(self.points)  # never worked: not offered
        self.points.extend(points)

    async def _loop(self) -> None:
        while self._offered:
            await asyncio.sleep(self._interval_s)
            await self._take()

    async def start(self) -> "MetricsSampler":
        """Take the first sample and keep sampling in the background."""
        await self._take()
        if self._offered:
            self._task = asyncio.create_task(self._loop())
        return self

    def cancel(self) -> None:
        """Stop sampling at once (the level failed); :attr:`points` keeps what was gathered."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def stop(self) -> list[Point]:
        """Stop sampling, take the last sample, and return every point."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        await self._take()
        return self.points
