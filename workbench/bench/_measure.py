"""The measuring core of a sweep: pre-flight, warmup and levels of a validated plan.

One implementation serves both places the load generator runs:

- :func:`workbench.bench._sweep.run_sweep` (this machine, possibly through an SSH
  tunnel) consumes :func:`measure_sweep`'s events and builds pandas tables;
- :mod:`workbench.bench._remote_run` (ON the GPU host) consumes the same events and
  writes them to a results file (:mod:`workbench.bench._sweeplog`), which the
  workbench reads back into the same tables.

So this module needs only the standard library and aiohttp: no pandas, numpy or
tqdm (a GPU host's SGLang environment is not guaranteed to have them).

:func:`measure_sweep` yields, in order:

1. :class:`SweepStarted` after ``GET /server_info`` (pre-flight): the plan, the
   server's URL and the resolved ``time_scale``;
2. :class:`WarmupMeasured` (only when ``warmup_requests`` > 0);
3. one :class:`LevelMeasured` per unit ``(repeat, level_index)`` asked for (default: every
   unit of the plan, :meth:`SweepPlan.units`): ``POST /flush_cache``, the level's requests
   (closed or open loop, the prompt schedule of the repeat's seed, the same at every
   level of a repeat), ``GET /server_info``.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
import resource
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, Optional, Union, cast

import aiohttp

from workbench.bench._loadgen import closed_loop, open_loop, prompt_schedule
from workbench.bench._plan import SweepPlan, Unit
from workbench.bench._prompts import Prompt, random_token_prompts
from workbench.bench._client import ROUTES
from workbench.bench._gpu import query_gpus
from workbench.bench._rxstamp import keep_stamping_on, stamped_socket
from workbench.bench._observe import DEFAULT_OBSERVE_INTERVAL_S, MetricsSampler, Point, scrape_metrics
from workbench.bench._record import RequestRecord
from workbench.bench._server_api import (
    FlushOutcome,
    ServerInfoOutcome,
    fetch_server_info,
    flush_cache,
    server_time_scale,
    sim_behind_schedule_s,
)
from workbench.bench._timing import Clock, Timebase
from workbench.errors import BenchmarkError, ConfigError

__all__ = [
    "FD_HEADROOM",
    "LevelMeasured",
    "OnRequest",
    "SweepEvent",
    "SweepStarted",
    "WarmupMeasured",
    "ensure_fd_limit",
    "measure_sweep",
    "open_session",
    "resolve_time_scale",
    "served_model",
]

#: File descriptors kept free beside one socket per stream (log files, the event loop, the server's pipes).
FD_HEADROOM = 64

#: Called with ``(level_index, record)`` as each request finishes (``None``: a warmup request).
OnRequest = Callable[[Optional[int], RequestRecord], None]


def resolve_time_scale(requested: float | str, info: dict[str, Any] | None, base_url: str) -> float:
    """The time scale to measure with: ``requested``, or for ``"auto"`` what a simulated server reports (else 1.0).

    Raises:
        ConfigError: a number that contradicts the simulated server's ``simulation.time_scale``.
    """
    reported = server_time_scale(info)
    if requested == "auto":
        return reported if reported is not None else 1.0
    if reported is not None and abs(float(requested) - reported) > 1e-9 * max(1.0, reported):
        raise ConfigError(
            f"time_scale={requested} but the simulated server at {base_url} runs at "
            f"time_scale={reported} (/server_info simulation.time_scale); pass time_scale={reported} "
            "or 'auto', otherwise every duration would be off by their ratio"
        )
    return float(requested)


@dataclasses.dataclass(frozen=True)
class SweepStarted:
    """The pre-flight is done.

    Attributes:
        plan: what the sweep sends.
        base_url: the server's root URL, as the load generator reaches it.
        time_scale: the engine seconds per wall second every row is measured with
            (``plan.time_scale``, or for ``"auto"`` the one the server reports).
        server_info: the pre-flight ``/server_info`` body (None when it failed).
    """

    plan: SweepPlan
    base_url: str
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
        index: position in the plan (0-based): ``plan.concurrency_levels[index]`` or
            ``plan.request_rates[index]``.
        records: the level's requests, in schedule order.
        flush: outcome of the flush before it (None when flushing is off).
        server_info: outcome of ``GET /server_info`` after it.
        sim_lag_s: wall seconds a simulated engine fell behind its schedule during
            the level (NaN for a real server).
        repeat: which repeat of the level (0-based; ``plan.seed_of(repeat)`` seeded it).
        observations: what the server and the host showed during the level: points of
            ``/metrics`` and GPU telemetry (:mod:`workbench.bench._observe`).
        observe_problems: why a source gave nothing (``/metrics`` not served, no
            nvidia-smi), one line each.
    """

    index: int
    records: list[RequestRecord]
    flush: FlushOutcome | None
    server_info: ServerInfoOutcome
    sim_lag_s: float
    repeat: int = 0
    observations: list[Point] = dataclasses.field(default_factory=list)
    observe_problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def unit(self) -> Unit:
        """``(repeat, index)``."""
        return (self.repeat, self.index)


