"""How a package shows its face: names exported lazily from its private modules (PEP 562).

Every package's ``__init__`` is a table ``{public name: private module}`` handed to
:func:`lazy_face`. A name's module is imported on first use, so importing a package
costs nothing until a name is used: ``workbench --help`` does not import pandas or
nbformat, the host-side load generator (:mod:`workbench.bench`) runs where pandas is
absent, and two packages may name each other in their tables without an import cycle.
``tests/test_exports.py`` checks that each table is exactly what the package exports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(
    package: str,
    names: Mapping[str, str],
    modules: Mapping[str, str] | None = None,
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for a package whose face is ``names`` and ``modules``.

    Args:
        package: the package's ``__name__``.
        names: public name -> private module (relative, e.g. ``"_base"``) that defines it.
        modules: public name -> private module exported whole (e.g. ``{"processes": "_processes"}``).

    Returns:
        The sorted ``__all__`` and the module-level ``__getattr__`` and ``__dir__`` to assign.
    """
    modules = dict(modules or {})
    exported = sorted({*names, *modules})
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        if name in modules:
            value: Any = importlib.import_module(f"{package}.{modules[name]}")
        elif name in names:
            value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exported})

    return exported, __getattr__, __dir__
