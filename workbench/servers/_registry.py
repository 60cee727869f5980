"""The registry of servers the workbench started on a host: one JSON file per server, on that host.

Each server gets ``<servers_dir>/<id>.json`` (see :mod:`workbench.hosts._env`)
next to its log ``<id>.log``, the client's heartbeat file ``<id>.heartbeat`` and its
watchdog's log ``<id>.watchdog.log``. The record says what runs (variant, engine,
command, port, GPUs), how to find it again (pid, pgid and the leader's kernel start
time) and how it is guarded (the watchdog's identity, the lease, whether it was
started detached on purpose). Because it lives on the host, any client can list,
attach to and stop what the workbench started there: ``workbench servers``,
:meth:`ServerHandle.attach <workbench.servers.ServerHandle.attach>`.

A host-side watchdog that stops a server whose lease ran out marks its record
(``stopped_by: "lease"``); stopping a server through the workbench removes the
record and heartbeat but keeps the logs.
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import re
import secrets
import socket
import time
from typing import Any

from workbench import paths
from workbench._version import __version__
from workbench.errors import HostError, ServerError
from workbench.hosts import Host, SpawnedProcess, processes
from workbench.hosts import call_helper
from workbench.variants import Variant

#: Version of the record layout.
SCHEMA = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def new_server_id(variant_name: str, port: int) -> str:
    """``<variant>-<port>-<6 hex>``, safe as a file name (other characters become ``_``)."""
    name = _UNSAFE.sub("_", variant_name).strip("._") or "server"
    return f"{name[:40]}-{port}-{secrets.token_hex(3)}"


@dataclasses.dataclass(frozen=True)
class ServerRecord:
    """What the registry knows of one server.

    Attributes:
        id: registry id (file stem).
        variant: the variant's definition (name, model paths, flags, env, description).
        engine: ``"sim"`` or ``"sglang"``.
        port: port on the host's loopback.
        command: argv it was started with.
        pid, pgid, start_time: the detached leader (start time: ``/proc/<pid>/stat`` field 22).
        log_path: its stdout+stderr on the host.
        heartbeat_path: file the client touches; the watchdog reads its age.
        watchdog: the watchdog process (``pid``, ``pgid``, ``start_time``, ``log_path``), or None.
        lease_s: seconds without a heartbeat before the watchdog stops it (None: no lease).
        detached: started to outlive its client on purpose (no watchdog).
        gpus: GPU indices it was given (CUDA_VISIBLE_DEVICES), or None.
        python: interpreter that runs it.
        started_at: epoch seconds (client clock).
        client: who started it (``host``, ``user``, ``pid`` on the client side).
        stopped_by: ``"lease"`` when the watchdog stopped it, else None.
        stopped_at: epoch seconds (host clock) of that stop, else None.
        path: the record's file on the host ('' before it is written).
    """

    id: str
    variant: dict[str, Any]
    engine: str
    port: int
    command: list[str]
    pid: int
    pgid: int
    start_time: int
    log_path: str
    heartbeat_path: str
    watchdog: dict[str, Any] | None
    lease_s: float | None
    detached: bool
    gpus: list[int] | None
    python: str
    started_at: float
    client: dict[str, Any]
    stopped_by: str | None = None
    stopped_at: float | None = None
    path: str = ""

    @property
    def process(self) -> SpawnedProcess:
        """The server's leader as a :class:`SpawnedProcess`."""
        return SpawnedProcess(
            host="",
            pid=self.pid,
            pgid=self.pgid,
            start_time=self.start_time,
            command=" ".join(self.command),
            log_path=self.log_path,
        )

    @property
    def watchdog_process(self) -> SpawnedProcess | None:
        """The watchdog as a :class:`SpawnedProcess`, or None."""
        w = self.watchdog
        if not w:
            return None
        return SpawnedProcess(
            host="",
            pid=int(w["pid"]),
            pgid=int(w["pgid"]),
            start_time=int(w["start_time"]),
            command="server_watchdog",
            log_path=str(w.get("log_path", "")),
        )

    def to_variant(self) -> Variant:
        """The :class:`Variant` it runs (without its source file)."""
        return Variant.from_dict(self.variant)

    def to_json(self) -> dict[str, Any]:
        """The record as written to the host (``path`` left out)."""
        out = dataclasses.asdict(self)
        out.pop("path")
        out["schema"] = SCHEMA
        out["workbench_version"] = __version__
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], *, path: str = "") -> "ServerRecord":
        """Parse a record written by :meth:`to_json` (unknown keys are ignored).

        Raises:
            ServerError: a required field is missing.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            kwargs = {k: v for k, v in data.items() if k in names}
            kwargs["path"] = path
            return cls(**kwargs)
        except TypeError as exc:
            raise ServerError(f"Server registry record {path or data.get('id')!r} is malformed: {exc}") from exc


def client_info() -> dict[str, Any]:
    """Who is starting a server (for people reading ``workbench servers``): the client's ``host``,
    ``user``, ``pid`` and ``checkout`` (the workbench checkout the client runs from,
    :data:`workbench.paths.PACKAGE_ROOT`), which scopes what ``workbench servers`` shows and stops."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = None
    return {"host": socket.gethostname(), "user": user, "pid": os.getpid(), "checkout": str(paths.PACKAGE_ROOT)}


