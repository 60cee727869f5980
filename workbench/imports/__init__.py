"""Other tools' benchmark results (sglang.bench_serving, vllm bench serve and sweep, AIPerf,
GuideLLM) read into our tidy tables and stored as runs of kind ``import``."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "detect_format": "_importer",
    "import_results": "_importer",
    "violations": "_checks",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.imports._importer import detect_format as detect_format
    from workbench.imports._importer import import_results as import_results
    from workbench.imports._checks import violations as violations
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
