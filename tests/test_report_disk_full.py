"""`workbench report -o` on a full disk (a real tmpfs of 1 MiB, mounted for the test): one line, exit 1, no
half-written report left as if complete, and the run the notebook's kernel was writing marked failed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 1 MiB tmpfs mounted at ``tmp_path/tiny`` (root only), unmounted afterwards."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "tiny"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_report_on_a_full_disk_is_one_line_and_fails_the_run_it_was_writing(
    tmp_path: Path, tiny_disk: Path, write_notebook
) -> None:
    runs = tmp_path / "runs"  # on the roomy disk: the kernel opens a run there and leaves it running
    out = tiny_disk / "reports"
    nb = write_notebook(
        tmp_path / "books" / "fills.ipynb",
        parameters=f"runs_dir = None\nfill = {str(tiny_disk)!r}",
        cells=[
            "from workbench.store import open_run\n"
            "held = open_run('baseline', identity='disk-full-test', engine='sim', root=runs_dir)",
            # the disk fills while the run is open: papermill's next save of the notebook fails
            "import pathlib\nchunk = b'x' * 65536\n"
            "with open(pathlib.Path(fill) / 'filler', 'wb') as f:\n"
            "    try:\n        while True:\n            f.write(chunk)\n            f.flush()\n"
            "    except OSError:\n        pass\nprint('y' * 200_000)  # a notebook that no longer fits",
            "held.writer.finish()",
        ],
    )
    workbench_cli = Path(sys.executable).with_name("workbench")
    done = subprocess.run(
        [str(workbench_cli), "report", str(nb), "-o", str(out), "-p", "runs_dir", str(runs)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("error: ")]
    assert line.startswith("error: disk full: cannot write ") and "while running fills.ipynb" in line, line
    assert line.endswith("Free space or choose -o elsewhere, then run it again"), line
    # nothing half-written reads as a finished report
    assert not (out / "fills.ipynb").exists() and not (out / "fills.html").exists(), sorted(out.iterdir())
    (manifest_path,) = runs.glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "failed" and manifest["error"].startswith("disk full: "), manifest
    assert manifest_path.parent.name in line  # the line names the run it failed
    assert not (manifest_path.parent / "sweep.lock").exists()
