"""Version ordering and ranges (pure, with an injected index listing), plus one real `pip index versions`."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.source._versions import index_versions, is_prerelease, previous_release, select_versions, version_key

OFFERED = ["0.5.0rc0", "0.5.0rc2", "0.5.1", "0.5.1.post3", "0.5.2rc1", "0.5.2", "0.5.9", "0.5.10rc0", "0.5.10",
           "0.5.10.post1", "0.5.23", "0.4.10.post2"]  # fmt: skip


def listing(include_prereleases: bool) -> list[str]:
    return OFFERED if include_prereleases else [v for v in OFFERED if not is_prerelease(v)]


def test_pep440_order() -> None:
    ordered = ["0.4.10.post2", "0.5.0rc0", "0.5.0rc2", "0.5.0", "0.5.1", "0.5.1.post3", "0.5.2rc1",
               "0.5.2", "0.5.9", "0.5.10.dev1", "0.5.10rc0", "0.5.10", "0.5.10.post1", "0.5.23"]  # fmt: skip
    assert sorted(reversed(ordered), key=version_key) == ordered
    assert version_key("0.5") == version_key("0.5.0")
    assert [is_prerelease(v) for v in ("0.5.0rc0", "0.5.10.dev1", "0.5.1.post3", "0.5.9")] == [True, True, False, False]


def test_series_ranges_and_lists() -> None:
    assert select_versions("0.5.x", available=listing) == ["0.5.1", "0.5.1.post3", "0.5.2", "0.5.9", "0.5.10",
                                                           "0.5.10.post1", "0.5.23"]  # fmt: skip
    with_pre = select_versions("0.5.*", include_prereleases=True, available=listing)
    assert with_pre[:3] == ["0.5.0rc0", "0.5.0rc2", "0.5.1"]
    assert select_versions("0.5.2..0.5.10", available=listing) == ["0.5.2", "0.5.9", "0.5.10"]
    assert select_versions(" 0.5.9 .. 0.5.23 ", include_prereleases=True, available=listing) == [
        "0.5.9", "0.5.10rc0", "0.5.10", "0.5.10.post1", "0.5.23"]  # fmt: skip
    assert select_versions(["0.5.23", "0.5.0rc0", "0.5.23", "0.5.9"]) == ["0.5.0rc0", "0.5.9", "0.5.23"]
    assert select_versions("0.5.9") == ["0.5.9"]  # one version: no index needed
    assert previous_release("0.5.10", available=listing) == "0.5.9"
    assert previous_release("0.4.10.post2", available=listing) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0.5.23..0.5.2", "runs backwards; write it oldest first: '0.5.2..0.5.23'"),
        ("0.5.2..", "needs both ends"),
        ("0.6.x", "No SGLang release on the index matches the series '0.6.x'; the newest offered: "),
        ("0.5.24..0.5.30", "matches the range"),
        ("latest", "not a release version"),
        ([], "version list is empty"),
        (["0.5.9", "0.5.9; rm -rf /"], "not a release version"),
    ],
)
def test_bad_specs_say_what_to_write(spec: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("*", r"\*")):
        select_versions(spec, available=listing)  # type: ignore[arg-type]


def test_the_real_index_lists_the_0_5_releases_oldest_first() -> None:
    finals = index_versions()
    assert {"0.5.2", "0.5.9", "0.5.12.post1", "0.5.23"} <= set(finals)
    assert not any(is_prerelease(v) for v in finals)
    assert list(finals) == sorted(finals, key=version_key)
    assert "0.5.0rc0" in index_versions(include_prereleases=True)
    assert select_versions("0.5.8.post1..0.5.9") == ["0.5.8.post1", "0.5.9"]
