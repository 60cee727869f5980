"""Hosts: where commands run and files live (this machine, or a GPU host over SSH)."""

from __future__ import annotations

import os
import threading

from workbench.errors import ConnectionLost, HostAuthError, HostKeyError, HostUnreachable
from workbench.hosts.base import CommandResult, Forward, Host, SpawnedProcess, quote_command, shell_path
from workbench.hosts.local import LocalHost
from workbench.hosts.ssh import SSHHost
from workbench.hosts.sshconfig import config_path
from workbench.hosts.upload import ensure_file, require_python

__all__ = [
    "CommandResult",
    "ConnectionLost",
    "Forward",
    "Host",
    "HostAuthError",
    "HostKeyError",
    "HostUnreachable",
    "LocalHost",
    "SSHHost",
    "SpawnedProcess",
    "ensure_file",
    "get_host",
    "quote_command",
    "require_python",
    "shell_path",
]

_ssh_hosts: dict[tuple[str, str | None], SSHHost] = {}
_ssh_hosts_lock = threading.Lock()


def get_host(host: str | Host = "local", *, config_file: str | os.PathLike[str] | None = None) -> Host:
    """Resolve the ``host`` parameter: ``"local"`` (default), an ssh config alias, or a Host.

    SSH hosts are shared per (alias, config file), so every part of the workbench
    that asks for the same host uses one connection. Closing it only drops the
    connection; the next use reconnects.

    Args:
        host: ``"local"`` (this machine), an alias from the ssh config (or a plain
            hostname, as ``ssh`` accepts), or a :class:`Host` (returned as is).
        config_file: ssh config to resolve aliases in (like ``ssh -F``; default
            ``$WORKBENCH_SSH_CONFIG`` when set, else ``~/.ssh/config``).

    Returns:
        The :class:`Host`; connecting happens on first use.

    Raises:
        ConfigError: the alias is malformed or its config entry is unusable.
    """
    if isinstance(host, Host):
        return host
    if host in ("local", "localhost", ""):
        return LocalHost()
    path, explicit = config_path(config_file)
    key = (host, str(path) if explicit else None)
    with _ssh_hosts_lock:
        found = _ssh_hosts.get(key)
        if found is None:
            found = _ssh_hosts[key] = SSHHost(host, config_file=key[1])
        return found
