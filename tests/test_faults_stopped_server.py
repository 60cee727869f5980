"""A server stopped or killed in the middle of a level, by any signal: the level is failed, never stored.

Real parts: ``workbench bench`` (in this process) measures the simulated engine as a real HTTP server; a
watcher thread signals the server's process group once the first level is stored, while the second is
being measured: SIGTERM (what a job scheduler or a host shutdown sends), SIGKILL, or the user's own
``workbench servers --stop --all`` in another process. Each time the command must exit 1 naming the cut
level and its cause, the run must hold the first level only, and running the same command again must
measure the second level (and nothing else).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from server_killer import ServerKiller
from test_faults import assert_nothing_running
from typer.testing import CliRunner

from workbench.cli import app
from workbench.store import list_runs, load_run

#: Level 2 runs about 4 s of wall time here (64 short requests, 2 in flight): long enough for a stop to land in it.
BENCH = [
    "bench",
    "baseline",
    "--levels",
    "1,2",
    "--requests",
    "64",
    "--max-new-tokens",
    "4",
    "--time-scale",
    "4",
    "--no-progress",
]


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own server registry (so `workbench servers --stop --all` stops only its server)."""
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    monkeypatch.setenv("WORKBENCH_SWEEPS_DIR", str(tmp_path / "sweeps"))
    return tmp_path


def mid_level(runs: Path, act: Callable[[dict[str, Any]], Any]) -> ServerKiller:
    """A watcher that runs ``act(manifest)`` once a run under ``runs`` has stored its first level (the second
    is being measured then)."""
    return ServerKiller(runs, lambda m: m.get("levels_completed", 0) >= 1, delay_s=0.3, timeout_s=120.0, act=act)


def _signal(number: int) -> Callable[[dict[str, Any]], None]:
    return lambda manifest: os.killpg(manifest["server_process"]["pgid"], number)


def _servers_stop_all(manifest: dict[str, Any]) -> subprocess.CompletedProcess:
    """What a user types in another terminal (this test's registry, from the environment)."""
    return subprocess.run(
        [sys.executable, "-m", "workbench", "servers", "--stop", "--all"],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


STOPS = {
    "SIGTERM": (_signal(signal.SIGTERM), "shutting down: SIGTERM or SIGINT from `workbench servers --stop`"),
    "SIGKILL": (_signal(signal.SIGKILL), "killed by a signal (kill -9"),
    "servers --stop": (_servers_stop_all, "shutting down: SIGTERM or SIGINT from `workbench servers --stop`"),
}


@pytest.mark.parametrize("how", list(STOPS))
def test_a_server_stopped_mid_level_fails_that_level_exits_1_and_a_rerun_measures_it(tmp_path: Path, how: str) -> None:
    act, cause = STOPS[how]
    runs = tmp_path / "runs"
    runner = CliRunner()
    watcher = mid_level(runs, act)
    cut = runner.invoke(app, [*BENCH, "--runs-dir", str(runs)])
    watcher.join()
    assert watcher.acted is not None, "the server was never stopped mid-level"
    if how == "servers --stop":
        assert watcher.outcome.returncode == 0 and "stopped " in watcher.outcome.stdout, watcher.outcome
    assert cut.exit_code == 1, cut.output
    assert "Traceback" not in cut.output
    [error] = [line for line in cut.output.splitlines() if line.startswith("error: ")]
    assert error.startswith("error: baseline: the server failed (killed): ") and cause in error, error
    assert "1 level(s) measured before it are kept" in error and "running the same sweep again resumes it" in error
    (path,) = [p.parent for p in runs.glob("*/manifest.json")]
    run = load_run(path)
    assert run.manifest["status"] == "failed" and run.manifest["units_completed"] == [[0, 0]]
    assert "died during concurrency=2" in run.manifest["error"]
    (failed,) = run.manifest["failed_levels"]
    assert failed["level_index"] == 1 and failed["server_alive"] is False and failed["failed"] > 0
    assert list(run.levels["concurrency"]) == [1]  # the cut level is neither stored nor summarised
    assert list(list_runs(runs)["status"]) == ["failed"]
    assert_nothing_running(tmp_path, watcher.acted["server_process"]["pgid"])

    again = runner.invoke(app, [*BENCH, "--runs-dir", str(runs)])
    assert again.exit_code == 0, again.output
    assert "baseline: reusing 1 of 2 levels from run " in again.output and "measuring now: c=2" in again.output
    assert "levels: 1 measured now, 1 reused from disk" in again.output
    run = load_run(path)
    assert run.manifest["status"] == "complete" and sorted(run.manifest["units_completed"]) == [[0, 0], [0, 1]]
    assert list(run.levels["concurrency"]) == [1, 2] and list(run.levels["failed"]) == [0, 0]
    assert_nothing_running(tmp_path)
