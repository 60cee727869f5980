"""A benchmark sweep: one load level after another against one server.

First ``GET /server_info`` (pre-flight): a simulated server reports its time scale
there, which ``time_scale="auto"`` adopts and an explicit value must match, and the
``simulation`` block labels every row ``engine="sim"``, ``simulated=True``.

Per level (closed loop at a concurrency, or open loop at a rate):

1. ``POST /flush_cache`` (retried while the server is not idle), so the radix cache
   is cold and the server's accept-length counters cover only this level;
2. send the level's requests (the same seeded prompt schedule at every level);
3. ``GET /server_info`` for ``avg_spec_accept_length``;
4. hand the level to ``on_level`` (e.g. :func:`workbench.store.save_level`), so
   measured rows reach disk before the next level starts.

Warmup requests (default 1, as bench_serving) go out once, before the first flush.
One :class:`aiohttp.ClientSession` (no connection cap) serves the whole sweep.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import aiohttp
import pandas as pd
from tqdm.auto import tqdm

from workbench.bench.client import DEFAULT_REQUEST_TIMEOUT_S
from workbench.bench.loadgen import closed_loop, open_loop, prompt_schedule
from workbench.bench.metrics import summarize_levels
from workbench.bench.prompts import Prompt, load_prompts
from workbench.bench.record import RequestRecord, records_to_frame
from workbench.bench.server_api import (FlushOutcome, ServerInfoOutcome, fetch_server_info, flush_cache,
                                        server_accept_length, server_engine, server_gen_throughput,
                                        server_time_scale, sim_behind_schedule_s)
from workbench.bench.timing import Clock, Timebase
from workbench.errors import BenchmarkError, ConfigError

__all__ = ["DEFAULT_CONCURRENCY_LEVELS", "LevelResult", "SweepResult", "default_requests_per_level",
           "run_sweep", "run_sweep_async"]

DEFAULT_CONCURRENCY_LEVELS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)


def default_requests_per_level(concurrency: int) -> int:
    """``max(16, 4 * concurrency)``: enough requests that steady state dominates the level."""
    return max(16, 4 * concurrency)


@dataclasses.dataclass(frozen=True)
class LevelResult:
    """One measured level.

    Attributes:
        requests: request rows of this level (level columns first).
        info: one-row table of server observations (flush outcome, server accept length).
        server_info: the ``/server_info`` body read after the level (None if it failed).
        parameters: the sweep's parameters (JSON-ready), for the run manifest.
    """

    requests: pd.DataFrame
    info: pd.DataFrame
    server_info: dict[str, Any] | None
    parameters: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """Everything a sweep measured.

    Attributes:
        requests: one row per measured request (warmup excluded).
        levels: one row per level, derived from ``requests`` and ``level_info``.
        level_info: one row per level of server observations.
        warmup: rows of the warmup requests.
        server_info: the last ``/server_info`` body read (None if none).
        parameters: the sweep's parameters (JSON-ready), for the run manifest.
    """

    requests: pd.DataFrame
    levels: pd.DataFrame
    level_info: pd.DataFrame
    warmup: pd.DataFrame
    server_info: dict[str, Any] | None
    parameters: dict[str, Any]


def _resolve_prompts(prompts: Sequence[Prompt | str] | str | Path | None) -> list[Prompt]:
    if prompts is None:
        return load_prompts("default")
    if isinstance(prompts, (str, Path)):
        return load_prompts(prompts)
    out = [p if isinstance(p, Prompt) else Prompt(id=f"p{i}", category="coding", text=str(p))
           for i, p in enumerate(prompts)]
    if not out:
        raise ConfigError("run_sweep: prompts is empty")
    return out


def _level_plan(mode: str, levels: Sequence[float], requests_per_level: int | Callable[[int], int]
                ) -> list[tuple[float, int]]:
    if not levels:
        raise ConfigError("run_sweep: no levels to run")
    plan = []
    for level in levels:
        if mode == "closed" and (int(level) != level or level < 1):
            raise ConfigError(f"concurrency levels must be integers >= 1, got {level!r}")
        n = requests_per_level(int(level) if mode == "closed" else 1) if callable(requests_per_level) \
            else requests_per_level
        if int(n) < 1:
            raise ConfigError(f"requests_per_level must be >= 1, got {n} for level {level}")
        plan.append((level, int(n)))
    return plan


async def run_sweep_async(
    base_url: str,
    *,
    concurrency_levels: Sequence[int] = DEFAULT_CONCURRENCY_LEVELS,
    request_rates: Sequence[float] | None = None,
    max_concurrency: int | None = None,
    requests_per_level: int | Callable[[int], int] = default_requests_per_level,
    max_new_tokens: int = 256,
    prompts: Sequence[Prompt | str] | str | Path | None = None,
    seed: int = 0,
    time_scale: float | Literal["auto"] = 1.0,
    warmup_requests: int = 1,
    flush: bool = True,
    unique_prefix: bool = False,
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    extra_sampling_params: Mapping[str, Any] | None = None,
    progress: bool = True,
    on_level: Callable[[LevelResult], None] | None = None,
    clock: Clock = time.perf_counter,
    wall_clock: Clock = time.time,
) -> SweepResult:
    """Run a sweep (closed loop over ``concurrency_levels``, or open loop over ``request_rates``).

    Args:
        base_url: server root, e.g. ``http://127.0.0.1:30000``.
        concurrency_levels: closed-loop levels (requests in flight); default 1..64.
        request_rates: if given, run open-loop levels at these rates (engine-time
            requests/s; ``inf`` = all at once) instead of ``concurrency_levels``.
        max_concurrency: open loop only: cap on requests in flight.
        requests_per_level: requests per level, or a function of the concurrency
            (open loop: called with 1); default :func:`default_requests_per_level`.
        max_new_tokens: output tokens per request (``ignore_eos`` is on).
        prompts: Prompt objects, plain strings, a prompt-set name or path; default
            the shipped ``"default"`` set.
        seed: seeds the prompt schedule (``random.Random(seed)``, the same schedule at
            every level) and open-loop arrivals (``random.Random(seed + 1)`` per level).
        time_scale: engine seconds per wall second (a simulated engine running fast);
            all durations in rows are multiplied by it. Default 1.0 (a real server).
            ``"auto"`` takes the value a simulated server reports in ``/server_info``
            (``simulation.time_scale``), else 1.0. A number that contradicts the
            server's report is refused, since every duration would be off by the ratio.
        warmup_requests: requests sent concurrently before the first level, not
            measured. 0 disables.
        flush: POST ``/flush_cache`` before each level.
        unique_prefix: start every request's text with ``[request <level>-<index>]`` so
            a prompt sent again within a level misses SGLang's radix (prefix) cache.
            Off by default: with more requests than prompts, repeats are then served
            partly from the cache (``cached_tokens`` in the rows shows how much).
        timeout_s: per-request limit (wall seconds; None: none).
        extra_sampling_params: merged into every request's sampling_params.
        progress: show a tqdm progress bar over all requests.
        on_level: called with each :class:`LevelResult` as soon as it is measured
            (exceptions from it propagate and end the sweep).
        clock: monotonic clock (seconds). wall_clock: epoch clock (seconds).

    Returns:
        A :class:`SweepResult`.

    Raises:
        ConfigError: invalid parameters, or ``time_scale`` differs from the one the
            simulated server reports.
        BenchmarkError: every warmup request failed (the server is not answering);
            the message quotes the first error.
    """
    mode: Literal["closed", "open"] = "open" if request_rates is not None else "closed"
    levels = list(request_rates) if request_rates is not None else list(concurrency_levels)
    plan = _level_plan(mode, levels, requests_per_level)
    if max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if warmup_requests < 0:
        raise ConfigError(f"warmup_requests must be >= 0, got {warmup_requests}")
    prompt_list = _resolve_prompts(prompts)
    if time_scale != "auto":
        Timebase(clock=clock, origin=0.0, epoch_at_origin=0.0, time_scale=time_scale)  # validates early
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        preflight = await fetch_server_info(session, base_url)
        return await _sweep(session, base_url, mode=mode, levels=levels, plan=plan, prompt_list=prompt_list,
                            time_scale=_resolve_time_scale(time_scale, preflight.info, base_url),
                            preflight_info=preflight.info, max_concurrency=max_concurrency,
                            max_new_tokens=max_new_tokens, seed=seed, warmup_requests=warmup_requests, flush=flush,
                            unique_prefix=unique_prefix,
                            timeout_s=timeout_s, extra_sampling_params=extra_sampling_params, progress=progress,
                            on_level=on_level, clock=clock, wall_clock=wall_clock)


def _resolve_time_scale(requested: float | str, info: dict[str, Any] | None, base_url: str) -> float:
    reported = server_time_scale(info)
    if requested == "auto":
        return reported if reported is not None else 1.0
    if reported is not None and abs(float(requested) - reported) > 1e-9 * max(1.0, reported):
        raise ConfigError(f"time_scale={requested} but the simulated server at {base_url} runs at "
                          f"time_scale={reported} (/server_info simulation.time_scale); pass time_scale={reported} "
                          "or 'auto', otherwise every duration would be off by their ratio")
    return float(requested)


async def _sweep(
    session: aiohttp.ClientSession,
    base_url: str,
    *,
    mode: Literal["closed", "open"],
    levels: list[float],
    plan: list[tuple[float, int]],
    prompt_list: list[Prompt],
    time_scale: float,
    preflight_info: dict[str, Any] | None,
    max_concurrency: int | None,
    max_new_tokens: int,
    seed: int,
    warmup_requests: int,
    flush: bool,
    unique_prefix: bool,
    timeout_s: float | None,
    extra_sampling_params: Mapping[str, Any] | None,
    progress: bool,
    on_level: Callable[[LevelResult], None] | None,
    clock: Clock,
    wall_clock: Clock,
) -> SweepResult:
    timebase = Timebase.start(clock=clock, wall_clock=wall_clock, time_scale=time_scale)
    parameters = dict(base_url=base_url, mode=mode, levels=[float(x) if mode == "open" else int(x) for x in levels],
                      requests_per_level=[n for _, n in plan], max_new_tokens=max_new_tokens,
                      prompt_ids=[p.id for p in prompt_list], seed=seed, time_scale=float(time_scale),
                      warmup_requests=warmup_requests, flush=flush, unique_prefix=unique_prefix, timeout_s=timeout_s,
                      max_concurrency=max_concurrency, extra_sampling_params=dict(extra_sampling_params or {}))
    request_args = dict(max_new_tokens=max_new_tokens, timebase=timebase, timeout_s=timeout_s,
                        extra_sampling_params=extra_sampling_params)
    level_frames: list[pd.DataFrame] = []
    info_frames: list[pd.DataFrame] = []
    server_info: dict[str, Any] | None = preflight_info
    warm: list[RequestRecord] = []
    bar = tqdm(total=sum(n for _, n in plan), disable=not progress, unit="req", desc="sweep")
    try:
        if warmup_requests > 0:
            schedule = prompt_schedule(prompt_list, warmup_requests, rng=random.Random(seed))
            warm = await closed_loop(session, base_url, schedule, concurrency=warmup_requests, **request_args)
            if all(not r.ok for r in warm):
                raise BenchmarkError(
                    f"All {len(warm)} warmup requests to {base_url}/generate failed; first error: "
                    f"{warm[0].error_type}: {warm[0].error}. Is the server up (check /health and its log)?")
        for index, (level, n) in enumerate(plan):
            bar.set_postfix_str(f"{'concurrency' if mode == 'closed' else 'rate'}={level}")
            flushed = await flush_cache(session, base_url) if flush else None
            schedule = prompt_schedule(prompt_list, n, rng=random.Random(seed))
            if unique_prefix:
                schedule = [dataclasses.replace(p, text=f"[request {index}-{i}] {p.text}")
                            for i, p in enumerate(schedule)]
            if mode == "closed":
                records = await closed_loop(session, base_url, schedule, concurrency=int(level),
                                            on_done=lambda _r: bar.update(1), **request_args)
            else:
                records = await open_loop(session, base_url, schedule, request_rate=float(level),
                                          rng=random.Random(seed + 1), max_concurrency=max_concurrency,
                                          on_done=lambda _r: bar.update(1), **request_args)
            fetched = await fetch_server_info(session, base_url)
            lag_before = sim_behind_schedule_s(server_info)
            server_info = fetched.info if fetched.info is not None else server_info
            result = _level_result(index, mode, level, max_concurrency, records, flushed, fetched, server_info,
                                   parameters, sim_lag_s=sim_behind_schedule_s(fetched.info) - lag_before)
            level_frames.append(result.requests)
            info_frames.append(result.info)
            if on_level is not None:
                on_level(result)
    finally:
        bar.close()
    requests = pd.concat(level_frames, ignore_index=True)
    level_info = pd.concat(info_frames, ignore_index=True)
    return SweepResult(requests=requests, levels=summarize_levels(requests, level_info), level_info=level_info,
                       warmup=records_to_frame(warm), server_info=server_info, parameters=parameters)


def _level_result(index: int, mode: str, level: float, max_concurrency: int | None, records: list[RequestRecord],
                  flushed: FlushOutcome | None, fetched: ServerInfoOutcome, server_info: dict[str, Any] | None,
                  parameters: dict[str, Any], *, sim_lag_s: float) -> LevelResult:
    """Tables of one measured level; rows are labelled with the engine ``/server_info`` reported.

    ``sim_lag_s`` (wall seconds a simulated engine fell behind its schedule during the
    level, NaN for a real server) becomes the level's ``sim_behind_schedule_wall_s``.
    """
    engine, simulated = server_engine(server_info)
    keys = dict(engine=engine, simulated=simulated, level_index=index, mode=mode,
                concurrency=int(level) if mode == "closed" else max_concurrency,
                request_rate_req_s=float("inf") if mode == "closed" else float(level))
    info = pd.DataFrame([dict(
        level_index=index,
        flush_ok=None if flushed is None else flushed.ok,
        flush_attempts=None if flushed is None else flushed.attempts,
        flush_error=None if flushed is None else flushed.error,
        server_accept_length=server_accept_length(fetched.info),
        server_gen_throughput_tok_s=server_gen_throughput(fetched.info),
        server_info_error=fetched.error,
        sim_behind_schedule_wall_s=sim_lag_s,
    )])
    return LevelResult(requests=records_to_frame(records, keys), info=info, server_info=fetched.info,
                       parameters=parameters)


def run_sweep(base_url: str, **kwargs: Any) -> SweepResult:
    """Blocking :func:`run_sweep_async` (same keyword arguments).

    Works in scripts and in Jupyter/papermill: when an event loop is already running
    in this thread, the sweep runs on a fresh loop in a worker thread and this call
    waits for it. In async code prefer ``await run_sweep_async(...)``.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_sweep_async(base_url, **kwargs))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-sweep") as pool:
        return pool.submit(asyncio.run, run_sweep_async(base_url, **kwargs)).result()
