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

The measuring itself is :func:`workbench.bench._measure.measure_sweep` (no pandas);
this module turns its events into tables (:class:`SweepAssembler`). The same core
runs ON a GPU host through :func:`workbench.bench._onhost.run_sweep_on_host`, which
returns the same :class:`SweepResult`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from tqdm.auto import tqdm

from workbench.bench._client import DEFAULT_REQUEST_TIMEOUT_S
from workbench.bench._frames import records_to_frame
from workbench.bench._measure import (SweepEvent, SweepStarted, WarmupMeasured, make_plan, measure_sweep,
                                     open_session)
from workbench.bench._metrics import summarize_levels
from workbench.bench._prompts import Prompt
from workbench.bench._record import RequestRecord
from workbench.bench._server_api import (FlushOutcome, ServerInfoOutcome, server_accept_length, server_engine,
                                        server_gen_throughput)
from workbench.bench._timing import Clock
from workbench.errors import BenchmarkError

__all__ = ["DEFAULT_CONCURRENCY_LEVELS", "LevelResult", "SweepAssembler", "SweepResult",
           "default_requests_per_level", "run_sweep", "run_sweep_async"]

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
    plan = make_plan(concurrency_levels=concurrency_levels, request_rates=request_rates,
                     max_concurrency=max_concurrency, requests_per_level=requests_per_level,
                     max_new_tokens=max_new_tokens, prompts=prompts, seed=seed, time_scale=time_scale,
                     warmup_requests=warmup_requests, flush=flush, unique_prefix=unique_prefix, timeout_s=timeout_s,
                     extra_sampling_params=extra_sampling_params)
    assembler = SweepAssembler()
    unit = "concurrency" if plan.mode == "closed" else "rate"
    bar = tqdm(total=plan.total_requests, disable=not progress, unit="req", desc="sweep")

    def on_request(level_index: int | None, _record: RequestRecord) -> None:
        if level_index is not None:
            bar.set_postfix_str(f"{unit}={plan.levels[level_index][0]}", refresh=False)
            bar.update(1)

    try:
        async with open_session() as session:
            events = measure_sweep(session, base_url, plan, on_request=on_request, clock=clock, wall_clock=wall_clock)
            try:
                async for event in events:
                    level = assembler.add(event)
                    if level is not None and on_level is not None:
                        on_level(level)
            finally:
                await events.aclose()
    finally:
        bar.close()
    return assembler.result()


class SweepAssembler:
    """Builds a sweep's tables from its measured events, level by level.

    The one place events become DataFrames, whether the load generator ran here
    (:func:`run_sweep_async`) or on the GPU host (:mod:`workbench.bench._onhost`, from
    the events read back out of the results file), so both give identical tables.
    Rows are labelled with the engine ``/server_info`` reported (the last answer read).
    """

    def __init__(self) -> None:
        self._started: SweepStarted | None = None
        self._server_info: dict[str, Any] | None = None
        self._warmup: list[RequestRecord] = []
        self._levels: list[LevelResult] = []

    @property
    def levels(self) -> list[LevelResult]:
        """The levels assembled so far."""
        return list(self._levels)

    def add(self, event: SweepEvent) -> LevelResult | None:
        """Take one event; returns the :class:`LevelResult` when ``event`` completed a level.

        Raises:
            BenchmarkError: events out of order (a level or warmup before the start).
        """
        if isinstance(event, SweepStarted):
            self._started, self._server_info = event, event.server_info
            return None
        if self._started is None:
            raise BenchmarkError(f"sweep event {type(event).__name__} arrived before the sweep started")
        if isinstance(event, WarmupMeasured):
            self._warmup = list(event.records)
            return None
        if event.server_info.info is not None:
            self._server_info = event.server_info.info
        params = self._started.parameters
        result = _level_result(event.index, params["mode"], event.level, params["max_concurrency"], event.records,
                               event.flush, event.server_info, self._server_info, params, sim_lag_s=event.sim_lag_s)
        self._levels.append(result)
        return result

    def result(self) -> SweepResult:
        """The :class:`SweepResult` of every level added.

        Raises:
            BenchmarkError: no level was measured.
        """
        if self._started is None or not self._levels:
            raise BenchmarkError("the sweep measured no level, so there is no result to build")
        requests = pd.concat([lvl.requests for lvl in self._levels], ignore_index=True)
        level_info = pd.concat([lvl.info for lvl in self._levels], ignore_index=True)
        return SweepResult(requests=requests, levels=summarize_levels(requests, level_info), level_info=level_info,
                           warmup=records_to_frame(self._warmup), server_info=self._server_info,
                           parameters=self._started.parameters)


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
