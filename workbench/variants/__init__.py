"""Variants: pre-flight validation against the target SGLang's own source, patched trees, provenance."""

from workbench.variants.check import Target, check_variant, check_variants, resolve_target, variants_table
from workbench.variants.effective import confirm_effective, effective_settings
from workbench.variants.findings import Finding, findings_table, has_errors
from workbench.variants.patchcheck import TrialResult, patched_changes, trial_apply
from workbench.variants.patchfile import Patch, PatchCheck, load_patch
from workbench.variants.preflight import PreparedLaunch, prepare_launch
from workbench.variants.rules import SpecRules, read_rules
from workbench.variants.trees import LaunchTree, prepare_tree

__all__ = [
    "Finding",
    "LaunchTree",
    "Patch",
    "PatchCheck",
    "PreparedLaunch",
    "SpecRules",
    "Target",
    "TrialResult",
    "check_variant",
    "check_variants",
    "confirm_effective",
    "effective_settings",
    "findings_table",
    "has_errors",
    "load_patch",
    "patched_changes",
    "prepare_launch",
    "prepare_tree",
    "read_rules",
    "resolve_target",
    "trial_apply",
    "variants_table",
]
