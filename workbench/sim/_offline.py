"""Offline mode: run the engine core against a closed-loop client on a virtual clock.

Same :class:`~workbench.sim._engine.EngineCore` as the HTTP server, no sockets and
no sleeping, so a whole 1..64 concurrency sweep takes well under a second. Used to
calibrate profiles and to predict what the real-time benchmark will measure.

The client mirrors :mod:`workbench.bench._loadgen`'s closed loop: ``concurrency``
requests start at time 0; each time one finishes, the next prompt is submitted at
that instant, until ``len(prompt_tokens)`` requests have been sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from workbench.sim._engine import EngineCore, SimRequest


@dataclasses.dataclass
class _Track:
    start_s: float
    chunk_times_s: list[float] = dataclasses.field(default_factory=list)
    chunk_tokens: list[int] = dataclasses.field(default_factory=list)


def run_closed_loop(
    engine: EngineCore,
    *,
    prompt_tokens: Sequence[int],
    concurrency: int,
    max_new_tokens: int,
) -> list[dict]:
    """Simulate one closed-loop level; return one row per request.

    Args:
        engine: a fresh (idle) engine core.
        prompt_tokens: prompt length (tokens) of each request, in send order; its
            length is the number of requests.
        concurrency: requests kept in flight.
        max_new_tokens: output tokens per request.

    Returns:
        Rows with the request-table columns of :mod:`workbench.bench` (times in
        simulated milliseconds, ``start_s``/``end_s`` on the virtual clock from 0).

    Raises:
        ValueError: concurrency < 1 or the engine is not idle.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    if not engine.idle:
        raise ValueError("run_closed_loop needs an idle engine")
    now = 0.0
    tracks: dict[str, _Track] = {}
    rows: list[dict] = []
    sent = 0

    def send() -> None:
        nonlocal sent
        rid = f"r{sent}"
        engine.submit(SimRequest(rid=rid, prompt_tokens=int(prompt_tokens[sent]), max_new_tokens=max_new_tokens))
        tracks[rid] = _Track(start_s=now)
        sent += 1

    for _ in range(min(concurrency, len(prompt_tokens))):
        send()
    while not engine.idle:
        iteration = engine.step()
        if iteration is None:  # pragma: no cover - idle checked above
            break
        now += iteration.duration_s
        for emission in iteration.emissions:
            req = emission.request
            track = tracks[req.rid]
            track.chunk_times_s.append(now)
            track.chunk_tokens.append(emission.new_tokens)
            if emission.finished:
                rows.append(_row(req, track, end_s=now))
                if sent < len(prompt_tokens):
                    send()
    return rows


def _row(req: SimRequest, track: _Track, *, end_s: float) -> dict:
    times = track.chunk_times_s
    ttft_ms = (times[0] - track.start_s) * 1000.0
    e2e_ms = (end_s - track.start_s) * 1000.0
    itl_ms = [(b - a) * 1000.0 for a, b in zip(times, times[1:])]
    out = req.output_tokens
    verify = req.verify_ct
    return {
        "request_index": int(req.rid[1:]),
        "prompt_tokens": req.prompt_tokens,
        "output_tokens": out,
        "ttft_ms": ttft_ms,
        "e2e_ms": e2e_ms,
        "tpot_ms": (e2e_ms - ttft_ms) / (out - 1) if out > 1 else float("nan"),
        "itl_ms": itl_ms,
        "tokens_per_chunk": list(track.chunk_tokens),
        "spec_verify_ct": verify if verify else None,
        "accept_length": out / verify if verify else float("nan"),
        "start_s": track.start_s,
        "end_s": end_s,
        "error": None,
        "error_type": None,
    }

