"""Resolve the ``host`` parameter into a :class:`~workbench.hosts.Host`, one shared connection per alias."""

from __future__ import annotations

import os
import threading

from workbench.hosts._base import Host
from workbench.hosts._local import LocalHost
from workbench.hosts._ssh import SSHHost
from workbench.hosts._sshconfig import config_path

__all__ = ["LOCAL_NAMES", "get_host", "is_local"]

#: Spellings of the ``host`` parameter that mean this machine.
LOCAL_NAMES: frozenset[str] = frozenset({"local", "localhost", ""})

_ssh_hosts: dict[tuple[str, str | None], SSHHost] = {}
_ssh_hosts_lock = threading.Lock()


def is_local(host: str | Host) -> bool:
    """True when ``host`` is this machine: one of :data:`LOCAL_NAMES`, or a :class:`LocalHost`.

    The one definition of "local" in the workbench: the engine a host runs by default,
    where the load generator runs and how a run's client is labelled all ask this.
    """
    if isinstance(host, Host):
        return isinstance(host, LocalHost)
    return host in LOCAL_NAMES


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
    if is_local(host):
        return LocalHost()
    path, explicit = config_path(config_file)
    key = (host, str(path) if explicit else None)
    with _ssh_hosts_lock:
        found = _ssh_hosts.get(key)
        if found is None:
            found = _ssh_hosts[key] = SSHHost(host, config_file=key[1])
        return found
