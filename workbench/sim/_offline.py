"""Offline mode: run the engine core against a closed-loop client on a virtual clock.

Same :class:`~workbench.sim._engine.EngineCore` as the HTTP server, no sockets and
no sleeping, so a whole 1..64 concurrency sweep takes well under a second. Used to
calibrate profiles and to predict what the real-time benchmark will measure.

The client mirrors :mod:`workbench.bench._loadgen`'s closed loop: ``concurrency``
requests start at time 0; each time one finishes, the next prompt is submitted at
that instant, until ``len(prompt_tokens)`` requests have been sent.

Two ways to watch the requests: ``chunks=True`` records every streamed chunk (the
request table's ``itl_ms`` and ``tokens_per_chunk``, as the HTTP client does);
``chunks=False`` records only what the level's throughput, per-request speed, TTFT,
TPOT and accept length need (first and last token times), touching each emission
only when a request starts or finishes, which is what a what-if scan of hundreds of
configurations wants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from workbench.sim._engine import EngineCore, SimRequest


@dataclasses.dataclass
class ClosedLoopResult:
    """One simulated closed-loop level.

    Attributes:
        rows: one row per request (the request-table columns of :mod:`workbench.bench`).
        duration_s: virtual time from the first request to the last token (seconds).
        decode_iterations: decode iterations run (speculative or not).
        spec_iterations: those that drafted and verified.
        decode_s: virtual seconds spent in decode iterations.
        prefill_s: virtual seconds spent in prefill iterations.
        decode_batch_sum: running requests summed over decode iterations (mean batch =
            ``decode_batch_sum / decode_iterations``).
    """

    rows: list[dict]
    duration_s: float = 0.0
    decode_iterations: int = 0
    spec_iterations: int = 0
    decode_s: float = 0.0
    prefill_s: float = 0.0
    decode_batch_sum: int = 0

    @property
    def mean_decode_batch(self) -> float:
        """Mean running requests per decode iteration (NaN with none)."""
        return self.decode_batch_sum / self.decode_iterations if self.decode_iterations else float("nan")

    @property
    def mean_decode_step_ms(self) -> float:
        """Mean duration of a decode iteration (virtual milliseconds; NaN with none)."""
        return 1000.0 * self.decode_s / self.decode_iterations if self.decode_iterations else float("nan")


def run_closed_loop(
    engine: EngineCore,
    *,
    prompt_tokens: Sequence[int],
    concurrency: int,
    max_new_tokens: int,
    chunks: bool = True,
) -> list[dict]:
    """Simulate one closed-loop level; return one row per request (see :func:`simulate_closed_loop`)."""
    return simulate_closed_loop(
        engine, prompt_tokens=prompt_tokens, concurrency=concurrency, max_new_tokens=max_new_tokens, chunks=chunks
    ).rows


def simulate_closed_loop(
    engine: EngineCore,
    *,
    prompt_tokens: Sequence[int],
    concurrency: int,
    max_new_tokens: int | Sequence[int],
    chunks: bool = True,
) -> ClosedLoopResult:
    """Simulate one closed-loop level.

    Args:
        engine: a fresh (idle) engine core.
        prompt_tokens: prompt length (tokens) of each request, in send order; its
            length is the number of requests.
        concurrency: requests kept in flight.
        max_new_tokens: output tokens per request: one count for all, or one per request in send order
            (as long as ``prompt_tokens``: output lengths drawn from a workload's distribution).
        chunks: record every chunk (``itl_ms``, ``tokens_per_chunk``); False leaves those
            lists empty and is several times cheaper per iteration.

    Returns:
        The rows (times in simulated milliseconds, ``start_s``/``end_s`` on the virtual
        clock from 0) and the level's iteration counters.

    Raises:
        ValueError: concurrency < 1, the engine is not idle, or per-request output lengths that do not
            match the prompts one for one.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    if not isinstance(max_new_tokens, int):
        if len(max_new_tokens) != len(prompt_tokens) or min(max_new_tokens, default=1) < 1:
            raise ValueError(
                f"per-request output lengths must be one per prompt ({len(prompt_tokens)}) and >= 1; "
                f"got {len(max_new_tokens)} values"
            )
    if not engine.idle:
        raise ValueError("run_closed_loop needs an idle engine")
    if chunks:
        return _with_chunks(engine, prompt_tokens, concurrency, max_new_tokens)
    return _ends_only(engine, prompt_tokens, concurrency, max_new_tokens)


def _lengths(max_new_tokens: int | Sequence[int], total: int) -> Sequence[int]:
    return [max_new_tokens] * total if isinstance(max_new_tokens, int) else max_new_tokens


def _with_chunks(
    engine: EngineCore, prompt_tokens: Sequence[int], concurrency: int, max_new_tokens: int | Sequence[int]
) -> ClosedLoopResult:
    now = 0.0
    result = ClosedLoopResult([])
    starts: dict[str, float] = {}
    times: dict[str, list[float]] = {}
    tokens: dict[str, list[int]] = {}
    rows = result.rows
    total = len(prompt_tokens)
    outputs = _lengths(max_new_tokens, total)
    sent = 0

    def send() -> None:
        nonlocal sent
        rid = f"r{sent}"
        engine.submit(SimRequest(rid=rid, prompt_tokens=int(prompt_tokens[sent]), max_new_tokens=int(outputs[sent])))
        starts[rid], times[rid], tokens[rid] = now, [], []
        sent += 1

    for _ in range(min(concurrency, total)):
        send()
    step = engine.step
    while True:
        iteration = step()
        if iteration is None:
            break
        now += iteration.duration_s
        _count(result, iteration)
        for emission in iteration.emissions:
            req = emission.request
            rid = req.rid
            times[rid].append(now)
            tokens[rid].append(emission.new_tokens)
            if emission.finished:
                t = times.pop(rid)
                rows.append(_row(req, starts.pop(rid), t[0], now, t, tokens.pop(rid)))
                if sent < total:
                    send()
    result.duration_s = now
    return result


def _ends_only(
    engine: EngineCore, prompt_tokens: Sequence[int], concurrency: int, max_new_tokens: int | Sequence[int]
) -> ClosedLoopResult:
    now = 0.0
    result = ClosedLoopResult([])
    starts: dict[str, float] = {}
    firsts: dict[str, float] = {}
    rows = result.rows
    total = len(prompt_tokens)
    outputs = _lengths(max_new_tokens, total)
    sent = 0
    running = engine.running

    def send() -> None:
        nonlocal sent
        rid = f"r{sent}"
        engine.submit(SimRequest(rid=rid, prompt_tokens=int(prompt_tokens[sent]), max_new_tokens=int(outputs[sent])))
        starts[rid] = now
        sent += 1

    for _ in range(min(concurrency, total)):
        send()
    step = engine.step
    decode_n = spec_n = batch_sum = 0
    decode_s = prefill_s = 0.0
    while True:
        iteration = step()
        if iteration is None:
            break
        duration = iteration.duration_s
        now += duration
        if iteration.kind == "decode":
            decode_n += 1
            decode_s += duration
            batch_sum += iteration.batch_size
            if iteration.speculative:
                spec_n += 1
            running = engine.running
            if len(running) == iteration.batch_size:
                continue  # nobody left the batch: no request started or finished this iteration
        else:
            prefill_s += duration
            for emission in iteration.emissions:
                # a retracted request is prefilled again: its first token is still the first one
                firsts.setdefault(emission.request.rid, now)
        for emission in iteration.emissions:
            if emission.finished:
                req = emission.request
                rid = req.rid
                rows.append(_row(req, starts.pop(rid), firsts.pop(rid), now, (), ()))
                if sent < total:
                    send()
    result.duration_s = now
    result.decode_iterations, result.spec_iterations, result.decode_batch_sum = decode_n, spec_n, batch_sum
    result.decode_s, result.prefill_s = decode_s, prefill_s
    return result


def _count(result: ClosedLoopResult, iteration) -> None:
    if iteration.kind == "decode":
        result.decode_iterations += 1
        result.decode_s += iteration.duration_s
        result.decode_batch_sum += iteration.batch_size
        result.spec_iterations += bool(iteration.speculative)
    else:
        result.prefill_s += iteration.duration_s


def _row(
    req: SimRequest, start_s: float, first_s: float, end_s: float, times: Sequence[float], tokens: Sequence[int]
) -> dict:
    ttft_ms = (first_s - start_s) * 1000.0
    e2e_ms = (end_s - start_s) * 1000.0
    out = req.output_tokens
    verify = req.verify_ct
    return {
        "request_index": int(req.rid[1:]),
        "prompt_tokens": req.prompt_tokens,
        "output_tokens": out,
        "ttft_ms": ttft_ms,
        "e2e_ms": e2e_ms,
        "tpot_ms": (e2e_ms - ttft_ms) / (out - 1) if out > 1 else float("nan"),
        "itl_ms": [(b - a) * 1000.0 for a, b in zip(times, times[1:])],
        "tokens_per_chunk": list(tokens),
        "spec_verify_ct": verify if verify else None,
        "accept_length": out / verify if verify else float("nan"),
        "start_s": start_s,
        "end_s": end_s,
        "error": None,
        "error_type": None,
    }