SweepEvent = Union[SweepStarted, WarmupMeasured, LevelMeasured]

#: aiohttp 3.12+ takes a ``socket_factory``; with an older one (a GPU host's SGLang environment may
#: bring one) every read keeps the event loop's timing (``kernel_stamped_reads`` 0).
_TAKES_SOCKET_FACTORY = "socket_factory" in inspect.signature(aiohttp.TCPConnector).parameters


def open_session(streams: int | None = None, *, kernel_stamps: bool = True) -> aiohttp.ClientSession:
    """The one session a sweep uses: no cap on connections (the load generator sets the concurrency).

    aiohttp's connector caps a session at 100 connections by default (``limit``) and
    per host (``limit_per_host``); both are lifted here, so a level's concurrency is
    never capped below its target by the pool. Its sockets carry the kernel's receive
    stamps (:func:`workbench.bench._rxstamp.stamped_socket`, aiohttp 3.12+ on Linux), so
    reads are timed when their bytes arrived, not when a busy event loop got to them.

    Args:
        streams: the most requests the sweep keeps in flight; when given, the process's
            open-file limit is checked (and raised) first, :func:`ensure_fd_limit`.
        kernel_stamps: make sockets that carry the kernel's receive stamps (default True;
            False: every read is timed when the event loop hands it over, as
            ``sglang.bench_serving`` does; ``benchmarks/client_fidelity.py`` compares the two).

    Raises:
        BenchmarkError: the open-file limit cannot be raised to ``streams`` sockets.
    """
    if streams is not None:
        ensure_fd_limit(streams)
    stamps: dict[str, Any] = {"socket_factory": stamped_socket} if kernel_stamps and _TAKES_SOCKET_FACTORY else {}
    if stamps:
        keep_stamping_on()  # before the first connection: its first response's packets are stamped too
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, limit_per_host=0, **stamps))


