"""Releases: one table of facts per SGLang release (``ADAPTIVE_SINCE``, ``SPEC_V1_GONE_SINCE``, ...).

The simulator, the variants' rules and pre-flight messages and the policy analysis import the facts from
here, and no other module writes a release as a fact (tests/test_releases.py); each fact's source (wheel
file, PR) is beside it in ``_sglang``. A leaf: it imports no other package.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "ADAPTIVE_DEFAULT_TIERS_REVISED_SINCE": "_sglang",
    "ADAPTIVE_SINCE": "_sglang",
    "ADAPTIVE_TIERS_SINCE": "_sglang",
    "DRAFT_KV_IN_TARGET_POOL_SINCE": "_sglang",
    "DSPARK_SINCE": "_sglang",
    "PAGED_DRAFT_TREE_SINCE": "_sglang",
    "release_at_least": "_sglang",
    "release_number": "_sglang",
    "SPEC_V1_GONE_SINCE": "_sglang",
    "SPEC_V2_DECODE_CHECK_SINCE": "_sglang",
    "SPEC_V2_DEFAULT_SINCE": "_sglang",
    "SPEC_V2_WIDE_DRAFT_EXTEND_SINCE": "_sglang",
    "SPEC_V2_EAGLE3_SINCE": "_sglang",
    "SPEC_V2_STANDALONE_SINCE": "_sglang",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.releases._sglang import ADAPTIVE_DEFAULT_TIERS_REVISED_SINCE as ADAPTIVE_DEFAULT_TIERS_REVISED_SINCE
    from workbench.releases._sglang import ADAPTIVE_SINCE as ADAPTIVE_SINCE
    from workbench.releases._sglang import ADAPTIVE_TIERS_SINCE as ADAPTIVE_TIERS_SINCE
    from workbench.releases._sglang import DRAFT_KV_IN_TARGET_POOL_SINCE as DRAFT_KV_IN_TARGET_POOL_SINCE
    from workbench.releases._sglang import DSPARK_SINCE as DSPARK_SINCE
    from workbench.releases._sglang import PAGED_DRAFT_TREE_SINCE as PAGED_DRAFT_TREE_SINCE
    from workbench.releases._sglang import release_at_least as release_at_least
    from workbench.releases._sglang import release_number as release_number
    from workbench.releases._sglang import SPEC_V1_GONE_SINCE as SPEC_V1_GONE_SINCE
    from workbench.releases._sglang import SPEC_V2_DECODE_CHECK_SINCE as SPEC_V2_DECODE_CHECK_SINCE
    from workbench.releases._sglang import SPEC_V2_DEFAULT_SINCE as SPEC_V2_DEFAULT_SINCE
    from workbench.releases._sglang import SPEC_V2_WIDE_DRAFT_EXTEND_SINCE as SPEC_V2_WIDE_DRAFT_EXTEND_SINCE
    from workbench.releases._sglang import SPEC_V2_EAGLE3_SINCE as SPEC_V2_EAGLE3_SINCE
    from workbench.releases._sglang import SPEC_V2_STANDALONE_SINCE as SPEC_V2_STANDALONE_SINCE
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
