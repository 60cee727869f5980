"""Detached processes on any host: start in their own session, identify, stop by group.

Everything here is built on :meth:`Host.run` with POSIX shell lines, so the same
code path serves this machine and an SSH host. A process is identified by its
process-group id *and* its kernel start time (``/proc/<pid>/stat`` field 22), so a
recycled pid is never mistaken for the process the workbench started.
"""

from __future__ import annotations

import posixpath
import shlex
import time
from collections.abc import Mapping, Sequence

from workbench.errors import HostError
from workbench.hosts._base import Host, SpawnedProcess, env_prefix, quote_command


def spawn(
    host: Host,
    argv: Sequence[str],
    *,
    log_path: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> SpawnedProcess:
    """Start ``argv`` detached on ``host``: own session and process group, output to a log.

    The process survives the caller (and an SSH session) ending: it runs under
    ``setsid`` with stdin from /dev/null and stdout+stderr appended to ``log_path``.

    Args:
        host: where to run.
        argv: the command (each element quoted as data).
        log_path: file on the host that receives stdout and stderr (directories are made).
        env: extra environment variables.
        cwd: working directory on the host.

    Returns:
        A :class:`SpawnedProcess` with pid, pgid and start time.

    Raises:
        HostError: the process could not be started or died at once.
    """
    command = env_prefix(env) + quote_command(argv)
    log_dir = posixpath.dirname(log_path) or "."
    line = f"mkdir -p {shlex.quote(log_dir)} && "
    if cwd:
        line += f"cd {shlex.quote(cwd)} && "
    # A background job of a non-interactive shell is not a group leader, so setsid
    # turns it into a session (and group) leader in place: $! is the pid and pgid.
    # The same command then waits (up to ~1 s) until setsid has made it a group leader
    # and prints its /proc stat line, so starting costs one round trip.
    line += (
        f"{{ setsid {command} >>{shlex.quote(log_path)} 2>&1 </dev/null & }} ; p=$!; n=0; s=; "
        'while [ "$n" -lt 100 ]; do s=; read -r s 2>/dev/null </proc/"$p"/stat || break; '
        'r=${s##*) }; set -- $r; [ "$3" = "$p" ] && break; n=$((n+1)); sleep 0.01 2>/dev/null; done; '
        'echo "$p"; echo "$s"'
    )
    result = host.run(line, timeout_s=60)
    out = result.stdout.rstrip("\n").split("\n")
    try:
        pid = int(out[-2] if len(out) >= 2 else out[-1])
    except (ValueError, IndexError) as exc:
        raise HostError(f"Could not start `{command}` on host {host.name!r}: no pid returned") from exc
    info = _parse_stat(out[-1]) if len(out) >= 2 else None
    if info is None:
        tail = read_tail(host, log_path)
        raise HostError(f"Process `{command}` on host {host.name!r} exited immediately; log {log_path}:\n{tail}")
    pgid, start_time = info
    return SpawnedProcess(host=host.name, pid=pid, pgid=pgid, start_time=start_time, command=command, log_path=log_path)


def _parse_stat(text: str) -> tuple[int, int] | None:
    """(pgrp, starttime) from a ``/proc/<pid>/stat`` line; None when empty, malformed or a zombie."""
    if not text.strip():
        return None
    # The command name (field 2) may hold spaces or ')': split after the last ')'.
    rest = text.rsplit(")", 1)[-1].split()
    try:
        state, pgrp, start = rest[0], int(rest[2]), int(rest[19])
    except (IndexError, ValueError):
        return None
    if state in ("Z", "X"):
        return None
    return pgrp, start


def process_stat(host: Host, pid: int) -> tuple[int, int] | None:
    """(pgid, start_time) of ``pid`` on ``host``, or None when no such process (or a zombie).

    Fields from ``/proc/<pid>/stat``: 5 (pgrp) and 22 (starttime, clock ticks since boot).
    """
    res = host.run(["cat", f"/proc/{int(pid)}/stat"], check=False, timeout_s=30)
    if not res.ok or not res.stdout:
        return None
    return _parse_stat(res.stdout)


def is_alive(host: Host, proc: SpawnedProcess) -> bool:
    """True while the exact process started (same pid and start time) still runs."""
    info = process_stat(host, proc.pid)
    return info is not None and info[1] == proc.start_time


def group_members(host: Host, pgid: int, *, since: int | None = None) -> list[int]:
    """Pids of live (non-zombie) processes in process group ``pgid`` on ``host``.

    One shell loop over ``/proc/*/stat`` using the ``read`` builtin (no process per
    entry), so it costs one short command however many processes the host runs.

    Args:
        host: where to look.
        pgid: the process group.
        since: only processes whose start time (``/proc/<pid>/stat`` field 22) is at
            least this: the leader started then and its children after, so older
            members of a reused group id are not counted as ours.
    """
    since_test = f' && [ "${{20}}" -ge {int(since)} ]' if since is not None else ""
    script = (
        "for f in /proc/[0-9]*/stat; do "
        'read -r s 2>/dev/null <"$f" || continue; r=${s##*) }; set -- $r; '
        f'[ "$3" = {int(pgid)} ] && [ "$1" != Z ] && [ "$1" != X ]{since_test} && echo "${{f#/proc/}}"; '
        "done; true"
    )
    res = host.run(["sh", "-c", script], check=False, timeout_s=60)
    return [int(line.split("/")[0]) for line in res.stdout.split() if line.split("/")[0].isdigit()]


def stop(host: Host, proc: SpawnedProcess, *, grace_s: float = 15.0, term_leader_only: bool = False) -> str:
    """Stop the process group of ``proc``: SIGTERM, wait ``grace_s`` seconds, then SIGKILL the group.

    Never signals by name, and never signals a group whose leader is a different
    process than the one started (pid reused): when the leader's pid now belongs to
    a process with another start time and leads its own group, nothing is signalled.
    Members are counted only when they started no earlier than the leader.

    Args:
        grace_s: seconds from SIGTERM until the group is sent SIGKILL (default 15).
        term_leader_only: send the SIGTERM to the leader alone (while it runs) and let it stop its children
            in its own order; the SIGKILL after the grace still goes to the whole group. For a leader
            that shuts its node down itself: ``ray start --block`` stopped a head's 20 processes in 4.9 and
            6.2 s this way, while the same SIGTERM sent to its whole group at once took 34 s (twice), its
            raylet and GCS server outliving it (Ray 2.60; docs/FLEET.md). Default False: the whole group.

    Returns:
        How it ended, nothing of the group left running in each case: ``"gone"`` (nothing of it was
        running: nothing was signalled), ``"stopped"`` (gone within ``grace_s`` of the SIGTERM) or
        ``"killed"`` (still running ``grace_s`` after the SIGTERM: SIGKILL ended it).

    Raises:
        HostError: processes of the group survived SIGKILL.
    """
    info = process_stat(host, proc.pid)
    if info is not None and info[1] != proc.start_time and proc.pgid == proc.pid:
        return "gone"  # the pid (and so the group id) was reused: what we started is gone
    leader_ok = info is not None and info[1] == proc.start_time
    if not leader_ok and not group_members(host, proc.pgid, since=proc.start_time):
        return "gone"
    target = str(proc.pid) if term_leader_only and leader_ok else f"-{proc.pgid}"
    host.run(["kill", "-TERM", target], check=False, timeout_s=30)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not group_members(host, proc.pgid, since=proc.start_time):
            return "stopped"
        time.sleep(0.2)
    host.run(["kill", "-KILL", f"-{proc.pgid}"], check=False, timeout_s=30)
    for _ in range(50):
        left = group_members(host, proc.pgid, since=proc.start_time)
        if not left:
            return "killed"
        time.sleep(0.1)
    raise HostError(
        f"Process group {proc.pgid} on host {host.name!r} survived SIGKILL (pids {left}); "
        "check them with `ps -o pid,stat,cmd -g <pgid>`."
    )


def read_tail(host: Host, path: str, *, lines: int = 60) -> str:
    """The last ``lines`` lines of a text file on the host ('' when it does not exist)."""
    res = host.run(["tail", "-n", str(int(lines)), path], check=False, timeout_s=30)
    return res.stdout if res.ok else ""