def ensure_fd_limit(streams: int, *, headroom: int = FD_HEADROOM) -> int:
    """Make sure this process may open ``streams`` sockets: raise the soft ``RLIMIT_NOFILE`` if needed.

    One stream is one TCP socket (one file descriptor); with the simulated server in the
    same process each also costs the server's socket, so callers running one pass twice
    the streams. The soft limit (``ulimit -n``, often 1,024) is raised up to the hard
    limit, which an unprivileged process may do.

    Args:
        streams: sockets wanted at once.
        headroom: descriptors kept free besides them.

    Returns:
        The soft limit now in force (unchanged when already enough, or unlimited).

    Raises:
        BenchmarkError: the hard limit is below ``streams + headroom``; the message says
            which limit and how to raise it.
    """
    need = int(streams) + headroom
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return soft
    if hard != resource.RLIM_INFINITY and hard < need:
        raise BenchmarkError(
            f"{streams} concurrent streams need {need} file descriptors, but this process may open at most {hard} "
            f"(hard RLIMIT_NOFILE; soft {soft}). Raise it (`ulimit -Hn {need}` as root, or nofile in "
            "/etc/security/limits.conf) or measure at a concurrency below "
            f"{max(1, hard - headroom)}"
        )
    target = need if hard == resource.RLIM_INFINITY else min(hard, max(need, 2 * soft))
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def served_model(info: dict[str, Any] | None) -> str:
    """The OpenAI ``model`` name of a server: ``/server_info``'s ``served_model_name``, else its
    ``model_path``, else ``"default"`` (SGLang's name when none is set)."""
    for key in ("served_model_name", "model_path"):
        value = (info or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return "default"


def _level_schedule(plan: SweepPlan, prompts: list[Prompt], index: int, n: int, seed: int) -> list[Prompt]:
    """The prompts level ``index`` sends: random token ids (``plan.random_input``) or the seeded schedule."""
    input_len = plan.level_settings(index)["input_len"]
    if input_len is not None:
        return random_token_prompts(n, input_len, seed=seed, vocab_size=plan.random_vocab_size)
    schedule = prompt_schedule(prompts, n, rng=random.Random(seed))
    if plan.unique_prompts:
        schedule = [dataclasses.replace(p, text=f"[request {index}-{i}] {p.text}") for i, p in enumerate(schedule)]
    return schedule


async def measure_sweep(
    session: aiohttp.ClientSession,
    base_url: str,
    plan: SweepPlan,
    *,
    on_request: OnRequest | None = None,
    units: Sequence[Unit] | None = None,
    observe: bool = True,
    gpu_telemetry: bool = False,
    observe_interval_s: float = DEFAULT_OBSERVE_INTERVAL_S,
    clock: Clock = time.perf_counter,
    wall_clock: Clock = time.time,
) -> AsyncGenerator[SweepEvent, None]:
    """Run ``plan`` against the server at ``base_url``, yielding events as they are measured.

    Args:
        session: from :func:`open_session`.
        base_url: server root, e.g. ``http://127.0.0.1:30000``.
        plan: what to send.
        on_request: called as each request (warmup included) finishes.
        units: the ``(repeat, level_index)`` pairs to measure, in this order (default:
            :meth:`SweepPlan.units`; a resumed sweep passes those not yet stored).
        observe: sample the server's ``/metrics`` during each level (a server without
            ``--enable-metrics`` answers 404: noted in ``observe_problems``, nothing else).
        gpu_telemetry: also sample this machine's GPUs with nvidia-smi (pass True only
            when the load generator runs on the server's host).
        observe_interval_s: wall seconds between samples (one more at each level's start and end).
        clock: monotonic clock (seconds). wall_clock: epoch clock (seconds).

    Yields:
        :class:`SweepStarted`, then :class:`WarmupMeasured` (when there is a warmup),
        then one :class:`LevelMeasured` per unit.

    Raises:
        ConfigError: ``plan.time_scale`` contradicts the simulated server's, or a unit
            is not one of the plan's.
        BenchmarkError: every warmup request failed (the server is not answering).
    """
    todo = plan.units() if units is None else [(int(r), int(i)) for r, i in units]
    unknown = sorted(set(todo) - set(plan.units()))
    if unknown:
        raise ConfigError(
            f"units {unknown} are not (repeat, level_index) pairs of the plan "
            f"({plan.repeats} repeats x {plan.num_levels} levels)"
        )
    preflight = await fetch_server_info(session, base_url)
    time_scale = resolve_time_scale(plan.time_scale, preflight.info, base_url)
    timebase = Timebase.start(clock=clock, wall_clock=wall_clock, time_scale=time_scale)
    yield SweepStarted(plan=plan, base_url=base_url, time_scale=time_scale, server_info=preflight.info)
    model = plan.model if plan.model is not None else served_model(preflight.info)

    def request_args(index: int) -> dict[str, Any]:
        settings = plan.level_settings(index)
        return dict(
            max_new_tokens=settings["max_new_tokens"],
            temperature=settings["temperature"],
            timebase=timebase,
            timeout_s=plan.timeout_s,
            extra_sampling_params=plan.extra_sampling_params,
            backend=plan.backend,
            ignore_eos=plan.ignore_eos,
            model=model,
        )

    prompts = list(plan.prompts)

    def reporter(index: int | None) -> Callable[[RequestRecord], None] | None:
        return None if on_request is None else (lambda record: on_request(index, record))

    if plan.warmup_requests > 0:
        first = todo[0][1] if todo else 0
        schedule = _level_schedule(
            dataclasses.replace(plan, unique_prompts=False), prompts, first, plan.warmup_requests, plan.seed
        )
        warm = await closed_loop(
            session, base_url, schedule, concurrency=plan.warmup_requests, on_done=reporter(None), **request_args(first)
        )
        if all(not r.ok for r in warm):
            raise BenchmarkError(
                f"All {len(warm)} warmup requests to {base_url}{ROUTES[plan.backend]} failed; first error: "
                f"{warm[0].error_type}: {warm[0].error}. Is the server up (check /health and its log)?"
            )
        yield WarmupMeasured(records=warm)
    carried = preflight.info
    for repeat, index in todo:
        n = plan.requests_per_level[index]
        seed = plan.seed_of(repeat)
        flushed = await flush_cache(session, base_url) if plan.flush else None
        schedule = _level_schedule(plan, prompts, index, n, seed)
        samplers = []
        if observe:
            samplers.append(MetricsSampler(lambda: scrape_metrics(session, base_url), interval_s=observe_interval_s))
        if gpu_telemetry:
            samplers.append(MetricsSampler(query_gpus, interval_s=observe_interval_s))
        for sampler in samplers:
            await sampler.start()
        try:
            if plan.request_rates is None:
                records = await closed_loop(
                    session,
                    base_url,
                    schedule,  # closed loop: never None
                    concurrency=cast(int, plan.level_concurrency(index)),
                    on_done=reporter(index),
                    **request_args(index),
                )
            else:
                records = await open_loop(
                    session,
                    base_url,
                    schedule,
                    request_rate=plan.level_request_rate(index),
                    rng=random.Random(seed + 1),
                    max_concurrency=plan.max_concurrency,
                    on_done=reporter(index),
                    **request_args(index),
                )
        except BaseException:
            for sampler in samplers:
                sampler.cancel()
            raise
        observations = [point for sampler in samplers for point in await sampler.stop()]
        problems = [sampler.problem for sampler in samplers if sampler.problem is not None]
        fetched = await fetch_server_info(session, base_url)
        lag_before = sim_behind_schedule_s(carried)
        carried = fetched.info if fetched.info is not None else carried
        lag = sim_behind_schedule_s(fetched.info) - lag_before  # NaN for a real server
        yield LevelMeasured(
            index=index,
            records=records,
            flush=flushed,
            server_info=fetched,
            sim_lag_s=lag,
            repeat=repeat,
            observations=observations,
            observe_problems=problems,
        )
