"""Put local files (the ``remote/`` helper scripts) on a host once, keyed by content.

A file lands in a per-user cache directory on the host as
``<cache_dir>/<sha12>/<name>``, where ``sha12`` is the first 12 hex digits of the
SHA-256 of its contents. Files that must sit side by side (a helper script and the
module it imports) share one directory keyed by all of them (:func:`ensure_files`).
A changed file gets a new directory, an unchanged one is found by a single
``test -f`` round trip and not sent again, and concurrent uploaders cannot collide
(the write is atomic and the content is the same).
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from workbench.errors import ConfigError, HostError
from workbench.hosts._base import Host, shell_path
from workbench.hosts._local import LocalHost

#: Cache directory on the host (``~`` is the login user's home there).
DEFAULT_CACHE_DIR = "~/.cache/specbench-workbench/remote"
#: Oldest Python the remote helpers are written for.
MIN_PYTHON = (3, 8)


def content_key(data: bytes) -> str:
    """First 12 hex digits of the SHA-256 of ``data`` (the cache key)."""
    return hashlib.sha256(data).hexdigest()[:12]


def files_key(files: Sequence[tuple[str, bytes]]) -> str:
    """The cache key of files that share a directory, from their (name, contents) in order.

    One file's key is :func:`content_key` of its contents; several files' is that of
    each name, size and contents in turn (so no two groups share a key by accident).
    """
    if len(files) == 1:
        return content_key(files[0][1])
    return content_key(b"".join(b"%s\0%d\0%s" % (name.encode("utf-8"), len(data), data) for name, data in files))


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
    return ensure_files(host, [local_path], cache_dir=cache_dir)[0]


def ensure_files(
    host: Host, local_paths: Sequence[str | os.PathLike[str]], *, cache_dir: str = DEFAULT_CACHE_DIR
) -> list[str]:
    """Make files available side by side on ``host``; return their absolute paths there, in order.

    On this machine (:class:`LocalHost`) the files are used where they are. Elsewhere
    they go to ``<cache_dir>/<key>/<name>`` (``key``: :func:`files_key`); one command
    checks which are there, and the missing ones are uploaded in the given order
    (executable bits kept). Put the file that is run last: once it is there, the
    files it needs are too.

    Args:
        host: where the files are needed.
        local_paths: the files on this machine (distinct names).
        cache_dir: cache directory on the host (``~/`` means the login user's home).

    Raises:
        ConfigError: no files, or two with the same name.
        HostError: a local file cannot be read, or the host cannot be reached or written.
    """
    sources = [Path(p).expanduser() for p in local_paths]
    names = [src.name for src in sources]
    if not sources or len(set(names)) != len(names):
        raise ConfigError(f"Files to upload side by side need distinct names, got {names}")
    contents = []
    for src in sources:
        try:
            contents.append((src.read_bytes(), os.access(src, os.X_OK)))
        except OSError as exc:
            raise HostError(f"Cannot read local file {src} to upload to host {host.name!r}: {exc.strerror}") from exc
    if isinstance(host, LocalHost):
        return [str(src.resolve()) for src in sources]
    directory = f"{cache_dir.rstrip('/')}/{files_key([(n, data) for n, (data, _) in zip(names, contents)])}"
    line = (
        f"d={shell_path(directory)}; printf '%s\\n' \"$d\"; for f in {' '.join(map(shlex.quote, names))}; do "
        'p="$d/$f"; if [ -f "$p" ]; then echo present; else echo missing; fi; done'
    )
    answer = host.run(line, timeout_s=60).stdout.split("\n")
    where, states = answer[0], answer[1 : 1 + len(names)]
    if not where.startswith("/") or len(states) != len(names) or not set(states) <= {"present", "missing"}:
        raise HostError(f"Unexpected answer from host {host.name!r} while checking {directory}: {answer!r}")
    paths = [f"{where}/{name}" for name in names]
    for path, (data, executable), state in zip(paths, contents, states):
        if state == "missing":
            host.write_bytes(path, data, mode=0o755 if executable else 0o644)
    return paths


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
