"""Find where a function, class or method is defined (and who references it) across SGLang versions.

Each SGLang release is fetched as a wheel (:mod:`workbench.source._releases`) and
searched on this machine; a checkout on any host is searched where it lives. The
search itself is ``remote/find_definitions.py`` run through
:func:`workbench.hosts._helpers.call_helper`: one walk of the tree answers all of
its queries in one round trip.

Results are tidy DataFrames, one row per (version, match). A version that lacks
the name gets one row with ``found=False``: that is an answer, not an error.

Facts used in examples and tests (from the wheels on PyPI): ``get_alloc_len_per_decode``
is in ``srt/managers/utils.py`` (line 182) in 0.5.9, in
``srt/mem_cache/allocation_sizing.py`` in 0.5.23, and absent from 0.5.2.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from workbench.errors import ConfigError
from workbench.hosts import Host, LocalHost, get_host, is_local
from workbench.source._defaults import DEFAULT_VERSIONS
from workbench.source._helper_call import call_source_helper
from workbench.source._releases import DOWNLOAD_TIMEOUT_S, cache_dir, sglang_release

#: Limit for one search of one tree, in seconds.
SEARCH_TIMEOUT_S = 300.0
#: How many releases are fetched and searched at once.
PARALLEL_SEARCHES = 8

#: Columns of :func:`find_definition`'s frame, in order.
DEFINITION_COLUMNS = [
    "version", "query", "found", "path", "start_line", "def_line", "end_line", "qualname", "kind",
    "signature", "docstring", "decorators", "enclosing_class", "sha256", "source", "host", "root",
]  # fmt: skip
#: Columns of :func:`find_references`'s frame, in order.
REFERENCE_COLUMNS = [
    "version", "query", "found", "path", "line", "col", "kind", "enclosing", "text", "host", "root",
]  # fmt: skip
_LINE_COLUMNS = ("start_line", "def_line", "end_line", "line", "col")


def find_definition(
    name: str | Sequence[str],
    *,
    versions: Sequence[str] = DEFAULT_VERSIONS,
    host: str | Host = "local",
    tree: str | None = None,
    tree_label: str | None = None,
    include_source: bool = True,
    timeout_s: float = SEARCH_TIMEOUT_S,
) -> pd.DataFrame:
    """Where ``name`` is defined in each SGLang release (and optionally a checkout).

    Args:
        name: bare (``get_alloc_len_per_decode``) or qualified
            (``EAGLEWorkerV2.forward_batch_generation``) name; a qualified name
            matches definitions whose dotted qualname ends with it. A list of
            names is looked up together: one search (one round trip) per tree.
        versions: SGLang releases to search (wheels from the package index, cached,
            searched on this machine). Default ``("0.5.9", "0.5.23")``; ``()`` for none.
        host: where ``tree`` lives (``"local"`` or a Host).
        tree: a directory on ``host`` to search as well, e.g. a checkout's
            ``python/sglang``; paths are reported relative to it.
        tree_label: the ``version`` value for the tree's rows (default ``"<host>:<tree>"``).
        include_source: include the ``source`` column (default True).
        timeout_s: limit for each tree's search in seconds (default 300).

    Returns:
        One row per (version, name, match) with :data:`DEFINITION_COLUMNS`
        (``query`` is the name asked for): ``path`` is
        relative to the ``sglang`` package (``srt/managers/utils.py``); line numbers
        are 1-based and inclusive, ``start_line`` is the first decorator's line and
        ``def_line`` the ``def``/``class`` line; ``sha256`` hashes ``source``. A
        version without the name has a single row for it with ``found=False``.
        ``df.attrs["searches"]`` records, per version, the root searched, file
        counts and files that could not be parsed.

    Raises:
        ConfigError: a bad version string, or a name that is not a dotted Python
            name (checked before anything runs).
        SourceError: a release could not be fetched or a tree not searched.
        HostError: ``host`` could not be reached.
        CommandError: the search helper could not run on ``host``.
    """
    return _search(
        name, "definition", versions=versions, host=host, tree=tree,
        tree_label=tree_label, include_source=include_source, timeout_s=timeout_s,
    )  # fmt: skip


def find_references(
    name: str | Sequence[str],
    *,
    versions: Sequence[str] = DEFAULT_VERSIONS,
    host: str | Host = "local",
    tree: str | None = None,
    tree_label: str | None = None,
    timeout_s: float = SEARCH_TIMEOUT_S,
) -> pd.DataFrame:
    """Where ``name`` is referenced (called, imported, read as a name or attribute) in each version.

    Matching is by the last segment of ``name`` only: without type inference,
    ``x.forward()`` counts as a reference to every ``forward``. Mentions in strings
    and comments are not references.

    Args:
        name: the (possibly qualified) name, or a list of them; see :func:`find_definition`.
        versions, host, tree, tree_label, timeout_s: as for :func:`find_definition`.

    Returns:
        One row per (version, name, reference) with :data:`REFERENCE_COLUMNS`: ``line`` is
        1-based, ``col`` 0-based in characters, ``kind`` one of call / attribute /
        name / import, ``enclosing`` the qualname of the innermost def or class
        (None at module level). A version without references to a name has one
        ``found=False`` row for it.

    Raises:
        ConfigError, SourceError, HostError, CommandError: as for :func:`find_definition`.
    """
    return _search(
        name, "references", versions=versions, host=host, tree=tree,
        tree_label=tree_label, include_source=False, timeout_s=timeout_s,
    )  # fmt: skip


def search_tree(
    host: Host,
    root: str,
    queries: Sequence[dict[str, Any]],
    *,
    reads: Sequence[dict[str, Any]] = (),
    include_source: bool = True,
    timeout_s: float = SEARCH_TIMEOUT_S,
    index_dir: str | None = None,
) -> dict[str, Any]:
    """Run one batch of queries and line reads against one tree on ``host`` (one round trip, one helper process).

    Args:
        host: where the tree is.
        root: the directory to walk.
        queries: ``[{"name": ..., "type": "definition" | "references", "path_glob": ...}]``.
        reads: ``[{"path": ..., "start": 1, "end": None}]``: line ranges of files
            (paths relative to ``root`` or absolute); answered without a walk when
            ``queries`` is empty.
        include_source: ask for each definition's source text.
        timeout_s: limit in seconds.
        index_dir: where the helper keeps its index of the tree on ``host``: default
            ``<cache>/index`` (:func:`index_dir`) on this machine, the helper's
            ``~/.cache/specbench-workbench/index`` on any other host.

    Returns:
        The answer of ``remote/find_definitions.py`` (see that script's docstring;
        ``files_parsed`` counts the files it had to parse, ``files_from_index`` those
        answered from its index).

    Raises:
        SourceError: the root does not exist or a query is invalid.
        HostError: the host could not be reached.
        CommandError: the helper could not run.
    """
    request: dict[str, Any] = {"root": root, "queries": list(queries), "reads": list(reads),
                               "include_source": include_source}  # fmt: skip
    if index_dir is None and is_local(host):
        index_dir = str(local_index_dir())
    if index_dir is not None:
        request["index_dir"] = index_dir
    return call_source_helper(host, "find_definitions", request, timeout_s=timeout_s)


def local_index_dir() -> Path:
    """Where the search helper keeps its index of trees on this machine: ``index/`` beside the release cache
    (``$WORKBENCH_CACHE_DIR/index`` or ``~/.cache/specbench-workbench/index``)."""
    return cache_dir().parent / "index"


def check_name(name: str) -> str:
    """Return ``name`` when it is a dotted Python name (``Class.method``), else raise ConfigError."""
    if not isinstance(name, str) or not name or not all(part.isidentifier() for part in name.split(".")):
        raise ConfigError(
            f"{name!r} is not a Python name to look up; give a function, class or method name such as "
            "'get_alloc_len_per_decode' or 'EAGLEWorkerV2.forward_batch_generation'."
        )
    return name


#: What tables show as the ``enclosing`` definition of module-level code.
MODULE_LEVEL = "<module>"


def callers_table(df: pd.DataFrame) -> pd.DataFrame:
    """Who calls the name: one row per (version, caller, file), from a :func:`find_references` frame.

    Args:
        df: a frame from :func:`find_references`.

    Returns:
        Columns version, caller (the enclosing function or class; ``<module>`` at
        module level), path, calls (how many call sites) and lines (their line
        numbers, comma-separated), in the frame's version order.
    """
    calls = df[df["found"] & (df["kind"] == "call")]
    rows = []
    for (version, caller, path), group in calls.groupby(
        [calls["version"], calls["enclosing"].fillna(MODULE_LEVEL), calls["path"]], sort=False
    ):
        rows.append({"version": version, "caller": caller, "path": path, "calls": len(group),
                     "lines": ", ".join(str(n) for n in sorted(group["line"]))})  # fmt: skip
    return pd.DataFrame(rows, columns=["version", "caller", "path", "calls", "lines"])


def line_ranges(df: pd.DataFrame) -> list[str]:
    """Each row's ``start_line``-``end_line`` as ``"182-206"`` (``""`` where either is missing)."""
    return [
        f"{s}-{e}" if not (pd.isna(s) or pd.isna(e)) else ""
        for s, e in zip(df["start_line"], df["end_line"], strict=True)
    ]


