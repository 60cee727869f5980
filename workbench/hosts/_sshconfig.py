"""Resolve an OpenSSH config alias into what :class:`SSHHost` needs to connect.

Pure apart from reading the config file(s). The options honoured are the ones a
GPU-host setup typically uses (see ``man ssh_config``): ``HostName``, ``Port``,
``User``, ``IdentityFile``, ``IdentitiesOnly``, ``ProxyJump``, ``ServerAliveInterval``,
``ConnectTimeout``, ``UserKnownHostsFile``, ``GlobalKnownHostsFile``,
``HostKeyAlias``, ``StrictHostKeyChecking`` and top-level ``Include``. Parsing and
``Host``/``Match`` selection are paramiko's :class:`paramiko.SSHConfig`;
``ProxyCommand`` is refused with a hint to use ``ProxyJump``.
"""

from __future__ import annotations

import dataclasses
import getpass
import fnmatch
import glob
import os
import re
import shlex
from pathlib import Path

import paramiko

from workbench.errors import ConfigError

#: The user's OpenSSH client config, read when no ``config_file`` is given.
DEFAULT_CONFIG = "~/.ssh/config"
#: Environment variable naming the config to read instead of :data:`DEFAULT_CONFIG`
#: (like ``ssh -F`` for a whole process: CLI runs, papermill kernels, tests).
CONFIG_ENV = "WORKBENCH_SSH_CONFIG"
#: OpenSSH's default ``UserKnownHostsFile`` (the first one receives recorded keys).
DEFAULT_USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
#: OpenSSH's default ``GlobalKnownHostsFile`` (read only).
DEFAULT_GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
#: Longest ProxyJump chain followed (hops of hops included), as a loop guard.
MAX_HOPS = 8

_INCLUDE = re.compile(r"^\s*include(?:\s*=\s*|\s+)(.+)$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class SSHTarget:
    """One SSH endpoint with its options resolved from the config.

    Attributes:
        alias: the name looked up (what the user typed, e.g. ``"gpu-box"``).
        hostname: the address connected to (``HostName``, else the alias).
        port: TCP port (``Port``, default 22).
        user: login name (``User``, default the local user).
        identity_files: private key files (``IdentityFile``), ``~`` expanded.
        identities_only: ``IdentitiesOnly yes``: use only ``identity_files``, not the agent.
        proxy_jump: hop specs (``ProxyJump``, ``[user@]host[:port]``), first hop first.
        server_alive_interval_s: ``ServerAliveInterval`` in seconds (None: not set).
        connect_timeout_s: ``ConnectTimeout`` in seconds (None: not set).
        user_known_hosts: known_hosts files checked and written (first receives new keys).
        global_known_hosts: known_hosts files only read.
        host_key_alias: ``HostKeyAlias``: name used to look up the host key instead.
        strict_host_key_checking: ``yes`` (default here), ``accept-new``, ``no`` or ``ask``.
        in_config: a ``Host`` pattern other than ``*`` matched the alias (False: it is
            used as a plain hostname).
        config_files: the ssh config files read (Includes too), for messages.
    """

    alias: str
    hostname: str
    port: int = 22
    user: str = ""
    identity_files: tuple[str, ...] = ()
    identities_only: bool = False
    proxy_jump: tuple[str, ...] = ()
    server_alive_interval_s: float | None = None
    connect_timeout_s: float | None = None
    user_known_hosts: tuple[str, ...] = ()
    global_known_hosts: tuple[str, ...] = ()
    host_key_alias: str | None = None
    strict_host_key_checking: str = "yes"
    in_config: bool = dataclasses.field(default=True, compare=False)
    config_files: tuple[str, ...] = dataclasses.field(default=(), compare=False)

    @property
    def host_key_name(self) -> str:
        """Name of this host in known_hosts files: ``host``, ``[host]:port`` or ``HostKeyAlias``."""
        if self.host_key_alias:
            return self.host_key_alias
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"

    def describe(self) -> str:
        """``alias (user@hostname:port)`` for messages."""
        where = f"{self.user}@{self.hostname}:{self.port}"
        return where if self.alias == self.hostname else f"{self.alias} ({where})"


def config_path(config_file: str | os.PathLike[str] | None = None) -> tuple[Path, bool]:
    """The config file to read and whether it was asked for explicitly.

    ``config_file`` wins, then ``$WORKBENCH_SSH_CONFIG``, then ``~/.ssh/config``
    (which may be missing: not explicit).
    """
    if config_file is not None:
        return Path(config_file).expanduser().absolute(), True
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV]).expanduser().absolute(), True
    return Path(DEFAULT_CONFIG).expanduser().absolute(), False


def load_config(config_file: str | os.PathLike[str] | None = None) -> paramiko.SSHConfig:
    """Parse an OpenSSH client config (``Include`` lines inlined).

    Args:
        config_file: the file (like ``ssh -F``); None reads ``$WORKBENCH_SSH_CONFIG``
            when set, else ``~/.ssh/config`` if it exists.

    Returns:
        The parsed config (empty when the default file does not exist).

    Raises:
        ConfigError: an explicitly given file cannot be read or parsed.
    """
    path, explicit = config_path(config_file)
    if not explicit and not path.exists():
        config = paramiko.SSHConfig()
        config.workbench_files = ()  # type: ignore[attr-defined]  # read by resolve(), for messages
        return config
    try:
        files: list[str] = []
        text = "\n".join(_inline_includes(path, depth=0, files=files))
        config = paramiko.SSHConfig.from_text(text)
        config.workbench_files = tuple(files)  # type: ignore[attr-defined]
        return config
    except OSError as exc:
        raise ConfigError(f"Cannot read ssh config {path}: {exc.strerror}") from exc
    except (paramiko.ConfigParseError, ValueError) as exc:
        raise ConfigError(f"Cannot parse ssh config {path}: {exc}") from exc


def _inline_includes(path: Path, *, depth: int, files: list[str]) -> list[str]:
    """Lines of ``path`` with each ``Include`` replaced by the included files' lines (each file read
    is appended to ``files``)."""
    if depth > 16:
        raise ConfigError(f"ssh config {path}: Include nested more than 16 deep (a loop?)")
    files.append(str(path))
    lines: list[str] = []
    for line in path.read_text().splitlines():
        match = _INCLUDE.match(line)
        if not match:
            lines.append(line)
            continue
        for pattern in shlex.split(match.group(1)):
            pattern = os.path.expanduser(pattern)
            if not os.path.isabs(pattern):
                # OpenSSH: relative Includes in a user config are relative to ~/.ssh.
                pattern = os.path.join(os.path.expanduser("~/.ssh"), pattern)
            for name in sorted(glob.glob(pattern)):
                lines.extend(_inline_includes(Path(name), depth=depth + 1, files=files))
    return lines


def resolve(alias: str, *, config: paramiko.SSHConfig) -> SSHTarget:
    """Resolve ``alias`` (a ``Host`` name or a plain hostname) against ``config``.

    Raises:
        ConfigError: the alias is malformed, or its entry uses ``ProxyCommand`` or
            has a non-numeric ``Port``/``ServerAliveInterval``/``ConnectTimeout``.
    """
    if not alias or alias.startswith("-") or any(c.isspace() for c in alias):
        raise ConfigError(f"host {alias!r} is not a valid ssh alias or hostname")
    where = f"ssh config entry for {alias!r}"
    try:
        opts = config.lookup(alias)
    except ImportError as exc:  # paramiko evaluates `Match exec` with the optional `invoke` package
        raise ConfigError(f"{where}: `Match exec` needs the Python package 'invoke' ({exc})") from exc
    command = opts.get("proxycommand", "none")
    jump = opts.get("proxyjump", "none")
    if command.lower() != "none" and jump.lower() == "none":
        raise ConfigError(
            f"{where} uses ProxyCommand, which the workbench does not run; "
            "express the route with ProxyJump instead (e.g. `ProxyJump bastion`)."
        )
    return SSHTarget(
        alias=alias,
        hostname=opts.get("hostname", alias),
        port=int(_number(opts.get("port", "22"), "Port", where, int)),
        user=opts.get("user") or getpass.getuser(),
        identity_files=tuple(os.path.expanduser(f) for f in opts.get("identityfile", [])),
        identities_only=opts.get("identitiesonly", "no").lower() == "yes",
        proxy_jump=() if jump.lower() == "none" else tuple(h.strip() for h in jump.split(",") if h.strip()),
        server_alive_interval_s=_optional_number(opts.get("serveraliveinterval"), "ServerAliveInterval", where),
        connect_timeout_s=_optional_number(opts.get("connecttimeout"), "ConnectTimeout", where),
        user_known_hosts=_files(opts.get("userknownhostsfile"), DEFAULT_USER_KNOWN_HOSTS),
        global_known_hosts=_files(opts.get("globalknownhostsfile"), DEFAULT_GLOBAL_KNOWN_HOSTS),
        host_key_alias=opts.get("hostkeyalias"),
        strict_host_key_checking=opts.get("stricthostkeychecking", "yes").lower(),
        in_config=any(
            fnmatch.fnmatchcase(alias, pattern)
            for pattern in config.get_hostnames()
            if pattern != "*" and not pattern.startswith("!")
        ),
        config_files=tuple(getattr(config, "workbench_files", ())),
    )


def parse_jump(spec: str) -> tuple[str | None, str, int | None]:
    """Split a ProxyJump hop ``[ssh://][user@]host[:port]`` into (user, host, port).

    IPv6 addresses are written in brackets (``[::1]:22``).

    Raises:
        ConfigError: the port is not a number.
    """
    rest = spec[len("ssh://") :] if spec.startswith("ssh://") else spec
    user, _, hostport = rest.rpartition("@")
    port: str | None = None
    if hostport.startswith("["):
        host, _, tail = hostport[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else None
    elif hostport.count(":") == 1:
        host, port = hostport.split(":")
    else:
        host = hostport
    if port is not None and not port.isdigit():
        raise ConfigError(f"ProxyJump hop {spec!r}: port {port!r} is not a number")
    return user or None, host, int(port) if port else None


def connection_chain(alias: str, *, config: paramiko.SSHConfig) -> list[SSHTarget]:
    """The endpoints to connect through, in order, ending with ``alias`` itself.

    Each ProxyJump hop is looked up in the same config (as OpenSSH does), and a
    hop's own ProxyJump is followed too.

    Raises:
        ConfigError: the chain is longer than :data:`MAX_HOPS` (a loop, usually).
    """
    return _chain(resolve(alias, config=config), config, depth=0)


def _chain(target: SSHTarget, config: paramiko.SSHConfig, *, depth: int) -> list[SSHTarget]:
    if depth > MAX_HOPS:
        raise ConfigError(f"ProxyJump chain for {target.alias!r} is longer than {MAX_HOPS} hops (a loop?)")
    chain: list[SSHTarget] = []
    for spec in target.proxy_jump:
        user, host, port = parse_jump(spec)
        hop = resolve(host, config=config)
        hop = dataclasses.replace(hop, user=user or hop.user, port=port or hop.port)
        chain.extend(_chain(hop, config, depth=depth + 1))
    chain.append(target)
    if len(chain) > MAX_HOPS + 1:
        raise ConfigError(f"ProxyJump chain for {target.alias!r} is longer than {MAX_HOPS} hops (a loop?)")
    return chain


def _number(value: str, key: str, where: str, kind: type = float) -> float:
    try:
        return kind(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: {key} {value!r} is not a number") from exc


def _optional_number(value: str | None, key: str, where: str) -> float | None:
    if value is None:
        return None
    number = _number(value, key, where)
    return number if number > 0 else None


def _files(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    names = shlex.split(value) if value else list(default)
    return tuple(os.path.expanduser(n) for n in names if n.lower() != "none")
