"""SGLang management calls the load generator makes around each level.

- ``POST /flush_cache`` before a level: resets the radix cache and the scheduler's
  accept-length counters, so ``avg_spec_accept_length`` afterwards covers only that
  level. It answers 200 (plain text) when idle and 400 while requests are running or
  waiting, so 400 is retried for a while (``/flush_cache`` in ``srt/entrypoints/http_server.py``,
  ``Scheduler.flush_cache`` in ``srt/managers/scheduler.py``, 0.5.9).
- ``GET /server_info`` after a level (``/get_server_info`` before 0.5.6, kept as an
  alias later; a 404 on the new route falls back to the old one). The accept length
  is ``internal_states[0].avg_spec_accept_length``, which SGLang only updates every
  ``--decode-log-interval`` (40) decode steps and omits when not speculative or when
  its counters are 0 (``Scheduler.get_internal_state``, ``srt/managers/scheduler.py``, 0.5.9).

Failures are returned as values (an outcome with ``error`` set), not raised: a
level's requests are measured whether or not these calls worked.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from typing import Any

import aiohttp

from workbench.engines import server_info_engine

__all__ = [
    "FlushOutcome",
    "ServerInfoOutcome",
    "flush_cache",
    "fetch_server_info",
    "server_accept_length",
    "server_engine",
    "server_gen_throughput",
    "server_time_scale",
    "sim_behind_schedule_s",
]

#: Per-call limit for management calls (wall seconds).
CALL_TIMEOUT_S = 30.0


@dataclasses.dataclass(frozen=True)
class FlushOutcome:
    """Result of :func:`flush_cache`.

    Attributes:
        ok: the server answered 200.
        attempts: how many POSTs were sent (400 "not idle" answers are retried).
        status: HTTP status of the last answer (None when none came).
        error: ``"<ErrorType>: <message>"`` when not ok, else None.
    """

    ok: bool
    attempts: int
    status: int | None
    error: str | None


@dataclasses.dataclass(frozen=True)
class ServerInfoOutcome:
    """Result of :func:`fetch_server_info`.

    Attributes:
        info: the decoded JSON object, or None when the call failed.
        route: the route that answered (``/server_info`` or ``/get_server_info``).
        error: ``"<ErrorType>: <message>"`` when it failed, else None.
    """

    info: dict[str, Any] | None
    route: str | None
    error: str | None


async def flush_cache(
    session: aiohttp.ClientSession,
    base_url: str,
    *,
    retry_for_s: float = 30.0,
    retry_interval_s: float = 0.25,
) -> FlushOutcome:
    """``POST /flush_cache``, retrying 400 ("not idle") for up to ``retry_for_s`` wall seconds.

    Args:
        session: the run's session.
        base_url: server root URL.
        retry_for_s: keep retrying a 400 answer this long (wall seconds).
        retry_interval_s: pause between attempts (``asyncio.sleep``, wall seconds).

    Returns:
        A :class:`FlushOutcome`; never raises for HTTP or connection errors.
    """
    url = base_url.rstrip("/") + "/flush_cache"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + retry_for_s
    attempts, status = 0, None
    while True:
        attempts += 1
        try:
            async with session.post(url, timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)) as resp:
                status = resp.status
                text = await resp.text(errors="replace")
        except (asyncio.TimeoutError, TimeoutError):  # distinct classes before Python 3.11
            return FlushOutcome(False, attempts, status, f"TimeoutError: {url} gave no answer in {CALL_TIMEOUT_S} s")
        except (aiohttp.ClientError, OSError) as exc:
            return FlushOutcome(False, attempts, status, f"{type(exc).__name__}: {url}: {exc}")
        if status == 200:
            return FlushOutcome(True, attempts, status, None)
        if status == 400 and loop.time() + retry_interval_s < deadline:
            await asyncio.sleep(retry_interval_s)
            continue
        return FlushOutcome(False, attempts, status, f"HTTPStatusError: {url} answered {status}: {text.strip()[:200]}")


async def fetch_server_info(session: aiohttp.ClientSession, base_url: str) -> ServerInfoOutcome:
    """``GET /server_info``, falling back to ``/get_server_info`` on 404.

    Returns:
        A :class:`ServerInfoOutcome`; never raises for HTTP, JSON or connection errors.
    """
    root = base_url.rstrip("/")
    error = None
    for route in ("/server_info", "/get_server_info"):
        url = root + route
        try:
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)) as resp:
                if resp.status == 404:
                    error = f"HTTPStatusError: {url} answered 404"
                    continue
                if resp.status != 200:
                    text = await resp.text(errors="replace")
                    message = f"HTTPStatusError: {url} answered {resp.status}: {text[:200]}"
                    return ServerInfoOutcome(None, route, message)
                info = await resp.json(content_type=None)
        except (asyncio.TimeoutError, TimeoutError):  # distinct classes before Python 3.11
            return ServerInfoOutcome(None, route, f"TimeoutError: {url} gave no answer in {CALL_TIMEOUT_S} s")
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            return ServerInfoOutcome(None, route, f"{type(exc).__name__}: {url}: {exc}")
        if not isinstance(info, dict):
            message = f"ProtocolError: {url} returned JSON {type(info).__name__}, not an object"
            return ServerInfoOutcome(None, route, message)
        return ServerInfoOutcome(info, route, None)
    return ServerInfoOutcome(None, None, error)


def _internal_state(info: dict[str, Any] | None) -> dict[str, Any]:
    states = (info or {}).get("internal_states")
    if isinstance(states, list) and states and isinstance(states[0], dict):
        return states[0]
    return {}


def _finite_or_nan(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return float("nan")


def server_accept_length(info: dict[str, Any] | None) -> float:
    """``internal_states[0].avg_spec_accept_length`` (or a top-level key of that name), else NaN.

    NaN means "not reported": not speculative, or too few decode steps since the last
    flush for the scheduler to have logged one (it adds to its counters every 40 steps).
    """
    value = _internal_state(info).get("avg_spec_accept_length")
    if value is None and info:
        value = info.get("avg_spec_accept_length")
    return _finite_or_nan(value)


def server_gen_throughput(info: dict[str, Any] | None) -> float:
    """``internal_states[0].last_gen_throughput`` in tok/s as the server logged it, else NaN."""
    return _finite_or_nan(_internal_state(info).get("last_gen_throughput"))


def server_engine(info: dict[str, Any] | None) -> tuple[str | None, bool | None]:
    """``(engine name, simulated)`` of the engine that gave this ``/server_info`` answer
    (:func:`workbench.engines.server_info_engine`): ``("sim", True)`` when it carries the
    simulator's ``simulation`` block, ``("sglang", False)`` for any other answer, ``(None, None)``
    when there was none."""
    engine = server_info_engine(info)
    return (None, None) if engine is None else (engine.name, engine.simulated)


def server_time_scale(info: dict[str, Any] | None) -> float | None:
    """``simulation.time_scale`` reported by a simulated server (engine s per wall s), else None."""
    sim = (info or {}).get("simulation")
    if isinstance(sim, dict):
        value = _finite_or_nan(sim.get("time_scale"))
        return None if math.isnan(value) else value
    return None


def sim_behind_schedule_s(info: dict[str, Any] | None) -> float:
    """Wall seconds a simulated engine has fallen behind its schedule since it started
    (``simulation.behind_schedule_s``; lifetime, growing), NaN for a real server.

    A simulated engine that cannot keep up with its time scale stretches every duration,
    so a level during which this grows measured the machine, not the modelled server.
    """
    sim = (info or {}).get("simulation")
    return _finite_or_nan(sim.get("behind_schedule_s")) if isinstance(sim, dict) else float("nan")
