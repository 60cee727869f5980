"""SGLang release versions: ordering, the list the package index offers, and version ranges.

A range is written the way a person would say it::

    "0.5.x"              every 0.5 release (final and .postN; pre-releases only when asked)
    "0.5.2..0.5.9"       every release from 0.5.2 to 0.5.9, both included
    "0.5.9"              just that release
    ["0.5.2", "0.5.9"]   exactly these (sorted oldest first)

The index is asked with ``pip index versions sglang --json`` (with ``--pre`` for
pre-releases), so pip's index configuration applies. pip lists the versions that
have a file this interpreter could install; every 0.5.x release has one for the
workbench's Python 3.11 (checked against PyPI: 42 final and post releases from
0.5.1 to 0.5.23, plus 0.5.0rc0-rc2, 0.5.2rc0-rc2, 0.5.3rc0/rc2 and 0.5.10rc0).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Sequence

from workbench.errors import CommandTimeout, ConfigError, SourceError
from workbench.hosts import LocalHost
from workbench.source._releases import check_version

#: Limit for one ``pip index versions`` call, in seconds.
INDEX_TIMEOUT_S = 120.0
#: The series searched when no versions are given.
DEFAULT_SERIES = "0.5.x"

_PARTS = re.compile(
    r"^(?P<release>[0-9]+(?:\.[0-9]+)*)(?:(?P<pre>a|b|rc)(?P<pre_n>[0-9]+))?"
    r"(?:\.post(?P<post>[0-9]+))?(?:\.dev(?P<dev>[0-9]+))?$"
)
_PRE_RANK = {"a": 0, "b": 1, "rc": 2}
_SERIES = re.compile(r"^(?P<prefix>[0-9]+(?:\.[0-9]+)*)\.[x*]$")

VersionSpec = str | Sequence[str] | None


def version_key(version: str) -> tuple:
    """A sort key that orders release versions as PEP 440 does (``0.5.10rc0 < 0.5.10 < 0.5.10.post1``).

    Raises:
        ConfigError: ``version`` is not a release version.
    """
    match = _PARTS.match(check_version(version))
    assert match is not None  # check_version accepted it, and its pattern is the same shape
    release = tuple(int(p) for p in match["release"].split("."))
    release = release + (0,) * (6 - len(release))  # 0.5 == 0.5.0
    # dev < pre-release < final < post; a dev release of a final sorts before its pre-releases.
    if match["pre"]:
        pre = (1, _PRE_RANK[match["pre"]], int(match["pre_n"]))
    elif match["dev"] and not match["post"]:
        pre = (0, 0, 0)
    else:
        pre = (2, 0, 0)
    post = int(match["post"]) if match["post"] is not None else -1
    dev = int(match["dev"]) if match["dev"] is not None else sys.maxsize
    return release, pre, post, dev


def is_prerelease(version: str) -> bool:
    """True for alpha, beta, release-candidate and dev versions (``0.5.0rc0``); False for final and post."""
    match = _PARTS.match(check_version(version))
    return bool(match and (match["pre"] or match["dev"]))


@functools.lru_cache(maxsize=4)
def index_versions(*, include_prereleases: bool = False, timeout_s: float = INDEX_TIMEOUT_S) -> tuple[str, ...]:
    """Every SGLang version the package index offers, oldest first (asked once per process).

    Args:
        include_prereleases: list pre-releases too (pip's ``--pre``).
        timeout_s: limit for pip, in seconds.

    Returns:
        The versions, sorted by :func:`version_key`.

    Raises:
        SourceError: pip failed, timed out, or gave an answer that lists no versions;
            the message says how to work offline (pass an explicit list).
    """
    argv = [sys.executable, "-m", "pip", "index", "versions", "sglang", "--json", "--disable-pip-version-check",
            "--no-input"] + (["--pre"] if include_prereleases else [])  # fmt: skip
    try:
        result = LocalHost().run(argv, timeout_s=timeout_s, check=False)
    except CommandTimeout as exc:
        raise SourceError(
            f"Listing SGLang releases on the package index timed out after {timeout_s} s; check the network, "
            "or pass the versions as a list (e.g. versions=['0.5.9', '0.5.23'])."
        ) from exc
    try:
        listed = json.loads(result.stdout)["versions"] if result.ok else None
    except (ValueError, KeyError, TypeError):
        listed = None
    if not listed:
        raise SourceError(
            "Cannot list SGLang releases with `pip index versions sglang --json`; check the network and pip's "
            "index settings (PIP_INDEX_URL, pip.conf), or pass the versions as a list "
            f"(e.g. versions=['0.5.9', '0.5.23']).\n{result.describe()}"
        )
    return tuple(sorted((v for v in listed if _PARTS.match(v)), key=version_key))


def select_versions(
    spec: VersionSpec = None,
    *,
    include_prereleases: bool = False,
    available: Callable[[bool], Sequence[str]] | None = None,
) -> list[str]:
    """The release versions a range names, oldest first (see the module doc for the forms).

    Args:
        spec: ``"0.5.x"``, ``"FROM..TO"``, one version, or a list; None means
            :data:`DEFAULT_SERIES`. An explicit list is taken as given (sorted, duplicates
            dropped) without asking the index; pre-releases in it are kept.
        include_prereleases: let series and ranges include pre-releases.
        available: ``available(include_prereleases) -> versions``: where series and
            ranges look versions up (default :func:`index_versions`; injectable for tests).

    Returns:
        The versions, oldest first.

    Raises:
        ConfigError: a malformed spec or version, a reversed range, or a range/series
            that matches no release (the message lists the nearest ones).
        SourceError: the index could not be listed.
    """
    if spec is None:
        spec = DEFAULT_SERIES
    if not isinstance(spec, str):
        picked = sorted(set(check_version(v) for v in spec), key=version_key)
        if not picked:
            raise ConfigError("The version list is empty; give at least one SGLang version such as '0.5.9'.")
        return picked
    spec = spec.strip()
    series = _SERIES.match(spec)
    if ".." not in spec and series is None:
        return [check_version(spec)]
    lister = available or (lambda pre: index_versions(include_prereleases=pre))
    offered = sorted(
        (v for v in lister(include_prereleases) if include_prereleases or not is_prerelease(v)), key=version_key
    )
    if series is not None:
        prefix = series["prefix"] + "."
        picked = [v for v in offered if v.startswith(prefix)]
        what = f"series {spec!r}"
    else:
        low, _, high = (part.strip() for part in spec.partition(".."))
        if not low or not high:
            raise ConfigError(f"Version range {spec!r} needs both ends, e.g. '0.5.2..0.5.23'.")
        if version_key(low) > version_key(high):
            raise ConfigError(f"Version range {spec!r} runs backwards; write it oldest first: '{high}..{low}'.")
        picked = [v for v in offered if version_key(low) <= version_key(v) <= version_key(high)]
        what = f"range {spec!r}"
    if not picked:
        near = ", ".join(offered[-8:]) or "none"
        raise ConfigError(f"No SGLang release on the index matches the {what}; the newest offered: {near}.")
    return picked


def previous_release(version: str, *, available: Callable[[bool], Sequence[str]] | None = None) -> str | None:
    """The final or post release just before ``version`` on the index, or None when it is the oldest.

    Raises:
        SourceError: the index could not be listed.
    """
    lister = available or (lambda pre: index_versions(include_prereleases=pre))
    earlier = sorted(
        (v for v in lister(False) if not is_prerelease(v) and version_key(v) < version_key(version)), key=version_key
    )
    return earlier[-1] if earlier else None
