"""The client side of a server's host-side lease: the watchdog process and the heartbeat thread.

A notebook kernel that is killed runs no ``atexit`` handler, so cleanup cannot rely
on the client alone. Each server the workbench starts (unless ``detached=True``)
gets a watchdog (``remote/server_watchdog.py``) spawned next to it on the host, in
its own session. The client touches a heartbeat file on the host every
``heartbeat_s`` seconds from a daemon thread (:class:`Heartbeat`); when the file is
older than ``lease_s`` seconds the watchdog stops the server's process group.

Defaults: lease 600 s (``WORKBENCH_LEASE_S``), heartbeat every 30 s.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping

from workbench.errors import ConfigError, WorkbenchError
from workbench.hosts import Host, SpawnedProcess, processes
from workbench.hosts import helper_path


def this_process() -> tuple[int, int | None]:
    """``(pid, start time)`` of this process (start time in clock ticks since boot, /proc; None where unknown)."""
    try:
        stat = open(f"/proc/{os.getpid()}/stat", encoding="ascii", errors="replace").read()
        return os.getpid(), int(stat.rsplit(")", 1)[-1].split()[19])
    except (OSError, ValueError, IndexError):
        return os.getpid(), None


log = logging.getLogger(__name__)

#: Seconds without a heartbeat before the watchdog stops a server.
DEFAULT_LEASE_S = 600.0
#: Seconds between heartbeats.
DEFAULT_HEARTBEAT_S = 30.0


def lease_seconds(lease_s: float | None, *, environ: Mapping[str, str] | None = None) -> float:
    """``lease_s``, else ``$WORKBENCH_LEASE_S``, else :data:`DEFAULT_LEASE_S`.

    Raises:
        ConfigError: not a positive number.
    """
    env = os.environ if environ is None else environ
    value: object = lease_s if lease_s is not None else env.get("WORKBENCH_LEASE_S", DEFAULT_LEASE_S)
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds > 0:
        raise ConfigError(f"lease_s (or WORKBENCH_LEASE_S) must be a positive number of seconds, got {value!r}")
    return seconds


def touch(host: Host, path: str) -> None:
    """Set the heartbeat file's mtime to now (the host's clock), creating it."""
    host.run(["touch", path], timeout_s=30)


def spawn_watchdog(
    host: Host,
    server: SpawnedProcess,
    *,
    python: str,
    heartbeat_path: str,
    lease_s: float,
    record_path: str,
    log_path: str,
    check_s: float | None = None,
    owner: tuple[int, int | None] | None = None,
) -> SpawnedProcess:
    """Start the watchdog for ``server`` on ``host`` (detached, in its own session).

    Args:
        host: where the server runs.
        server: the server's detached leader.
        python: interpreter on the host (3.8+).
        heartbeat_path: the file the client touches.
        lease_s: seconds without a heartbeat before it stops the server.
        record_path: the server's registry record (marked when the lease stops it).
        log_path: the watchdog's own output file.
        check_s: seconds between checks (default: a quarter of the lease, 0.5 to 30 s).
        owner: ``(pid, start time)`` of the client when it runs on the server's machine:
            the watchdog then stops the server within a second of that process dying
            (a killed kernel), instead of at the end of the lease.

    Returns:
        The watchdog process.
    """
    script = helper_path(host, "server_watchdog")
    check = check_s if check_s is not None else min(30.0, max(0.5, lease_s / 4))
    argv = [
        python,
        script,
        "--pid",
        str(server.pid),
        "--pgid",
        str(server.pgid),
        "--start-time",
        str(server.start_time),
        "--heartbeat",
        heartbeat_path,
        "--lease-s",
        f"{lease_s:g}",
        "--check-s",
        f"{check:g}",
        "--log",
        server.log_path,
        "--record",
        record_path,
    ]
    if owner is not None:
        argv += ["--owner-pid", str(owner[0])] + ([] if owner[1] is None else ["--owner-start", str(owner[1])])
    return processes.spawn(host, argv, log_path=log_path)


class Heartbeat:
    """A daemon thread that touches a heartbeat file on a host every ``interval_s`` seconds.

    Failures (a dropped connection) are logged and retried at the next beat; the
    SSH host reconnects on its own. :meth:`stop` ends the thread.

    Args:
        host: where the file lives.
        path: the heartbeat file.
        interval_s: seconds between touches.
    """

    def __init__(self, host: Host, path: str, *, interval_s: float = DEFAULT_HEARTBEAT_S) -> None:
        self.host = host
        self.path = path
        self.interval_s = interval_s
        self.beats = 0
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {path}", daemon=True)

    def start(self) -> "Heartbeat":
        """Start beating (the first touch happens after ``interval_s``)."""
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                touch(self.host, self.path)
                self.beats += 1
                self.last_error = None
            except WorkbenchError as exc:
                self.last_error = str(exc)
                log.warning("heartbeat to %s on host %s failed: %s", self.path, self.host.name, exc)

    def stop(self) -> None:
        """Stop beating; safe to call twice."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()
