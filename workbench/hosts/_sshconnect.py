"""Open one authenticated SSH connection (through ProxyJump hops) with host-key checks.

The boundary between paramiko and the workbench: every socket or paramiko error
raised while connecting is translated here into a :class:`HostError` subclass whose
message names the alias and says what to do (the classes are defined, in the one
exception tree, in :mod:`workbench.errors`)::

    HostError
    ├── HostUnreachable   TCP connect, DNS, a jump hop or the SSH handshake failed
    ├── HostKeyError      the host key is unknown (refused by default) or changed
    ├── HostAuthError     no key was accepted
    └── ConnectionLost    an open connection dropped (raised by SSHHost)

Host keys are checked against OpenSSH known_hosts files; an unknown key is
refused unless trust-on-first-use was asked for (``trust_on_first_use=True``, or
``StrictHostKeyChecking accept-new``/``no`` in the config), which appends it to the
first user file. A changed key is always refused.

Keepalives work like OpenSSH's ``ServerAliveInterval``/``ServerAliveCountMax``: a
request that needs a reply is sent every interval, which keeps idle-dropping
middleboxes seeing traffic both ways, and a connection whose probe stays
unanswered for :data:`ALIVE_COUNT_MAX` intervals is closed, so a host that vanished
without a word is noticed in seconds instead of at TCP's retransmission timeout.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
from pathlib import Path

import paramiko

from workbench.errors import ConnectionLost, HostAuthError, HostError, HostKeyError, HostUnreachable
from workbench.hosts._sshconfig import SSHTarget

log = logging.getLogger(__name__)

#: Keepalive intervals without an answer after which a connection is declared dead
#: (OpenSSH's ``ServerAliveCountMax`` default).
ALIVE_COUNT_MAX = 3


@dataclasses.dataclass
class Connection:
    """An authenticated connection: the target's client plus the jump hops' clients.

    Attributes:
        clients: one :class:`paramiko.SSHClient` per hop, the target last.
        target: where the last client is connected.
    """

    clients: list[paramiko.SSHClient]
    target: SSHTarget
    probes: list[AliveProbe] = dataclasses.field(default_factory=list)
    _sftp: paramiko.SFTPClient | None = None
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    @property
    def transport(self) -> paramiko.Transport:
        """The target's transport (channels for commands, SFTP and forwards)."""
        transport = self.clients[-1].get_transport()
        if transport is None:
            raise ConnectionLost(f"Connection to {self.target.describe()} is closed")
        return transport

    @property
    def active(self) -> bool:
        """True while every transport in the chain is up."""
        return all(c.get_transport() is not None and c.get_transport().is_active() for c in self.clients)

    def sftp(self) -> paramiko.SFTPClient:
        """The connection's SFTP session, opened on first use."""
        with self._lock:
            if self._sftp is None:
                self._sftp = self.clients[-1].open_sftp()
            return self._sftp

    def close(self) -> None:
        """Close SFTP, the target and the hops (in reverse order); safe to call twice."""
        with self._lock:
            sftp, self._sftp = self._sftp, None
        if sftp is not None:
            try:
                sftp.close()
            except (OSError, EOFError, paramiko.SSHException):
                pass
        for probe in self.probes:
            probe.stop()
        for client in reversed(self.clients):
            client.close()


class AliveProbe(threading.Thread):
    """Keepalive that needs an answer: closes ``transport`` when the peer stops replying.

    Every ``interval_s`` seconds it sends ``keepalive@openssh.com`` with want-reply
    (any reply, even a refusal, proves the peer alive). When a probe is unanswered
    for ``interval_s * count_max`` seconds the transport is closed, which ends every
    channel on it (the user sees :class:`ConnectionLost`; the next call reconnects).

    Args:
        transport: the transport to watch.
        interval_s: seconds between probes.
        count_max: unanswered intervals tolerated.
        name: for the thread name and the log.
    """

    def __init__(self, transport: paramiko.Transport, *, interval_s: float, count_max: int, name: str) -> None:
        super().__init__(name=f"ssh-alive-{name}", daemon=True)
        self.transport = transport
        self.interval_s = interval_s
        self.count_max = count_max
        self.declared_dead = False
        self._stopped = threading.Event()

    def stop(self) -> None:
        """End the probing (the thread exits within one interval)."""
        self._stopped.set()

    def run(self) -> None:
        while self.transport.is_active() and not self._stopped.wait(self.interval_s):
            probe = threading.Thread(target=self._probe, name=f"{self.name}-request", daemon=True)
            probe.start()
            probe.join(self.interval_s * self.count_max)
            if probe.is_alive() and not self._stopped.is_set():
                log.warning(
                    "%s: no answer to keepalive for %.1f s; closing the connection",
                    self.name,
                    self.interval_s * self.count_max,
                )
                self.declared_dead = True
                self.transport.close()
                return

    def _probe(self) -> None:
        try:
            self.transport.global_request("keepalive@openssh.com", wait=True)
        except (paramiko.SSHException, OSError, EOFError):
            pass  # the transport is closing; the loop notices