def short_digest(value: object, missing: object = None) -> object:
    """A sha256 cut to its first 12 hex digits for display (``missing`` where there is none)."""
    return value[:12] if isinstance(value, str) else missing


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """The frame without its long text columns, with a ``lines`` column (``"182-206"``), for display.

    A found reference at module level shows ``enclosing`` as ``<module>``, as
    :func:`callers_table` does (the frame itself keeps None there).

    Args:
        df: a frame from :func:`find_definition` or :func:`find_references` (or any frame
            with some of their columns, such as :func:`workbench.source.definition_history`'s).
    """
    table = df.drop(columns=[c for c in ("source", "decorators", "docstring", "root") if c in df.columns])
    if {"enclosing", "found"} <= set(table.columns):
        table["enclosing"] = table["enclosing"].where(~table["found"] | table["enclosing"].notna(), MODULE_LEVEL)
    if {"start_line", "end_line"} <= set(df.columns):
        table.insert(table.columns.get_loc("start_line"), "lines", line_ranges(df))
        table = table.drop(columns=[c for c in ("start_line", "end_line", "def_line") if c in table.columns])
    for column in ("sha256", "previous_sha256"):
        if column in table.columns:
            table[column] = table[column].map(short_digest)
    return table


#: One tree to search: (label, host, root); root None for a release (fetched when searched).
Target = tuple[str, Host, "str | None"]


