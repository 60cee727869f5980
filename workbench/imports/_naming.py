"""One run from a sweep saved as one file per load: the name the files share.

vLLM's ``benchmark_serving`` / ``vllm bench serve --save-result`` writes one file per request rate,
named ``<label or backend>-<rate>qps[-concurrency<N>]-<model>[-<dataset>]-<YYYYMMDD-HHMMSS>.json``
(vllm-project/vllm ``benchmarks/benchmark_serving.py`` and ``vllm/benchmarks/serve.py``), and older
releases write no ``label`` into the file. A run named after each file's stem would make every rate
its own variant. Files whose run was named by their file name (no ``--variant``, tag or label) are
instead named by :func:`sweep_key`, the stem without its load and date parts, when two or more of the
files imported together share it: ``vllm-2.0qps-Llama-3.1-8B-20250101-120000.json`` and
``vllm-8.0qps-...`` become the one run ``vllm-Llama-3.1-8B``. Files of a folder given as such are
named after the folder (:mod:`workbench.imports._formats`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from workbench.imports._rows import ImportedLevel

__all__ = ["sweep_key", "sweep_names"]

_NUMBER = r"(?:inf|\d+(?:\.\d+)?)"
#: A load part of a file stem: ``2.0qps``, ``8rps``, ``qps8``, ``rate8``, ``request_rate8``, ``concurrency4``.
_LOAD = re.compile(
    rf"(?:^|(?<=[-_.]))(?:{_NUMBER}(?:qps|rps)|(?:qps|rps|rate|request[-_]?rate)[-_]?{_NUMBER}"
    r"|concurrency[-_]?\d+)(?=$|[-_.])",
    re.IGNORECASE,
)
#: vLLM's ``%Y%m%d-%H%M%S`` at the end of a stem.
_DATE = re.compile(r"[-_]\d{8}[-_]\d{6}$")


def sweep_key(stem: str) -> str:
    """``stem`` without its load parts and trailing date; ``""`` when nothing else is left.

    Example: ``sweep_key("vllm-2.0qps-concurrency8-Llama-3.1-8B-20250101-120000") == "vllm-Llama-3.1-8B"``.
    """
    text = _LOAD.sub("", _DATE.sub("", stem))
    return re.sub(r"[-_.]{2,}", lambda m: m.group(0)[0], text).strip("-_.")


def sweep_names(levels: Iterable[ImportedLevel]) -> None:
    """Name the levels of files that share a :func:`sweep_key` as one run (in place).

    Only levels whose run was named by their file (``named_by_file``) are renamed, per tool, and only
    where two or more files share the key, so a single file keeps its own name.
    """
    groups: dict[tuple[str, str], list[ImportedLevel]] = {}
    for level in levels:
        if level.named_by_file:
            key = sweep_key(Path(level.source_file).stem)
            if key:
                groups.setdefault((level.tool, key), []).append(level)
    for (_, key), members in groups.items():
        if len({m.source_file for m in members}) > 1:
            for member in members:
                member.variant = key
