"""The handle on a server the workbench started on a host: start, attach, wait, logs, stop.

:class:`ServerHandle` is the one class for a server's whole life: :meth:`~ServerHandle.start`
launches a variant (the steps are functions in :mod:`workbench.servers._launch`),
:meth:`~ServerHandle.attach` takes over one started earlier, :meth:`~ServerHandle.wait_ready`
and the log methods poll it through its host (functions in :mod:`workbench.servers._watch`; what
it asks the host and the server: :mod:`workbench.servers._probe`), :meth:`~ServerHandle.stop` ends it.
It is a context manager, so a notebook cell that fails cannot leave a server running; handles still
alive at interpreter exit are stopped too, and a host-side lease (:mod:`workbench.servers._lease`) stops
a server whose client vanished without running either (a killed kernel).

A failed start is classified from the log (:mod:`workbench.servers._failures`) and
raised as :class:`~workbench.errors.ServerStartError` with kind, suggestion and log
tail, after the process group was stopped.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from workbench.engines import Engine, get_engine, resolve_engine
from workbench.errors import HostError, ServerError, WorkbenchError
from workbench.hosts import (
    Forward,
    Host,
    SpawnedProcess,
    get_host,
    host_python,
    is_local,
    processes,
    servers_dir,
)
from workbench.servers import _failures as failures, _launch as launch, _lease as lease, _registry as registry
from workbench.servers import _kv_cache as kv_cache, _probe as probe, _watch as watch
from workbench.variants import Variant

#: The longest wait between two ready checks of a server on this machine, in seconds (2 s elsewhere):
#: a simulated server is ready about a second after its start, and a sweep's servers start one at a
#: time, so each 2 s wait past its readiness would hold up every start after it.
LOCAL_MAX_POLL_S = 0.5

_LIVE: "weakref.WeakSet[ServerHandle]" = weakref.WeakSet()


def _stop_all_at_exit() -> None:
    for handle in list(_LIVE):
        try:
            handle._exit_cleanup()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


atexit.register(_stop_all_at_exit)


class ServerHandle:
    """A running (or starting) server variant on a host.

    Made by :meth:`start` or :meth:`attach`; it waits and reads the log with
    :meth:`wait_ready`, :meth:`logs_tail`, :meth:`follow_log` and :meth:`stream_log`.

    Attributes:
        host: where it runs.
        variant: what it runs.
        engine: the engine that runs it (:class:`workbench.engines.Engine`; ``engine.name``
            is ``"sim"`` or ``"sglang"``).
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
        self.engine: Engine = get_engine(record.engine)
        self.port = record.port
        self.command = list(record.command)
        self.process: SpawnedProcess = dataclasses.replace(record.process, host=host.name)
        self.python = python
        self.owned = owned
        self._forward = forward
        #: ``_status(log_offset=..., ports=..., max_log_bytes=...)``: the host's view of its process group
        #: (:func:`workbench.servers._probe.process_status`; :data:`workbench.servers._watch.Poll`).
        self._status = functools.partial(probe.process_status, host, record, self.process, python=python)
        self.url = forward.url("").rstrip("/")
        self.started_at = record.started_at
        #: Seconds from the spawn to the first ready answer (set by :meth:`wait_ready`; None before, or
        #: for an attached server this handle did not see become ready).
        self.ready_after_s: float | None = None
        #: The KV pool it became ready with (set by :meth:`wait_ready`; None when neither its log nor,
        #: where asked, its /server_info said).
        self.kv_pool: kv_cache.KvPool | None = None
        self._stopped = False
        self._closed = False
        self._heartbeat: lease.Heartbeat | None = None
        if heartbeat_s and not record.detached and record.watchdog:
            self._heartbeat = lease.Heartbeat(host, record.heartbeat_path, interval_s=heartbeat_s).start()
        if owned and not record.detached:
            _LIVE.add(self)

    # -- constructors ---------------------------------------------------------
    @classmethod
    def start(
        cls,
        variant: Variant,
        *,
        host: str | Host = "local",
        engine: str | Engine | None = None,
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
        request_tokens: int | None = None,
    ) -> ServerHandle:
        """Start ``variant`` on ``host`` and (by default) wait until it answers.

        Args:
            variant: the variant to launch.
            host: ``"local"``, an ssh config alias, or a :class:`Host`.
            engine: ``"sim"``, ``"sglang"`` or an :class:`~workbench.engines.Engine`; default:
                the simulated engine on this machine, SGLang elsewhere
                (:func:`workbench.engines.resolve_engine`).
            port: port on the host's loopback (default: a free one, asked of the host).
            sim_options: ``--sim-*`` options for the simulator (profile, time-scale, seed, ...);
                refused by an engine that takes none.
            wait: block until ready.
            ready_timeout_s: ready-wait limit in seconds (default: the engine's, 60 for sim
                and 1800 for sglang, or ``WORKBENCH_READY_TIMEOUT_S``).
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
            state_dir: registry directory on the host (default: see :func:`workbench.hosts.servers_dir`).
            request_tokens: prompt + output tokens of a typical request it will be sent, for the check of
                its KV pool once it is ready (see :meth:`wait_ready`).

        Raises:
            ConfigError: bad arguments (an unknown engine, ``sim_options`` for an engine
                that takes none, bad ``gpus``), or the GPUs are taken.
            ServerStartError: it exited or never became ready (kind, suggestion and log
                tail attached); the process group was stopped first.
            HostError: the host could not be used.
        """
        h = get_host(host, config_file=config_file)
        eng = resolve_engine(h, engine)
        gpu_list = launch.gpu_list(gpus)
        env = launch.server_env(variant, gpu_list)
        lease_seconds = None if detached else lease.lease_seconds(lease_s)
        py = host_python(h, python)
        directory = servers_dir(h, state_dir)
        if gpu_list is not None and not allow_shared_gpus:
            launch.check_gpus_free(h, directory, gpu_list, python=py)
        record = launch.spawn_server(
            h,
            variant,
            eng,
            python=py,
            directory=directory,
            port=port,
            env=env,
            gpus=gpu_list,
            options=sim_options,
            detached=detached,
            lease_s=lease_seconds,
        )
        try:
            handle = cls(h, record, forward=h.forward(record.port), python=py, owned=True, heartbeat_s=heartbeat_s)
        except BaseException:
            processes.stop(h, record.process, grace_s=5)
            raise
        if wait:
            try:
                handle.wait_ready(
                    timeout_s=ready_timeout_s,
                    on_line=watch.printer(None) if show_log else None,
                    request_tokens=request_tokens,
                )
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
        request_tokens: int | None = None,
    ) -> ServerHandle:
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
        record = launch.find_running(h, servers_dir(h, state_dir), server, python=py, renew_lease=bool(heartbeat_s))
        return cls(h, record, forward=h.forward(record.port), python=py, owned=own, heartbeat_s=heartbeat_s)

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

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            try:
                self._exit_cleanup()
            except HostError as stop_error:  # the block's work is done; say the server may outlive it, loudly
                self.close()
                warnings.warn(
                    f"Could not stop server {self.record.id} on host {self.host.name!r}: {stop_error}. "
                    + self._left_note(),
                    stacklevel=2,
                )
            return
        try:
            self._exit_cleanup()
        except WorkbenchError as stop_error:
            # The error that ended the block is the one to report (e.g. the host went away, with the
            # hint to recover its results); the failed stop is a note on it, never its replacement.
            self.close()
            exc.add_note(
                f"Stopping server {self.record.id} on host {self.host.name!r} failed too: {stop_error}. "
                + self._left_note()
            )

    def _left_note(self) -> str:
        """What stops a server this client could not stop."""
        if self.record.lease_s:
            return (
                f"Its host-side lease stops it {self.record.lease_s:g} s after the last heartbeat; running the "
                "same sweep again stops it at once."
            )
        return "It is detached: stop it with `workbench servers --stop`."

    @property
    def launch_text(self) -> str:
        """Its environment (``KEY=value``) and command line, for the failure classifier (its ``launch``)."""
        return failures.launch_text(self.command, self.variant.env)

    # -- ready wait and logs -------------------------------------------------
    def wait_ready(
        self,
        timeout_s: float | None = None,
        *,
        poll_s: float = 0.25,
        on_line: Callable[[str], None] | None = None,
        request_tokens: int | None = None,
        concurrency: int | None = None,
    ) -> None:
        """Block until the server is ready: ``GET /health_generate`` answers 200, or the log says
        "The server is fired up", whichever comes first.

        Once ready, its KV pool is read (:attr:`kv_pool`, :mod:`workbench.servers._kv_cache`) from SGLang's
        ``max_total_num_tokens=...`` log line, else, given ``request_tokens``, from ``/server_info``. A pool
        smaller than one request at the model's context, or holding fewer than half of max_running_requests
        requests of ``request_tokens``, is warned about (:class:`~workbench.servers._kv_cache.KvCacheWarning`,
        one line with what to change): the server is ready, not failed.

        Args:
            timeout_s: limit in seconds (default: see :func:`workbench.servers._watch.ready_timeout`:
                ``WORKBENCH_READY_TIMEOUT_S``, else the engine's).
            poll_s: first delay between checks; it grows to 2 s while the server loads (to
                :data:`LOCAL_MAX_POLL_S` on this machine, where the servers of a sweep start one
                after another and a check costs a local process).
            on_line: called with each log line (from the start of the log) while waiting.
            request_tokens: prompt + output tokens of a typical request it will be sent (None: unknown; the
                pool is then checked against the context only).
            concurrency: the most requests it will be sent at once (None: unknown; its max_running_requests).

        Raises:
            ServerStartError: the process group exited, the timeout passed, or its log said it
                cannot start while it still ran (a taken port: :func:`workbench.servers._failures.fatal`)
                (classified, with the log tail; the server is not stopped here).
            ConfigError: ``WORKBENCH_READY_TIMEOUT_S`` is not a number.
        """
        pool_lines: list[str] = []

        def seen(line: str) -> None:
            if kv_cache.KV_POOL_MARK in line:
                pool_lines.append(line)
            if on_line is not None:
                on_line(line)

        not_ready = watch.wait_until_ready(
            self._status,
            lambda: probe.http_status(self.url, "/health_generate", timeout_s=10),
            port=self.port,
            limit_s=watch.ready_timeout(self.engine, timeout_s),
            poll_s=poll_s,
            on_line=seen,
            launch=self.launch_text,
            max_poll_s=LOCAL_MAX_POLL_S if is_local(self.host) else 2.0,
        )
        if not_ready is not None:
            raise watch.start_error(
                not_ready,
                variant=self.variant.name,
                engine=self.engine,
                host=self.host.name,
                command=self.command,
                log_path=self.process.log_path,
                log_tail=self.logs_tail,
            )
        if self.ready_after_s is None:
            self.ready_after_s = round(registry.started_ago(self.record), 3)
        self._check_kv_pool("\n".join(pool_lines), request_tokens, concurrency)

    def _check_kv_pool(self, pool_lines: str, request_tokens: int | None, concurrency: int | None = None) -> None:
        """Read the KV pool it became ready with and warn when it is too small (the log's line; /server_info
        only when the workload's request size is known, since only then can it show a problem there)."""
        info: dict[str, Any] | None = None
        if not pool_lines and request_tokens is not None:
            try:
                info = self.server_info()
            except (ServerError, HostError):  # advice only: a server that does not say is not checked
                info = None
        self.kv_pool = kv_cache.kv_pool(pool_lines, info)
        if self.kv_pool is None:
            return
        line = self.kv_pool.warning(
            self.variant.name,
            request_tokens=request_tokens,
            concurrency=concurrency,
            mem_fraction=kv_cache.mem_fraction_static(self.command),
        )
        if line is not None:
            warnings.warn(line, kv_cache.KvCacheWarning, stacklevel=3)

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
        return watch.follow_log(self._status, from_start=from_start, poll_s=poll_s, timeout_s=timeout_s)

    def stream_log(
        self, until_ready: bool = True, *, file: IO[str] | None = None, timeout_s: float | None = None
    ) -> None:
        """Print the log's lines as they come (in a notebook: live in the cell's output).

        Args:
            until_ready: return once the server is ready (raising ServerStartError when it
                fails to start); else follow until it exits or ``timeout_s`` passes.
            file: where to print (default sys.stdout).
            timeout_s: ready timeout (until_ready) or how long to follow.
        """
        emit = watch.printer(file)
        if until_ready:
            self.wait_ready(timeout_s=timeout_s, on_line=emit)
            return
        for line in self.follow_log(timeout_s=timeout_s):
            emit(line)

    # -- queries ------------------------------------------------------------
    def status(self) -> registry.ProcessStatus:
        """The server's process group as the host sees it now (members, listening ports, heartbeat age)."""
        return registry.ProcessStatus.from_json(self._status(ports=True))

    def server_info(self) -> dict[str, Any]:
        """``GET /server_info`` (falls back to ``/get_server_info`` before 0.5.6).

        Raises:
            ServerError: the server does not answer either route.
        """
        return probe.server_info(self.url, self.variant.name)

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else ("closed" if self._closed else "running")
        return (
            f"<ServerHandle {self.record.id} {self.engine.name} on {self.host.name}:{self.port} "
            f"pgid={self.process.pgid} {state}>"
        )
