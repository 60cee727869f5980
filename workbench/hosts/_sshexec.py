"""Run one shell command on an SSH session channel: wrapper, output draining, timeout.

sshd runs the command with the login shell as the leader of a new session (OpenSSH
calls ``setsid`` for pty-less sessions), so the command's process group id is the
shell's pid. The wrapper below re-executes the command under ``/bin/sh`` (so the
line is POSIX sh whatever the login shell) after printing one marker line with its
pid and process group, which lets a timeout kill the whole group over a second
channel. Anything a login rc file prints before the marker is dropped.

stdout and stderr are drained by two threads, so a command that fills both streams
(10 MiB each) cannot stall on SSH flow control.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
import threading
import time
from collections.abc import Callable

import paramiko

log = logging.getLogger(__name__)

#: Bytes asked for per ``recv`` call.
CHUNK = 1 << 16
#: Marker that opens the first stdout line the wrapper prints: ``MARKER pid pgid``.
MARKER = b"__workbench_pid__ "
#: How much stdout is scanned for the marker before giving up on it.
MAX_HEAD = 1 << 20
#: Exit status reported for a command killed at its timeout (as ``LocalHost``: -SIGKILL).
KILLED_STATUS = -9
#: Exit status paramiko reports when sshd sent no exit status (killed by a signal, or lost).
NO_STATUS = -1

_WRAPPER = (
    "read -r _ _ _ _ pg _ </proc/$$/stat 2>/dev/null; "
    'printf "__workbench_pid__ %s %s\\n" "$$" "${pg:-0}"; '
    'exec /bin/sh -c "$1"'
)


def wrap(command: str) -> str:
    """The line handed to sshd for ``command`` (a POSIX sh line, quoted as one argument)."""
    return f"exec /bin/sh -c {shlex.quote(_WRAPPER)} sh {shlex.quote(command)}"


@dataclasses.dataclass(frozen=True)
class ExecOutcome:
    """What came back from one channel.

    Attributes:
        exit_status: the command's exit status; :data:`KILLED_STATUS` after a
            timeout; :data:`NO_STATUS` when sshd sent none.
        stdout: raw standard output (wrapper marker removed).
        stderr: raw standard error.
        timed_out: the command was killed at its timeout.
        lost: the connection dropped before the command finished.
    """

    exit_status: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    lost: bool


class _Drain(threading.Thread):
    """Reads one stream of a channel until EOF (or the channel closes)."""

    def __init__(self, recv: Callable[[int], bytes], name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._recv = recv
        self.chunks: list[bytes] = []

    def run(self) -> None:
        try:
            while True:
                data = self._recv(CHUNK)
                if not data:
                    return
                self.feed(data)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            log.debug("channel read ended: %s", exc)
        finally:
            self.finish()

    def feed(self, data: bytes) -> None:
        self.chunks.append(data)

    def finish(self) -> None:
        """Called once at EOF."""

    def data(self) -> bytes:
        return b"".join(self.chunks)


class _StdoutDrain(_Drain):
    """stdout drain that picks the wrapper's marker line out of the first bytes."""

    def __init__(self, recv: Callable[[int], bytes], name: str) -> None:
        super().__init__(recv, name)
        self.pid: int | None = None
        self.pgid: int | None = None
        self.marker_done = threading.Event()
        self._head = bytearray()

    def feed(self, data: bytes) -> None:
        if self.marker_done.is_set():
            self.chunks.append(data)
            return
        self._head += data
        start = self._head.find(MARKER)
        end = self._head.find(b"\n", start) if start >= 0 else -1
        if end >= 0:
            fields = self._head[start + len(MARKER) : end].split()
            if len(fields) == 2 and all(f.isdigit() for f in fields):
                self.pid, self.pgid = int(fields[0]), int(fields[1])
            self.chunks.append(bytes(self._head[end + 1 :]))
            self._head.clear()
            self.marker_done.set()
        elif len(self._head) > MAX_HEAD:
            self.finish()

    def finish(self) -> None:
        if not self.marker_done.is_set():
            self.chunks.append(bytes(self._head))
            self._head.clear()
            self.marker_done.set()


def _feed_stdin(chan: paramiko.Channel, data: bytes) -> None:
    try:
        chan.sendall(data)
        chan.shutdown_write()
    except (OSError, EOFError, paramiko.SSHException) as exc:
        log.debug("stdin not fully sent: %s", exc)


def drain(
    chan: paramiko.Channel,
    *,
    stdin: bytes | None,
    timeout_s: float | None,
    kill: Callable[[int, int], None],
) -> ExecOutcome:
    """Collect the output and exit status of a command started with :func:`wrap`.

    Args:
        chan: a session channel on which ``exec_command(wrap(...))`` succeeded.
        stdin: bytes for standard input (None: EOF at once).
        timeout_s: seconds before the command is killed (None: no limit).
        kill: called as ``kill(pid, pgid)`` at the timeout to kill the command on
            the host (over another channel; ``pgid`` is 0 when unknown); it must
            not raise.

    Returns:
        The :class:`ExecOutcome`. The channel is closed.
    """
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    out = _StdoutDrain(chan.recv, "ssh-stdout")
    err = _Drain(chan.recv_stderr, "ssh-stderr")
    out.start()
    err.start()
    if stdin is None:
        try:
            chan.shutdown_write()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            log.debug("could not close stdin: %s", exc)  # the drains see the same failure
    else:
        threading.Thread(target=_feed_stdin, args=(chan, stdin), name="ssh-stdin", daemon=True).start()
    finished = _join(out, deadline) and _join(err, deadline)
    if not finished:
        if out.pid is not None:
            kill(out.pid, out.pgid or 0)
        chan.close()
        out.join(5)
        err.join(5)
        return ExecOutcome(KILLED_STATUS, out.data(), err.data(), timed_out=True, lost=False)
    # exit-status usually precedes EOF; allow a moment for it.
    chan.status_event.wait(5)
    status = chan.exit_status
    transport = chan.get_transport()
    lost = status == NO_STATUS and (transport is None or not transport.is_active())
    chan.close()
    return ExecOutcome(status, out.data(), err.data(), timed_out=False, lost=lost)


def _join(thread: threading.Thread, deadline: float | None) -> bool:
    thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    return not thread.is_alive()
