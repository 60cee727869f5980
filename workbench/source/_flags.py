"""The ``launch_server`` flags of an SGLang version, derived from its source, with argparse's semantics.

:func:`server_flags` runs ``remote/server_flags.py`` on a release (its cached wheel,
on this machine) or on a checkout on any host, so the flag set is read from that
version's own ``srt/server_args.py`` and ``srt/arg_groups/`` -- never from a list
kept by hand. The :class:`FlagTable` it returns answers the way that version's
parser would (:mod:`workbench.source._flag_table` states the rules); the records it
holds are in :mod:`workbench.source._flag_records`, and :meth:`FlagTable.check`
reads a whole command line (:mod:`workbench.source._flag_check`). This module
re-exports all of them, so ``from workbench.source._flags import FlagTable`` stays
the import to use.

Facts the tests check: 0.5.9 has ``--cuda-graph-max-bs`` and ``--tp`` abbreviates
``--tp-size``; 0.5.16 keeps ``--cuda-graph-max-bs`` as a deprecated alias of
``--cuda-graph-max-bs-decode``; 0.5.20 drops it, so it is ambiguous there.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from workbench.errors import SourceError
from workbench.hosts import Host, LocalHost, get_host
from workbench.source._flag_records import (
    Flag,
    FlagError,
    FlagErrorKind,
    FlagMatch,
    FlagProblem,
    SpeculativeAlgorithms,
)
from workbench.source._flag_table import FlagTable
from workbench.source._helper_call import call_source_helper
from workbench.source._releases import DOWNLOAD_TIMEOUT_S, sglang_release
from workbench.source._versions import previous_release

__all__ = [
    "FLAGS_TIMEOUT_S",
    "Flag",
    "FlagError",
    "FlagErrorKind",
    "FlagMatch",
    "FlagProblem",
    "FlagTable",
    "SpeculativeAlgorithms",
    "server_flags",
]

#: Limit for one extraction, in seconds.
FLAGS_TIMEOUT_S = 120.0
_VERSION_LIKE = re.compile(r"^[0-9]+(\.[0-9]+)+((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$")


def server_flags(
    version_or_tree: str,
    *,
    host: str | Host = "local",
    previous: str | FlagTable | None = "auto",
    timeout_s: float = FLAGS_TIMEOUT_S,
) -> FlagTable:
    """The ``launch_server`` flags of an SGLang release or source tree, read from its source.

    Args:
        version_or_tree: a release version (``"0.5.20"``: its wheel is fetched and cached)
            or a directory on ``host``: the ``sglang`` package, or a checkout holding
            ``python/sglang``.
        host: where a tree is (``"local"``, an ssh config alias, or a Host); releases
            are always read on this machine.
        previous: the release to compare against for removed flags: ``"auto"`` (the
            release right before a release version, found on the package index; none
            for a tree), a version, a table, or None. Its table is built here (a
            second wheel and extraction) and held in :attr:`FlagTable.previous`.
        timeout_s: limit for the extraction, in seconds.

    Returns:
        The :class:`FlagTable`.

    Raises:
        ConfigError: a malformed version.
        SourceError: the release could not be fetched, or the tree is not an SGLang
            source tree (or cannot be parsed by the host's python3).
        HostError: the host could not be reached.
    """
    if _VERSION_LIKE.match(version_or_tree):
        answer = _release_answer(version_or_tree, timeout_s)
        where, label, version = "local", version_or_tree, version_or_tree
    else:
        target = get_host(host)
        answer = call_source_helper(target, "server_flags", {"root": version_or_tree}, timeout_s=timeout_s)
        where, label, version = target.name, f"{target.name}:{answer['root']}", None
    compared, adjacent = _previous_table(version, previous, timeout_s)
    return FlagTable(
        label=label, version=version, flags=tuple(Flag.from_answer(f) for f in answer["flags"]),
        allow_abbrev=bool(answer["parser"]["allow_abbrev"]), layout=answer["layout"],
        speculative=SpeculativeAlgorithms.from_answer(answer["speculative_algorithms"]),
        parser=dict(answer["parser"]), notes=tuple(answer["notes"]), host=where, root=answer["root"],
        previous=compared, previous_adjacent=adjacent, older=last_release_with if adjacent else None,
    )  # fmt: skip


def _previous_table(version: str | None, previous: str | FlagTable | None, timeout_s: float
                    ) -> tuple[FlagTable | None, bool]:  # fmt: skip
    """(the table to compare against, whether it is the release right before ``version``).

    ``"auto"`` asks the package index for the release before ``version`` (none for a
    tree); an index that cannot be listed means no comparison (messages then fall
    back to close spellings) rather than an error.
    """
    if isinstance(previous, FlagTable):
        return previous, False
    if previous is None:
        return None, False
    if previous != "auto":
        return server_flags(previous, previous=None, timeout_s=timeout_s), False
    if version is None:
        return None, False
    try:
        before = previous_release(version)
    except SourceError:
        return None, False
    if before is None:
        return None, False
    return server_flags(before, previous=None, timeout_s=timeout_s), True


def last_release_with(option: str, before: str, *, steps: int) -> tuple[FlagTable, str] | None:
    """(the flags of the newest release up to ``before`` that has ``option``, the release after it),
    walking back at most ``steps`` releases from ``before``; None when none of them has it (or the
    package index cannot be listed)."""
    newer: str = before
    version: str | None = before
    for _ in range(steps):
        try:
            version = previous_release(newer)
        except SourceError:
            return None
        if version is None:
            return None
        table = server_flags(version, previous=None)
        if table.get(option) is not None:
            return table, newer
        newer = version
    return None


@functools.lru_cache(maxsize=64)
def _release_answer(version: str, timeout_s: float) -> dict[str, Any]:
    """The helper's answer for a release (releases never change, so it is kept for the process)."""
    release = sglang_release(version, timeout_s=DOWNLOAD_TIMEOUT_S)
    return call_source_helper(LocalHost(), "server_flags", {"root": str(release.package_dir)}, timeout_s=timeout_s)
