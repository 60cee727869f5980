"""Variants: pre-flight validation against the target SGLang's own source, patched trees, provenance."""

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "check_variant": "_check",
    "check_variants": "_check",
    "apply_parameters": "_template",
    "confirm_effective": "_effective",
    "draft_tree_problem": "_validate",
    "effective_settings": "_effective",
    "Finding": "_findings",
    "findings_html": "_notebook",
    "findings_table": "_findings",
    "expand_grid": "_grid",
    "Grid": "_grid",
    "grid_variants": "_grid",
    "GridExpansion": "_grid",
    "findings_verdict": "_findings",
    "has_errors": "_findings",
    "LaunchTree": "_trees",
    "list_variants": "_variant",
    "load_grid": "_grid",
    "load_patch": "_patchfile",
    "load_variant": "_variant",
    "LOG_LINES": "_preflight",
    "Patch": "_patchfile",
    "parameters_given": "_template",
    "patch_diffs_html": "_notebook",
    "PatchCheck": "_patchfile",
    "patched_changes": "_patchcheck",
    "prepare_launch": "_preflight",
    "prepare_tree": "_trees",
    "PreparedLaunch": "_preflight",
    "read_rules": "_rules",
    "resolve_target": "_check",
    "SpecRules": "_rules",
    "Target": "_check",
    "TEMPLATE_PARAMETERS": "_template",
    "trial_apply": "_patchcheck",
    "TrialResult": "_patchcheck",
    "Variant": "_variant",
    "variants_html": "_notebook",
    "variants_table": "_check",
}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
