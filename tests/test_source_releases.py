"""SGLang release wheels: real pip downloads into the shared cache, unpacking, cache reuse, errors.

Uses the workbench's cache (``$WORKBENCH_CACHE_DIR/sglang`` or
``~/.cache/specbench-workbench/sglang``), so only the first run downloads.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from workbench.errors import ConfigError, SourceError
from workbench.source import cache_dir, sglang_release
from workbench.source._releases import CACHE_ENV


@pytest.mark.parametrize(
    "version, wheel_tag",
    [
        ("0.5.9", "-py3-none-any.whl"),
        ("0.5.23", "-cp311-cp311-manylinux_2_34_x86_64.whl"),
        ("0.5.2", "-py3-none-any.whl"),
    ],
)
def test_release_is_downloaded_unpacked_and_then_free(version: str, wheel_tag: str) -> None:
    release = sglang_release(version)
    assert release.version == version
    assert release.root == cache_dir() / "src" / f"sglang-{version}"
    assert release.package_dir == release.root / "sglang"
    assert (release.package_dir / "srt" / "server_args.py").is_file()
    assert release.wheel == f"sglang-{version}{wheel_tag}"
    assert (cache_dir() / "wheels" / release.wheel).is_file() and len(release.wheel_sha256) == 64
    wheels_before = sorted(p.name for p in (cache_dir() / "wheels").iterdir())
    elapsed = []
    for _ in range(3):  # the fastest of three: one lookup can lose the CPU for longer on a loaded machine
        started = time.perf_counter()
        again = sglang_release(version)
        elapsed.append(time.perf_counter() - started)
        assert again == release
    assert min(elapsed) < 0.05, (
        f"a cached release took {min(elapsed):.3f} s (pip takes > 0.5 s): the cache was not used"
    )
    assert sorted(p.name for p in (cache_dir() / "wheels").iterdir()) == wheels_before


def test_version_missing_from_the_index_names_it_and_what_is_offered(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        sglang_release("0.5.999", cache=tmp_path)
    message = str(info.value)
    assert "SGLang 0.5.999" in message and "no wheel on the package index" in message
    assert "0.5.9" in message and "Pick an offered version" in message
    assert not list((tmp_path / "wheels").glob("*.whl")) and not (tmp_path / "src").exists()


@pytest.mark.parametrize("version", ["latest", "0.5.9; rm -rf /", "../0.5.9", "0.5.9 --index-url=x", ""])
def test_malformed_versions_are_config_errors_before_pip_runs(version: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="release version"):
        sglang_release(version, cache=tmp_path)
    assert not tmp_path.joinpath("wheels").exists()


def test_a_wheel_put_in_the_cache_by_hand_is_unpacked_without_pip(tmp_path: Path) -> None:
    shared = sglang_release("0.5.2")
    (tmp_path / "wheels").mkdir()
    shutil.copy(cache_dir() / "wheels" / shared.wheel, tmp_path / "wheels" / shared.wheel)
    release = sglang_release("0.5.2", cache=tmp_path, pip_args=["--index-url", "http://127.0.0.1:9/unreachable"])
    assert release.wheel_sha256 == shared.wheel_sha256
    assert (release.package_dir / "srt" / "managers" / "utils.py").read_bytes() == (
        shared.package_dir / "srt" / "managers" / "utils.py"
    ).read_bytes()
    assert not [p for p in (tmp_path / "src").iterdir() if p.name.startswith(".")]  # no staging left


def test_corrupt_wheel_is_a_source_error_saying_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "sglang-0.5.9-py3-none-any.whl").write_bytes(b"not a zip file")
    with pytest.raises(SourceError, match="Cannot unpack the SGLang 0.5.9 wheel.*Delete it"):
        sglang_release("0.5.9", cache=tmp_path)
    assert not (tmp_path / "src" / "sglang-0.5.9").exists()


def test_unreachable_index_is_a_source_error_saying_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        sglang_release(
            "0.5.9", cache=tmp_path, timeout_s=60,
            pip_args=["--isolated", "--index-url", "http://127.0.0.1:9/simple", "--retries", "0", "--timeout", "1"],
        )  # fmt: skip
    message = str(info.value)
    assert "SGLang 0.5.9" in message and "offered no sglang wheels" in message
    assert str(tmp_path / "wheels") in message and "--- pip ---" in message


def test_cache_dir_follows_the_environment(tmp_path: Path) -> None:
    assert cache_dir(environ={CACHE_ENV: str(tmp_path)}) == tmp_path / "sglang"
    assert cache_dir(environ={}) == Path.home() / ".cache" / "specbench-workbench" / "sglang"
