"""A GPU host reached over SSH (paramiko), named by an OpenSSH config alias.

One lazily opened connection serves commands (a session channel each), SFTP file
transfer and local port forwards. Keepalive packets keep it up through long silent
waits (a server loading weights for 15 minutes) behind middleboxes that drop idle
connections. When the connection has dropped, the next operation reconnects once
and retries if that is safe (no command was started yet; file transfers are
idempotent); otherwise :class:`ConnectionLost` says what happened.

Example::

    with SSHHost("gpu-box") as host:
        print(host.run(["nvidia-smi", "-L"]).stdout)
        with host.forward(30000) as fwd:
            ...  # fwd.url("/health") reaches the host's 127.0.0.1:30000
"""

from __future__ import annotations

import io
import os
import posixpath
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import paramiko

from workbench.errors import HostError
from workbench.hosts import _sshexec as sshexec
from workbench.hosts._base import CommandResult, Host
from workbench.hosts._sshconfig import connection_chain, load_config
from workbench.hosts._sshconnect import ALIVE_COUNT_MAX, Connection, ConnectionLost, describe_exc, open_connection
from workbench.hosts._sshforward import SSHForward

#: Connect timeout (seconds) when neither the caller nor ``ConnectTimeout`` sets one.
DEFAULT_CONNECT_TIMEOUT_S = 15.0
#: Keepalive interval (seconds) when neither the caller nor ``ServerAliveInterval`` sets one.
DEFAULT_KEEPALIVE_S = 30.0

_T = TypeVar("_T")
_CONNECTION_ERRORS = (paramiko.SSHException, EOFError, OSError)