def check_names(name: str | Sequence[str]) -> list[str]:
    """``name`` as a non-empty list of checked names (see :func:`check_name`)."""
    names = [name] if isinstance(name, str) else list(name)
    if not names:
        raise ConfigError("No name to look up: pass a name or a non-empty list of names.")
    for each in names:
        check_name(each)
    return names


def search_targets(
    versions: Sequence[str], *, host: str | Host = "local", tree: str | None = None, tree_label: str | None = None
) -> list[Target]:
    """The releases (searched on this machine) and the optional tree on ``host``, in that order."""
    if isinstance(versions, str):
        versions = [versions]
    targets: list[Target] = [(version, LocalHost(), None) for version in versions]
    if tree is not None:
        tree_host = get_host(host)
        targets.append((tree_label or f"{tree_host.name}:{tree}", tree_host, tree))
    return targets


def run_searches(
    targets: Sequence[Target],
    batches: Sequence[tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]]],
    *,
    include_source: bool,
    timeout_s: float,
) -> list[dict[str, Any]]:
    """One helper run per target with its batch of (queries, reads); releases fetched first. Parallel, in order.

    Releases are fetched and searched :data:`PARALLEL_SEARCHES` at a time (pip and
    the helper are subprocesses); the first error is raised as it is.
    """

    def one(job: tuple[Target, tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]]]) -> dict[str, Any]:
        (label, where, root), (queries, reads) = job
        if root is None:  # a release: fetched (or found in the cache) and searched here
            root = str(sglang_release(label, timeout_s=DOWNLOAD_TIMEOUT_S).package_dir)
        return search_tree(where, root, queries, reads=reads, include_source=include_source, timeout_s=timeout_s)

    with ThreadPoolExecutor(max_workers=max(1, min(PARALLEL_SEARCHES, len(targets)))) as pool:
        return list(pool.map(one, zip(targets, batches, strict=True)))


