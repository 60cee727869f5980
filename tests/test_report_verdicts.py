"""The verdicts that open the variants and source reports, written from small tables: exact sentences."""

from __future__ import annotations

import pandas as pd

from workbench.source import inspection_verdict
from workbench.variants import Finding, findings_verdict


def test_variants_verdict_says_what_starts_and_which_pairs_are_like_for_like() -> None:
    findings = [
        Finding(
            "error",
            "adaptive",
            "--speculative-adaptive",
            "`--speculative-adaptive` is not a flag of SGLang 0.5.9. More words.",
            "use 0.5.12",
            "unknown-flag",
        ),
        Finding("info", "baseline", None, "checked against sglang==0.5.9.", "", "target"),
        Finding(
            "warning",
            "eagle3-topk4 vs baseline-cap48",
            "--disable-overlap-schedule",
            "spec v1 turns overlap off.",
            "",
            "implicit-overlap",
        ),
        Finding("info", "eagle3-topk1-v2 vs baseline-cap48", "patches", "nothing to say", "", "pair-patched"),
    ]
    text = findings_verdict(
        findings,
        variants=["baseline-cap48", "eagle3-topk4", "eagle3-topk1-v2", "adaptive"],
        baseline="baseline-cap48",
        checked_against="0.5.9",
    )
    assert text.splitlines() == [
        "**Verdict** — 4 variant(s) checked against SGLang 0.5.9, before anything is launched: 1 error(s), 1 "
        "warning(s), 2 note(s).",
        "",
        "- **Would start**: baseline-cap48, eagle3-topk4, eagle3-topk1-v2.",
        "- **Would not start**: adaptive (--speculative-adaptive: `--speculative-adaptive` is not a flag of SGLang "
        "0.5.9).",
        "- **Like-for-like with baseline-cap48** (differ only in speculation): eagle3-topk1-v2.",
        "- **Not like-for-like with baseline-cap48**: eagle3-topk4 (--disable-overlap-schedule). The findings below "
        "name each fix; what SGLang itself changes (the 48 cap, overlap off under spec v1) can be matched on the "
        "baseline only in part (`baseline-cap48` matches the cap).",
    ]


def test_source_verdict_from_definitions_references_and_history() -> None:
    definitions = pd.DataFrame(
        [
            {
                "version": "0.5.9",
                "found": True,
                "path": "srt/managers/utils.py",
                "start_line": 182,
                "end_line": 206,
                "kind": "function",
                "sha256": "6320e692aaf2",
            },
            {
                "version": "0.5.23",
                "found": True,
                "path": "srt/mem_cache/allocation_sizing.py",
                "start_line": 28,
                "end_line": 61,
                "kind": "function",
                "sha256": "668c02782701",
            },
            {
                "version": "0.5.2",
                "found": False,
                "path": None,
                "start_line": None,
                "end_line": None,
                "kind": None,
                "sha256": None,
            },
        ]
    )
    references = pd.DataFrame(
        {"version": ["0.5.9", "0.5.9", "0.5.23"], "found": [True] * 3, "path": ["a.py", "a.py", "b.py"]}
    )
    history = pd.DataFrame(
        [
            {
                "version": "0.5.2",
                "found": False,
                "status": "absent",
                "path": None,
                "start_line": None,
                "end_line": None,
                "sha256": None,
                "changed_since_previous": False,
                "moved": False,
                "previous_path": None,
            },
            {
                "version": "0.5.9",
                "found": True,
                "status": "added",
                "path": "srt/managers/utils.py",
                "start_line": 182,
                "end_line": 206,
                "sha256": "6320e692aaf2",
                "changed_since_previous": True,
                "moved": False,
                "previous_path": None,
            },
            {
                "version": "0.5.23",
                "found": True,
                "status": "moved+changed",
                "path": "srt/mem_cache/allocation_sizing.py",
                "start_line": 28,
                "end_line": 61,
                "sha256": "668c02782701",
                "changed_since_previous": True,
                "moved": True,
                "previous_path": "srt/managers/utils.py",
            },
        ]
    )
    lines = inspection_verdict("get_alloc_len_per_decode", definitions, references, history).splitlines()
    assert lines[0] == (
        "**Verdict** — `get_alloc_len_per_decode` read from SGLang's source (0.5.9, 0.5.23, 0.5.2): "
        "parsed with `ast`, nothing imported or run."
    )
    assert lines[2:7] == [
        "- **Defined** in 0.5.9: `srt/managers/utils.py` lines 182–206 (function) — 0.5.23: "
        "`srt/mem_cache/allocation_sizing.py` lines 28–61 (function).",
        "- **Not defined** in 0.5.2.",
        "- **Text**: differs between versions (0.5.9 6320e692, 0.5.23 668c0278, sha256).",
        "- **History** over 3 selected releases (0.5.2 to 0.5.23): added in 0.5.9; moved+changed in 0.5.23 (from "
        "`srt/managers/utils.py`).",
        "- **Referenced** (calls, imports, attribute reads): 0.5.9: 2 in 1 file; 0.5.23: 1 in 1 file.",
    ]
