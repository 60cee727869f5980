"""Ship the workbench package (and the data files it reads) to a host, for the simulator.

The simulated engine runs on the host as ``python -m workbench.sim``, so the
workbench must be importable there. The package is packed into a deterministic
tarball (sorted entries, zero mtimes and owners) holding the checkout's layout::

    workbench/**/*.py
    data/profiles/  data/gpus/  data/models/  data/tokenizer/  data/prompts/  data/variants/

It is uploaded once per content (:func:`workbench.hosts.ensure_file`, keyed by the
tarball's hash) and unpacked next to itself into ``tree/``; the server then runs
with ``PYTHONPATH=<tree>``. Unpacked files keep the checkout's layout, so code that
finds data relative to the package (``Path(__file__).parents[2] / "data"``, as
``workbench.sim._profiles``, ``sim.text`` and ``bench.prompts`` do) finds it there
unchanged. A zip on ``PYTHONPATH`` (zipimport) would not do: the tokenizer library
opens ``tokenizer.json`` by file path, and ``__file__``-relative data lookups do not
work inside an archive.

The host's interpreter still needs the simulator's dependencies (aiohttp, numpy,
tokenizers; Python 3.11+ for ``tomllib``); a missing one is reported by the start
failure classifier as an import error.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import shlex
import tarfile
import threading
from pathlib import Path

from workbench import paths
from workbench.errors import HostError
from workbench.hosts import Host, LocalHost, ensure_file, shell_path
from workbench.hosts._upload import DEFAULT_CACHE_DIR, content_key

#: The checkout holding ``workbench/`` and ``data/``.
CHECKOUT = Path(__file__).resolve().parents[2]
#: Data directories the package reads at run time (relative to the checkout).
DATA_DIRS = ("data/profiles", "data/gpus", "data/models", "data/tokenizer", "data/prompts", "data/variants")
#: Name of the tarball (inside its content-keyed directory on the host).
BUNDLE_NAME = "workbench-bundle.tar.gz"

_cache: dict[tuple, bytes] = {}
_cache_lock = threading.Lock()


def bundle_files(root: Path = CHECKOUT) -> list[Path]:
    """Files that go into the bundle, sorted (relative to ``root``)."""
    files = [p for p in (root / "workbench").rglob("*.py") if "__pycache__" not in p.parts]
    for rel in DATA_DIRS:
        base = root / rel
        if base.is_dir():
            files += [p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return sorted(p.relative_to(root) for p in files)


def build_bundle(root: Path = CHECKOUT) -> bytes:
    """The deterministic ``.tar.gz`` of :func:`bundle_files` (same files and bytes -> same output).

    Rebuilt only when a file's size or mtime changed since the last call.
    """
    files = bundle_files(root)
    stats = tuple((str(rel), (root / rel).stat().st_size, (root / rel).stat().st_mtime_ns) for rel in files)
    key = (str(root), stats)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in files:
            data = (root / rel).read_bytes()
            info = tarfile.TarInfo(rel.as_posix())
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    out = packed.getvalue()
    with _cache_lock:
        _cache.clear()
        _cache[key] = out
    return out


def ensure_bundle(host: Host, *, cache_dir: str = DEFAULT_CACHE_DIR) -> str:
    """A directory on ``host`` whose ``workbench/`` and ``data/`` are this checkout's; for ``PYTHONPATH``.

    On :class:`LocalHost` it is the checkout itself. Elsewhere: one command when the
    current bundle is already unpacked there; otherwise an upload and an unpack.

    Raises:
        HostError: the host cannot be written, or ``tar`` failed there.
    """
    if isinstance(host, LocalHost):
        return str(CHECKOUT)
    data = build_bundle()
    key = content_key(data)
    tree = f"{cache_dir.rstrip('/')}/{key}/tree"
    probe = f't={shell_path(tree)}; if [ -f "$t/.complete" ]; then printf \'present\\n%s\' "$t"; fi'
    res = host.run(probe, timeout_s=60)
    state, _, path = res.stdout.partition("\n")
    if state == "present" and path.startswith("/"):
        return path
    local = paths.cache_dir() / "bundles" / key / BUNDLE_NAME
    if not local.is_file() or local.read_bytes() != data:
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(local.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(local)
    remote_tar = ensure_file(host, local, cache_dir=cache_dir)
    tree_abs = posixpath.join(posixpath.dirname(remote_tar), "tree")
    unpack = (
        f't={shlex.quote(tree_abs)}; p={shlex.quote(tree_abs + ".part.")}$$; rm -rf "$p" && mkdir -p "$p" && '
        f'tar -xzf {shlex.quote(remote_tar)} -C "$p" && touch "$p/.complete" && '
        '{ [ -d "$t" ] || mv "$p" "$t"; } ; rm -rf "$p"; [ -f "$t/.complete" ]'
    )
    res = host.run(unpack, timeout_s=300, check=False)
    if not res.ok:
        raise HostError(
            f"Could not unpack the workbench package on host {host.name!r} into {tree_abs}: "
            f"{res.describe()}\nThe simulator needs `tar` and a writable home directory there."
        )
    return tree_abs
