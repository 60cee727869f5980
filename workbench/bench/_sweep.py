"""A benchmark sweep: one load level after another against one server.

First ``GET /server_info`` (pre-flight): a simulated server reports its time scale
there, which ``time_scale="auto"`` adopts and an explicit value must match, and the
``simulation`` block labels every row ``engine="sim"``, ``simulated=True``.

Per unit ``(repeat, level)`` (closed loop at a concurrency, or open loop at a rate;
every level of repeat 0, then of repeat 1, ..., or the units asked for):

1. ``POST /flush_cache`` (retried while the server is not idle), so the radix cache
   is cold and the server's accept-length counters cover only this level;
2. send the level's requests (the prompt schedule of the repeat's seed, the same at
   every level of a repeat);
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
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from workbench.bench._frames import records_to_frame
from workbench.bench._measure import SweepEvent, SweepStarted, WarmupMeasured, measure_sweep, open_session
from workbench.bench._metrics import summarize_levels
from workbench.bench._plan import SweepPlan, Unit
from workbench.bench._record import RequestRecord
from workbench.bench._series import series_frame
from workbench.bench._server_api import (
    FlushOutcome,
    ServerInfoOutcome,
    server_accept_length,
    server_engine,
    server_gen_throughput,
)
from workbench.bench._timing import Clock
from workbench.errors import BenchmarkError

__all__ = [
    "LevelResult",
    "SweepAssembler",
    "SweepFollower",
    "SweepResult",
    "level_output_tok_s",
    "run_sweep",
    "run_sweep_async",
]


@dataclasses.dataclass(frozen=True)
class LevelResult:
    """One measured level.

    Attributes:
        requests: request rows of this level (level columns first).
        info: one-row table of server observations (flush outcome, server accept length).
        server_info: the ``/server_info`` body read after the level (None if it failed).
        plan: the sweep's plan (for the run manifest; None when not known).
        index: the level's position in the plan.
        repeat: which repeat of the level (0-based).
        series: what the server and the host showed during the level, one row per
            observed value (:mod:`workbench.bench._series`); None when nothing was observed.
    """

    requests: pd.DataFrame
    info: pd.DataFrame
    server_info: dict[str, Any] | None
    plan: SweepPlan | None = None
    index: int = 0
    repeat: int = 0
    series: pd.DataFrame | None = None

    @property
    def unit(self) -> Unit:
        """``(repeat, index)``: what a run records as done."""
        return (self.repeat, self.index)

    @property
    def output_tok_s(self) -> float:
        """Output throughput of the level (tok/s, completed requests; NaN without any), for progress lines."""
        return level_output_tok_s(self.requests)


def level_output_tok_s(requests: pd.DataFrame) -> float:
    """Sum of completed output tokens over first start to last end (engine seconds); NaN when undefined.

    The same definition as ``output_throughput_tok_s`` in :mod:`workbench.bench._metrics`.
    """
    if not len(requests):
        return math.nan
    duration = float(requests["end_s"].max() - requests["start_s"].min())
    ok = requests["error"].isna()
    return float(requests.loc[ok, "output_tokens"].astype("float64").sum()) / duration if duration > 0 else math.nan


class SweepFollower:
    """Follows one sweep's events wherever its load generator runs: assembles its tables and keeps
    its progress bar (tqdm.auto: a widget in JupyterLab, text elsewhere) on the unit being measured
    and the last level's output tok/s.

    Args:
        plan: the sweep's plan.
        units: the ``(repeat, level_index)`` pairs measured, in order.
        progress: show the bar.
        desc: the bar's label.
        on_level: called with each :class:`LevelResult` as soon as it is assembled (its
            exceptions propagate).
    """

    def __init__(
        self,
        plan: SweepPlan,
        units: Sequence[Unit],
        *,
        progress: bool,
        desc: str,
        on_level: Callable[[LevelResult], None] | None = None,
    ) -> None:
        self.assembler = SweepAssembler()
        self._plan, self._on_level = plan, on_level
        self._bar = tqdm(
            total=sum(plan.requests_per_level[i] for _, i in units), disable=not progress, unit="req", desc=desc
        )
        self._units = iter(units)
        self._unit: Unit | None = next(self._units, None)
        self._last = ""

    def on_request(self, level_index: int | None, _record: RequestRecord) -> None:
        """One request finished (``level_index`` None: a warmup request, not counted)."""
        if level_index is not None and self._unit is not None:
            self._bar.set_postfix_str(f"{self._plan.unit_label(self._unit)}{self._last}", refresh=False)
            self._bar.update(1)

    def add(self, event: SweepEvent) -> None:
        """Take one event; a completed level moves the bar to the next unit and goes to ``on_level``.

        Raises:
            BenchmarkError: events out of order.
        """
        level = self.assembler.add(event)
        if level is None:
            return
        self._unit = next(self._units, None)
        self._last = f" | last: {self._plan.level_label(level.index)} {level.output_tok_s:,.0f} tok/s"
        self._bar.set_postfix_str(self._last.removeprefix(" | "), refresh=True)
        if self._on_level is not None:
            self._on_level(level)

    def close(self) -> None:
        """Close the progress bar."""
        self._bar.close()


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """Everything a sweep measured.

    Attributes:
        requests: one row per measured request (warmup excluded).
        levels: one row per level, derived from ``requests`` and ``level_info``.
        level_info: one row per level of server observations.
        warmup: rows of the warmup requests.
        server_info: the last ``/server_info`` body read (None if none).
        plan: what the sweep sent.
        base_url: the server's root URL, as the load generator reached it.
        time_scale: engine seconds per wall second the rows were measured with.
    """

    requests: pd.DataFrame
    levels: pd.DataFrame
    level_info: pd.DataFrame
    warmup: pd.DataFrame
    server_info: dict[str, Any] | None
    plan: SweepPlan
    base_url: str
    time_scale: float


async def run_sweep_async(
    base_url: str,
    plan: SweepPlan,
    *,
    progress: bool = True,
    on_level: Callable[[LevelResult], None] | None = None,
    units: Sequence[Unit] | None = None,
    desc: str = "sweep",
    observe: bool = True,
    gpu_telemetry: bool = False,
    clock: Clock = time.perf_counter,
    wall_clock: Clock = time.time,
) -> SweepResult:
    """Run ``plan`` (closed loop over its concurrency levels, or open loop over its request rates).

    Args:
        base_url: server root, e.g. ``http://127.0.0.1:30000``.
        plan: what to send, from :meth:`SweepPlan.build
            <workbench.bench._plan.SweepPlan.build>` (levels, requests per level, prompts,
            seed, time scale, warmup, ...; validated there). Durations in rows are
            multiplied by the time scale; a number that contradicts what a simulated
            server reports in ``/server_info`` is refused.
        progress: show a tqdm progress bar over all requests, with the unit being
            measured and the last level's output tok/s.
        on_level: called with each :class:`LevelResult` as soon as it is measured
            (exceptions from it propagate and end the sweep).
        units: the ``(repeat, level_index)`` pairs to measure, in order (default: all,
            :meth:`SweepPlan.units <workbench.bench._plan.SweepPlan.units>`).
        desc: the progress bar's label.
        observe: sample the server's ``/metrics`` during each level (into each level's ``series``).
        gpu_telemetry: sample this machine's GPUs with nvidia-smi (only where the server runs).
        clock: monotonic clock (seconds). wall_clock: epoch clock (seconds).

    Returns:
        A :class:`SweepResult`.

    Raises:
        ConfigError: ``plan.time_scale`` differs from the one the simulated server reports.
        BenchmarkError: every warmup request failed (the server is not answering);
            the message quotes the first error.
    """
    todo = plan.units() if units is None else list(units)
    follower = SweepFollower(plan, todo, progress=progress, desc=desc, on_level=on_level)
    try:
        async with open_session(plan.max_streams) as session:
            events = measure_sweep(
                session,
                base_url,
                plan,
                on_request=follower.on_request,
                units=todo,
                clock=clock,
                wall_clock=wall_clock,
                observe=observe,
                gpu_telemetry=gpu_telemetry,
            )
            try:
                async for event in events:
                    follower.add(event)
            finally:
                await events.aclose()
    finally:
        follower.close()
    return follower.assembler.result()


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
        result = _level_result(
            self._started.plan,
            event.index,
            event.records,
            event.flush,
            event.server_info,
            self._server_info,
            sim_lag_s=event.sim_lag_s,
            repeat=event.repeat,
        )
        if event.observations or event.observe_problems:
            start = min((r.start_epoch_s for r in event.records), default=math.nan)
            result.info["observe_problems"] = "; ".join(event.observe_problems) or None
            result = dataclasses.replace(
                result,
                series=series_frame(
                    event.observations, level_index=event.index, repeat=event.repeat, start_epoch_s=start
                ),
            )
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
        started = self._started
        return SweepResult(
            requests=requests,
            levels=summarize_levels(requests, level_info),
            level_info=level_info,
            warmup=records_to_frame(self._warmup),
            server_info=self._server_info,
            plan=started.plan,
            base_url=started.base_url,
            time_scale=started.time_scale,
        )


def _level_result(
    plan: SweepPlan,
    index: int,
    records: list[RequestRecord],
    flushed: FlushOutcome | None,
    fetched: ServerInfoOutcome,
    server_info: dict[str, Any] | None,
    *,
    sim_lag_s: float,
    repeat: int = 0,
) -> LevelResult:
    """Tables of level ``index`` (repeat ``repeat``) of ``plan``; rows are labelled with the engine
    ``/server_info`` reported.

    The level's columns: ``repeat``, ``concurrency`` (:meth:`SweepPlan.level_concurrency`; open loop:
    ``plan.max_concurrency``), ``request_rate_req_s`` (:meth:`SweepPlan.level_request_rate`;
    closed loop: ``inf``), ``input_len`` (None: the prompt set), ``temperature``,
    ``sweep`` and ``sweep_value`` (None without a sweep dimension; see :meth:`SweepPlan.level_settings`).

    ``sim_lag_s`` (wall seconds a simulated engine fell behind its schedule during the
    level, NaN for a real server) becomes the level's ``sim_behind_schedule_wall_s``.
    """
    engine, simulated = server_engine(server_info)
    settings = plan.level_settings(index)
    keys = dict(
        engine=engine,
        simulated=simulated,
        level_index=index,
        repeat=repeat,
        mode=plan.mode,
        concurrency=plan.level_concurrency(index),
        request_rate_req_s=plan.level_request_rate(index),
        input_len=settings["input_len"],
        temperature=settings["temperature"],
        sweep=settings["sweep"],
        sweep_value=(None if settings["sweep_value"] is None else float(settings["sweep_value"])),
    )
    info = pd.DataFrame(
        [
            dict(
                level_index=index,
                repeat=repeat,
                flush_ok=None if flushed is None else flushed.ok,
                flush_attempts=None if flushed is None else flushed.attempts,
                flush_error=None if flushed is None else flushed.error,
                server_accept_length=server_accept_length(fetched.info),
                server_gen_throughput_tok_s=server_gen_throughput(fetched.info),
                server_info_error=fetched.error,
                sim_behind_schedule_wall_s=sim_lag_s,
            )
        ]
    )
    return LevelResult(
        requests=records_to_frame(records, keys),
        info=info,
        server_info=fetched.info,
        plan=plan,
        index=index,
        repeat=repeat,
    )


def run_sweep(base_url: str, plan: SweepPlan, **options: Any) -> SweepResult:
    """Blocking :func:`run_sweep_async`: the same arguments (``progress``, ``on_level``,
    ``clock``, ``wall_clock`` as keywords) and the same result.

    Works in scripts and in Jupyter/papermill: when an event loop is already running
    in this thread, the sweep runs on a fresh loop in a worker thread and this call
    waits for it (the coroutine it runs, :func:`run_sweep_async`, is internal: the face exports
    this call only).
    """
    sweep = run_sweep_async(base_url, plan, **options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(sweep)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-sweep") as pool:
        return pool.submit(asyncio.run, sweep).result()
