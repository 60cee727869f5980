"""Variants: pre-flight validation against the target SGLang's own source, patched trees, provenance."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "check_variant": "_check",
    "check_variants": "_check",
    "default_baseline": "_check",
    "apply_parameters": "_template",
    "confirm_effective": "_effective",
    "draft_tree_problem": "_validate",
    "effective_settings": "_effective",
    "Finding": "_findings",
    "findings_html": "_notebook",
    "findings_table": "_findings",
    "expand_grid": "_grid",
    "grid_variants": "_grid",
    "findings_opening": "_findings",
    "gpus_per_node": "_multinode",
    "nnodes_of": "_multinode",
    "rank_variant": "_multinode",
    "findings_verdict": "_findings",
    "has_errors": "_findings",
    "list_variants": "_variant",
    "load_grid": "_grid",
    "load_patch": "_patchfile",
    "load_variant": "_variant",
    "LOG_LINES": "_preflight",
    "parameters_given": "_template",
    "patch_diffs_html": "_notebook",
    "patched_changes": "_patchcheck",
    "preflight": "_preflight",
    "prepare_launch": "_preflight",
    "PreparedLaunch": "_preflight",
    "prepare_tree": "_trees",
    "read_rules": "_rules",
    "resolve_target": "_check",
    "Target": "_check",
    "TEMPLATE_PARAMETERS": "_template",
    "toml_value": "_grid",
    "trial_apply": "_patchcheck",
    "Variant": "_variant",
    "variants_html": "_notebook",
    "variants_table": "_check",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.variants._check import check_variant as check_variant
    from workbench.variants._check import check_variants as check_variants
    from workbench.variants._check import default_baseline as default_baseline
    from workbench.variants._template import apply_parameters as apply_parameters
    from workbench.variants._effective import confirm_effective as confirm_effective
    from workbench.variants._validate import draft_tree_problem as draft_tree_problem
    from workbench.variants._effective import effective_settings as effective_settings
    from workbench.variants._findings import Finding as Finding
    from workbench.variants._notebook import findings_html as findings_html
    from workbench.variants._findings import findings_table as findings_table
    from workbench.variants._grid import expand_grid as expand_grid
    from workbench.variants._grid import grid_variants as grid_variants
    from workbench.variants._findings import findings_opening as findings_opening
    from workbench.variants._multinode import gpus_per_node as gpus_per_node
    from workbench.variants._multinode import nnodes_of as nnodes_of
    from workbench.variants._multinode import rank_variant as rank_variant
    from workbench.variants._findings import findings_verdict as findings_verdict
    from workbench.variants._findings import has_errors as has_errors
    from workbench.variants._variant import list_variants as list_variants
    from workbench.variants._grid import load_grid as load_grid
    from workbench.variants._patchfile import load_patch as load_patch
    from workbench.variants._variant import load_variant as load_variant
    from workbench.variants._preflight import LOG_LINES as LOG_LINES
    from workbench.variants._template import parameters_given as parameters_given
    from workbench.variants._notebook import patch_diffs_html as patch_diffs_html
    from workbench.variants._patchcheck import patched_changes as patched_changes
    from workbench.variants._preflight import preflight as preflight
    from workbench.variants._preflight import prepare_launch as prepare_launch
    from workbench.variants._preflight import PreparedLaunch as PreparedLaunch
    from workbench.variants._trees import prepare_tree as prepare_tree
    from workbench.variants._rules import read_rules as read_rules
    from workbench.variants._check import resolve_target as resolve_target
    from workbench.variants._check import Target as Target
    from workbench.variants._template import TEMPLATE_PARAMETERS as TEMPLATE_PARAMETERS
    from workbench.variants._grid import toml_value as toml_value
    from workbench.variants._patchcheck import trial_apply as trial_apply
    from workbench.variants._variant import Variant as Variant
    from workbench.variants._notebook import variants_html as variants_html
    from workbench.variants._check import variants_table as variants_table
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
