"""Launch a server variant on any host, or find one started earlier: the steps behind
:meth:`ServerHandle.start <workbench.servers.ServerHandle.start>` and
:meth:`~workbench.servers.ServerHandle.attach`.

The same code path serves this machine and an SSH host:

- the engine (:mod:`workbench.engines`) builds the command line; an engine that
  imports the workbench (the simulator) gets the uploaded bundle on ``PYTHONPATH``
  on a remote host;
- the server runs detached on the host (own session and process group, output to
  ``<servers_dir>/<id>.log``), listening on the host's 127.0.0.1 only;
- unless ``detached``, a host-side lease (:mod:`workbench.servers._lease`) stops a
  server whose client vanished (a killed kernel);
- every server is recorded on its host (:mod:`workbench.servers._registry`), so
  ``workbench servers`` and ``ServerHandle.attach`` find it from any client.

The handle then reaches it through ``host.forward(port)`` and waits until it is
ready (:mod:`workbench.servers._watch`). Servers are stopped by process group,
never by name (:mod:`workbench.hosts.processes`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.engines import Engine
from workbench.errors import ConfigError, HostError, ServerError
from workbench.hosts import Host, SpawnedProcess, ensure_bundle, free_port, is_local, processes
from workbench.servers import _lease as lease, _registry as registry
from workbench.variants import Variant

__all__ = ["check_gpus_free", "find_running", "gpu_list", "server_env", "spawn_server"]


def gpu_list(gpus: Sequence[int] | None) -> list[int] | None:
    """``gpus`` checked: distinct non-negative GPU indices (None stays None).

    Raises:
        ConfigError: not integers, negative, empty or repeated.
    """
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


def server_env(variant: Variant, gpus: list[int] | None) -> dict[str, str]:
    """The server's environment: the variant's ``env``, plus ``CUDA_VISIBLE_DEVICES`` for ``gpus``.

    Raises:
        ConfigError: both ``gpus`` and the variant's env set ``CUDA_VISIBLE_DEVICES``.
    """
    env = dict(variant.env)
    if gpus is not None:
        if "CUDA_VISIBLE_DEVICES" in env:
            raise ConfigError(
                f"Variant {variant.name!r} sets CUDA_VISIBLE_DEVICES in its env; pass gpus= or the env entry, not both"
            )
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    return env


def check_gpus_free(host: Host, directory: str, gpus: list[int], *, python: str) -> None:
    """Refuse GPUs that a running workbench server on ``host`` was given.

    Raises:
        ConfigError: naming each taken GPU, its server, and how to stop it.
    """
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


def spawn_server(
    host: Host,
    variant: Variant,
    engine: Engine,
    *,
    python: str,
    directory: str,
    port: int | None,
    env: Mapping[str, str],
    gpus: list[int] | None,
    options: Mapping[str, Any] | None,
    detached: bool,
    lease_s: float | None,
) -> registry.ServerRecord:
    """Start ``variant`` detached on ``host`` with its lease watchdog, and record it there.

    Args:
        host: where it runs.
        variant: what it runs.
        engine: the engine that runs it (builds the command; may need the bundle uploaded).
        python: the host's interpreter.
        directory: the host's servers directory (registry, logs, heartbeats).
        port: port on the host's loopback (None: a free one, asked of the host).
        env: the server's environment (see :func:`server_env`).
        gpus: the GPUs it was given (recorded; None: not set).
        options: engine options for the command line (the simulator's ``--sim-*``).
        detached: no watchdog and no heartbeat file.
        lease_s: the watchdog's lease in seconds (None when detached).

    Returns:
        Its registry record (as written on the host).

    Raises:
        ConfigError: ``options`` the engine does not take.
        HostError: the host could not start it; the process was stopped first.
    """
    env = dict(env)
    port = port or free_port(host, python)
    if engine.uploads_workbench and not is_local(host):
        env["PYTHONPATH"] = ensure_bundle(host)
    argv = engine.launch_argv(variant, python=python, port=port, options=options)
    server_id = registry.new_server_id(variant.name, port)
    base = f"{directory}/{server_id}"
    heartbeat_path = f"{base}.heartbeat"
    if not detached:
        lease.touch(host, heartbeat_path)
    proc = processes.spawn(host, argv, log_path=f"{base}.log", env=env or None)
    try:
        watchdog = None
        if not detached:
            wd = _spawn_watchdog(
                host,
                proc,
                python=python,
                heartbeat_path=heartbeat_path,
                lease_s=lease_s,
                record_path=f"{base}.json",
                log_path=f"{base}.watchdog.log",
                owner=lease.this_process() if is_local(host) else None,
            )
            if wd is not None:
                watchdog = {"pid": wd.pid, "pgid": wd.pgid, "start_time": wd.start_time, "log_path": wd.log_path}
        return registry.write_record(
            host,
            directory,
            registry.ServerRecord(
                id=server_id,
                variant=variant.to_dict(),
                engine=engine.name,
                port=port,
                command=argv,
                pid=proc.pid,
                pgid=proc.pgid,
                start_time=proc.start_time,
                log_path=proc.log_path,
                heartbeat_path=heartbeat_path,
                watchdog=watchdog,
                lease_s=lease_s,
                detached=detached,
                gpus=gpus,
                python=python,
                started_at=time.time(),
                client=registry.client_info(),
            ),
        )
    except BaseException:
        processes.stop(host, proc, grace_s=5)
        raise


def find_running(host: Host, directory: str, server: str | int, *, python: str,
                 renew_lease: bool) -> registry.ServerRecord:  # fmt: skip
    """The record of a running workbench server on ``host``, by id, unique id prefix or port.

    Args:
        host: the host.
        directory: its servers directory.
        server: the server's id (or a unique prefix) or its port.
        python: the host's interpreter for the helpers.
        renew_lease: touch its heartbeat file now (when its watchdog runs), so the lease
            does not run out before the handle's first heartbeat.

    Raises:
        ServerError: no such server, several match, or it is not running any more.
    """
    entries = registry.list_servers(host, directory, python=python, ports=False)
    entry = registry.find_server(entries, server, host_name=host.name)
    if not entry.status.alive:
        raise ServerError(
            f"Server {entry.record.id} on host {host.name!r} is not running ({entry.state}); its log is "
            f"{entry.record.log_path}. Remove its record with `workbench servers --host {host.name} --stop "
            f"{entry.record.id}`."
        )
    if renew_lease and entry.watchdog is not None and entry.watchdog.alive:
        lease.touch(host, entry.record.heartbeat_path)
    return entry.record


def _spawn_watchdog(host: Host, server: SpawnedProcess, **kwargs: Any) -> SpawnedProcess | None:
    """:func:`lease.spawn_watchdog`, or None when the server already exited (its watchdog exits at once too;
    the ready wait then reports the server's failure)."""
    try:
        return lease.spawn_watchdog(host, server, **kwargs)
    except HostError:
        if processes.is_alive(host, server) or processes.group_members(host, server.pgid, since=server.start_time):
            raise
        return None
