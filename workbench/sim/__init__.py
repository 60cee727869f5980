"""The simulated SGLang engine: a cost model, continuous batching and EAGLE acceptance behind SGLang's HTTP API."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "list_profiles": "_profiles",
    "load_profile": "_profiles",
    "step_breakdown": "_calibrate",
    "StepBreakdown": "_roofline",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
