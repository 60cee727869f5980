"""Other tools' benchmark results (sglang.bench_serving, vllm bench serve and sweep, AIPerf,
GuideLLM) read into our tidy tables and stored as runs of kind ``import``."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "detect_format": "_importer",
    "import_results": "_importer",
    "ImportedLevel": "_rows",
    "ImportResult": "_importer",
    "read_results": "_importer",
    "violations": "_checks",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
