"""The measuring core of a sweep: a validated plan, then pre-flight, warmup and levels.

One implementation serves both places the load generator runs:

- :func:`workbench.bench._sweep.run_sweep` (this machine, possibly through an SSH
  tunnel) consumes :func:`measure_sweep`'s events and builds pandas tables;
- :mod:`workbench.bench._remote_run` (ON the GPU host) consumes the same events and
  writes them to a results file (:mod:`workbench.bench._sweeplog`), which the
  workbench reads back into the same tables.

So this module needs only the standard library and aiohttp: no pandas, numpy or
tqdm (a GPU host's SGLang environment is not guaranteed to have them).

:func:`measure_sweep` yields, in order:

1. :class:`SweepStarted` after ``GET /server_info`` (pre-flight): the resolved
   ``time_scale`` and the sweep's parameters;
2. :class:`WarmupMeasured` (only when ``warmup_requests`` > 0);
3. one :class:`LevelMeasured` per level: ``POST /flush_cache``, the level's requests
   (closed or open loop, the same seeded prompt schedule each level), ``GET /server_info``.
"""

from __future__ import annotations

import dataclasses
import numbers
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Optional, Union

import aiohttp

from workbench.bench._client import DEFAULT_REQUEST_TIMEOUT_S
from workbench.bench._loadgen import closed_loop, open_loop, prompt_schedule
from workbench.bench._prompts import Prompt, load_prompts
from workbench.bench._record import RequestRecord
from workbench.bench._server_api import (FlushOutcome, ServerInfoOutcome, fetch_server_info, flush_cache,
                                        server_time_scale, sim_behind_schedule_s)
from workbench.bench._timing import Clock, Timebase
from workbench.errors import BenchmarkError, ConfigError

__all__ = ["LevelMeasured", "OnRequest", "SweepEvent", "SweepPlan", "SweepStarted", "WarmupMeasured",
           "make_plan", "measure_sweep", "open_session", "resolve_time_scale"]

Mode = Literal["closed", "open"]