def answers_frame(
    targets: Sequence[Target],
    answers: Sequence[dict[str, Any]],
    names: list[str],
    qtype: Literal["definition", "references"],
    *,
    include_source: bool = True,
    label: str | None = None,
) -> pd.DataFrame:
    """The tidy frame of the ``qtype`` results for ``names`` in each target's helper answer.

    Each answer's ``results`` must hold a ``qtype`` query for each name (others are
    skipped). Columns are :data:`DEFINITION_COLUMNS` or :data:`REFERENCE_COLUMNS`.
    """
    columns = DEFINITION_COLUMNS if qtype == "definition" else REFERENCE_COLUMNS
    rows: list[dict[str, Any]] = []
    searches: dict[str, dict[str, Any]] = {}
    for (version, where, _), answer in zip(targets, answers, strict=True):
        results = {r["query"]["name"]: r for r in answer["results"] if r["query"]["type"] == qtype}
        searches[version] = {
            key: answer.get(key)
            for key in ("root", "files_scanned", "files_parsed", "files_from_index", "files_unparsable", "unparsable",
                        "python_version")
        }  # fmt: skip
        searches[version]["truncated"] = any(results[each]["truncated"] for each in names)
        if answer.get("files_unparsable"):
            listed = ", ".join(u["path"] for u in answer["unparsable"][:5])
            asked = ", ".join(repr(n) for n in names)
            warnings.warn(
                f"{version}: {answer['files_unparsable']} file(s) mentioning {asked} could not be parsed by "
                f"Python {answer.get('python_version')} on host {where.name!r} ({listed}); matches in them "
                "are missing. A newer python3 on the host may parse them.",
                stacklevel=4,
            )
        base = {"version": version, "host": where.name, "root": answer["root"]}
        for each in names:
            result = results[each]
            if not result["matches"]:
                rows.append({**base, "query": each, "found": False})
            for match in result["matches"]:
                rows.append({**base, "query": each, "found": True, **{k: v for k, v in match.items() if k in columns}})
    frame = pd.DataFrame(rows, columns=columns)
    for column in _LINE_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].astype("Int64")
    frame["found"] = frame["found"].astype(bool)
    for column in frame.columns:
        if column not in _LINE_COLUMNS and column != "found":
            frame[column] = frame[column].astype(object)  # text stays text when every row lacks it
    if not include_source and "source" in frame.columns:
        frame = frame.drop(columns=["source"])
    frame.attrs["name"] = label if label is not None else ", ".join(names)
    frame.attrs["names"] = names
    frame.attrs["query"] = qtype
    frame.attrs["searches"] = searches
    return frame


def _search(
    name: str | Sequence[str],
    qtype: Literal["definition", "references"],
    *,
    versions: Sequence[str],
    host: str | Host,
    tree: str | None,
    tree_label: str | None,
    include_source: bool,
    timeout_s: float,
) -> pd.DataFrame:
    """Search every release in ``versions`` and ``tree`` for every name (one helper run per tree)."""
    names = check_names(name)
    targets = search_targets(versions, host=host, tree=tree, tree_label=tree_label)
    queries = [{"name": each, "type": qtype} for each in names]
    answers = run_searches(targets, [(queries, ())] * len(targets), include_source=include_source, timeout_s=timeout_s)
    return answers_frame(targets, answers, names, qtype, include_source=include_source,
                         label=names[0] if isinstance(name, str) else None)  # fmt: skip
