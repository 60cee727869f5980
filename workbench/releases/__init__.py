"""Releases: one table of facts per SGLang release that several packages state (``ADAPTIVE_SINCE``, ...).

The simulator, the variants' pre-flight messages and the policy analysis import the facts from here;
each fact's source (wheel file, PR) is beside it in ``_sglang``. A leaf: it imports no other package.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "ADAPTIVE_SINCE": "_sglang",
    "ADAPTIVE_TIERS_SINCE": "_sglang",
    "release_at_least": "_sglang",
    "release_number": "_sglang",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.releases._sglang import ADAPTIVE_SINCE as ADAPTIVE_SINCE
    from workbench.releases._sglang import ADAPTIVE_TIERS_SINCE as ADAPTIVE_TIERS_SINCE
    from workbench.releases._sglang import release_at_least as release_at_least
    from workbench.releases._sglang import release_number as release_number
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
