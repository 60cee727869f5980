"""Launch a server variant on a host, wait until it is ready, and stop it.

:class:`ServerHandle` is a context manager, so a notebook cell that fails cannot
leave a server running; handles still alive at interpreter exit are stopped too.
Servers run detached (own session and process group, output to a log file on the
host) and are stopped by process group, never by name
(:mod:`workbench.hosts.processes`).
"""

from __future__ import annotations

import atexit
import json
import sys
import time
import urllib.error
import urllib.request
import weakref
from typing import Any

from workbench.errors import ConfigError, ServerError, ServerStartError
from workbench.hosts import Host, SpawnedProcess, get_host
from workbench.hosts import processes
from workbench.servers.variants import Engine, Variant

#: Ready-wait default (s): real servers load weights and capture CUDA graphs for minutes.
READY_TIMEOUT_S = {"sim": 60.0, "sglang": 1800.0}

_LIVE: "weakref.WeakSet[ServerHandle]" = weakref.WeakSet()


def _stop_all_at_exit() -> None:
    for handle in list(_LIVE):
        try:
            handle.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


atexit.register(_stop_all_at_exit)


def host_python(host: Host) -> str:
    """The interpreter that runs servers and helpers on ``host`` (this venv's python locally)."""
    return sys.executable if host.name == "local" else "python3"


def free_port(host: Host) -> int:
    """A TCP port free on the host's loopback right now (asks the host's kernel)."""
    code = "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1]);s.close()"
    return int(host.run([host_python(host), "-c", code], timeout_s=60).stdout.strip())


def _home(host: Host) -> str:
    return host.run(["sh", "-c", 'printf %s "$HOME"'], timeout_s=60).stdout or "/tmp"


class ServerHandle:
    """A running (or starting) server variant on a host.

    Attributes:
        host: where it runs.
        variant: what it runs.
        engine: ``"sim"`` or ``"sglang"``.
        port: port on the host's loopback.
        command: argv it was started with.
        process: the detached process (pid, pgid, start time, log path).
        url: base URL reachable from this machine.
    """

    def __init__(self, host: Host, variant: Variant, engine: Engine, port: int, command: list[str], process: SpawnedProcess) -> None:
        self.host = host
        self.variant = variant
        self.engine = engine
        self.port = port
        self.command = command
        self.process = process
        self.url = f"http://127.0.0.1:{port}"
        self.started_at = time.time()
        self._stopped = False
        _LIVE.add(self)

    # -- lifecycle ----------------------------------------------------------
    @classmethod
    def start(
        cls,
        variant: Variant,
        *,
        host: str | Host = "local",
        engine: Engine | None = None,
        port: int | None = None,
        sim_options: dict[str, Any] | None = None,
        wait: bool = True,
        ready_timeout_s: float | None = None,
    ) -> "ServerHandle":
        """Start ``variant`` on ``host`` and (by default) wait until it answers.

        Args:
            variant: the variant to launch.
            host: ``"local"`` or a :class:`Host`.
            engine: ``"sim"`` or ``"sglang"``; default: sim on the local host, sglang elsewhere.
            port: port to use (default: a free one).
            sim_options: ``--sim-*`` options for the simulator (profile, time-scale, seed, ...).
            wait: block until ready.
            ready_timeout_s: ready-wait limit (default 60 s for sim, 30 min for sglang).

        Raises:
            ServerStartError: it exited or never became ready (log tail attached);
                the process group is stopped first.
        """
        h = get_host(host)
        engine = engine or ("sim" if h.name == "local" else "sglang")
        if engine not in ("sim", "sglang"):
            raise ConfigError(f"engine must be 'sim' or 'sglang', got {engine!r}")
        port = port or free_port(h)
        argv = variant.launch_argv(engine=engine, python=host_python(h), port=port,
                                   sim_options=sim_options if engine == "sim" else None)
        log_path = f"{_home(h)}/.cache/specbench-workbench/servers/{variant.name}-{port}-{int(time.time())}.log"
        proc = processes.spawn(h, argv, log_path=log_path, env=variant.env or None)
        handle = cls(h, variant, engine, port, argv, proc)
        if wait:
            try:
                handle.wait_ready(timeout_s=ready_timeout_s or READY_TIMEOUT_S[engine])
            except BaseException:
                handle.stop()
                raise
        return handle

    def wait_ready(self, *, timeout_s: float, poll_s: float = 0.25) -> None:
        """Block until ``GET /health_generate`` answers 200.

        Raises:
            ServerStartError: the process exited, or ``timeout_s`` passed.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._get_status("/health_generate") == 200:
                return
            if not processes.is_alive(self.host, self.process):
                tail = self.logs_tail()
                raise ServerStartError(
                    f"Server {self.variant.name!r} exited before it was ready on host {self.host.name!r}.\n"
                    f"Command: {' '.join(self.command)}\nLog {self.process.log_path}, last lines:\n{tail}",
                    log_tail=tail,
                )
            time.sleep(poll_s)
        tail = self.logs_tail()
        raise ServerStartError(
            f"Server {self.variant.name!r} on host {self.host.name!r} was not ready after {timeout_s:.0f} s; "
            f"raise ready_timeout_s if it is still loading. Log {self.process.log_path}, last lines:\n{tail}",
            log_tail=tail,
        )

    def stop(self) -> None:
        """Stop the server's process group (SIGTERM, then SIGKILL); idempotent."""
        if self._stopped:
            return
        processes.stop(self.host, self.process)
        self._stopped = True
        _LIVE.discard(self)

    @property
    def alive(self) -> bool:
        """True while the server process runs."""
        return not self._stopped and processes.is_alive(self.host, self.process)

    def __enter__(self) -> "ServerHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- queries ------------------------------------------------------------
    def logs_tail(self, lines: int = 60) -> str:
        """Last ``lines`` lines of the server log on the host."""
        return processes.read_tail(self.host, self.process.log_path, lines=lines)

    def server_info(self) -> dict[str, Any]:
        """``GET /server_info`` (falls back to ``/get_server_info`` before 0.5.6).

        Raises:
            ServerError: the server does not answer either route.
        """
        for route in ("/server_info", "/get_server_info"):
            try:
                with urllib.request.urlopen(self.url + route, timeout=30) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise ServerError(f"{route} on {self.url} answered HTTP {exc.code}") from exc
            except OSError as exc:
                raise ServerError(f"Server {self.variant.name!r} at {self.url} does not answer: {exc}") from exc
        raise ServerError(f"Server at {self.url} has neither /server_info nor /get_server_info")

    def _get_status(self, route: str) -> int | None:
        try:
            with urllib.request.urlopen(self.url + route, timeout=30) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "running"
        return f"<ServerHandle {self.variant.name} {self.engine} on {self.host.name}:{self.port} pgid={self.process.pgid} {state}>"
