"""The :class:`Host` interface: where commands run and files live.

One interface for this machine and remote GPU hosts. Hosts implement a few
primitives (``_execute``, ``_spawn``, ``read_bytes``, ``write_bytes``); this module
owns argument quoting, timeouts and result/error shaping once for all of them.
"""

from __future__ import annotations

import abc
import dataclasses
import shlex
from collections.abc import Mapping, Sequence

from workbench.errors import CommandError, CommandTimeout

#: How many characters of stderr an error message quotes.
TAIL_CHARS = 2000


@dataclasses.dataclass(frozen=True)
class CommandResult:
    """What one finished command produced.

    Attributes:
        host: the host's name (``"local"`` or an ssh alias).
        command: the command line as run (a shell string, every argument quoted).
        exit_status: the process's exit status (negative: killed by that signal).
        stdout: decoded standard output.
        stderr: decoded standard error.
        duration_s: wall-clock run time in seconds.
        timed_out: True when the command was killed at its timeout.
    """

    host: str
    command: str
    exit_status: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """True when the command exited 0 and was not killed."""
        return self.exit_status == 0 and not self.timed_out

    def tail(self, stream: str = "stderr", chars: int = TAIL_CHARS) -> str:
        """The last ``chars`` characters of ``stream`` (``"stdout"`` or ``"stderr"``)."""
        text = getattr(self, stream)
        return text[-chars:]

    def describe(self) -> str:
        """One paragraph naming host, command, status, duration and the stderr tail."""
        state = "timed out" if self.timed_out else f"exited {self.exit_status}"
        msg = f"on host {self.host!r}: `{self.command}` {state} after {self.duration_s:.1f} s"
        tail = self.tail().strip()
        if tail:
            msg += f"\n--- stderr (tail) ---\n{tail}"
        return msg


def quote_command(argv: Sequence[str] | str) -> str:
    """Render ``argv`` as one shell command line, every element quoted as data.

    A string is taken as an already-built shell line and returned unchanged, so
    callers that need pipes or redirection say so explicitly.
    """
    if isinstance(argv, str):
        return argv
    return " ".join(shlex.quote(str(a)) for a in argv)


def env_prefix(env: Mapping[str, str] | None) -> str:
    """``env K=V ...`` prefix (quoted) for a command line, or ``""`` when ``env`` is empty."""
    if not env:
        return ""
    for key in env:
        if not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise ValueError(f"invalid environment variable name {key!r}")
    return "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " "


@dataclasses.dataclass(frozen=True)
class SpawnedProcess:
    """A detached process started by :meth:`Host.spawn`.

    Attributes:
        host: the host's name.
        pid: process id, which is also its process-group id (it leads its own session).
        pgid: process-group id used to stop it and all its children.
        start_time: the process's start time as the host's kernel reports it
            (``/proc/<pid>/stat`` field 22, clock ticks since boot), so a reused pid is
            not mistaken for it.
        command: the command line as run.
        log_path: file on the host receiving stdout and stderr.
    """

    host: str
    pid: int
    pgid: int
    start_time: int
    command: str
    log_path: str


class Host(abc.ABC):
    """Where commands run and files live: this machine or a GPU host over SSH.

    Subclasses implement the primitives; callers use :meth:`run`, :meth:`spawn`,
    :meth:`read_text`, :meth:`write_text` and friends. Hosts are context managers.
    """

    name: str

    # -- primitives ---------------------------------------------------------
    @abc.abstractmethod
    def _execute(self, command: str, *, timeout_s: float | None, stdin: bytes | None) -> CommandResult:
        """Run a shell command line to completion (primitive; no error raising)."""

    @abc.abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """Contents of a file on the host. Raises HostError when missing/unreadable."""

    @abc.abstractmethod
    def write_bytes(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        """Create or replace a file on the host (parent directories are created)."""

    def close(self) -> None:
        """Release connections; safe to call twice."""

    # -- derived ------------------------------------------------------------
    def run(
        self,
        argv: Sequence[str] | str,
        *,
        timeout_s: float | None = 600.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | None = None,
        check: bool = True,
    ) -> CommandResult:
        """Run a command on the host and wait for it.

        Args:
            argv: argument list (each element quoted as data) or a ready shell line.
            timeout_s: kill the command after this many seconds (None: no limit).
            env: extra environment variables.
            cwd: working directory on the host.
            stdin: bytes fed to standard input.
            check: raise on a non-zero exit status (set False to inspect the result).

        Returns:
            The :class:`CommandResult`.

        Raises:
            CommandTimeout: the command ran past ``timeout_s`` (always raised).
            CommandError: non-zero exit and ``check`` is true.
        """
        line = env_prefix(env) + quote_command(argv)
        if cwd is not None:
            line = f"cd {shlex.quote(cwd)} && {line}"
        result = self._execute(line, timeout_s=timeout_s, stdin=stdin)
        if result.timed_out:
            raise CommandTimeout(f"Command timed out after {timeout_s} s {result.describe()}", result)
        if check and not result.ok:
            raise CommandError(f"Command failed {result.describe()}", result)
        return result

    def read_text(self, path: str) -> str:
        """Contents of a text file on the host (UTF-8)."""
        return self.read_bytes(path).decode("utf-8", errors="replace")

    def write_text(self, path: str, text: str, *, mode: int = 0o644) -> None:
        """Create or replace a UTF-8 text file on the host."""
        self.write_bytes(path, text.encode("utf-8"), mode=mode)

    def __enter__(self) -> "Host":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
