"""A record's identity: what it measured (its figures) and where it came from (its file).

Every imported level gets :func:`figures_digest`, a SHA-256 of its tool, run name, values and
request rows (never its place in the file). Two records with the same digest from the same file are
one record written twice (a file pasted onto itself, a file passed twice, a line repeated): the
later ones are dropped and counted (:func:`drop_duplicates`, whose :attr:`Deduplicated.note` is
the one line the import prints). Two with the same digest from different files under one run
name are one measurement copied, not two repeats (two runs never agree to every digit): pooling
them would make "n=2" with an interval of zero width, so :func:`refuse_copies` refuses them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.imports._rows import ImportedLevel

__all__ = ["Deduplicated", "figures_digest", "drop_duplicates", "record_sha256", "refuse_copies"]


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python ones (``repr`` of anything else JSON cannot write)."""
    return value.item() if hasattr(value, "item") and not isinstance(value, (list, dict, str)) else repr(value)


def figures_digest(level: ImportedLevel) -> str:
    """SHA-256 (hex) of what ``level`` measured: tool, run name, values and request rows, in a canonical JSON
    (keys sorted, floats to every digit); its file and its place there are left out."""
    requests = None if level.requests is None else level.requests.to_dict("split")
    body = {"tool": level.tool, "variant": level.variant, "values": level.values, "requests": requests}
    text = json.dumps(body, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Deduplicated:
    """Levels with their exact duplicates dropped.

    Attributes:
        kept: ``(source, level, digest)`` of each level kept, in the order read.
        dropped: how many were dropped (the same figures from the same file as an earlier one).
        first_dropped: the first dropped record and the record it repeats (``"a.jsonl line 2"``, ``"line 1"``),
            None when none was dropped.
    """

    kept: list[tuple[Path, ImportedLevel, str]]
    dropped: int = 0
    first_dropped: tuple[str, str] | None = None

    @property
    def note(self) -> str | None:
        """The one line an import prints about what it dropped; None when nothing was."""
        if not self.dropped or self.first_dropped is None:
            return None
        repeat, original = self.first_dropped
        return (
            f"dropped {self.dropped} exact duplicate record(s): the same figures from the same file as a record "
            f"read before (first: {repeat} repeats {original}); each record is kept once"
        )


def drop_duplicates(levels: Sequence[tuple[Path, ImportedLevel]]) -> Deduplicated:
    """Keep the first of each (the level's ``source_file``, :func:`figures_digest`) and count the rest.

    Args:
        levels: ``(path given, level)`` in the order read (a folder's levels each name their own file).
    """
    seen: dict[tuple[str, str], ImportedLevel] = {}
    kept: list[tuple[Path, ImportedLevel, str]] = []
    dropped, first = 0, None
    for source, level in levels:
        digest = figures_digest(level)
        original = seen.get((level.source_file, digest))
        if original is None:
            seen[(level.source_file, digest)] = level
            kept.append((source, level, digest))
            continue
        dropped += 1
        if first is None:
            first = (f"{Path(level.source_file).name} {level.source_record}", original.source_record)
    return Deduplicated(kept=kept, dropped=dropped, first_dropped=first)


def record_sha256(level: ImportedLevel, digest: str) -> str:
    """A record's identity: SHA-256 (hex) of its file (``source_file``) and :func:`figures_digest`."""
    return hashlib.sha256(f"{level.source_file}\n{digest}".encode()).hexdigest()


def refuse_copies(kept: Sequence[tuple[Path, ImportedLevel, str]]) -> None:
    """Refuse records of one run name with identical figures from different files (what
    :func:`drop_duplicates` kept: records of one file with the same figures are gone by then).

    Raises:
        ConfigError: naming both records, the run name, why they cannot be repeats and what to do.
    """
    first: dict[tuple[str, str, str], ImportedLevel] = {}
    for _, level, digest in kept:
        key = (level.tool, level.variant, digest)
        if key not in first:
            first[key] = level
            continue
        earlier = first[key]
        raise ConfigError(
            f"{level.source_file} {level.source_record} holds the same figures, to every digit, as "
            f"{earlier.source_file} {earlier.source_record} (run name {level.variant!r}): one measurement in two files, not two repeats, "
            "and pooled they would make an interval of zero width. Import one of the two files; if they are two "
            "measurements, their tool wrote one of them wrong"
        )
