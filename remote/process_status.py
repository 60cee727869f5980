#!/usr/bin/env python3
"""Status of processes the workbench started on this host, and new lines of their logs, answer JSON.

Runs ON the host with any Python 3.8 or newer, standard library only, reading
``/proc`` (Linux). A process is named by its process group and the kernel start
time of its leader (``/proc/<pid>/stat`` fields 5 and 22), never by a bare pid: a
pid that was reused by an unrelated process is reported as not ours.

Request::

    {"processes": [{"id": "baseline-31000-ab12cd",  # caller's name for it (echoed)
                    "pid": 4242, "pgid": 4242, "start_time": 1234567,
                    "log_path": "/root/.cache/.../x.log",   # optional: read the log
                    "log_offset": 0,                        # byte offset to read from
                    "heartbeat_path": "/root/.../x.heartbeat"}],  # optional: its age
     "registry_dir": "~/.cache/specbench-workbench/servers",  # optional: every <id>.json there
     "ports": true,            # listening TCP ports of each group (default true)
     "max_log_bytes": 1048576} # most log bytes returned per process (default 1 MiB)

Answer::

    {"ok": true, "now": 1700000000.0,
     "processes": [STATUS, ...],
     "records": [{"path": ".../x.json", "record": {...}, "status": STATUS,
                  "watchdog": STATUS | null, "error": null}]}

where ``STATUS`` is ``{"id", "alive", "leader_alive", "pid_reused", "members",
"ports", "log", "heartbeat_age_s"}``: ``alive`` is true while any process of the
group runs (a leader that exited can leave children behind); ``members`` lists
their pids; ``ports`` the TCP ports they listen on; ``log`` is null or
``{"text", "offset", "size", "reset"}`` with the complete lines after
``log_offset`` (a partial last line is held back while the group runs) and the
offset to ask for next (``reset`` is true when the file shrank and was read from
the start); ``heartbeat_age_s`` is seconds since the heartbeat file was touched
(null without one).
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]  # _common.py lies beside (also under python -I)
import _common  # noqa: E402
from _common import RequestError  # noqa: E402

DEFAULT_MAX_LOG_BYTES = 1 << 20


def listening_ports(pids):
    """Sorted TCP ports in LISTEN state held by any of ``pids`` (sockets we may inspect)."""
    inodes = set()
    for pid in pids:
        for fd in glob.glob("/proc/%d/fd/*" % pid):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    if not inodes:
        return []
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, "r") as fh:
                lines = fh.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def read_log(path, offset, max_bytes, complete_lines_only):
    """New text of a log file after ``offset`` (see module docstring), or an error dict."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        return {"text": "", "offset": offset, "size": None, "reset": False, "error": exc.strerror}
    reset = size < offset
    if reset:
        offset = 0
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(max_bytes)
    except OSError as exc:
        return {"text": "", "offset": offset, "size": size, "reset": reset, "error": exc.strerror}
    if complete_lines_only and data and not data.endswith(b"\n") and len(data) < max_bytes:
        cut = data.rfind(b"\n")
        data = data[: cut + 1] if cut >= 0 else b""
    return {
        "text": data.decode("utf-8", "replace"),
        "offset": offset + len(data),
        "size": size,
        "reset": reset,
        "error": None,
    }


def _int(spec, key):
    value = spec.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RequestError("process %r: %r must be an integer" % (spec.get("id"), key))
    return value


def status_of(spec, groups, now, ports, max_log_bytes):
    """STATUS for one process spec, given the scanned groups."""
    pid, pgid, start = _int(spec, "pid"), _int(spec, "pgid"), _int(spec, "start_time")
    leader = _common.read_stat(pid)
    leader_alive = leader is not None and leader[0] not in _common.EXITED_STATES and leader[2] == start
    pid_reused = leader is not None and leader[2] != start
    members = _common.group_members(pgid, pid, start, groups)
    status = {
        "id": spec.get("id"),
        "alive": bool(members) or leader_alive,
        "leader_alive": leader_alive,
        "pid_reused": pid_reused,
        "members": members,
        "ports": [],
        "log": None,
        "heartbeat_age_s": None,
    }
    if ports and members:
        status["ports"] = listening_ports(members)
    log_path = spec.get("log_path")
    if log_path:
        offset = spec.get("log_offset") or 0
        status["log"] = read_log(
            os.path.expanduser(log_path), int(offset), max_log_bytes, complete_lines_only=status["alive"]
        )
    heartbeat = spec.get("heartbeat_path")
    if heartbeat:
        try:
            status["heartbeat_age_s"] = max(0.0, now - os.stat(os.path.expanduser(heartbeat)).st_mtime)
        except OSError:
            status["heartbeat_age_s"] = None
    return status


def load_records(directory):
    """``[(path, record or None, error or None)]`` for every ``*.json`` in the registry directory."""
    out = []
    for path in sorted(glob.glob(os.path.join(os.path.expanduser(directory), "*.json"))):
        try:
            with open(path, "r", encoding="utf-8") as fh:
                record = json.load(fh)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            out.append((path, record, None))
        except (OSError, ValueError) as exc:
            out.append((path, None, "%s: %s" % (type(exc).__name__, exc)))
    return out


def answer(request):
    """The answer object for a parsed request."""
    now = time.time()
    ports = bool(request.get("ports", True))
    max_log = int(request.get("max_log_bytes") or DEFAULT_MAX_LOG_BYTES)
    specs = list(request.get("processes", []))
    records = load_records(request["registry_dir"]) if request.get("registry_dir") else []
    pgids = [s.get("pgid") for s in specs]
    for _, record, _ in records:
        if record:
            pgids.append(record.get("pgid"))
            if isinstance(record.get("watchdog"), dict):
                pgids.append(record["watchdog"].get("pgid"))
    groups = _common.scan_groups(p for p in pgids if isinstance(p, int))
    reply = {
        "ok": True,
        "now": now,
        "processes": [status_of(s, groups, now, ports, max_log) for s in specs],
        "records": [],
    }
    for path, record, error in records:
        entry = {"path": path, "record": record, "status": None, "watchdog": None, "error": error}
        if record is not None:
            try:
                spec = {k: record.get(k) for k in ("id", "pid", "pgid", "start_time", "heartbeat_path")}
                entry["status"] = status_of(spec, groups, now, ports, max_log)
                if isinstance(record.get("watchdog"), dict):
                    entry["watchdog"] = status_of(dict(record["watchdog"], id="watchdog"), groups, now, False, max_log)
            except RequestError as exc:
                entry["error"] = "malformed record: %s" % exc
        reply["records"].append(entry)
    return reply


def parse_request(raw):
    """The request object from stdin bytes."""
    request = _common.load_request(raw, empty_means_defaults=True)
    specs = request.get("processes", [])
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise RequestError("'processes' must be a list of objects")
    for spec in specs:
        for key in ("pid", "pgid", "start_time"):
            _int(spec, key)
    if not os.path.isdir("/proc/self"):
        raise RequestError("this host has no /proc (process status needs Linux)")
    return request


def main():
    """Read the request from stdin, write the answer to stdout; return the exit status."""
    return _common.serve(lambda raw: answer(parse_request(raw)))


if __name__ == "__main__":
    sys.exit(main())
