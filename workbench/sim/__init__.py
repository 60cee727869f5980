"""The simulated SGLang engine: a cost model, continuous batching and EAGLE acceptance behind SGLang's HTTP API."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "configuration": "_predict",
    "Configuration": "_predict",
    "grid_configurations": "_predict",
    "GridPoint": "_predict",
    "Deployment": "_roofline",
    "Efficiency": "_roofline",
    "list_profiles": "_profiles",
    "load_gpu": "_hardware",
    "load_model_config": "_hardware",
    "load_profile": "_profiles",
    "predict": "_predict",
    "profile_variants": "_predict",
    "RooflineCost": "_roofline",
    "policy_support": "_verify_budget",
    "policy_table": "_verify_budget",
    "spec_grid": "_predict",
    "SpecConfig": "_spec",
    "SpecKernelCosts": "_spec_kernels",
    "step_breakdown": "_calibrate",
    "STEP_PARTS": "_predict",
    "StepBreakdown": "_roofline",
    "variant_config": "_variant_flags",
    "variant_configuration": "_predict",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
