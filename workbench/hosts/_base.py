"""The :class:`Host` interface: where commands run and files live.

One interface for this machine and remote GPU hosts. Hosts implement a few
primitives (``_execute``, ``read_bytes``, ``write_bytes``; SSH hosts also ``put``,
``get`` and ``forward``); this module owns argument quoting, timeouts and
result/error shaping once for all of them.
"""

from __future__ import annotations

import abc
import dataclasses
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from workbench.errors import CommandError, CommandTimeout, HostError

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


def shell_path(path: str) -> str:
    """``path`` as one shell word, quoted as data, except that a leading ``~`` is the login user's home.

    ``~`` and ``~/x`` become ``"$HOME"`` and ``"$HOME"/x`` (quoting ``x``), so the host's
    shell expands the home directory and nothing else.
    """
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


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


class Forward:
    """A local TCP port that reaches ``remote_host:remote_port`` as seen from a host.

    For this machine it is the port itself (no tunnel); for an SSH host it is a
    local listening socket whose connections travel over the host's SSH connection
    (see :class:`workbench.hosts._sshforward.SSHForward`). Use it as a context manager
    or call :meth:`close`.

    Attributes:
        local_host: address to connect to on this machine (``"127.0.0.1"`` for tunnels).
        local_port: port to connect to on this machine.
        remote_host: address the host connects to (``"127.0.0.1"``: the host itself).
        remote_port: port the host connects to.
    """

    def __init__(self, *, local_host: str, local_port: int, remote_host: str, remote_port: int) -> None:
        self.local_host = local_host
        self.local_port = local_port
        self.remote_host = remote_host
        self.remote_port = remote_port

    def url(self, path: str = "/", *, scheme: str = "http") -> str:
        """``scheme://local_host:local_port/path``, the address a client on this machine uses."""
        return f"{scheme}://{self.local_host}:{self.local_port}/{path.lstrip('/')}"

    def close(self) -> None:
        """Stop forwarding; safe to call twice (a no-op without a tunnel)."""

    def __enter__(self) -> "Forward":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.local_host}:{self.local_port} -> {self.remote_host}:{self.remote_port})"


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

    def put(self, local_path: str | os.PathLike[str], remote_path: str, *, mode: int | None = None) -> None:
        """Copy a file from this machine to ``remote_path`` on the host (atomic replace).

        Args:
            local_path: file on this machine.
            remote_path: destination on the host (parent directories are created).
            mode: permission bits for the copy (default: those of ``local_path``).

        Raises:
            HostError: the local file cannot be read or the host cannot write it.
        """
        src = Path(local_path).expanduser()
        try:
            data = src.read_bytes()
            bits = mode if mode is not None else src.stat().st_mode & 0o7777
        except OSError as exc:
            raise HostError(f"Cannot read local file {src} to copy to host {self.name!r}: {exc.strerror}") from exc
        self.write_bytes(remote_path, data, mode=bits)

    def get(self, remote_path: str, local_path: str | os.PathLike[str]) -> None:
        """Copy ``remote_path`` on the host to a file on this machine (atomic replace).

        Raises:
            HostError: the host file cannot be read or the local file not written.
        """
        data = self.read_bytes(remote_path)
        dst = Path(local_path).expanduser()
        tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, dst)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise HostError(
                f"Cannot write local file {dst} (copy of {remote_path} on host {self.name!r}): {exc.strerror}"
            ) from exc

    def forward(self, remote_port: int, *, remote_host: str = "127.0.0.1", local_port: int = 0) -> Forward:
        """A local port that reaches ``remote_host:remote_port`` as the host sees it.

        This default (this machine) opens no tunnel: it returns ``remote_port`` itself
        and ignores ``local_port``. SSH hosts override it with a real local forward.

        Args:
            remote_port: port on the host side.
            remote_host: address the host connects to (default its loopback).
            local_port: local port to listen on (0: any free port); tunnels only.

        Returns:
            A :class:`Forward` (a context manager).
        """
        return Forward(local_host=remote_host, local_port=remote_port, remote_host=remote_host, remote_port=remote_port)

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