class SSHHost(Host):
    """A host reached over SSH, configured by an OpenSSH config alias.

    Args:
        alias: a ``Host`` entry of the ssh config (or a plain hostname).
        config_file: the ssh config to read (like ``ssh -F``; default
            ``$WORKBENCH_SSH_CONFIG`` when set, else ``~/.ssh/config``).
        known_hosts: the only known_hosts file to check and record keys in (default:
            the config's ``UserKnownHostsFile``, else ``~/.ssh/known_hosts``, plus the
            global files).
        trust_on_first_use: record an unknown host key instead of refusing it. A
            changed key is always refused.
        connect_timeout_s: seconds allowed per hop for TCP connect, handshake and
            authentication (default: ``ConnectTimeout``, else 15).
        keepalive_s: seconds between keepalive probes (default: ``ServerAliveInterval``,
            else 30; 0 disables). A connection whose probes go unanswered for three
            intervals is closed as dead (OpenSSH's ``ServerAliveCountMax`` 3).

    Raises:
        ConfigError: the config cannot be read or the alias's entry is unusable.
    """

    def __init__(
        self,
        alias: str,
        *,
        config_file: str | os.PathLike[str] | None = None,
        known_hosts: str | os.PathLike[str] | None = None,
        trust_on_first_use: bool = False,
        connect_timeout_s: float | None = None,
        keepalive_s: float | None = None,
    ) -> None:
        self.name = alias
        self.config_file = None if config_file is None else os.fspath(config_file)
        self.chain = connection_chain(alias, config=load_config(config_file))
        self.target = self.chain[-1]
        self.known_hosts = None if known_hosts is None else os.fspath(known_hosts)
        self.trust_on_first_use = trust_on_first_use
        self.connect_timeout_s = connect_timeout_s or self.target.connect_timeout_s or DEFAULT_CONNECT_TIMEOUT_S
        if keepalive_s is None:
            keepalive_s = self.target.server_alive_interval_s or DEFAULT_KEEPALIVE_S
        self.keepalive_s = keepalive_s
        self._conn: Connection | None = None
        self._lock = threading.RLock()
        self._forwards: weakref.WeakSet[SSHForward] = weakref.WeakSet()

    # -- connection ---------------------------------------------------------
    def connect(self) -> None:
        """Open the connection now (it otherwise opens on first use).

        Raises:
            HostUnreachable, HostKeyError, HostAuthError: see :mod:`workbench.hosts._sshconnect`.
        """
        self._connection()

    @property
    def connected(self) -> bool:
        """True while a connection is open and up."""
        conn = self._conn
        return conn is not None and conn.active

    def _connection(self) -> Connection:
        with self._lock:
            if self._conn is not None and not self._conn.active:
                self._discard(self._conn)
            if self._conn is None:
                self._conn = open_connection(
                    self.chain,
                    known_hosts=self.known_hosts,
                    trust_on_first_use=self.trust_on_first_use,
                    connect_timeout_s=self.connect_timeout_s,
                    keepalive_s=self.keepalive_s,
                )
            return self._conn

    def _discard(self, conn: Connection) -> None:
        with self._lock:
            if self._conn is conn:
                self._conn = None
        conn.close()

    def close(self) -> None:
        """Close port forwards and the connection; safe to call twice (later use reconnects)."""
        for fwd in list(self._forwards):
            fwd.close()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _retrying(self, what: str, action: Callable[[Connection], _T]) -> _T:
        """Run ``action`` on the connection; on a dropped connection reconnect and retry once.

        ``action`` must be safe to repeat. Errors it raises while the connection
        stays up are the caller's (re-raised unchanged).
        """
        for attempt in (1, 2):
            conn = self._connection()
            try:
                return action(conn)
            except _CONNECTION_ERRORS as exc:
                if conn.active and not isinstance(exc, EOFError):
                    raise
                self._discard(conn)
                if attempt == 2:
                    raise ConnectionLost(
                        f"Connection to host {self.target.describe()} dropped while trying to {what}, "
                        f"and again after reconnecting: {describe_exc(exc)}. Check the network and "
                        f"that `ssh {self.name}` works."
                    ) from exc
        raise AssertionError("unreachable")

    # -- commands -----------------------------------------------------------
    def _open_session(self, command: str) -> tuple[Connection, paramiko.Channel]:
        try:
            return self._retrying(
                f"start `{command}`", lambda conn: (conn, conn.transport.open_session(timeout=self.connect_timeout_s))
            )
        except paramiko.ChannelException as exc:
            raise HostError(
                f"Host {self.target.describe()} refused a new session for `{command}`: {describe_exc(exc)}. "
                "Too many commands at once? sshd allows MaxSessions (default 10) per connection."
            ) from exc
        except _CONNECTION_ERRORS as exc:
            raise HostError(
                f"Cannot open a session on host {self.target.describe()} for `{command}`: {describe_exc(exc)}. "
                f"The connection is up but the host did not answer within {self.connect_timeout_s:g} s."
            ) from exc

    def _execute(self, command: str, *, timeout_s: float | None, stdin: bytes | None) -> CommandResult:
        start = time.monotonic()
        conn, chan = self._open_session(command)
        try:
            chan.exec_command(sshexec.wrap(command))
        except _CONNECTION_ERRORS as exc:
            chan.close()
            raise ConnectionLost(
                f"Connection to host {self.target.describe()} failed while starting `{command}`: "
                f"{describe_exc(exc)}. The command may or may not have started; check on the host "
                "before running it again."
            ) from exc
        outcome = sshexec.drain(chan, stdin=stdin, timeout_s=timeout_s, kill=self._kill)
        duration = time.monotonic() - start
        result = CommandResult(
            host=self.name,
            command=command,
            exit_status=outcome.exit_status,
            stdout=outcome.stdout.decode("utf-8", errors="replace"),
            stderr=outcome.stderr.decode("utf-8", errors="replace"),
            duration_s=duration,
            timed_out=outcome.timed_out,
        )
        if outcome.lost:
            if any(probe.declared_dead for probe in conn.probes):
                silent = ALIVE_COUNT_MAX * self.keepalive_s
                why = f"the host stopped answering keepalives for {silent:g} s (network outage, or the host is down)"
            else:
                why = (
                    f"closed by the host or the network; if this happens during long silent waits, lower "
                    f"keepalive_s (now {self.keepalive_s:g} s) or set ServerAliveInterval"
                )
            raise ConnectionLost(
                f"Connection to host {self.target.describe()} dropped after {duration:.1f} s while "
                f"`{command}` was running ({why}). It may still be running there; the next call "
                f"reconnects.\n{result.describe()}",
                result,
            )
        return result

    def _kill(self, pid: int, pgid: int) -> None:
        """SIGKILL a timed-out command: its process group when it leads one, else the pid."""
        target = f"-{pgid}" if pgid == pid else str(pid)
        try:
            chan = self._connection().transport.open_session(timeout=self.connect_timeout_s)
            try:
                chan.exec_command(f"kill -KILL -- {target}")
                chan.status_event.wait(self.connect_timeout_s)
            finally:
                chan.close()
        except (HostError, *_CONNECTION_ERRORS):
            pass  # the timeout is reported either way; nothing better to do here

    # -- files --------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        """Contents of a file on the host (SFTP). Raises HostError when missing/unreadable."""

        def action(conn: Connection) -> bytes:
            buf = io.BytesIO()
            conn.sftp().getfo(_sftp_path(path), buf)
            return buf.getvalue()

        return self._file_op("read", path, action)

    def write_bytes(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        """Create or replace a file on the host atomically (temp file, then rename).

        Parent directories are created. Raises HostError when it cannot be written.
        """
        self._file_op("write", path, lambda conn: _atomic_upload(conn.sftp(), io.BytesIO(data), path, mode))

    def put(self, local_path: str | os.PathLike[str], remote_path: str, *, mode: int | None = None) -> None:
        """Upload a local file to ``remote_path`` (streamed; atomic replace; dirs created).

        Args:
            local_path: file on this machine.
            remote_path: destination on the host.
            mode: permission bits (default: those of the local file).

        Raises:
            HostError: the local file cannot be read or the host cannot write it.
        """
        src = Path(local_path).expanduser()
        try:
            bits = mode if mode is not None else src.stat().st_mode & 0o7777
        except OSError as exc:
            raise HostError(f"Cannot read local file {src} to copy to host {self.name!r}: {exc.strerror}") from exc

        def action(conn: Connection) -> None:
            with open(src, "rb") as f:
                _atomic_upload(conn.sftp(), f, remote_path, bits)

        self._file_op("write", remote_path, action)

    def get(self, remote_path: str, local_path: str | os.PathLike[str]) -> None:
        """Download ``remote_path`` to ``local_path`` (streamed; atomic replace; dirs created).

        Raises:
            HostError: the host file cannot be read or the local file not written.
        """
        dst = Path(local_path).expanduser()
        tmp = dst.with_name(f".{dst.name}.{uuid.uuid4().hex[:8]}.tmp")

        def action(conn: Connection) -> None:
            with open(tmp, "wb") as f:
                conn.sftp().getfo(_sftp_path(remote_path), f)

        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            self._file_op("read", remote_path, action)
            os.replace(tmp, dst)
        except OSError as exc:
            raise HostError(f"Cannot write local file {dst} (copy of {remote_path}): {exc.strerror}") from exc
        finally:
            tmp.unlink(missing_ok=True)

    def _file_op(self, verb: str, path: str, action: Callable[[Connection], _T]) -> _T:
        try:
            return self._retrying(f"{verb} {path}", action)
        except (OSError, paramiko.SSHException) as exc:
            reason = getattr(exc, "strerror", None) or describe_exc(exc)
            raise HostError(f"Cannot {verb} {path} on host {self.name!r}: {reason}") from exc

    # -- port forwarding ----------------------------------------------------
    def forward(self, remote_port: int, *, remote_host: str = "127.0.0.1", local_port: int = 0) -> SSHForward:
        """Forward a local port to ``remote_host:remote_port`` as seen from the host.

        Connections to the returned forward's ``local_port`` (on 127.0.0.1) travel
        over this host's SSH connection (a ``direct-tcpip`` channel each).

        Args:
            remote_port: port on the host side.
            remote_host: address the host connects to (default its loopback).
            local_port: local port to listen on (0: any free port).

        Returns:
            An :class:`SSHForward` (context manager; closed with the host).

        Raises:
            HostError: the local port cannot be bound, or the connection fails.
        """
        self._connection()  # fail here, not in the first client's connection
        fwd = SSHForward(
            self._open_direct,
            host_name=self.name,
            remote_host=remote_host,
            remote_port=remote_port,
            local_port=local_port,
        )
        self._forwards.add(fwd)
        return fwd

    def _open_direct(self, dest: tuple[str, int], src: tuple[str, int]) -> paramiko.Channel:
        try:
            return self._retrying(
                f"forward to {dest[0]}:{dest[1]}",
                lambda conn: conn.transport.open_channel("direct-tcpip", dest, src, timeout=self.connect_timeout_s),
            )
        except paramiko.ChannelException as exc:
            raise HostError(
                f"Host {self.name!r} could not connect to {dest[0]}:{dest[1]}: {describe_exc(exc)}. "
                "Is a server listening there (on the host)? Does sshd allow it (AllowTcpForwarding)?"
            ) from exc
        except _CONNECTION_ERRORS as exc:
            raise HostError(
                f"Cannot open a tunnel to {dest[0]}:{dest[1]} on host {self.name!r}: {describe_exc(exc)}"
            ) from exc


def _sftp_path(path: str) -> str:
    """SFTP sessions start in the home directory: ``~/x`` becomes ``x``."""
    if path == "~":
        return "."
    if path.startswith("~/"):
        return path[2:] or "."
    if path.startswith("~"):
        raise HostError(f"Path {path!r}: only '~' and '~/...' (the login user's home) are understood")
    return path


def _makedirs(sftp: paramiko.SFTPClient, directory: str) -> None:
    if directory in ("", ".", "/"):
        return
    try:
        sftp.stat(directory)
        return
    except OSError:
        pass
    _makedirs(sftp, posixpath.dirname(directory))
    try:
        sftp.mkdir(directory)
    except OSError:
        sftp.stat(directory)  # raced with another creator: fine if it exists now


def _atomic_upload(sftp: paramiko.SFTPClient, src: io.IOBase, path: str, mode: int) -> None:
    """Write ``src`` to a temp file next to ``path``, set ``mode``, then rename over ``path``."""
    target = _sftp_path(path)
    directory, name = posixpath.split(target)
    _makedirs(sftp, directory)
    tmp = posixpath.join(directory, f".{name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        sftp.putfo(src, tmp)
        sftp.chmod(tmp, mode)
        try:
            sftp.posix_rename(tmp, target)
        except OSError:
            # No posix-rename extension: plain SFTP rename refuses to replace a file.
            try:
                sftp.remove(target)
            except OSError:
                pass
            sftp.rename(tmp, target)
    except BaseException:
        try:
            sftp.remove(tmp)
        except _CONNECTION_ERRORS:
            pass
        raise
