"""Load patterns: closed loop at a concurrency, open loop at a request rate.

Both take a ready *schedule* (the prompts to send, in order) and one shared
:class:`aiohttp.ClientSession`, and return one :class:`RequestRecord` per scheduled
request, in schedule order, with ``request_index`` set. Nothing here blocks the
event loop; the only waits are network I/O and, for the open loop, ``asyncio.sleep``
until each scheduled arrival.

Closed loop (bench_serving's ``--max-concurrency`` with ``--request-rate inf``):
``concurrency`` workers each send a request, wait for its whole response, and send
the next, until the schedule is used up; so exactly ``concurrency`` requests are in
flight except while the last ones drain.

Open loop (bench_serving's ``--request-rate``): arrivals follow a Poisson process
(exponential gaps drawn from the injected ``rng``), independent of completions,
optionally capped by ``max_concurrency``.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import aiohttp

from workbench.bench._client import DEFAULT_REQUEST_TIMEOUT_S, send_request
from workbench.bench._prompts import Prompt
from workbench.bench._record import RequestRecord
from workbench.bench._timing import Timebase
from workbench.errors import ConfigError

__all__ = ["closed_loop", "open_loop", "poisson_arrivals", "prompt_schedule"]

#: What :func:`prompt_schedule` cycles through: prompts (or their lengths, offline).
P = TypeVar("P")

#: Called after each finished request (for progress bars).
OnDone = Callable[[RequestRecord], None]


def prompt_schedule(prompts: Sequence[P], num_requests: int, *, rng: random.Random) -> list[P]:
    """Prompts for ``num_requests`` requests: one seeded shuffle of the set, cycled.

    ``prompts`` are :class:`Prompt` objects, or anything else a caller cycles through (the
    simulator's offline loop passes prompt lengths). Every prompt is used once before any repeats.
    Calling this with a fresh
    ``random.Random(seed)`` gives the same schedule for the same seed, so every
    concurrency level of a sweep sends the same prompt sequence.

    Raises:
        ConfigError: ``prompts`` is empty or ``num_requests`` < 0.
    """
    if not prompts:
        raise ConfigError("prompt_schedule: the prompt list is empty")
    if num_requests < 0:
        raise ConfigError(f"num_requests must be >= 0, got {num_requests}")
    order = list(range(len(prompts)))
    rng.shuffle(order)
    return [prompts[order[i % len(order)]] for i in range(num_requests)]


def poisson_arrivals(num_requests: int, request_rate: float, *, rng: random.Random) -> list[float]:
    """Arrival offsets (seconds, engine time) of a Poisson process; the first is 0.

    Args:
        num_requests: how many arrivals.
        request_rate: mean arrivals per second (> 0; ``inf``: all at 0).
        rng: source of the exponential gaps (``rng.expovariate``).

    Raises:
        ConfigError: ``request_rate`` is not > 0.
    """
    if not request_rate > 0:
        raise ConfigError(f"request_rate must be > 0 requests/s, got {request_rate}")
    offsets, t = [], 0.0
    for i in range(num_requests):
        if i and math.isfinite(request_rate):
            t += rng.expovariate(request_rate)
        offsets.append(t)
    return offsets


async def _one(
    session: aiohttp.ClientSession,
    base_url: str,
    index: int,
    prompt: Prompt,
    request_kwargs: Mapping[str, Any],
    due: float,
) -> RequestRecord:
    record = await send_request(
        session, base_url, prompt.text, prompt_id=prompt.id, input_ids=prompt.input_ids, due=due, **request_kwargs
    )
    record.request_index = index
    record.prompt_category = prompt.category
    return record


async def closed_loop(
    session: aiohttp.ClientSession,
    base_url: str,
    schedule: Sequence[Prompt],
    *,
    concurrency: int,
    max_new_tokens: int,
    timebase: Timebase,
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    extra_sampling_params: Mapping[str, Any] | None = None,
    on_done: OnDone | None = None,
    **request_options: Any,
) -> list[RequestRecord]:
    """Send ``schedule`` keeping exactly ``concurrency`` requests in flight.

    ``min(concurrency, len(schedule))`` workers share one cursor into the schedule;
    each sends its next request as soon as its previous response has ended, in the
    same event-loop step, so the server sees ``concurrency`` requests at steady state.

    Args:
        session: the run's shared session (its connector must not cap connections
            below ``concurrency``).
        base_url: server root URL.
        schedule: prompts to send, in order.
        concurrency: requests in flight (>= 1).
        max_new_tokens: output tokens per request.
        timebase: the run's clock.
        timeout_s: per-request limit (wall seconds).
        extra_sampling_params: merged into sampling_params.
        on_done: called with each finished record.
        request_options: passed to :func:`~workbench.bench._client.send_request`
            (``backend``, ``temperature``, ``ignore_eos``, ``model``).

    A request is due when its worker is free (its ``client_wait_ms`` is the worker's
    own turnaround: bookkeeping and event-loop delay before the next send).

    Returns:
        One record per schedule entry, in schedule order.

    Raises:
        ConfigError: ``concurrency`` < 1.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
    records: list[RequestRecord | None] = [None] * len(schedule)
    cursor = 0
    kwargs = dict(
        max_new_tokens=max_new_tokens,
        timebase=timebase,
        timeout_s=timeout_s,
        extra_sampling_params=extra_sampling_params,
        **request_options,
    )

    async def worker() -> None:
        nonlocal cursor
        due = timebase.now()
        while cursor < len(schedule):
            index = cursor
            cursor += 1
            record = await _one(session, base_url, index, schedule[index], kwargs, due)
            due = timebase.now()
            records[index] = record
            if on_done is not None:
                on_done(record)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(schedule)))))
    return [r for r in records if r is not None]