#: Called with ``(level_index, record)`` as each request finishes (``None``: a warmup request).
OnRequest = Callable[[Optional[int], RequestRecord], None]


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """Everything a sweep will send, validated and JSON-ready (prompt texts included).

    Attributes:
        mode: ``"closed"`` (concurrency levels) or ``"open"`` (request rates).
        levels: ``(level, requests)`` per level, in order: a concurrency (int) or a
            rate in engine-time requests/s (float, ``inf`` = all at once).
        prompts: the prompts the schedule draws from.
        max_new_tokens: output tokens per request.
        seed: seeds the prompt schedule and open-loop arrivals.
        time_scale: engine seconds per wall second, or ``"auto"`` (taken from the server).
        warmup_requests: unmeasured requests before the first level.
        flush: ``POST /flush_cache`` before each level.
        unique_prefix: prefix every request text with ``[request <level>-<index>]``.
        timeout_s: per-request limit (wall seconds; None: none).
        max_concurrency: open loop only: cap on requests in flight.
        extra_sampling_params: merged into every request's sampling_params.

    Raises:
        ConfigError: on construction, when any value is out of range.
    """

    mode: Mode
    levels: tuple[tuple[float, int], ...]
    prompts: tuple[Prompt, ...]
    max_new_tokens: int = 256
    seed: int = 0
    time_scale: float | Literal["auto"] = 1.0
    warmup_requests: int = 1
    flush: bool = True
    unique_prefix: bool = False
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S
    max_concurrency: int | None = None
    extra_sampling_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("closed", "open"):
            raise ConfigError(f"mode must be 'closed' or 'open', got {self.mode!r}")
        if not self.levels:
            raise ConfigError("run_sweep: no levels to run")
        for level, n in self.levels:
            if self.mode == "closed":
                _check_concurrency(level)
            elif not level > 0:
                raise ConfigError(f"request rates must be > 0 requests/s, got {level!r}")
            if not _is_whole(n) or n < 1:
                raise ConfigError(f"requests_per_level must be >= 1, got {n} for level {level}")
        if not self.prompts:
            raise ConfigError("run_sweep: prompts is empty")
        if self.max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.warmup_requests < 0:
            raise ConfigError(f"warmup_requests must be >= 0, got {self.warmup_requests}")
        if self.time_scale != "auto":
            Timebase(clock=time.perf_counter, origin=0.0, epoch_at_origin=0.0, time_scale=self.time_scale)
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0 seconds or None, got {self.timeout_s!r}")
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be >= 1 or None, got {self.max_concurrency}")

    @property
    def total_requests(self) -> int:
        """Measured requests over all levels (warmup excluded)."""
        return sum(n for _, n in self.levels)

    def parameters(self, base_url: str, time_scale: float) -> dict[str, Any]:
        """The sweep's parameters for the run manifest (JSON-ready)."""
        return dict(base_url=base_url, mode=self.mode,
                    levels=[float(x) if self.mode == "open" else int(x) for x, _ in self.levels],
                    requests_per_level=[n for _, n in self.levels], max_new_tokens=self.max_new_tokens,
                    prompt_ids=[p.id for p in self.prompts], seed=self.seed, time_scale=float(time_scale),
                    warmup_requests=self.warmup_requests, flush=self.flush, unique_prefix=self.unique_prefix,
                    timeout_s=self.timeout_s, max_concurrency=self.max_concurrency,
                    extra_sampling_params=dict(self.extra_sampling_params))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_json` inverts it."""
        out = dataclasses.asdict(self)
        out["levels"] = [[level, n] for level, n in self.levels]
        out["extra_sampling_params"] = dict(self.extra_sampling_params)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "SweepPlan":
        """The plan of a :meth:`to_json` dict (validated again).

        Raises:
            ConfigError: missing or unknown keys, or invalid values.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        if set(obj) != names:
            raise ConfigError(f"sweep plan keys must be {sorted(names)}; missing {sorted(names - set(obj))}, "
                              f"unknown {sorted(set(obj) - names)}")
        values = dict(obj)
        values["levels"] = tuple((level, n) for level, n in obj["levels"])
        values["prompts"] = tuple(Prompt(**p) for p in obj["prompts"])
        values["extra_sampling_params"] = dict(obj["extra_sampling_params"])
        return cls(**values)


def _is_whole(value: Any) -> bool:
    """True for an int, or a float with no fractional part (not bool, not inf or NaN)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _check_concurrency(level: Any) -> None:
    if not _is_whole(level) or level < 1:
        raise ConfigError(f"concurrency levels must be integers >= 1, got {level!r}")


def _resolve_prompts(prompts: Sequence[Prompt | str] | str | Path | None) -> list[Prompt]:
    if prompts is None:
        return load_prompts("default")
    if isinstance(prompts, (str, Path)):
        return load_prompts(prompts)
    return [p if isinstance(p, Prompt) else Prompt(id=f"p{i}", category="coding", text=str(p))
            for i, p in enumerate(prompts)]


def make_plan(
    *,
    concurrency_levels: Sequence[int],
    request_rates: Sequence[float] | None = None,
    max_concurrency: int | None = None,
    requests_per_level: int | Callable[[int], int],
    max_new_tokens: int = 256,
    prompts: Sequence[Prompt | str] | str | Path | None = None,
    seed: int = 0,
    time_scale: float | Literal["auto"] = 1.0,
    warmup_requests: int = 1,
    flush: bool = True,
    unique_prefix: bool = False,
    timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S,
    extra_sampling_params: Mapping[str, Any] | None = None,
) -> SweepPlan:
    """A validated :class:`SweepPlan` from :func:`~workbench.bench._sweep.run_sweep`'s keyword arguments.

    Prompt sets are read here (names and paths become prompt texts) and
    ``requests_per_level`` is resolved per level (called with the concurrency; with 1
    in the open loop), so the plan is self-contained.

    Raises:
        ConfigError: invalid parameters, or a prompt set that cannot be read.
    """
    mode: Mode = "open" if request_rates is not None else "closed"
    levels = list(request_rates) if request_rates is not None else list(concurrency_levels)
    if not levels:
        raise ConfigError("run_sweep: no levels to run")
    plan = []
    for level in levels:
        if mode == "closed":
            _check_concurrency(level)
        n = requests_per_level(int(level) if mode == "closed" else 1) if callable(requests_per_level) \
            else requests_per_level
        n = int(n) if isinstance(n, numbers.Integral) else n
        plan.append((int(level) if mode == "closed" else float(level), n))
    return SweepPlan(mode=mode, levels=tuple(plan), prompts=tuple(_resolve_prompts(prompts)),
                     max_new_tokens=max_new_tokens, seed=seed, time_scale=time_scale,
                     warmup_requests=warmup_requests, flush=flush, unique_prefix=unique_prefix, timeout_s=timeout_s,
                     max_concurrency=max_concurrency, extra_sampling_params=dict(extra_sampling_params or {}))


def resolve_time_scale(requested: float | str, info: dict[str, Any] | None, base_url: str) -> float:
    """The time scale to measure with: ``requested``, or for ``"auto"`` what a simulated server reports (else 1.0).

    Raises:
        ConfigError: a number that contradicts the simulated server's ``simulation.time_scale``.
    """
    reported = server_time_scale(info)
    if requested == "auto":
        return reported if reported is not None else 1.0
    if reported is not None and abs(float(requested) - reported) > 1e-9 * max(1.0, reported):
        raise ConfigError(f"time_scale={requested} but the simulated server at {base_url} runs at "
                          f"time_scale={reported} (/server_info simulation.time_scale); pass time_scale={reported} "
                          "or 'auto', otherwise every duration would be off by their ratio")
    return float(requested)


@dataclasses.dataclass(frozen=True)
class SweepStarted:
    """The pre-flight is done.

    Attributes:
        parameters: the sweep's parameters (JSON-ready), for the run manifest.
        time_scale: the engine seconds per wall second every row is measured with.
        server_info: the pre-flight ``/server_info`` body (None when it failed).
    """

    parameters: dict[str, Any]
    time_scale: float
    server_info: dict[str, Any] | None


@dataclasses.dataclass(frozen=True)
class WarmupMeasured:
    """The warmup requests (not measured as a level), in schedule order."""

    records: list[RequestRecord]


@dataclasses.dataclass(frozen=True)
class LevelMeasured:
    """One measured level.

    Attributes:
        index: position in the plan (0-based).
        level: the concurrency (closed loop) or request rate (open loop).
        records: the level's requests, in schedule order.
        flush: outcome of the flush before it (None when flushing is off).
        server_info: outcome of ``GET /server_info`` after it.
        sim_lag_s: wall seconds a simulated engine fell behind its schedule during
            the level (NaN for a real server).
    """

    index: int
    level: float
    records: list[RequestRecord]
    flush: FlushOutcome | None
    server_info: ServerInfoOutcome
    sim_lag_s: float


SweepEvent = Union[SweepStarted, WarmupMeasured, LevelMeasured]


def open_session() -> aiohttp.ClientSession:
    """The one session a sweep uses: no cap on connections (the load generator sets the concurrency)."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))


async def measure_sweep(
    session: aiohttp.ClientSession,
    base_url: str,
    plan: SweepPlan,
    *,
    on_request: OnRequest | None = None,
    clock: Clock = time.perf_counter,
    wall_clock: Clock = time.time,
) -> AsyncIterator[SweepEvent]:
    """Run ``plan`` against the server at ``base_url``, yielding events as they are measured.

    Args:
        session: from :func:`open_session`.
        base_url: server root, e.g. ``http://127.0.0.1:30000``.
        plan: what to send.
        on_request: called as each request (warmup included) finishes.
        clock: monotonic clock (seconds). wall_clock: epoch clock (seconds).

    Yields:
        :class:`SweepStarted`, then :class:`WarmupMeasured` (when there is a warmup),
        then one :class:`LevelMeasured` per level.

    Raises:
        ConfigError: ``plan.time_scale`` contradicts the simulated server's.
        BenchmarkError: every warmup request failed (the server is not answering).
    """
    preflight = await fetch_server_info(session, base_url)
    time_scale = resolve_time_scale(plan.time_scale, preflight.info, base_url)
    timebase = Timebase.start(clock=clock, wall_clock=wall_clock, time_scale=time_scale)
    yield SweepStarted(parameters=plan.parameters(base_url, time_scale), time_scale=time_scale,
                       server_info=preflight.info)
    request_args = dict(max_new_tokens=plan.max_new_tokens, timebase=timebase, timeout_s=plan.timeout_s,
                        extra_sampling_params=plan.extra_sampling_params)
    prompts = list(plan.prompts)

    def reporter(index: int | None) -> Callable[[RequestRecord], None] | None:
        return None if on_request is None else (lambda record: on_request(index, record))

    if plan.warmup_requests > 0:
        schedule = prompt_schedule(prompts, plan.warmup_requests, rng=random.Random(plan.seed))
        warm = await closed_loop(session, base_url, schedule, concurrency=plan.warmup_requests,
                                 on_done=reporter(None), **request_args)
        if all(not r.ok for r in warm):
            raise BenchmarkError(
                f"All {len(warm)} warmup requests to {base_url}/generate failed; first error: "
                f"{warm[0].error_type}: {warm[0].error}. Is the server up (check /health and its log)?")
        yield WarmupMeasured(records=warm)
    carried = preflight.info
    for index, (level, n) in enumerate(plan.levels):
        flushed = await flush_cache(session, base_url) if plan.flush else None
        schedule = prompt_schedule(prompts, n, rng=random.Random(plan.seed))
        if plan.unique_prefix:
            schedule = [dataclasses.replace(p, text=f"[request {index}-{i}] {p.text}") for i, p in enumerate(schedule)]
        if plan.mode == "closed":
            records = await closed_loop(session, base_url, schedule, concurrency=int(level),
                                        on_done=reporter(index), **request_args)
        else:
            records = await open_loop(session, base_url, schedule, request_rate=float(level),
                                      rng=random.Random(plan.seed + 1), max_concurrency=plan.max_concurrency,
                                      on_done=reporter(index), **request_args)
        fetched = await fetch_server_info(session, base_url)
        lag_before = sim_behind_schedule_s(carried)
        carried = fetched.info if fetched.info is not None else carried
        lag = sim_behind_schedule_s(fetched.info) - lag_before  # NaN for a real server
        yield LevelMeasured(index=index, level=level, records=records, flush=flushed, server_info=fetched,
                            sim_lag_s=lag)
