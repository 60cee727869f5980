"""SGLang release sources from the package index, without installing them.

``pip download --no-deps --only-binary=:all: sglang==<version>`` fetches the
release's wheel, which is unpacked (it is a zip file) into a cache::

    <cache>/wheels/sglang-<version>-<tags>.whl
    <cache>/src/sglang-<version>/sglang/...          the package, as installed
    <cache>/src/sglang-<version>/.workbench-release.json   provenance (wheel name, sha256)

``<cache>`` is ``$WORKBENCH_CACHE_DIR/sglang`` when that variable is set, else
``~/.cache/specbench-workbench/sglang``. A version already unpacked costs nothing
(no pip), and a wheel already in ``<cache>/wheels`` is unpacked without pip, so a
machine without index access can be fed wheels by hand.

Facts: SGLang 0.5.9 and 0.5.2 ship pure-Python wheels (``py3-none-any``); 0.5.23
ships only CPython 3.11 manylinux wheels (``cp311-cp311-manylinux_2_34_x86_64``),
so fetching it from another interpreter needs ``pip_args`` naming that target.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from workbench.errors import CommandTimeout, ConfigError, SourceError
from workbench.hosts import LocalHost

#: Environment variable naming the workbench's cache root (SGLang releases go to ``<it>/sglang``).
CACHE_ENV = "WORKBENCH_CACHE_DIR"
#: Default limit for one ``pip download``, in seconds.
DOWNLOAD_TIMEOUT_S = 300.0
#: Normalised public PEP 440 versions, e.g. ``0.5.9``, ``0.5.10rc0``, ``0.4.6.post5``.
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$")
_PROVENANCE = ".workbench-release.json"


@dataclasses.dataclass(frozen=True)
class Release:
    """One unpacked SGLang release.

    Attributes:
        version: the version asked for, e.g. ``"0.5.9"``.
        root: the unpacked wheel (``<cache>/src/sglang-<version>``).
        package_dir: the ``sglang`` package inside it; paths such as
            ``srt/managers/utils.py`` are relative to this directory.
        wheel: the wheel's file name (it names the Python/platform tags).
        wheel_sha256: hex SHA-256 of the wheel file.
    """

    version: str
    root: Path
    package_dir: Path
    wheel: str
    wheel_sha256: str


def cache_dir(*, environ: Mapping[str, str] | None = None) -> Path:
    """The SGLang release cache: ``$WORKBENCH_CACHE_DIR/sglang`` or ``~/.cache/specbench-workbench/sglang``.

    Args:
        environ: environment to read (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    base = env.get(CACHE_ENV)
    root = Path(base).expanduser() if base else Path("~/.cache/specbench-workbench").expanduser()
    return root / "sglang"


def check_version(version: str) -> str:
    """Return ``version`` when it is a normalised release version, else raise ConfigError."""
    if not isinstance(version, str) or not _VERSION.match(version):
        raise ConfigError(f"SGLang version {version!r} is not a release version such as '0.5.9' or '0.5.10rc0'.")
    return version


def sglang_release(
    version: str,
    *,
    cache: str | os.PathLike[str] | None = None,
    timeout_s: float = DOWNLOAD_TIMEOUT_S,
    pip_args: Sequence[str] = (),
) -> Release:
    """The source of SGLang ``version``, downloaded and unpacked on first use.

    Args:
        version: release version, e.g. ``"0.5.9"``.
        cache: cache directory (default :func:`cache_dir`).
        timeout_s: limit for the download in seconds (default 300).
        pip_args: extra ``pip download`` arguments, e.g.
            ``("--python-version", "3.11", "--platform", "manylinux_2_34_x86_64")``
            to fetch a platform-specific wheel from another interpreter.

    Returns:
        The unpacked :class:`Release`.

    Raises:
        ConfigError: ``version`` is not a release version.
        SourceError: the version is not on the index, the download failed or timed
            out, or the wheel is corrupt; the message says what to do.
    """
    check_version(version)
    base = Path(cache).expanduser() if cache is not None else cache_dir()
    root = base / "src" / f"sglang-{version}"
    if not (root / _PROVENANCE).is_file():
        try:
            wheel = _cached_wheel(base, version) or download_wheel(
                version, cache=base, timeout_s=timeout_s, pip_args=pip_args
            )
            _unpack(wheel, root, version)
        except OSError as exc:
            raise SourceError(
                f"Cannot prepare SGLang {version} in the cache {base}: {exc}. "
                f"Point {CACHE_ENV} at a writable directory."
            ) from exc
    info = json.loads((root / _PROVENANCE).read_text(encoding="utf-8"))
    return Release(
        version=version,
        root=root,
        package_dir=root / "sglang",
        wheel=info["wheel"],
        wheel_sha256=info["wheel_sha256"],
    )


def download_wheel(
    version: str,
    *,
    cache: str | os.PathLike[str] | None = None,
    timeout_s: float = DOWNLOAD_TIMEOUT_S,
    pip_args: Sequence[str] = (),
) -> Path:
    """Download the wheel of SGLang ``version`` into ``<cache>/wheels`` with pip; return its path.

    Runs ``python -m pip download --no-deps --only-binary=:all:`` with this
    interpreter, so pip's index configuration (``PIP_INDEX_URL``, pip.conf) applies.

    Raises:
        ConfigError: ``version`` is not a release version.
        SourceError: pip failed or timed out (message names the version, pip's
            error, the versions the index offers when it says so, and what to do).
    """
    check_version(version)
    wheels = (Path(cache).expanduser() if cache is not None else cache_dir()) / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".download-", dir=wheels))
    try:
        argv = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "--progress-bar", "off", "--no-input",
            *pip_args, f"sglang=={version}", "-d", str(staging),
        ]  # fmt: skip
        try:
            result = LocalHost().run(argv, timeout_s=timeout_s, check=False)
        except CommandTimeout as exc:
            raise SourceError(
                f"Downloading SGLang {version} timed out after {timeout_s} s; check the network and "
                f"pip's index settings, or put the wheel in {wheels} by hand."
            ) from exc
        if not result.ok:
            raise SourceError(_pip_failure_message(version, result.stdout + result.stderr, wheels))
        found = sorted(staging.glob("sglang-*.whl"))
        if not found:
            raise SourceError(f"pip reported success for SGLang {version} but saved no wheel in {staging}.")
        target = wheels / found[0].name
        os.replace(found[0], target)
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _pip_failure_message(version: str, output: str, wheels: Path) -> str:
    """A message for a failed ``pip download``: what failed and what to do."""
    lines = [ln if len(ln) <= 240 else ln[:240] + " ..." for ln in output.strip().splitlines()]
    tail = "\n".join(lines[-6:])
    offered = re.search(r"\(from versions: ([^)]*)\)", output)
    if offered is not None or "No matching distribution found" in output:
        listed = [v.strip() for v in offered.group(1).split(",")] if offered else []
        listed = [v for v in listed if v and v != "none"]
        if listed:
            near = [v for v in listed if v.split(".")[:2] == version.split(".")[:2]] or listed[-8:]
            hint = f"Versions the index offers near it: {', '.join(near)}."
        else:
            return (
                f"SGLang {version}: the package index offered no sglang wheels at all (it is unreachable "
                "or does not carry sglang). Check the network and pip's index settings (PIP_INDEX_URL, "
                f"pip.conf), or put the wheel in {wheels} by hand.\n--- pip ---\n{tail}"
            )
        return (
            f"SGLang {version} has no wheel on the package index for this interpreter "
            f"(Python {sys.version_info.major}.{sys.version_info.minor}, binary wheels only). {hint} "
            "Pick an offered version. If it has wheels only "
            "for another Python or platform, download one by hand into the cache, where it is used as it is: "
            "`python -m pip download --no-deps --only-binary=:all: --python-version 3.11 --platform "
            f"manylinux_2_34_x86_64 sglang=={version} -d {wheels}`. Or search a source checkout instead "
            f"(`workbench inspect NAME --tree PATH`; in Python, tree=PATH).\n--- pip ---\n{tail}"
        )
    return (
        f"Downloading SGLang {version} with pip failed; check the network and pip's index settings "
        f"(PIP_INDEX_URL, pip.conf), or put the wheel in {wheels} by hand.\n--- pip ---\n{tail}"
    )


