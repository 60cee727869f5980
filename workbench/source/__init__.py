"""Source inspection: find, show and compare definitions in SGLang releases or a checkout on a host."""

from workbench.source.definitions import (
    DEFAULT_VERSIONS,
    find_definition,
    find_references,
    search_tree,
    summary_table,
)
from workbench.source.lines import LineRange, read_lines
from workbench.source.releases import Release, cache_dir, sglang_release
from workbench.source.render import HTMLFragment, highlight_lines, source_panes

__all__ = [
    "DEFAULT_VERSIONS",
    "HTMLFragment",
    "LineRange",
    "Release",
    "cache_dir",
    "find_definition",
    "find_references",
    "highlight_lines",
    "read_lines",
    "search_tree",
    "sglang_release",
    "source_panes",
    "summary_table",
]