def open_connection(
    chain: list[SSHTarget],
    *,
    known_hosts: str | None,
    trust_on_first_use: bool,
    connect_timeout_s: float,
    keepalive_s: float,
) -> Connection:
    """Connect through ``chain`` (jump hops first, the target last) and authenticate.

    Args:
        chain: endpoints from :func:`workbench.hosts._sshconfig.connection_chain`.
        known_hosts: the only known_hosts file to use (None: each hop's
            ``UserKnownHostsFile`` and ``GlobalKnownHostsFile``).
        trust_on_first_use: record an unknown host key instead of refusing it.
        connect_timeout_s: limit for TCP connect, handshake and authentication, per hop (seconds).
        keepalive_s: seconds between keepalive probes (0: none); a connection is
            closed after :data:`ALIVE_COUNT_MAX` unanswered intervals.

    Returns:
        The open :class:`Connection`.

    Raises:
        HostUnreachable, HostKeyError, HostAuthError: see the module docstring.
    """
    clients: list[paramiko.SSHClient] = []
    try:
        for index, target in enumerate(chain):
            if index == 0:
                sock = _tcp_connect(target, connect_timeout_s)
            else:
                sock = _channel_to(clients[-1], chain[index - 1], target, connect_timeout_s)
            clients.append(_handshake(sock, target, known_hosts, trust_on_first_use, connect_timeout_s))
    except BaseException:
        for client in reversed(clients):
            client.close()
        raise
    probes = []
    if keepalive_s > 0:
        for client, target in zip(clients, chain):
            probe = AliveProbe(
                client.get_transport(), interval_s=keepalive_s, count_max=ALIVE_COUNT_MAX, name=target.alias
            )
            probe.start()
            probes.append(probe)
    return Connection(clients=clients, target=chain[-1], probes=probes)


def _tcp_connect(target: SSHTarget, timeout_s: float) -> socket.socket:
    try:
        sock = socket.create_connection((target.hostname, target.port), timeout=timeout_s)
    except socket.gaierror as exc:
        if not target.in_config and target.hostname == target.alias:
            read = ", ".join(target.config_files) or "none (no ~/.ssh/config, no WORKBENCH_SSH_CONFIG)"
            raise HostUnreachable(
                f"Host alias {target.alias!r} is not in your ssh config (files read: {read}), so it was looked "
                f"up as a hostname, and DNS does not know it ({exc.strerror}). Check the spelling, add a "
                f"`Host {target.alias}` entry with its HostName (and User, IdentityFile), or pass the config "
                "file that has it (config_file=, or WORKBENCH_SSH_CONFIG)."
            ) from exc
        raise HostUnreachable(
            f"Cannot resolve {target.hostname!r} for host {target.describe()}: {exc.strerror}. "
            "Check HostName in your ssh config (or that the alias is spelled right)."
        ) from exc
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise HostUnreachable(
            f"Cannot reach host {target.describe()}: {reason} (after up to {timeout_s:g} s). "
            f"Check that it is up and that `ssh {target.alias}` works from a terminal."
        ) from exc
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return sock


def _channel_to(hop: paramiko.SSHClient, hop_target: SSHTarget, target: SSHTarget, timeout_s: float):
    try:
        return hop.get_transport().open_channel(
            "direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0), timeout=timeout_s
        )
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise HostUnreachable(
            f"Jump host {hop_target.describe()} could not connect to {target.hostname}:{target.port} "
            f"for {target.describe()}: {describe_exc(exc)}. Check the ProxyJump route and that the jump host "
            "allows TCP forwarding (AllowTcpForwarding)."
        ) from exc


def _known_hosts_files(target: SSHTarget, known_hosts: str | None) -> tuple[list[str], list[str]]:
    """(user files, read-only files) to check the key of ``target`` against."""
    if known_hosts is not None:
        return [os.path.expanduser(known_hosts)], []
    return list(target.user_known_hosts), list(target.global_known_hosts)


def _check_identity_files(target: SSHTarget) -> None:
    """Refuse a target whose IdentityFile entries all name missing files when nothing else can
    authenticate (``IdentitiesOnly yes``, or no ssh agent)."""
    missing = [f for f in target.identity_files if not os.path.isfile(f)]
    if not missing or len(missing) < len(target.identity_files):
        return
    if target.identities_only or not os.environ.get("SSH_AUTH_SOCK"):
        read = ", ".join(target.config_files) or "the ssh config"
        raise HostAuthError(
            f"IdentityFile {', '.join(missing)} for host {target.describe()} does not exist (set in {read}), and "
            f"{'IdentitiesOnly is yes' if target.identities_only else 'no ssh agent runs (SSH_AUTH_SOCK unset)'}, "
            "so no key can be offered. Fix the IdentityFile path, or create the key (ssh-keygen) and install it "
            f"on the host (ssh-copy-id {target.alias})."
        )


