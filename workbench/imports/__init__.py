"""Other tools' benchmark results (sglang.bench_serving, vllm bench serve and sweep, AIPerf JSON and CSV,
GuideLLM, InferenceX) read into our tidy tables and stored as runs of kind ``import``; offline levels
(every request at once) compared workload by workload (``offline_workloads``)."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "detect_format": "_formats",
    "import_results": "_importer",
    "offline_workloads": "_offline",
    "violations": "_checks",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.imports._formats import detect_format as detect_format
    from workbench.imports._importer import import_results as import_results
    from workbench.imports._offline import offline_workloads as offline_workloads
    from workbench.imports._checks import violations as violations
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