def _cached_wheel(base: Path, version: str) -> Path | None:
    """A wheel of ``version`` already in ``<base>/wheels``, or None."""
    found = sorted((base / "wheels").glob(f"sglang-{version}-*.whl"))
    return found[0] if found else None


def _unpack(wheel: Path, root: Path, version: str) -> None:
    """Unpack ``wheel`` into ``root`` atomically (temporary directory, then rename).

    Raises:
        SourceError: the wheel is corrupt or holds no ``sglang`` package.
    """
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".unpack-{root.name}-", dir=root.parent))
    try:
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        try:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(staging)  # extractall drops absolute and '..' members
        except (zipfile.BadZipFile, OSError) as exc:
            raise SourceError(
                f"Cannot unpack the SGLang {version} wheel {wheel}: {exc}. Delete it and try again."
            ) from exc
        if not (staging / "sglang").is_dir():
            raise SourceError(f"The SGLang {version} wheel {wheel} holds no 'sglang' package directory.")
        provenance = {"version": version, "wheel": wheel.name, "wheel_sha256": digest}
        (staging / _PROVENANCE).write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")
        if (root / _PROVENANCE).is_file():
            return  # another process unpacked it meanwhile
        if root.exists():
            shutil.rmtree(root)  # left without its provenance marker: not a finished unpack
        try:
            os.rename(staging, root)
        except OSError as exc:
            if not (root / _PROVENANCE).is_file():  # a lost race is fine once the winner finished
                raise SourceError(f"Cannot move the unpacked SGLang {version} into {root}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