def _handshake(sock, target: SSHTarget, known_hosts: str | None, tofu: bool, timeout_s: float) -> paramiko.SSHClient:
    _check_identity_files(target)
    user_files, global_files = _known_hosts_files(target, known_hosts)
    client = paramiko.SSHClient()
    keys = client.get_host_keys()
    for name in user_files + global_files:
        if os.path.isfile(name):
            try:
                keys.load(name)
            except OSError:
                pass
    record = tofu or target.strict_host_key_checking in ("accept-new", "no", "off")
    record_file = user_files[0] if user_files else None
    client.set_missing_host_key_policy(_HostKeyPolicy(target, user_files + global_files, record_file, record))
    try:
        # With ``sock`` given, hostname/port only name the key in known_hosts;
        # port 22 makes paramiko use host_key_name verbatim (HostKeyAlias aware).
        client.connect(
            target.host_key_name,
            port=22,
            username=target.user,
            sock=sock,
            key_filename=[f for f in target.identity_files if os.path.isfile(f)] or None,
            allow_agent=not target.identities_only,
            look_for_keys=not target.identity_files,
            timeout=timeout_s,
            banner_timeout=timeout_s,
            auth_timeout=timeout_s,
            channel_timeout=timeout_s,
        )
    except HostError:
        client.close()
        raise
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise HostKeyError(_changed_key_message(target, exc, user_files + global_files)) from exc
    except paramiko.AuthenticationException as exc:
        client.close()
        tried = ", ".join(target.identity_files) or "~/.ssh/id_*"
        agent = "" if target.identities_only else " and the ssh agent"
        raise HostAuthError(
            f"Authentication as {target.user!r} failed on host {target.describe()}: {exc}. Tried key "
            f"files {tried}{agent}. Check that `ssh {target.alias}` works; if the key has a passphrase, "
            "load it with `ssh-add KEY`; or set User/IdentityFile for this host in your ssh config."
        ) from exc
    except (paramiko.SSHException, OSError, EOFError) as exc:
        client.close()
        raise HostUnreachable(
            f"SSH handshake with host {target.describe()} failed: {describe_exc(exc)}. "
            f"Check that an SSH server listens on port {target.port} (try `ssh -v {target.alias}`)."
        ) from exc
    return client


class _HostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Refuse an unknown host key with instructions, or record it (trust on first use)."""

    def __init__(self, target: SSHTarget, files: list[str], record_file: str | None, record: bool) -> None:
        self.target = target
        self.files = files
        self.record_file = record_file
        self.record = record

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        if self.record and self.record_file:
            _append_known_host(self.record_file, hostname, key)
            client.get_host_keys().add(hostname, key.get_name(), key)
            return
        target = self.target
        port = f"-p {target.port} " if target.port != 22 else ""
        dest = self.record_file or "~/.ssh/known_hosts"
        searched = ", ".join(self.files) or "no known_hosts files"
        raise HostKeyError(
            f"Host key of {target.describe()} is unknown: {hostname!r} is not in {searched}. "
            f"The server offered {key.get_name()} {key.fingerprint}. If that is the host's key "
            f"(compare with `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` on the host), trust it with "
            f"`ssh-keyscan {port}{target.hostname} >> {dest}`, or connect once with "
            "trust_on_first_use=True to record it."
        )


def _append_known_host(path: str, hostname: str, key: paramiko.PKey) -> None:
    """Append ``hostname keytype base64`` to a known_hosts file (dirs 0700, file 0600)."""
    file = Path(path).expanduser()
    try:
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        needs_newline = file.exists() and file.stat().st_size > 0 and not file.read_bytes().endswith(b"\n")
        fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(("\n" if needs_newline else "") + f"{hostname} {key.get_name()} {key.get_base64()}\n")
    except OSError as exc:
        raise HostKeyError(f"Cannot record the host key of {hostname} in {file}: {exc.strerror}") from exc


def _changed_key_message(target: SSHTarget, exc: paramiko.BadHostKeyException, files: list[str]) -> str:
    name = target.host_key_name
    return (
        f"Host key of {target.describe()} CHANGED: the server offered {exc.key.get_name()} "
        f"{exc.key.fingerprint}, but known_hosts ({', '.join(files)}) has {exc.expected_key.get_name()} "
        f"{exc.expected_key.fingerprint} for {name!r}. This is either a reinstalled host or someone "
        f"intercepting the connection; the workbench will not connect. If you know the host was "
        f"reinstalled, remove the old entry with `ssh-keygen -R '{name}' -f FILE` and trust the new key."
    )


def describe_exc(exc: BaseException) -> str:
    """``str(exc)``, or the exception's type name when that is empty."""
    return str(exc) or type(exc).__name__
