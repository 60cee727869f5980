"""Ctrl-C of a `workbench report` that runs notebooks side by side (workbench.report._schedule.run_beside):
the worker processes print nothing, their kernels are stopped, and the command ends with one line and 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from workbench.report import MEASURES_KEY


def _slow_cell(marker: Path, cleaned: Path) -> str:
    return (
        f"import os, pathlib, time\npathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
        f"try:\n    time.sleep(120)\nfinally:\n    pathlib.Path({str(cleaned)!r}).touch()"
    )


def _beside(path: Path) -> Path:
    nb = nbformat.read(str(path), as_version=4)
    nb.metadata[MEASURES_KEY] = {"measures": False}
    nbformat.write(nb, str(path))
    return path


def test_ctrl_c_of_notebooks_run_beside_prints_no_worker_traceback(tmp_path: Path, write_notebook) -> None:
    books = tmp_path / "books"
    slow = {name: (tmp_path / f"{name}-running", tmp_path / f"{name}-cleaned") for name in ("alone", "side1", "side2")}
    notebooks = [write_notebook(books / "alone.ipynb", parameters="x = 1", cells=[_slow_cell(*slow["alone"])])]
    notebooks += [
        _beside(write_notebook(books / f"{name}.ipynb", parameters="x = 1", cells=[_slow_cell(*slow[name])]))
        for name in ("side1", "side2")
    ]
    # one that ends at once: its worker then waits for work, where SIGINT used to print a traceback
    notebooks.append(_beside(write_notebook(books / "quick.ipynb", parameters="x = 1", cells=["y = x + 1"])))
    workbench_cli = Path(sys.executable).with_name("workbench")
    proc = subprocess.Popen(
        [str(workbench_cli), "report", *map(str, notebooks), "--out", str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not (all(marker.exists() for marker, _ in slow.values()) and (tmp_path / "r" / "quick.html").exists()):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)  # the quick notebook's worker is back waiting for work
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "ForkProcess" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("interrupted (Ctrl-C)"), err
    for name, (marker, cleaned) in slow.items():
        assert cleaned.exists(), name  # each cell got its KeyboardInterrupt: its finally blocks ran
        with pytest.raises(ProcessLookupError):  # and its kernel is gone
            os.kill(int(marker.read_text()), 0)
