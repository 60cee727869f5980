"""``GET /metrics`` of the simulated server: a realistic subset of SGLang's Prometheus metrics.

SGLang serves ``/metrics`` only with ``--enable-metrics``, in Prometheus' text format,
from two collectors (``srt/metrics/collector.py`` 0.5.9; ``srt/observability/
metrics_collector.py`` from 0.5.12):

- the scheduler's (labels ``model_name``, ``engine_type``, ``tp_rank``, ``pp_rank``,
  ``moe_ep_rank``, and ``dp_rank`` with data parallelism): gauges set at each log
  interval: ``sglang:num_running_reqs``, ``sglang:num_used_tokens``, ``sglang:token_usage``,
  ``sglang:gen_throughput``, ``sglang:num_queue_reqs``, ``sglang:cache_hit_rate``,
  ``sglang:max_total_num_tokens``, ``sglang:spec_accept_length`` and (0.5.4+)
  ``sglang:spec_accept_rate`` (per log interval, not lifetime);
- the tokenizer manager's (label ``model_name``): counters ``sglang:prompt_tokens_total``,
  ``sglang:generation_tokens_total``, ``sglang:num_requests_total`` and histograms
  ``sglang:time_to_first_token_seconds``, ``sglang:e2e_request_latency_seconds``.

The simulator keeps one scheduler (``tp_rank`` 0 speaks for the TP group, as each rank's
gauges are equal); latencies are in engine seconds (wall x ``--sim-time-scale``). The
text is written here (the format is four line shapes) so the simulator needs no
Prometheus library on a host.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.sim._engine import EngineCore

__all__ = ["SimMetrics", "TTFT_BUCKETS_S", "E2E_BUCKETS_S"]

#: Histogram buckets (seconds) of sglang 0.5.9's tokenizer collector defaults.
TTFT_BUCKETS_S = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0)
E2E_BUCKETS_S = (
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    2.0,
    4.0,
    6.0,
    8.0,
    10.0,
    20.0,
    40.0,
    60.0,
    80.0,
    100.0,
    200.0,
    400.0,
    600.0,
    1200.0,
    1800.0,
    2400.0,
)


@dataclasses.dataclass
class _Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = dataclasses.field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.buckets)
        i = bisect.bisect_left(self.buckets, value)
        if i < len(self.counts):
            self.counts[i] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out, cumulative = [], 0
        counts = self.counts or [0] * len(self.buckets)
        for bound, count in zip(self.buckets, counts):
            cumulative += count
            out.append(f'{name}_bucket{{{labels},le="{bound}"}} {float(cumulative)}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(self.n)}')
        out.append(f"{name}_count{{{labels}}} {float(self.n)}")
        out.append(f"{name}_sum{{{labels}}} {self.total}")
        return out


def _labels(pairs: dict[str, object]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in pairs.items())


class SimMetrics:
    """The request-side counters and histograms, and the text of ``/metrics``.

    Args:
        model_name: ``--served-model-name`` (or the model path), the ``model_name`` label.
        spec_accept_rate: the emulated version has ``sglang:spec_accept_rate`` (0.5.4+).
    """

    def __init__(self, model_name: str, *, spec_accept_rate: bool = True) -> None:
        self.model_name = model_name
        self.spec_accept_rate = spec_accept_rate
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.requests = 0
        self.ttft = _Histogram(TTFT_BUCKETS_S)
        self.e2e = _Histogram(E2E_BUCKETS_S)

    def first_token(self, ttft_s: float) -> None:
        """A request's first output token came ``ttft_s`` engine seconds after it arrived."""
        self.ttft.observe(ttft_s)

    def finished(self, prompt_tokens: int, completion_tokens: int, e2e_s: float) -> None:
        """A request finished (SGLang counts tokens and requests at the end of each request)."""
        self.prompt_tokens += prompt_tokens
        self.generation_tokens += completion_tokens
        self.requests += 1
        self.e2e.observe(e2e_s)

    def render(self, engine: EngineCore, *, spec_enabled: bool) -> str:
        """The Prometheus text of every metric, the gauges read from ``engine`` now."""
        sched = _labels(
            {"model_name": self.model_name, "engine_type": "unified", "tp_rank": 0, "pp_rank": 0, "moe_ep_rank": 0}
        )
        tok = _labels({"model_name": self.model_name})
        gauges = [
            ("num_running_reqs", "The number of running requests.", len(engine.running)),
            ("num_used_tokens", "The number of used tokens.", engine.kv_used),
            ("token_usage", "The token usage.", round(engine.token_usage, 4)),
            ("gen_throughput", "The generation throughput (token/s).", engine.last_gen_throughput),
            ("num_queue_reqs", "The number of requests in the waiting queue.", len(engine.waiting)),
            ("cache_hit_rate", "The prefix cache hit rate.", 0.0),
            (
                "max_total_num_tokens",
                "Maximum total number of tokens in the KV cache pool.",
                math.inf if engine.capacity is None else engine.capacity,
            ),  # None: an unlimited pool
            (
                "spec_accept_length",
                "The average acceptance length of speculative decoding.",
                engine.last_accept_length if spec_enabled else 0.0,
            ),
        ]
        if self.spec_accept_rate:
            gauges.append(
                (
                    "spec_accept_rate",
                    "The average acceptance rate of speculative decoding.",
                    engine.last_accept_rate if spec_enabled else 0.0,
                )
            )
        lines: list[str] = []
        for name, doc, value in gauges:
            full = f"sglang:{name}"
            lines += [f"# HELP {full} {doc}", f"# TYPE {full} gauge", f"{full}{{{sched}}} {float(value)}"]
        for name, doc, value in (
            ("prompt_tokens", "Number of prefill tokens processed.", self.prompt_tokens),
            ("generation_tokens", "Number of generation tokens processed.", self.generation_tokens),
            ("num_requests", "Number of requests processed.", self.requests),
        ):
            full = f"sglang:{name}"
            lines += [
                f"# HELP {full}_total {doc}",
                f"# TYPE {full}_total counter",
                f"{full}_total{{{tok}}} {float(value)}",
            ]
        for name, doc, hist in (
            ("time_to_first_token_seconds", "Histogram of time to first token in seconds.", self.ttft),
            ("e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", self.e2e),
        ):
            full = f"sglang:{name}"
            lines += [f"# HELP {full} {doc}", f"# TYPE {full} histogram", *hist.lines(full, tok)]
        return "\n".join(lines) + "\n"
