"""The simulated SGLang engine: a cost model, continuous batching and EAGLE acceptance behind SGLang's HTTP API."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "check_prediction": "_held_out",
    "combine_checks": "_held_out",
    "configuration": "_configurations",
    "FORCED_ACCEPTANCE_ENV": "_acceptance",
    "forced_length": "_acceptance",
    "grid_configurations": "_configurations",
    "HeldOutCheck": "_held_out",
    "Deployment": "_roofline_terms",
    "Efficiency": "_roofline_terms",
    "load_gpu": "_hardware",
    "load_model_config": "_hardware",
    "load_profile": "_profiles",
    "predict": "_predict",
    "profile_variants": "_configurations",
    "RooflineCost": "_roofline",
    "policy_support": "_verify_budget",
    "policy_table": "_verify_budget",
    "spec_grid": "_configurations",
    "SpecConfig": "_spec",
    "SpecKernelCosts": "_spec_kernels",
    "ExtendAttentionCosts": "_spec_kernels",
    "step_breakdown": "_offline_figures",
    "STEP_PARTS": "_predict",
    "StepBreakdown": "_roofline_terms",
    "variant_config": "_variant_flags",
    "variant_configuration": "_configurations",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.sim._held_out import check_prediction as check_prediction
    from workbench.sim._held_out import combine_checks as combine_checks
    from workbench.sim._configurations import configuration as configuration
    from workbench.sim._acceptance import FORCED_ACCEPTANCE_ENV as FORCED_ACCEPTANCE_ENV
    from workbench.sim._acceptance import forced_length as forced_length
    from workbench.sim._configurations import grid_configurations as grid_configurations
    from workbench.sim._held_out import HeldOutCheck as HeldOutCheck
    from workbench.sim._roofline_terms import Deployment as Deployment
    from workbench.sim._roofline_terms import Efficiency as Efficiency
    from workbench.sim._hardware import load_gpu as load_gpu
    from workbench.sim._hardware import load_model_config as load_model_config
    from workbench.sim._profiles import load_profile as load_profile
    from workbench.sim._predict import predict as predict
    from workbench.sim._configurations import profile_variants as profile_variants
    from workbench.sim._roofline import RooflineCost as RooflineCost
    from workbench.sim._verify_budget import policy_support as policy_support
    from workbench.sim._verify_budget import policy_table as policy_table
    from workbench.sim._configurations import spec_grid as spec_grid
    from workbench.sim._spec import SpecConfig as SpecConfig
    from workbench.sim._spec_kernels import SpecKernelCosts as SpecKernelCosts
    from workbench.sim._spec_kernels import ExtendAttentionCosts as ExtendAttentionCosts
    from workbench.sim._offline_figures import step_breakdown as step_breakdown
    from workbench.sim._predict import STEP_PARTS as STEP_PARTS
    from workbench.sim._roofline_terms import StepBreakdown as StepBreakdown
    from workbench.sim._variant_flags import variant_config as variant_config
    from workbench.sim._configurations import variant_configuration as variant_configuration
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
