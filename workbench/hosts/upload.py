"""Put local files (the ``remote/`` helper scripts) on a host once, keyed by content.

A file lands in a per-user cache directory on the host as
``<cache_dir>/<sha12>/<name>``, where ``sha12`` is the first 12 hex digits of the
SHA-256 of its contents. A changed script gets a new directory, an unchanged one is
found by a single ``test -f`` round trip and not sent again, and concurrent
uploaders cannot collide (the write is atomic and the content is the same).
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path

from workbench.errors import HostError
from workbench.hosts.base import Host
from workbench.hosts.local import LocalHost

#: Cache directory on the host (``~`` is the login user's home there).
DEFAULT_CACHE_DIR = "~/.cache/specbench-workbench/remote"
#: Oldest Python the remote helpers are written for.
MIN_PYTHON = (3, 8)


def content_key(data: bytes) -> str:
    """First 12 hex digits of the SHA-256 of ``data`` (the cache key)."""
    return hashlib.sha256(data).hexdigest()[:12]


def _shell_path(path: str) -> str:
    """``path`` as a shell word, quoted as data except a leading ``~/`` (-> ``"$HOME"/``)."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def ensure_file(host: Host, local_path: str | os.PathLike[str], *, cache_dir: str = DEFAULT_CACHE_DIR) -> str:
    """Make ``local_path`` available on ``host`` and return its absolute path there.

    On this machine (:class:`LocalHost`) the file is used where it is. Elsewhere it
    is uploaded to ``<cache_dir>/<sha12>/<name>`` unless that file already exists
    (checked with one command; executable bits are kept).

    Args:
        host: where the file is needed.
        local_path: the file on this machine.
        cache_dir: cache directory on the host (``~/`` means the login user's home).

    Returns:
        The file's absolute path on the host.

    Raises:
        HostError: the local file cannot be read, or the host cannot be reached or written.
    """
    src = Path(local_path).expanduser()
    try:
        data = src.read_bytes()
        executable = os.access(src, os.X_OK)
    except OSError as exc:
        raise HostError(f"Cannot read local file {src} to upload to host {host.name!r}: {exc.strerror}") from exc
    if isinstance(host, LocalHost):
        return str(src.resolve())
    remote = f"{cache_dir.rstrip('/')}/{content_key(data)}/{src.name}"
    line = (
        f"p={_shell_path(remote)}; "
        'if [ -f "$p" ]; then printf "present\\n%s" "$p"; else printf "missing\\n%s" "$p"; fi'
    )
    state, _, path = host.run(line, timeout_s=60).stdout.partition("\n")
    if state not in ("present", "missing") or not path.startswith("/"):
        raise HostError(f"Unexpected answer from host {host.name!r} while checking {remote}: {state!r} {path!r}")
    if state == "missing":
        host.write_bytes(path, data, mode=0o755 if executable else 0o644)
    return path


def require_python(host: Host, *, python: str = "python3", min_version: tuple[int, int] = MIN_PYTHON) -> str:
    """Check that ``python`` runs on ``host`` and is recent enough; return its path.

    Args:
        host: the host to check.
        python: interpreter name or path as the host's login shell finds it.
        min_version: oldest acceptable (major, minor).

    Returns:
        The interpreter's absolute path (``sys.executable`` on the host).

    Raises:
        HostError: no such interpreter, or it is older than ``min_version``.
    """
    probe = "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"
    res = host.run([python, "-c", probe], check=False, timeout_s=60)
    lines = res.stdout.strip().splitlines()
    wanted = ".".join(map(str, min_version))
    if not res.ok or len(lines) < 2:
        raise HostError(
            f"No usable {python} on host {host.name!r} (exit status {res.exit_status}: "
            f"{res.tail().strip() or 'no output'}). The workbench runs its helpers with the host's Python "
            f"{wanted}+: install python3 there (e.g. `apt-get install python3`) or make it reachable on "
            "the login PATH."
        )
    version = tuple(int(x) for x in lines[-1].split("."))
    if version < min_version:
        raise HostError(
            f"{python} on host {host.name!r} is Python {lines[-1]} ({lines[-2]}); the workbench needs "
            f"{wanted} or newer. Install a newer python3 there."
        )
    return lines[-2]
