"""Watching a server through its host: the wait until it is ready, and its log.

Both read the server's process group and the new bytes of its log in one round trip
per poll (``remote/process_status.py``), so they work the same on this machine and
over SSH. The functions here take that round trip (and the HTTP probe) as callables,
so they hold no handle: :class:`ServerHandle <workbench.servers.ServerHandle>` passes
its own.

Ready means ``GET /health_generate`` answers 200 through the forward, or the log
says :data:`READY_LINE`, whichever comes first. The wait ends without it when the
process group exits, when the limit runs out, or at once when a log line settles
the start although the process lives on (:func:`workbench.servers._failures.fatal`:
uvicorn could not bind a taken port, and SGLang 0.5.17 then lingers a minute or more
while the health check reaches whatever holds the port).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from workbench.engines import Engine
from workbench.errors import ConfigError, ServerStartError
from workbench.servers import _failures as failures

__all__ = ["READY_LINE", "NotReady", "follow_log", "printer", "ready_timeout", "start_error", "wait_until_ready"]

#: The line SGLang logs once the server has warmed up (and the simulator logs too).
READY_LINE = "The server is fired up"
#: Log lines kept while waiting, for classifying a failure.
_RECENT_LINES = 400

#: ``poll(log_offset=..., ports=..., max_log_bytes=...)``: one ``process_status`` answer for the server
#: (``alive``, ``ports``, ``log``: ``{"offset", "size", "text"}``).
Poll = Callable[..., dict[str, Any]]


def ready_timeout(engine: Engine, timeout_s: float | None) -> float:
    """The ready-wait limit in seconds.

    ``timeout_s``, else ``$WORKBENCH_READY_TIMEOUT_S``, else the engine's ``ready_timeout_s``
    (60 s for the simulator; 1800 s for SGLang, which loads weights and captures CUDA
    graphs for many minutes: SGLang's own launch waits up to 30 min).

    Raises:
        ConfigError: ``$WORKBENCH_READY_TIMEOUT_S`` is not a number.
    """
    if timeout_s is not None:
        return float(timeout_s)
    env = os.environ.get("WORKBENCH_READY_TIMEOUT_S")
    if env:
        try:
            return float(env)
        except ValueError as exc:
            raise ConfigError(f"WORKBENCH_READY_TIMEOUT_S must be a number of seconds, got {env!r}") from exc
    return float(engine.ready_timeout_s)


def printer(file: IO[str] | None) -> Callable[[str], None]:
    """A callback that prints each line it is given to ``file`` (default: sys.stdout at call time), flushed."""

    def emit(line: str) -> None:
        print(line, file=file or sys.stdout, flush=True)

    return emit


@dataclasses.dataclass(frozen=True)
class NotReady:
    """Why a ready wait ended without the server being ready.

    Attributes:
        failure: the classified failure (kind, suggestion, evidence).
        log_text: the log lines read while waiting (the last 400).
        exited: True when the process group exited; False when the wait timed out or a fatal line ended it.
        waited_s: the limit that ran out (None when it exited or a fatal line ended it).
        fatal: True when a log line settled the failure while the process was still running
            (:func:`workbench.servers._failures.fatal`; the evidence is that line).
    """

    failure: failures.Failure
    log_text: str
    exited: bool
    waited_s: float | None = None
    fatal: bool = False


def wait_until_ready(
    poll: Poll,
    health: Callable[[], int | None],
    *,
    port: int,
    limit_s: float,
    poll_s: float = 0.25,
    on_line: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    launch: str = "",
    max_poll_s: float = 2.0,
) -> NotReady | None:
    """Poll until the server is ready; None when it is, else why not.

    A log line that settles the start by itself (:func:`workbench.servers._failures.fatal`, e.g.
    uvicorn's bind error for a taken port) ends the wait at the poll that reads it, even while the
    process lives on and before the health check is asked (it could reach whatever holds the port);
    the caller stops the process as for any failed start.

    Args:
        poll: the server's ``process_status`` round trip (see :data:`Poll`).
        health: ``GET /health_generate`` through the forward: its HTTP status, None when unanswered.
            Asked once the port listens (and every 30th poll regardless).
        port: the server's port on the host (to see when it listens).
        limit_s: how long to wait, in seconds.
        poll_s: first delay between polls; it grows by half each poll up to ``max_poll_s``.
        on_line: called with each log line (from the start of the log) while waiting.
        clock: monotonic seconds (injectable for tests).
        sleep: waits a number of seconds (injectable for tests).
        launch: the server's command and environment, for the classifier
            (:func:`workbench.servers._failures.launch_text`).
        max_poll_s: the longest delay between polls (default 2 s; a server on this machine, where a
            poll is a local process and a start takes about a second, uses 0.5 s).
    """
    deadline = clock() + limit_s
    recent: collections.deque[str] = collections.deque(maxlen=_RECENT_LINES)
    offset, delay, polls = 0, poll_s, 0
    while True:
        status = poll(log_offset=offset, ports=True)
        log = status.get("log") or {}
        offset = log.get("offset", offset)
        fired_up, settled = False, None
        for line in (log.get("text") or "").splitlines():
            recent.append(line)
            if on_line is not None:
                on_line(line)
            fired_up = fired_up or READY_LINE in line
            settled = settled or failures.fatal(line, launch=launch)
        if fired_up:
            return None
        if settled is not None:
            return NotReady(settled, "\n".join(recent), exited=False, fatal=True)
        listening = port in (status.get("ports") or [])
        if (listening or polls % 30 == 29) and health() == 200:
            return None
        if not status.get("alive"):
            text = "\n".join(recent)
            return NotReady(failures.classify(text, launch=launch), text, exited=True)
        if clock() > deadline:
            text = "\n".join(recent)
            return NotReady(failures.timed_out(text, launch=launch), text, exited=False, waited_s=limit_s)
        polls += 1
        sleep(delay)
        delay = min(delay * 1.5, max_poll_s)


def start_error(
    not_ready: NotReady,
    *,
    variant: str,
    engine: Engine,
    host: str,
    command: Sequence[str],
    log_path: str,
    log_tail: Callable[[], str],
) -> ServerStartError:
    """The :class:`ServerStartError` for a failed ready wait.

    Its message names the variant, engine, host, what happened (exited, not ready after
    N s, or logged that it cannot start while its process still ran) and its kind, what to
    do, the evidence, the command and the log with its last 60 lines (from the wait, else
    ``log_tail()``).
    """
    tail = "\n".join(not_ready.log_text.splitlines()[-60:]) or log_tail()
    failure = not_ready.failure
    if not_ready.fatal:
        what = "logged that it cannot start (its process was still running)"
    elif not_ready.exited:
        what = "exited before it was ready"
    else:
        what = f"was not ready after {not_ready.waited_s:.0f} s"
    evidence = f"\nEvidence: {failure.evidence}" if failure.evidence else ""
    message = (
        f"Server {variant!r} ({engine.name}) on host {host!r} {what}: {failure.kind}.\n"
        f"What to do: {failure.suggestion}{evidence}\n"
        f"Command: {' '.join(command)}\nLog {log_path}, last lines:\n{tail}"
    )
    return ServerStartError(message, log_tail=tail, kind=failure.kind, suggestion=failure.suggestion)


def follow_log(
    poll: Poll,
    *,
    from_start: bool = True,
    poll_s: float = 0.5,
    timeout_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """Yield the log's lines as they are written (``tail -f``), until the server exits.

    Each poll is one round trip that reads only the bytes after the last offset.

    Args:
        poll: the server's ``process_status`` round trip (see :data:`Poll`).
        from_start: begin at the first line (else at the current end).
        poll_s: seconds between polls when nothing new arrived.
        timeout_s: stop following after this many seconds (None: until it exits).
        clock: monotonic seconds (injectable for tests).
        sleep: waits a number of seconds (injectable for tests).
    """
    offset = 0
    if not from_start:
        offset = (poll(log_offset=0, max_log_bytes=1).get("log") or {}).get("size") or 0
    deadline = None if timeout_s is None else clock() + timeout_s
    while True:
        status = poll(log_offset=offset)
        log = status.get("log") or {}
        offset = log.get("offset", offset)
        text = log.get("text") or ""
        yield from text.splitlines()
        if not status.get("alive") and len(text.encode("utf-8")) < (1 << 20):
            return
        if deadline is not None and clock() > deadline:
            return
        if not text:
            sleep(poll_s)
