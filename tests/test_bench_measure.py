"""Tests for workbench.bench._measure: the measuring core and the host-side modules need only the standard
library and aiohttp (the sweep plan's own tests are in test_bench_plan.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from blocked_imports import BLOCKED, blocking_dir


def test_host_side_modules_import_without_pandas_numpy_tqdm(tmp_path) -> None:
    code = (
        "import sys, workbench.bench._remote_run, workbench.bench._sweeplog; "
        f"print(sorted(m for m in {list(BLOCKED)!r} if m in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=str(blocking_dir(tmp_path)))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    blocked = subprocess.run([sys.executable, "-c", "import pandas"], env=env, capture_output=True, text=True)
    assert "pandas is blocked" in blocked.stderr  # the stubs do block
