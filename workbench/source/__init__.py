"""Source inspection: find, show and compare definitions in SGLang releases or a checkout on a host."""

from workbench.source._inspection import Inspection, inspect_name
from workbench.source.definitions import (
    DEFAULT_VERSIONS,
    callers_table,
    find_definition,
    find_references,
    search_tree,
    summary_table,
)
from workbench.source.flags import (
    Flag,
    FlagError,
    FlagMatch,
    FlagProblem,
    FlagTable,
    SpeculativeAlgorithms,
    server_flags,
)
from workbench.source.history import Change, definition_history, history_diffs, history_events, history_table
from workbench.source.lines import LineRange, read_lines
from workbench.source.releases import Release, cache_dir, sglang_release
from workbench.source.render import HTMLFragment, diff_panes, highlight_lines, source_panes
from workbench.source.versions import index_versions, previous_release, select_versions

__all__ = [
    "DEFAULT_VERSIONS",
    "Change",
    "Flag",
    "FlagError",
    "FlagMatch",
    "FlagProblem",
    "FlagTable",
    "HTMLFragment",
    "Inspection",
    "LineRange",
    "Release",
    "SpeculativeAlgorithms",
    "cache_dir",
    "callers_table",
    "definition_history",
    "diff_panes",
    "find_definition",
    "find_references",
    "highlight_lines",
    "history_diffs",
    "history_events",
    "history_table",
    "index_versions",
    "inspect_name",
    "previous_release",
    "read_lines",
    "search_tree",
    "select_versions",
    "server_flags",
    "sglang_release",
    "source_panes",
    "summary_table",
]
