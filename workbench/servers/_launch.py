"""Launch a server variant on any host and wait until it is ready, or attach to one started earlier.

:class:`ServerHandle <workbench.servers.ServerHandle>` gets :meth:`~Launching.start`
and :meth:`~Launching.attach` from :class:`Launching`. The same code path serves
this machine and an SSH host:

- the server runs detached on the host (own session and process group, output to
  ``<servers_dir>/<id>.log``), listening on the host's 127.0.0.1 only;
- this process reaches it through ``host.forward(port)`` (this machine: the port
  itself), so the handle's ``url`` is a local URL either way;
- it is ready when ``GET /health_generate`` answers 200 through the forward, or the
  log says "The server is fired up", whichever comes first
  (:mod:`workbench.servers._watch`);
- a failed start is classified from the log (:mod:`workbench.servers._failures`)
  and raised as :class:`~workbench.errors.ServerStartError` with kind, suggestion
  and log tail, after the process group was stopped;
- unless ``detached``, a host-side lease (:mod:`workbench.servers._lease`) stops a
  server whose client vanished (a killed kernel);
- every server is recorded on its host (:mod:`workbench.servers._registry`), so
  ``workbench servers`` and :meth:`~Launching.attach` find it from any client.

Servers are stopped by process group, never by name (:mod:`workbench.hosts._processes`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, HostError, ServerError
from workbench.hosts import Host, LocalHost, SpawnedProcess, get_host
from workbench.hosts import processes
from workbench.servers import _lease as lease, _registry as registry
from workbench.hosts import ensure_bundle
from workbench.hosts import free_port, host_python, servers_dir
from workbench.variants import Engine, Variant
from workbench.servers._watch import printer

if TYPE_CHECKING:
    from workbench.servers._handle import ServerHandle


class Launching:
    """The constructors of :class:`~workbench.servers.ServerHandle`: :meth:`start` and :meth:`attach`."""

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
    ) -> ServerHandle:
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
            state_dir: registry directory on the host (default: see :mod:`workbench.hosts._env`).

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
                handle.wait_ready(timeout_s=ready_timeout_s, on_line=printer(None) if show_log else None)
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