def is_ours(record: ServerRecord) -> bool:
    """True when this checkout on this machine started ``record``'s server (its ``client`` says so).

    A record without a checkout (written before checkouts were recorded) is nobody's here: it is
    shown and stopped only when every checkout is asked for.
    """
    mine = client_info()
    client = record.client or {}
    return client.get("checkout") == mine["checkout"] and client.get("host") == mine["host"]


def owner_text(record: ServerRecord) -> str:
    """Whose server it is: ``"this checkout"``, else ``"<user>@<host>:<checkout>"`` from its record."""
    if is_ours(record):
        return "this checkout"
    client = record.client or {}
    where = client.get("checkout") or "an unrecorded checkout"
    return f"{client.get('user') or '?'}@{client.get('host') or '?'}:{where}"


def write_record(host: Host, directory: str, record: ServerRecord) -> ServerRecord:
    """Write (or replace) ``<directory>/<id>.json`` on the host; returns the record with its path."""
    path = f"{directory}/{record.id}.json"
    host.write_text(path, json.dumps(record.to_json(), indent=1, sort_keys=True) + "\n", mode=0o600)
    return dataclasses.replace(record, path=path)


def remove_record(host: Host, record: ServerRecord) -> None:
    """Delete a record and its heartbeat file (logs stay)."""
    files = [p for p in (record.path, record.heartbeat_path) if p]
    if files:
        host.run(["rm", "-f", *files], check=False, timeout_s=60)


@dataclasses.dataclass(frozen=True)
class ProcessStatus:
    """One process group's state, as the host reports it (``remote/process_status.py``).

    Attributes:
        alive: some process of the group still runs.
        leader_alive: the leader itself (same pid and start time) runs.
        members: live pids of the group.
        ports: TCP ports the group listens on.
        heartbeat_age_s: seconds since the client's last heartbeat (None: no file).
    """

    alive: bool
    leader_alive: bool
    members: list[int]
    ports: list[int]
    heartbeat_age_s: float | None

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> "ProcessStatus":
        data = data or {}
        return cls(
            alive=bool(data.get("alive")),
            leader_alive=bool(data.get("leader_alive")),
            members=list(data.get("members") or []),
            ports=list(data.get("ports") or []),
            heartbeat_age_s=data.get("heartbeat_age_s"),
        )


@dataclasses.dataclass(frozen=True)
class ServerEntry:
    """A registry record with the live status of its server and watchdog."""

    record: ServerRecord
    status: ProcessStatus
    watchdog: ProcessStatus | None

    @property
    def state(self) -> str:
        """``running``, ``stopped by lease``, or ``exited`` (gone without the workbench stopping it)."""
        if self.status.alive:
            return "running"
        return "stopped by lease" if self.record.stopped_by == "lease" else "exited"


def list_servers(host: Host, directory: str, *, python: str = "python3", ports: bool = True) -> list[ServerEntry]:
    """Every server in the registry directory on ``host`` with its live status (one round trip).

    Raises:
        HostError: the host cannot be reached or the helper fails.
    """
    answer = call_helper(host, "process_status", {"registry_dir": directory, "ports": ports}, python=python)
    entries = []
    for item in answer.get("records", []):
        if item.get("record") is None or item.get("error"):
            continue  # unreadable or foreign file: not ours to show
        try:
            record = ServerRecord.from_json(item["record"], path=item["path"])
        except ServerError:
            continue
        watchdog = ProcessStatus.from_json(item["watchdog"]) if item.get("watchdog") else None
        entries.append(ServerEntry(record, ProcessStatus.from_json(item.get("status")), watchdog))
    return sorted(entries, key=lambda e: e.record.started_at)


def find_server(entries: list[ServerEntry], server: str | int, *, host_name: str) -> ServerEntry:
    """The entry whose id (or unique id prefix) or port is ``server``; running ones win on a port.

    Raises:
        ServerError: none or several match (the message lists what is there).
    """
    if isinstance(server, int) or (isinstance(server, str) and server.isdigit()):
        port = int(server)
        found = [e for e in entries if e.record.port == port]
        running = [e for e in found if e.status.alive]
        found = running or found
    else:
        found = [e for e in entries if e.record.id == server] or [e for e in entries if e.record.id.startswith(server)]
    if len(found) == 1:
        return found[0]
    listing = "\n".join(f"  {e.record.id} port {e.record.port} {e.state}" for e in entries) or "  (none)"
    what = "several servers match" if found else "no server matches"
    raise ServerError(f"On host {host_name!r} {what} {server!r}. The workbench's servers there:\n{listing}")


def stop_entry(host: Host, entry: ServerEntry, *, grace_s: float = 15.0) -> None:
    """Stop a registered server's process group and its watchdog, then drop its record.

    Raises:
        HostError: processes of the group survived SIGKILL (the record is kept).
    """
    record = entry.record
    processes.stop(host, record.process, grace_s=grace_s)
    watchdog = record.watchdog_process
    if watchdog is not None:
        processes.stop(host, watchdog, grace_s=2.0)
    left = processes.group_members(host, record.pgid) if entry.status.alive else []
    if left:
        raise HostError(f"Server {record.id} on host {host.name!r}: pids {left} of group {record.pgid} are left.")
    remove_record(host, record)


def age_text(seconds: float | None) -> str:
    """``"12s"``, ``"5m"``, ``"3h"`` or ``"-"``."""
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.0f}h"


def started_ago(record: ServerRecord, *, now: float | None = None) -> float:
    """Seconds since the record's start (client clock)."""
    return max(0.0, (time.time() if now is None else now) - record.started_at)
