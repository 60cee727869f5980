"""Hosts: where commands run and files live (this machine, or a GPU host over SSH)."""

from workbench.hosts.base import CommandResult, Host, SpawnedProcess, quote_command
from workbench.hosts.local import LocalHost

__all__ = ["CommandResult", "Host", "LocalHost", "SpawnedProcess", "quote_command", "get_host"]


def get_host(host: "str | Host" = "local") -> Host:
    """Resolve the ``host`` parameter: ``"local"`` (default) or an existing Host.

    Raises:
        ConfigError: an ssh alias was given (SSH hosts are not built yet).
    """
    from workbench.errors import ConfigError

    if isinstance(host, Host):
        return host
    if host in ("local", "localhost", ""):
        return LocalHost()
    raise ConfigError(
        f"host={host!r}: only 'local' is supported so far; SSH hosts are coming (see README, 'GPU hosts')."
    )
