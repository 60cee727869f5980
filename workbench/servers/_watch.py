"""Watching a server through its host: the wait until it is ready, and its log.

Both read the server's process group and the new bytes of its log in one round trip
per poll (``remote/process_status.py``), so they work the same on this machine and
over SSH. :class:`ServerHandle <workbench.servers.ServerHandle>` gets these methods
from :class:`Watching`.

Ready means ``GET /health_generate`` answers 200 through the forward, or the log
says :data:`READY_LINE`, whichever comes first.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from workbench.errors import ConfigError, ServerStartError
from workbench.hosts import Host, SpawnedProcess
from workbench.hosts import processes
from workbench.servers import _failures as failures
from workbench.variants import Engine, Variant

#: Ready-wait defaults (s): real servers load weights and capture CUDA graphs for many minutes
#: (SGLang's own launch waits up to 30 min). ``WORKBENCH_READY_TIMEOUT_S`` overrides both.
READY_TIMEOUT_S = {"sim": 60.0, "sglang": 1800.0}
#: The line SGLang logs once the server has warmed up (and the simulator logs too).
READY_LINE = "The server is fired up"


def ready_timeout(engine: str, timeout_s: float | None) -> float:
    """``timeout_s``, else ``$WORKBENCH_READY_TIMEOUT_S``, else :data:`READY_TIMEOUT_S` for the engine."""
    if timeout_s is not None:
        return float(timeout_s)
    env = os.environ.get("WORKBENCH_READY_TIMEOUT_S")
    if env:
        try:
            return float(env)
        except ValueError as exc:
            raise ConfigError(f"WORKBENCH_READY_TIMEOUT_S must be a number of seconds, got {env!r}") from exc
    return READY_TIMEOUT_S.get(engine, READY_TIMEOUT_S["sglang"])


def printer(file: IO[str] | None) -> Callable[[str], None]:
    """A callback that prints each line it is given to ``file`` (default: sys.stdout at call time), flushed."""

    def emit(line: str) -> None:
        print(line, file=file or sys.stdout, flush=True)

    return emit


class Watching:
    """The ready wait and the log methods of :class:`~workbench.servers.ServerHandle`.

    They use the handle's host, process, port, engine, variant and command, its
    ``_status`` (one ``process_status`` round trip) and ``_get_status`` (an HTTP GET).
    """

    host: Host
    variant: Variant
    engine: Engine
    port: int
    command: list[str]
    process: SpawnedProcess
    _status: Callable[..., dict[str, Any]]
    _get_status: Callable[..., int | None]

    def wait_ready(
        self,
        timeout_s: float | None = None,
        *,
        poll_s: float = 0.25,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        """Block until the server is ready: ``GET /health_generate`` answers 200, or the log says
        "The server is fired up", whichever comes first.

        Args:
            timeout_s: limit in seconds (default: see :func:`ready_timeout`).
            poll_s: first delay between checks; it grows to 2 s while the server loads.
            on_line: called with each log line (from the start of the log) while waiting.

        Raises:
            ServerStartError: the process group exited, or the timeout passed
                (classified, with the log tail; the server is not stopped here).
        """
        limit = ready_timeout(self.engine, timeout_s)
        deadline = time.monotonic() + limit
        recent: collections.deque[str] = collections.deque(maxlen=400)
        offset, delay, polls = 0, poll_s, 0
        while True:
            status = self._status(log_offset=offset, ports=True)
            log = status.get("log") or {}
            offset = log.get("offset", offset)
            fired_up = False
            for line in (log.get("text") or "").splitlines():
                recent.append(line)
                if on_line is not None:
                    on_line(line)
                fired_up = fired_up or READY_LINE in line
            if fired_up:
                return
            listening = self.port in (status.get("ports") or [])
            if (listening or polls % 30 == 29) and self._get_status("/health_generate", timeout_s=10) == 200:
                return
            if not status.get("alive"):
                raise self._start_error(failures.classify("\n".join(recent)), "\n".join(recent), exited=True)
            if time.monotonic() > deadline:
                raise self._start_error(failures.timed_out("\n".join(recent)), "\n".join(recent), exited=False,
                                        waited_s=limit)
            polls += 1
            time.sleep(delay)
            delay = min(delay * 1.5, 2.0)

    def _start_error(self, failure: failures.Failure, log_text: str, *, exited: bool,
                     waited_s: float | None = None) -> ServerStartError:
        tail = "\n".join(log_text.splitlines()[-60:]) or self.logs_tail()
        what = "exited before it was ready" if exited else f"was not ready after {waited_s:.0f} s"
        evidence = f"\nEvidence: {failure.evidence}" if failure.evidence else ""
        message = (
            f"Server {self.variant.name!r} ({self.engine}) on host {self.host.name!r} {what}: {failure.kind}.\n"
            f"What to do: {failure.suggestion}{evidence}\n"
            f"Command: {' '.join(self.command)}\nLog {self.process.log_path}, last lines:\n{tail}"
        )
        return ServerStartError(message, log_tail=tail, kind=failure.kind, suggestion=failure.suggestion)

    # -- logs ---------------------------------------------------------------
    def logs_tail(self, lines: int = 60) -> str:
        """Last ``lines`` lines of the server log on the host."""
        return processes.read_tail(self.host, self.process.log_path, lines=lines)

    def follow_log(
        self, *, from_start: bool = True, poll_s: float = 0.5, timeout_s: float | None = None
    ) -> Iterator[str]:
        """Yield the log's lines as they are written (``tail -f``), until the server exits.

        Each poll is one round trip that reads only the bytes after the last offset.

        Args:
            from_start: begin at the first line (else at the current end).
            poll_s: seconds between polls when nothing new arrived.
            timeout_s: stop following after this many seconds (None: until it exits).
        """
        offset = 0
        if not from_start:
            offset = (self._status(log_offset=0, max_log_bytes=1).get("log") or {}).get("size") or 0
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            status = self._status(log_offset=offset)
            log = status.get("log") or {}
            offset = log.get("offset", offset)
            text = log.get("text") or ""
            yield from text.splitlines()
            if not status.get("alive") and len(text.encode("utf-8")) < (1 << 20):
                return
            if deadline is not None and time.monotonic() > deadline:
                return
            if not text:
                time.sleep(poll_s)

    def stream_log(self, until_ready: bool = True, *, file: IO[str] | None = None,
                   timeout_s: float | None = None) -> None:
        """Print the log's lines as they come (in a notebook: live in the cell's output).

        Args:
            until_ready: return once the server is ready (raising ServerStartError when it
                fails to start); else follow until it exits or ``timeout_s`` passes.
            file: where to print (default sys.stdout).
            timeout_s: ready timeout (until_ready) or how long to follow.
        """
        emit = printer(file)
        if until_ready:
            self.wait_ready(timeout_s=timeout_s, on_line=emit)
            return
        for line in self.follow_log(timeout_s=timeout_s):
            emit(line)
