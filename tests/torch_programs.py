"""What the tests of the GPU programs in ``remote/`` share: whether PyTorch is here (it is not a test
dependency, so their torch paths are skipped without it) and running a program as a child process."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(
    not HAS_TORCH,
    reason="PyTorch is not installed in this venv (not a test "
    "dependency); install a CPU wheel to run the program's torch path",
)


def run_program(script: Path, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``script`` with this interpreter; ``env`` is laid over the current environment."""
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
