"""The simulated SGLang engine: a cost model, continuous batching and EAGLE acceptance behind SGLang's HTTP API."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "Deployment": "_roofline",
    "Efficiency": "_roofline",
    "list_profiles": "_profiles",
    "load_gpu": "_hardware",
    "load_model_config": "_hardware",
    "load_profile": "_profiles",
    "RooflineCost": "_roofline",
    "step_breakdown": "_calibrate",
    "StepBreakdown": "_roofline",
    "variant_config": "_calibrate",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
