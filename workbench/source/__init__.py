"""Source inspection: find, show and compare definitions in SGLang releases or a checkout on a host."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "cache_dir": "_releases",
    "callers_table": "_definitions",
    "Change": "_history",
    "definition_history": "_history",
    "diff_panes": "_render",
    "find_definition": "_definitions",
    "find_references": "_definitions",
    "FlagError": "_flag_records",
    "FlagTable": "_flag_table",
    "highlight_lines": "_render",
    "history_diffs": "_history",
    "history_events": "_history",
    "inspection_opening": "_verdict",
    "inspection_verdict": "_verdict",
    "history_table": "_history",
    "HTMLFragment": "_render",
    "index_versions": "_versions",
    "inspect_name": "_inspection",
    "previous_release": "_versions",
    "read_lines": "_lines",
    "search_tree": "_definitions",
    "select_versions": "_versions",
    "server_flags": "_flags",
    "sglang_release": "_releases",
    "source_panes": "_render",
    "summary_table": "_definitions",
    "unified_diff": "_history",
    "version_key": "_versions",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.source._releases import cache_dir as cache_dir
    from workbench.source._definitions import callers_table as callers_table
    from workbench.source._history import Change as Change
    from workbench.source._history import definition_history as definition_history
    from workbench.source._render import diff_panes as diff_panes
    from workbench.source._definitions import find_definition as find_definition
    from workbench.source._definitions import find_references as find_references
    from workbench.source._flag_records import FlagError as FlagError
    from workbench.source._flag_table import FlagTable as FlagTable
    from workbench.source._render import highlight_lines as highlight_lines
    from workbench.source._history import history_diffs as history_diffs
    from workbench.source._history import history_events as history_events
    from workbench.source._verdict import inspection_opening as inspection_opening
    from workbench.source._verdict import inspection_verdict as inspection_verdict
    from workbench.source._history import history_table as history_table
    from workbench.source._render import HTMLFragment as HTMLFragment
    from workbench.source._versions import index_versions as index_versions
    from workbench.source._inspection import inspect_name as inspect_name
    from workbench.source._versions import previous_release as previous_release
    from workbench.source._lines import read_lines as read_lines
    from workbench.source._definitions import search_tree as search_tree
    from workbench.source._versions import select_versions as select_versions
    from workbench.source._flags import server_flags as server_flags
    from workbench.source._releases import sglang_release as sglang_release
    from workbench.source._render import source_panes as source_panes
    from workbench.source._definitions import summary_table as summary_table
    from workbench.source._history import unified_diff as unified_diff
    from workbench.source._versions import version_key as version_key
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
