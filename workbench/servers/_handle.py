"""The handle on a server the workbench started on a host: its state, how it stops, what it answers.

:class:`ServerHandle` is a context manager, so a notebook cell that fails cannot
leave a server running; handles still alive at interpreter exit are stopped too,
and a host-side lease (:mod:`workbench.servers._lease`) stops a server whose client
vanished without running either (a killed kernel). Starting and attaching are in
:mod:`workbench.servers._launch`, the ready wait and the log in
:mod:`workbench.servers._watch`.
"""

from __future__ import annotations

import atexit
import json
import urllib.error
import urllib.request
import weakref
from typing import Any

from workbench.errors import HostError, ServerError
from workbench.hosts import Forward, Host, SpawnedProcess
from workbench.hosts import processes
from workbench.hosts import call_helper
from workbench.servers import _lease as lease, _registry as registry
from workbench.servers._launch import Launching
from workbench.variants import Engine
from workbench.servers._watch import Watching

_LIVE: "weakref.WeakSet[ServerHandle]" = weakref.WeakSet()


def _stop_all_at_exit() -> None:
    for handle in list(_LIVE):
        try:
            handle._exit_cleanup()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


atexit.register(_stop_all_at_exit)


class ServerHandle(Launching, Watching):
    """A running (or starting) server variant on a host.

    Made by :meth:`start` or :meth:`attach` (:mod:`workbench.servers._launch`); it
    waits and reads the log with :meth:`wait_ready`, :meth:`logs_tail`,
    :meth:`follow_log` and :meth:`stream_log` (:mod:`workbench.servers._watch`).

    Attributes:
        host: where it runs.
        variant: what it runs.
        engine: ``"sim"`` or ``"sglang"``.
        port: port on the host's loopback.
        command: argv it was started with.
        process: the detached leader (pid, pgid, start time, log path).
        url: base URL reachable from this machine (through the host's port forward).
        record: its registry record on the host.
        python: the interpreter on the host that runs it (and the helpers).
        owned: True when stopping at ``with``-exit and interpreter exit is this handle's
            job (started here, or attached with ``own=True``).
    """

    def __init__(
        self,
        host: Host,
        record: registry.ServerRecord,
        *,
        forward: Forward,
        python: str,
        owned: bool,
        heartbeat_s: float | None,
    ) -> None:
        self.host = host
        self.record = record
        self.variant = record.to_variant()
        self.engine: Engine = record.engine  # type: ignore[assignment]
        self.port = record.port
        self.command = list(record.command)
        self.process = SpawnedProcess(host=host.name, pid=record.pid, pgid=record.pgid, start_time=record.start_time,
                                      command=" ".join(record.command), log_path=record.log_path)
        self.python = python
        self.owned = owned
        self._forward = forward
        self.url = forward.url("").rstrip("/")
        self.started_at = record.started_at
        self._stopped = False
        self._closed = False
        self._heartbeat: lease.Heartbeat | None = None
        if heartbeat_s and not record.detached and record.watchdog:
            self._heartbeat = lease.Heartbeat(host, record.heartbeat_path, interval_s=heartbeat_s).start()
        if owned and not record.detached:
            _LIVE.add(self)

    # -- lifecycle ----------------------------------------------------------
    def stop(self) -> None:
        """Stop the server's process group (SIGTERM, then SIGKILL) and its watchdog, drop its record,
        close the tunnel; idempotent.

        Raises:
            HostError: processes of the group survived SIGKILL.
        """
        if self._stopped:
            return
        self._end_heartbeat()
        processes.stop(self.host, self.process)
        left = processes.group_members(self.host, self.process.pgid, since=self.process.start_time)
        if left:
            raise HostError(f"Server {self.record.id} on host {self.host.name!r}: pids {left} are left after stop.")
        watchdog = self.record.watchdog_process
        if watchdog is not None:
            processes.stop(self.host, watchdog, grace_s=2.0)
        registry.remove_record(self.host, self.record)
        self._stopped = True
        self.close()

    def close(self) -> None:
        """Let go of the server without stopping it: end the heartbeat and close the tunnel.

        A server with a lease is then stopped by its watchdog once the lease runs out.
        """
        self._end_heartbeat()
        if not self._closed:
            self._forward.close()
            self._closed = True
        _LIVE.discard(self)

    def _end_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()

    def _exit_cleanup(self) -> None:
        if self.owned and not self.record.detached:
            self.stop()
        else:
            self.close()

    @property
    def alive(self) -> bool:
        """True while the server's process group runs."""
        return not self._stopped and bool(self._status().get("alive"))

    @property
    def id(self) -> str:
        """Registry id on the host."""
        return self.record.id

    @property
    def log_path(self) -> str:
        """The server's log file on the host."""
        return self.record.log_path

    def __enter__(self) -> "ServerHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self._exit_cleanup()

    # -- queries ------------------------------------------------------------
    def status(self) -> registry.ProcessStatus:
        """The server's process group as the host sees it now (members, listening ports, heartbeat age)."""
        return registry.ProcessStatus.from_json(self._status(ports=True))

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

    def _status(self, *, log_offset: int | None = None, ports: bool = False,
                max_log_bytes: int | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"id": self.record.id, "pid": self.process.pid, "pgid": self.process.pgid,
                                "start_time": self.process.start_time, "heartbeat_path": self.record.heartbeat_path}
        if log_offset is not None:
            spec.update(log_path=self.process.log_path, log_offset=log_offset)
        request: dict[str, Any] = {"processes": [spec], "ports": ports}
        if max_log_bytes:
            request["max_log_bytes"] = max_log_bytes
        return call_helper(self.host, "process_status", request, python=self.python)["processes"][0]

    def _get_status(self, route: str, *, timeout_s: float = 30) -> int | None:
        try:
            with urllib.request.urlopen(self.url + route, timeout=timeout_s) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else ("closed" if self._closed else "running")
        return (f"<ServerHandle {self.record.id} {self.engine} on {self.host.name}:{self.port} "
                f"pgid={self.process.pgid} {state}>")
