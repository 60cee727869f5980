"""Every question about one name, asked of each release or tree once: definitions, references, lines, history.

:func:`inspect_name` gathers what ``workbench inspect`` and the notebook ask (the
name's definitions and references in the compared releases and a tree, line
ranges of files there, and the definitions, with their digests, over a history
range) into ONE request per release or tree: one run of
``remote/find_definitions.py`` each, which answers from its on-host index after
the first time. The frames it returns are the same as those of
:func:`~workbench.source.find_definition`, :func:`~workbench.source.find_references`
and :func:`~workbench.source.definition_history`, which ask one question each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pandas as pd

from workbench.errors import ConfigError, SourceError
from workbench.hosts import Host
from workbench.source._definitions import (
    DEFAULT_VERSIONS,
    SEARCH_TIMEOUT_S,
    Target,
    answers_frame,
    check_names,
    run_searches,
    search_targets,
)
from workbench.source._history import history_frame
from workbench.source._lines import LineRange
from workbench.source._versions import VersionSpec, select_versions

__all__ = ["Inspection", "inspect_name"]


@dataclasses.dataclass(frozen=True)
class Inspection:
    """What :func:`inspect_name` found.

    Attributes:
        name: the name looked up.
        definitions: as :func:`~workbench.source.find_definition` returns (the compared
            releases and the tree).
        references: as :func:`~workbench.source.find_references` returns, or None when not asked.
        history: as :func:`~workbench.source.definition_history` returns, or None when not asked.
        lines: the line ranges asked for, one per (release or tree, range), in that order.
        helper_runs: helper processes run per release or tree label (1 each).
    """

    name: str
    definitions: pd.DataFrame
    references: pd.DataFrame | None
    history: pd.DataFrame | None
    lines: tuple[LineRange, ...]
    helper_runs: dict[str, int]


def inspect_name(
    name: str,
    *,
    versions: Sequence[str] = DEFAULT_VERSIONS,
    host: str | Host = "local",
    tree: str | None = None,
    tree_label: str | None = None,
    references: bool = False,
    history: VersionSpec | None = None,
    include_prereleases: bool = False,
    lines: Sequence[tuple[str, int, int | None]] = (),
    include_source: bool = True,
    timeout_s: float = SEARCH_TIMEOUT_S,
) -> Inspection:
    """Definitions, references, line ranges and history of ``name``: one helper run per release or tree.

    Args:
        name: bare or qualified name (see :func:`~workbench.source.find_definition`).
        versions: the releases compared side by side (default ``("0.5.9", "0.5.23")``).
        host, tree, tree_label: a tree on a host to search as well (as for ``find_definition``).
        references: also find the references to ``name`` in ``versions`` and the tree.
        history: releases to trace the definition over (a list, ``"FROM..TO"`` or a
            series such as ``"0.5.x"``), or None for no history.
        include_prereleases: let a history range or series include pre-releases.
        lines: ``(path, start, end)`` ranges (``end`` None: to the end of the file) to
            read in each of ``versions`` and the tree.
        include_source: keep the ``source`` columns.
        timeout_s: limit for each release's or tree's search, in seconds.

    Returns:
        The :class:`Inspection`.

    Raises:
        ConfigError: a bad name, version, range or line range (before anything runs).
        SourceError: a release could not be fetched, a tree not searched, or a line range not read.
        HostError, CommandError: as for ``find_definition``.
    """
    [checked] = check_names(name)
    for path, start, end in lines:
        if not isinstance(start, int) or start < 1 or (end is not None and (not isinstance(end, int) or end < start)):
            raise ConfigError(
                f"Line range {path}:{start}..{end} is not valid: lines are numbered from 1 and end >= start."
            )
    compared = search_targets(versions, host=host, tree=tree, tree_label=tree_label)
    picked = select_versions(history, include_prereleases=include_prereleases) if history is not None else []
    labels = [label for label, _, _ in compared]
    targets: list[Target] = compared + search_targets([v for v in picked if v not in labels])
    definition = {"name": checked, "type": "definition"}
    reads = [{"path": path, "start": start, "end": end} for path, start, end in lines]
    batches = []
    for target in targets:
        is_compared = target in compared
        queries = [definition] + ([{"name": checked, "type": "references"}] if references and is_compared else [])
        batches.append((queries, reads if is_compared else []))
    answers = run_searches(targets, batches, include_source=include_source or history is not None,
                           timeout_s=timeout_s)  # fmt: skip
    by_label = dict(zip([label for label, _, _ in targets], zip(targets, answers, strict=True), strict=True))
    shown = [by_label[label] for label in labels]
    definitions = answers_frame([t for t, _ in shown], [a for _, a in shown], [checked], "definition",
                                include_source=include_source)  # fmt: skip
    refs = None
    if references:
        refs = answers_frame([t for t, _ in shown], [a for _, a in shown], [checked], "references",
                             include_source=False)  # fmt: skip
    traced = None
    if history is not None:
        over = [by_label[version] for version in picked]
        found = answers_frame([t for t, _ in over], [a for _, a in over], [checked], "definition")
        traced = history_frame(checked, picked, found, include_source=include_source)
    return Inspection(
        name=checked, definitions=definitions, references=refs, history=traced,
        lines=tuple(_line_ranges(shown, lines)), helper_runs={label: 1 for label, _, _ in targets},
    )  # fmt: skip


def _line_ranges(shown: list[tuple[Target, dict[str, Any]]], lines: Sequence[tuple[str, int, int | None]]
                 ) -> list[LineRange]:  # fmt: skip
    ranges = []
    for (label, where, root), answer in shown:
        for (path, start, _), read in zip(lines, answer["reads"], strict=True):
            where_text = f"SGLang {label}" if root is None else f"{answer['root']} on host {where.name!r}"
            if read["error"]:
                raise SourceError(f"Cannot read {path!r} in {where_text}: {read['error']}.")
            if start > read["total_lines"]:
                raise SourceError(
                    f"{path!r} in {where_text} has {read['total_lines']} lines; line {start} is past its end."
                )
            ranges.append(LineRange(
                path=path, start=start, end=read["end"], total_lines=read["total_lines"], text=read["text"],
                host=where.name, root=answer["root"], version=label if root is None else None,
            ))  # fmt: skip
    return ranges
