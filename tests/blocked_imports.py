"""Make packages unimportable for a child Python, as on a GPU host without them.

``blocking_dir(tmp)`` holds a stub package per blocked name whose import raises
ImportError; put it first on ``PYTHONPATH``. ``blocking_python(tmp)`` is an executable
wrapper around this interpreter that does so (it keeps any ``PYTHONPATH`` it is
given after the stubs), usable wherever the workbench takes a host's ``python``.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: What the host-side load generator must do without (pandas and numpy may be absent on
#: a GPU host; tqdm and tokenizers are the workbench's own extras).
BLOCKED = ("pandas", "numpy", "tqdm", "tokenizers")


def blocking_dir(tmp: Path, names: tuple[str, ...] = BLOCKED) -> Path:
    """A directory of stub packages that raise ImportError when imported."""
    root = tmp / "blocked-imports"
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "__init__.py").write_text(
            f"raise ImportError('{name} is blocked here, as on a host without it')\n"
        )
    return root


def blocking_python(tmp: Path, names: tuple[str, ...] = BLOCKED) -> Path:
    """An executable that runs this interpreter with ``names`` blocked."""
    stubs = blocking_dir(tmp, names)
    wrapper = tmp / "python-without-pandas"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{stubs}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper
