"""What the server layer needs to know about a host: its Python, a free port, its state directory.

Settings come from keyword arguments first, then the client's environment:

- ``WORKBENCH_REMOTE_PYTHON``: interpreter on SSH hosts (default ``python3``). It runs
  the server (``python -m sglang.launch_server`` or the simulator), so it must be the
  environment that has SGLang (or, for the simulator, aiohttp, numpy and tokenizers
  on Python 3.11+). On this machine the workbench's own interpreter is used.
- ``WORKBENCH_SERVERS_DIR``: the server registry directory on the host (default
  ``~/.cache/specbench-workbench/servers``; on this machine
  ``$WORKBENCH_CACHE_DIR/servers``).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping

from workbench import paths
from workbench.errors import HostError
from workbench.hosts import Host, LocalHost, shell_path

#: Registry directory on SSH hosts (``~`` is the login user's home there).
REMOTE_SERVERS_DIR = "~/.cache/specbench-workbench/servers"

_dirs: dict[tuple[str, str], str] = {}
_dirs_lock = threading.Lock()


def host_python(host: Host, python: str | None = None, *, environ: Mapping[str, str] | None = None) -> str:
    """The interpreter that runs servers and helpers on ``host``.

    Args:
        host: the host.
        python: explicit choice (a name on the host's PATH or an absolute path).
        environ: the client's environment (default ``os.environ``).

    Returns:
        ``python`` when given; on :class:`LocalHost` this process's interpreter;
        elsewhere ``$WORKBENCH_REMOTE_PYTHON`` or ``python3``.
    """
    if python:
        return python
    if isinstance(host, LocalHost):
        return sys.executable
    env = os.environ if environ is None else environ
    return env.get("WORKBENCH_REMOTE_PYTHON") or "python3"


def free_port(host: Host, python: str) -> int:
    """A TCP port free on the host's loopback right now (the host's kernel picks it).

    Raises:
        HostError: the host's Python could not be run.
    """
    code = "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1]);s.close()"
    res = host.run([python, "-c", code], timeout_s=60, check=False)
    out = res.stdout.strip()
    if not res.ok or not out.isdigit():
        raise HostError(
            f"Could not ask {python} on host {host.name!r} for a free port: {res.describe()}\n"
            "Pass python= (or set WORKBENCH_REMOTE_PYTHON) to an interpreter that exists there."
        )
    return int(out)


def servers_dir(host: Host, directory: str | None = None, *, environ: Mapping[str, str] | None = None) -> str:
    """The absolute registry directory on ``host`` (created when missing; asked once per host and setting).

    Args:
        host: the host.
        directory: explicit directory (``~/`` allowed); else ``$WORKBENCH_SERVERS_DIR``,
            else :data:`REMOTE_SERVERS_DIR` on SSH hosts and ``<cache_dir>/servers`` here.
        environ: the client's environment (default ``os.environ``).

    Raises:
        HostError: the directory cannot be created there.
    """
    env = os.environ if environ is None else environ
    wanted = (
        directory
        or env.get("WORKBENCH_SERVERS_DIR")
        or (str(paths.cache_dir() / "servers") if isinstance(host, LocalHost) else REMOTE_SERVERS_DIR)
    )
    key = (host.name, wanted)
    with _dirs_lock:
        if key in _dirs:
            return _dirs[key]
    line = f'd={shell_path(wanted)}; {{ [ -d "$d" ] || {{ mkdir -p "$d" && chmod 700 "$d"; }}; }} && cd "$d" && pwd -P'
    res = host.run(line, timeout_s=60, check=False)
    found = res.stdout.strip().splitlines()[-1] if res.ok and res.stdout.strip() else ""
    if not found.startswith("/"):
        raise HostError(f"Cannot create the server registry directory {wanted} on host {host.name!r}: {res.describe()}")
    with _dirs_lock:
        _dirs[key] = found
    return found
