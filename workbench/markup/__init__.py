"""Markup: data placed in a report's markdown so that it displays literally (``literal``, ``code``).

Every report's words (verdicts, comparability, findings, openings) place their data through
this package; the escaping rules and their sources (CommonMark 0.31) are in ``_literal``.
A leaf: it imports no other package, and every package may import it.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "code": "_literal",
    "literal": "_literal",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.markup._literal import code as code
    from workbench.markup._literal import literal as literal
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
