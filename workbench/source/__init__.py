"""Source inspection: find, show and compare definitions in SGLang releases or a checkout on a host."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "cache_dir": "_releases",
    "callers_table": "_definitions",
    "Change": "_history",
    "DEFAULT_VERSIONS": "_defaults",
    "definition_history": "_history",
    "diff_panes": "_render",
    "find_definition": "_definitions",
    "find_references": "_definitions",
    "Flag": "_flag_records",
    "FlagError": "_flag_records",
    "FlagMatch": "_flag_records",
    "FlagProblem": "_flag_records",
    "FlagTable": "_flag_table",
    "highlight_lines": "_render",
    "history_diffs": "_history",
    "history_events": "_history",
    "inspection_opening": "_verdict",
    "inspection_verdict": "_verdict",
    "history_table": "_history",
    "HTMLFragment": "_render",
    "index_versions": "_versions",
    "Inspection": "_inspection",
    "inspect_name": "_inspection",
    "LineRange": "_lines",
    "previous_release": "_versions",
    "read_lines": "_lines",
    "Release": "_releases",
    "search_tree": "_definitions",
    "select_versions": "_versions",
    "server_flags": "_flags",
    "sglang_release": "_releases",
    "source_panes": "_render",
    "SpeculativeAlgorithms": "_flag_records",
    "summary_table": "_definitions",
    "unified_diff": "_history",
    "version_key": "_versions",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
