"""Launch a server variant on any host, wait until it is ready, follow its log, and stop it.

:class:`ServerHandle` is a context manager, so a notebook cell that fails cannot
leave a server running; handles still alive at interpreter exit are stopped too,
and a host-side lease (:mod:`workbench.servers.lease`) stops a server whose client
vanished without running either (a killed kernel). The same code path serves this
machine and an SSH host:

- the server runs detached on the host (own session and process group, output to
  ``<servers_dir>/<id>.log``), listening on the host's 127.0.0.1 only;
- this process reaches it through ``host.forward(port)`` (this machine: the port
  itself), so :attr:`ServerHandle.url` is a local URL either way;
- it is ready when ``GET /health_generate`` answers 200 through the forward, or the
  log says "The server is fired up", whichever comes first;
- a failed start is classified from the log (:mod:`workbench.servers.failures`)
  and raised as :class:`~workbench.errors.ServerStartError` with kind, suggestion
  and log tail, after the process group was stopped;
- every server is recorded on its host (:mod:`workbench.servers.registry`), so
  ``workbench servers`` and :meth:`ServerHandle.attach` find it from any client.

Servers are stopped by process group, never by name (:mod:`workbench.hosts.processes`).
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import sys
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from workbench.errors import ConfigError, HostError, ServerError, ServerStartError
from workbench.hosts import Forward, Host, LocalHost, SpawnedProcess, get_host
from workbench.hosts import processes
from workbench.remote_helpers import call_helper
from workbench.servers import failures, lease, registry
from workbench.servers.bundle import ensure_bundle
from workbench.servers.hostenv import free_port, host_python, servers_dir
from workbench.servers.variants import Engine, Variant

#: Ready-wait defaults (s): real servers load weights and capture CUDA graphs for many minutes
#: (SGLang's own launch waits up to 30 min). ``WORKBENCH_READY_TIMEOUT_S`` overrides both.
READY_TIMEOUT_S = {"sim": 60.0, "sglang": 1800.0}
#: The line SGLang logs once the server has warmed up (and the simulator logs too).
READY_LINE = "The server is fired up"

_LIVE: "weakref.WeakSet[ServerHandle]" = weakref.WeakSet()


def _stop_all_at_exit() -> None:
    for handle in list(_LIVE):
        try:
            handle._exit_cleanup()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


atexit.register(_stop_all_at_exit)


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


def _gpu_list(gpus: Sequence[int] | None) -> list[int] | None:
    if gpus is None:
        return None
    out = []
    for g in gpus:
        if isinstance(g, bool) or not isinstance(g, int) or g < 0:
            raise ConfigError(f"gpus must be GPU indices (non-negative integers), got {list(gpus)!r}")
        out.append(g)
    if not out or len(set(out)) != len(out):
        raise ConfigError(f"gpus must name at least one GPU, each once; got {list(gpus)!r}")
    return out


class ServerHandle:
    """A running (or starting) server variant on a host.

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
        gpus: Sequence[int] | None = None,
        python: str | None = None,
        detached: bool = False,
        lease_s: float | None = None,
        heartbeat_s: float | None = lease.DEFAULT_HEARTBEAT_S,
        show_log: bool = False,
        allow_shared_gpus: bool = False,
        config_file: str | os.PathLike[str] | None = None,
        state_dir: str | None = None,
    ) -> "ServerHandle":
        """Start ``variant`` on ``host`` and (by default) wait until it answers.

        Args:
            variant: the variant to launch.
            host: ``"local"``, an ssh config alias, or a :class:`Host`.
            engine: ``"sim"`` or ``"sglang"``; default: sim on the local host, sglang elsewhere.
            port: port on the host's loopback (default: a free one, asked of the host).
            sim_options: ``--sim-*`` options for the simulator (profile, time-scale, seed, ...).
            wait: block until ready.
            ready_timeout_s: ready-wait limit in seconds (default 60 for sim, 1800 for sglang,
                or ``WORKBENCH_READY_TIMEOUT_S``).
            gpus: GPU indices for this server (sets ``CUDA_VISIBLE_DEVICES``); starting
                on GPUs a running workbench server holds is refused unless ``allow_shared_gpus``.
            python: interpreter on the host (default: this one locally, else
                ``$WORKBENCH_REMOTE_PYTHON`` or ``python3``).
            detached: keep it running without a client: no lease, no heartbeat, not stopped
                at interpreter exit or when a ``with`` block ends (only by :meth:`stop` or
                ``workbench servers --stop``).
            lease_s: seconds without a client heartbeat before the host-side watchdog
                stops it (default 600, or ``WORKBENCH_LEASE_S``).
            heartbeat_s: seconds between heartbeats (None: send none, e.g. to test the lease).
            show_log: print the server's log lines while waiting.
            allow_shared_gpus: skip the check against GPUs of running servers.
            config_file: ssh config for an alias (like ``ssh -F``).
            state_dir: registry directory on the host (default: see :mod:`workbench.servers.hostenv`).

        Raises:
            ConfigError: bad arguments, or the GPUs are taken.
            ServerStartError: it exited or never became ready (kind, suggestion and log
                tail attached); the process group was stopped first.
            HostError: the host could not be used.
        """
        h = get_host(host, config_file=config_file)
        engine = engine or ("sim" if h.name == "local" else "sglang")
        if engine not in ("sim", "sglang"):
            raise ConfigError(f"engine must be 'sim' or 'sglang', got {engine!r}")
        gpu_list = _gpu_list(gpus)
        env = dict(variant.env)
        if gpu_list is not None:
            if "CUDA_VISIBLE_DEVICES" in env:
                raise ConfigError(f"Variant {variant.name!r} sets CUDA_VISIBLE_DEVICES in its env; pass gpus= or "
                                  "the env entry, not both")
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpu_list))
        lease_seconds = None if detached else lease.lease_seconds(lease_s)
        py = host_python(h, python)
        directory = servers_dir(h, state_dir)
        if gpu_list is not None and not allow_shared_gpus:
            _check_gpus_free(h, directory, gpu_list, python=py)
        port = port or free_port(h, py)
        if engine == "sim" and not isinstance(h, LocalHost):
            env["PYTHONPATH"] = ensure_bundle(h)
        argv = variant.launch_argv(engine=engine, python=py, port=port,
                                   sim_options=sim_options if engine == "sim" else None)
        server_id = registry.new_server_id(variant.name, port)
        base = f"{directory}/{server_id}"
        heartbeat_path = f"{base}.heartbeat"
        if not detached:
            lease.touch(h, heartbeat_path)
        proc = processes.spawn(h, argv, log_path=f"{base}.log", env=env or None)
        try:
            watchdog = None
            if not detached:
                wd = _spawn_watchdog(h, proc, python=py, heartbeat_path=heartbeat_path, lease_s=lease_seconds,
                                     record_path=f"{base}.json", log_path=f"{base}.watchdog.log")
                if wd is not None:
                    watchdog = {"pid": wd.pid, "pgid": wd.pgid, "start_time": wd.start_time, "log_path": wd.log_path}
            record = registry.write_record(h, directory, registry.ServerRecord(
                id=server_id, variant=registry.variant_dict(variant), engine=engine, port=port, command=argv,
                pid=proc.pid, pgid=proc.pgid, start_time=proc.start_time, log_path=proc.log_path,
                heartbeat_path=heartbeat_path, watchdog=watchdog, lease_s=lease_seconds, detached=detached,
                gpus=gpu_list, python=py, started_at=time.time(), client=registry.client_info(),
            ))
            handle = cls(h, record, forward=h.forward(port), python=py, owned=True, heartbeat_s=heartbeat_s)
        except BaseException:
            processes.stop(h, proc, grace_s=5)
            raise
        if wait:
            try:
                handle.wait_ready(timeout_s=ready_timeout_s, on_line=_printer(None) if show_log else None)
            except BaseException:
                handle.stop()
                raise
        return handle

    @classmethod
    def attach(
        cls,
        host: str | Host,
        server: str | int,
        *,
        python: str | None = None,
        own: bool = False,
        heartbeat_s: float | None = lease.DEFAULT_HEARTBEAT_S,
        config_file: str | os.PathLike[str] | None = None,
        state_dir: str | None = None,
    ) -> "ServerHandle":
        """A handle on a server the workbench started earlier on ``host`` (from any client).

        Args:
            host: ``"local"``, an ssh config alias, or a :class:`Host`.
            server: its registry id (or a unique prefix) or its port.
            python: interpreter on the host for the helpers (default as in :meth:`start`).
            own: stop it when the ``with`` block ends or this interpreter exits. Default
                False: leaving only closes the tunnel and the heartbeat (:meth:`close`);
                :meth:`stop` always stops it.
            heartbeat_s: while attached, renew its lease this often (None: do not).
            config_file: ssh config for an alias.
            state_dir: registry directory on the host.

        Raises:
            ServerError: no such server, several match, or it is not running any more.
        """
        h = get_host(host, config_file=config_file)
        py = host_python(h, python)
        entries = registry.list_servers(h, servers_dir(h, state_dir), python=py, ports=False)
        entry = registry.find_server(entries, server, host_name=h.name)
        if not entry.status.alive:
            raise ServerError(
                f"Server {entry.record.id} on host {h.name!r} is not running ({entry.state}); its log is "
                f"{entry.record.log_path}. Remove its record with `workbench servers --host {h.name} --stop "
                f"{entry.record.id}`."
            )
        if heartbeat_s and entry.watchdog is not None and entry.watchdog.alive:
            lease.touch(h, entry.record.heartbeat_path)
        return cls(h, entry.record, forward=h.forward(entry.record.port), python=py, owned=own,
                   heartbeat_s=heartbeat_s)

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
        printer = _printer(file)
        if until_ready:
            self.wait_ready(timeout_s=timeout_s, on_line=printer)
            return
        for line in self.follow_log(timeout_s=timeout_s):
            printer(line)

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


