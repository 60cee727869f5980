"""Ctrl-C of ``workbench bench``: the run is ``interrupted`` (not ``failed``), listed so, and resumes.

Real parts: the ``workbench`` console script measuring the simulated engine, sent SIGINT (what Ctrl-C in a
terminal sends to its foreground group) once the first level is stored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.store import list_runs, load_run, new_run

BENCH = [
    "bench",
    "baseline",
    "--levels",
    "1,2",
    "--requests",
    "32",
    "--max-new-tokens",
    "8",
    "--time-scale",
    "4",
    "--no-progress",
]


def test_a_keyboard_interrupt_finishes_a_run_as_interrupted_with_what_to_do(tmp_path: Path) -> None:
    run = new_run("baseline", engine="sim", root=tmp_path)
    with pytest.raises(KeyboardInterrupt), run:
        raise KeyboardInterrupt
    manifest = load_run(run.path).manifest
    assert manifest["status"] == "interrupted" and "KeyboardInterrupt" not in manifest["error"]
    assert manifest["error"] == "interrupted by the user (Ctrl-C); run the same sweep again to resume it"
    [row] = list_runs(tmp_path).to_dict("records")
    assert row["status"] == "interrupted" and row["problem"].startswith("stopped by the user (Ctrl-C)")
    failed = new_run("baseline", engine="sim", root=tmp_path / "other")
    with pytest.raises(RuntimeError), failed:
        raise RuntimeError("the host went away")
    assert load_run(failed.path).manifest["status"] == "failed"


def test_ctrl_c_of_bench_leaves_an_interrupted_run_that_the_same_command_resumes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    runs = tmp_path / "runs"
    workbench_cli = Path(sys.executable).with_name("workbench")  # the console script, as a user runs it
    proc = subprocess.Popen(
        [str(workbench_cli), *BENCH, "--runs-dir", str(runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=os.environ.copy(),
    )
    try:
        deadline = time.monotonic() + 120
        while not any(json.loads(p.read_text() or "{}").get("levels_completed") for p in runs.glob("*/manifest.json")):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "interrupted (Ctrl-C)" in err, err
    (path,) = [p.parent for p in runs.glob("*/manifest.json")]
    manifest = load_run(path).manifest
    assert manifest["status"] == "interrupted" and manifest["units_completed"] == [[0, 0]], manifest["error"]
    listed = CliRunner().invoke(app, ["runs", "list", "--runs-dir", str(runs)])
    assert listed.exit_code == 0 and "interrupted" in listed.output
    assert "stopped by the user" in " ".join(listed.output.split())  # its problem, wrapped to 100 columns

    again = CliRunner().invoke(app, [*BENCH, "--runs-dir", str(runs)])
    assert again.exit_code == 0, again.output
    assert "baseline: reusing 1 of 2 levels from run " in again.output
    assert load_run(path).manifest["status"] == "complete"
