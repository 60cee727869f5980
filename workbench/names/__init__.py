"""Names: the one rule for the names a user gives (variant names, run labels), ``check_name``.

Every entry that takes a name (variant files, grids, notebooks, ``workbench bench``, ``workbench
import``, ``workbench runs label``, a sweep's label) checks it here, with one message. A leaf: it
imports only ``workbench.errors``, and every package may import it.
"""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "check_name": "_rule",
    "NAME_RULE": "_rule",
}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.names._rule import check_name as check_name
    from workbench.names._rule import NAME_RULE as NAME_RULE
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES)
