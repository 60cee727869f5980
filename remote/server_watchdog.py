#!/usr/bin/env python3
"""Host-side lease for a server the workbench started: stop it when its client stops heartbeating.

Runs ON the host next to the server, detached in its own session (the workbench
spawns it right after the server), with any Python 3.8 or newer and nothing but
the standard library. The client (a notebook kernel) touches the heartbeat file
every ~30 s from a background thread; a kernel that was killed runs no atexit
handler, so this process is what stops its server::

    python3 server_watchdog.py --pid 4242 --pgid 4242 --start-time 1234567 \\
        --heartbeat ~/.cache/specbench-workbench/servers/x.heartbeat --lease-s 600 \\
        [--check-s 30] [--grace-s 15] [--log x.log] [--record x.json] [--owner-pid 777 --owner-start 99]

Every ``--check-s`` seconds it looks at the server's process group (identified by
pgid and the leader's kernel start time, so a reused pid is never signalled):

- the group is gone: exit 0 (the server stopped, or was stopped);
- the heartbeat file is older than ``--lease-s`` seconds (or missing for that long
  since the watchdog started): SIGTERM the group, wait ``--grace-s`` seconds,
  SIGKILL what is left, append a line saying so to the server's ``--log`` (prefix
  ``[workbench watchdog]``), mark ``--record`` (a registry JSON file) with
  ``stopped_by: "lease"`` and exit 0;
- ``--owner-pid`` was given (the client runs on this same machine) and that process
  is gone (``kill -9`` of a notebook kernel or a ``workbench bench``): checked every
  second, the group is stopped the same way at once and its record and heartbeat file are
  removed (as the client's own stop would).

It ignores SIGHUP and exits quietly on SIGTERM (the client stopping it on purpose).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]  # _common.py lies beside (also under python -I)
import _common  # noqa: E402

PREFIX = "[workbench watchdog]"


def note(log_path, message):
    """Append one line to the server's log (best effort)."""
    if not log_path:
        return
    line = "[%s] %s %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), PREFIX, message)
    try:
        with open(log_path, "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:
        pass


def mark_record(record_path, **fields):
    """Add ``fields`` to the registry record (atomic replace; best effort)."""
    if not record_path:
        return
    try:
        with open(record_path, "r", encoding="utf-8") as fh:
            record = json.load(fh)
        record.update(fields)
        tmp = "%s.%d.tmp" % (record_path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1, sort_keys=True)
        os.replace(tmp, record_path)
    except (OSError, ValueError):
        pass


def stop_group(args):
    """SIGTERM the group, wait, SIGKILL the rest. Returns the pids still alive after SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, args.grace_s), (signal.SIGKILL, 5.0)):
        if not _common.group_members(args.pgid, args.pid, args.start_time):
            return []
        try:
            os.killpg(args.pgid, sig)
        except ProcessLookupError:
            return []
        except PermissionError as exc:
            note(args.log, "cannot signal process group %d: %s" % (args.pgid, exc))
            return _common.group_members(args.pgid, args.pid, args.start_time)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _common.group_members(args.pgid, args.pid, args.start_time):
                return []
            time.sleep(0.2)
    return _common.group_members(args.pgid, args.pid, args.start_time)


#: Seconds between checks of the owner process (a local client killed with -9 is noticed this fast).
OWNER_CHECK_S = 1.0


def heartbeat_age(path, since):
    """Seconds since the heartbeat file was touched (since ``since`` when it is missing)."""
    try:
        return time.time() - os.stat(path).st_mtime
    except OSError:
        return time.time() - since


def owner_gone(args):
    """True when ``--owner-pid`` was given and that process (same start time) is gone or a zombie."""
    if not args.owner_pid:
        return False
    stat = _common.read_stat(args.owner_pid)
    return stat is None or stat[0] == "Z" or (args.owner_start is not None and stat[2] != args.owner_start)


def watch(args):
    """The watch loop; returns the exit status."""
    started = time.time()
    while True:
        if not _common.group_members(args.pgid, args.pid, args.start_time):
            return 0
        if owner_gone(args):
            note(
                args.log,
                "owner process %d (the client that started this server, on this machine) is gone; "
                "stopping process group %d" % (args.owner_pid, args.pgid),
            )
            left = stop_group(args)
            if left:
                note(args.log, "process group %d survived SIGKILL: pids %s" % (args.pgid, left))
            # stopped as its owner would have: its registry record and heartbeat go too (a lease stop keeps
            # the record, marked, to tell the user why the server is gone)
            for path in (args.record, args.heartbeat):
                try:
                    if path and not left:
                        os.remove(path)
                except OSError:
                    pass
            return 0
        age = heartbeat_age(args.heartbeat, started)
        if age > args.lease_s:
            note(
                args.log,
                "lease expired: no client heartbeat for %.0f s (lease %.0f s); stopping process "
                "group %d" % (age, args.lease_s, args.pgid),
            )
            left = stop_group(args)
            if left:
                note(args.log, "process group %d survived SIGKILL: pids %s" % (args.pgid, left))
            else:
                note(args.log, "process group %d stopped, nothing left" % args.pgid)
            mark_record(args.record, stopped_by="lease", stopped_at=time.time(), lease_age_s=round(age, 1))
            return 0
        wait = min(args.check_s, max(0.2, args.lease_s - age + 0.05))
        time.sleep(min(wait, OWNER_CHECK_S) if args.owner_pid else wait)


def parse_args(argv):
    p = argparse.ArgumentParser(description="Stop a server whose client stopped heartbeating.")
    p.add_argument("--pid", type=int, required=True, help="server leader pid")
    p.add_argument("--pgid", type=int, required=True, help="server process group")
    p.add_argument("--start-time", type=int, required=True, help="leader start time (/proc/<pid>/stat field 22)")
    p.add_argument("--heartbeat", required=True, help="file the client touches")
    p.add_argument("--lease-s", type=float, required=True, help="stop after this many seconds without a heartbeat")
    p.add_argument("--check-s", type=float, default=30.0, help="seconds between checks")
    p.add_argument("--grace-s", type=float, default=15.0, help="seconds between SIGTERM and SIGKILL")
    p.add_argument("--log", default=None, help="server log to note the stop in")
    p.add_argument("--record", default=None, help="registry record to mark")
    p.add_argument(
        "--owner-pid",
        type=int,
        default=None,
        help="the client's pid when it runs on this machine: stop the server as soon as it is gone",
    )
    p.add_argument("--owner-start", type=int, default=None, help="the owner's start time (/proc stat field 22)")
    args = p.parse_args(argv)
    args.heartbeat = os.path.expanduser(args.heartbeat)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    return watch(args)


if __name__ == "__main__":
    sys.exit(main())