def _printer(file: IO[str] | None) -> Callable[[str], None]:
    def emit(line: str) -> None:
        print(line, file=file or sys.stdout, flush=True)

    return emit


def _spawn_watchdog(host: Host, server: SpawnedProcess, **kwargs: Any) -> SpawnedProcess | None:
    """:func:`lease.spawn_watchdog`, or None when the server already exited (its watchdog exits at once too;
    the ready wait then reports the server's failure)."""
    try:
        return lease.spawn_watchdog(host, server, **kwargs)
    except HostError:
        if processes.is_alive(host, server) or processes.group_members(host, server.pgid, since=server.start_time):
            raise
        return None


def _check_gpus_free(host: Host, directory: str, gpus: list[int], *, python: str) -> None:
    """Refuse GPUs that a running workbench server on ``host`` was given."""
    taken = {}
    for entry in registry.list_servers(host, directory, python=python, ports=False):
        if entry.status.alive and entry.record.gpus:
            for g in set(entry.record.gpus) & set(gpus):
                taken[g] = entry.record.id
    if taken:
        held = ", ".join(f"GPU {g} ({sid})" for g, sid in sorted(taken.items()))
        raise ConfigError(
            f"On host {host.name!r} {held} already run a workbench server; choose disjoint gpus=, stop it "
            f"(`workbench servers --host {host.name} --stop ID`), or pass allow_shared_gpus=True."
        )