async def open_loop(
    session: aiohttp.ClientSession,
    base_url: str,
    schedule: Sequence[Prompt],
    *,
    request_rate: float,
    rng: random.Random,
    max_new_tokens: int,
    timebase: Timebase,
    max_concurrency: int | None = None,
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    extra_sampling_params: Mapping[str, Any] | None = None,
    on_done: OnDone | None = None,
    **request_options: Any,
) -> list[RequestRecord]:
    """Send ``schedule`` with Poisson arrivals at ``request_rate`` (engine-time req/s).

    Arrival offsets come from :func:`poisson_arrivals` in engine time and are divided
    by ``timebase.time_scale`` to get wall-clock waits. Arrivals are scheduled against
    absolute event-loop times, so slow requests do not delay later arrivals. With
    ``max_concurrency`` a request that arrives while that many are in flight waits
    for a slot; its clock starts when it is sent, so TTFT excludes that wait (as in
    bench_serving, whose ``limited_request_func`` starts timing inside the semaphore),
    and the wait from its scheduled arrival to its send is its ``client_wait_ms``
    (``user_ttft_ms`` / ``user_e2e_ms`` include it).

    Args:
        request_rate: mean arrivals per engine-time second (> 0; ``inf``: all at once).
        rng: source of the arrival gaps (seeded by the caller).
        max_concurrency: optional cap on requests in flight.
        Others (``request_options`` included): as for :func:`closed_loop`.

    Returns:
        One record per schedule entry, in schedule order.

    Raises:
        ConfigError: bad ``request_rate`` or ``max_concurrency``.
    """
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigError(f"max_concurrency must be >= 1 or None, got {max_concurrency}")
    offsets = poisson_arrivals(len(schedule), request_rate, rng=rng)
    slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    kwargs = dict(
        max_new_tokens=max_new_tokens,
        timebase=timebase,
        timeout_s=timeout_s,
        extra_sampling_params=extra_sampling_params,
        **request_options,
    )
    loop = asyncio.get_running_loop()
    t0, tb0 = loop.time(), timebase.now()

    async def launch(index: int) -> RequestRecord:
        due = tb0 + offsets[index] / timebase.time_scale
        if slots is None:
            record = await _one(session, base_url, index, schedule[index], kwargs, due)
        else:
            async with slots:
                record = await _one(session, base_url, index, schedule[index], kwargs, due)
        if on_done is not None:
            on_done(record)
        return record

    tasks: list[asyncio.Task[RequestRecord]] = []
    try:
        for index, offset in enumerate(offsets):
            delay = t0 + offset / timebase.time_scale - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(launch(index)))
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
