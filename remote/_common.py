"""What the remote helper scripts share: the JSON request/answer protocol and reading ``/proc``.

Not a helper itself: every script in ``remote/`` imports it from its own directory.
Here that is the repository's ``remote/``; on another host
:func:`workbench.hosts._helpers.helper_path` uploads this file beside each script
(``~/.cache/specbench-workbench/remote/<key>/``, the key covering both files).
Python 3.8 or newer, standard library only.

The protocol (see :mod:`workbench.hosts._helpers`): one JSON object on stdin, one
JSON object on stdout. A refused request is answered
``{"ok": false, "error": "...", "kind": "request"}`` with exit status 2, an
unexpected failure ``{"ok": false, "error": "...", "kind": "internal",
"traceback": "..."}`` with exit status 1.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

#: Exit status of a refused request.
REQUEST_STATUS = 2
#: Exit status of an unexpected failure.
INTERNAL_STATUS = 1
#: Most characters of a traceback put in an internal-error answer.
TRACEBACK_CHARS = 4000
#: ``/proc/<pid>/stat`` states of a process that has exited (zombie, dead).
EXITED_STATES = ("Z", "X")


class RequestError(Exception):
    """The request cannot be answered (answered with kind "request", exit status 2)."""


def load_request(raw, empty_means_defaults=False):
    """The JSON object in the request bytes ``raw``.

    Args:
        raw: stdin as bytes.
        empty_means_defaults: answer ``{}`` for empty (or blank) input instead of refusing it.

    Raises:
        RequestError: not UTF-8 JSON, or not a JSON object.
    """
    if empty_means_defaults and not raw.strip():
        return {}
    try:
        request = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        raise RequestError("request is not valid UTF-8 JSON: %s" % exc)
    if not isinstance(request, dict):
        raise RequestError("request must be a JSON object")
    return request


def serve(respond, stdin=None, stdout=None):
    """Answer one request: read stdin, write ``respond(raw)`` (or the error answer) as one JSON line.

    Args:
        respond: called with the request bytes; returns the answer dict, or raises
            :class:`RequestError` for a refused request.
        stdin: binary stream to read (default ``sys.stdin.buffer``).
        stdout: text stream to write (default ``sys.stdout``).

    Returns:
        The exit status: 0 answered, 2 refused, 1 failed unexpectedly.
    """
    stdin = sys.stdin.buffer if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    try:
        reply, status = respond(stdin.read()), 0
    except RequestError as exc:
        reply, status = {"ok": False, "error": str(exc), "kind": "request"}, REQUEST_STATUS
    except Exception as exc:  # noqa: BLE001 - the script's boundary: always answer JSON
        reply = {
            "ok": False,
            "error": "%s: %s" % (type(exc).__name__, exc),
            "kind": "internal",
            "traceback": traceback.format_exc()[-TRACEBACK_CHARS:],
        }
        status = INTERNAL_STATUS
    stdout.write(json.dumps(reply, ensure_ascii=True))
    stdout.write("\n")
    stdout.flush()
    return status


# -- /proc ----------------------------------------------------------------------------------


def read_stat(pid):
    """(state, pgrp, start_time) of ``pid`` from ``/proc/<pid>/stat`` (fields 3, 5, 22), or None when it is gone.

    ``start_time`` is in clock ticks since boot: with the pid it names one process,
    even after the pid is reused.
    """
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    # Field 2 (the command name) may hold spaces or ')': split after the last ')'.
    rest = raw.rsplit(")", 1)[-1].split()
    try:
        return rest[0], int(rest[2]), int(rest[19])
    except (IndexError, ValueError):
        return None


def scan_groups(pgids):
    """``{pgid: [(pid, start_time), ...]}`` of the live (not exited) processes in those process groups."""
    wanted = set(pgids)
    found = {pgid: [] for pgid in wanted}
    if not wanted:
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = read_stat(int(entry))
        if stat is None:
            continue
        state, pgrp, start = stat
        if pgrp in wanted and state not in EXITED_STATES:
            found[pgrp].append((int(entry), start))
    return found


def group_members(pgid, leader_pid, leader_start, groups=None):
    """Sorted live pids of a process group that are ours.

    A group is named by its pgid and its leader's start time: members that started
    before the leader are not ours, and when the leader's pid (which is the pgid)
    now belongs to a process started at another time, none are.

    Args:
        pgid: the process group.
        leader_pid: the pid that started it.
        leader_start: that process's start time (``/proc/<pid>/stat`` field 22).
        groups: :func:`scan_groups` output to use (default: scan ``/proc`` for this group).
    """
    leader = read_stat(leader_pid)
    if leader is not None and leader[2] != leader_start and pgid == leader_pid:
        return []
    if groups is None:
        groups = scan_groups([pgid])
    return sorted(pid for pid, started in groups.get(pgid, []) if started >= leader_start)
