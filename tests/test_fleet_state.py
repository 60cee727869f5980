"""The parts of ``workbench fleet`` that need no cluster: the fleet file and token, the job's arguments and
entrypoint, and the one-line errors of bad input (tests/test_fleet_ssh.py runs the real thing over SSH)."""

from __future__ import annotations

import shlex

import pytest
import typer
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import ConfigError
from workbench.sweeps._bench_cli import job_arguments
from workbench.sweeps._fleet_job import job_entrypoint
from workbench.sweeps._fleet_state import FleetState, check_name, load_state, save_state, write_token


@pytest.fixture(autouse=True)
def fleet_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_FLEET_DIR", str(tmp_path / "fleet"))
    return tmp_path / "fleet"


def _state(**changes) -> FleetState:
    fields = dict(name="lab", head="gpu1", address="10.0.0.5:6379", dashboard_port=8265, python="/opt/wb/bin/python",
                  remote_dir="/home/u/.workbench/fleet/lab", runs_dir="/home/u/.workbench/fleet/lab/runs")
    return FleetState(**{**fields, **changes})


def test_state_round_trip_and_token_mode(fleet_dir):
    state = _state(started=[{"alias": "gpu1", "role": "head", "pid": 7}], jobs={"raysubmit_x": {"submitted_at": 1.0}})
    save_state(state)
    assert load_state("lab") == state
    path = write_token("lab", "secret")
    assert path.stat().st_mode & 0o777 == 0o600 and state.token() == "secret"
    assert not list(fleet_dir.glob(".*.tmp"))


def test_unknown_fleet_and_bad_names_are_one_line_errors(fleet_dir):
    save_state(_state())
    with pytest.raises(ConfigError, match=r"no fleet named 'other' .*\(fleets: lab\).*fleet up"):
        load_state("other")
    for bad in ("", "../x", "a b", "-x"):
        with pytest.raises(ConfigError, match="not usable"):
            check_name(bad)
    with pytest.raises(ConfigError, match="no token file"):
        _state(name="notoken").token()


def _ctx(argv: list[str]) -> typer.Context:
    command = typer.main.get_command(app).commands["bench"]  # type: ignore[attr-defined]
    return command.make_context("bench", argv)


def test_job_arguments_keep_what_was_given_less_what_the_job_sets():
    ctx = _ctx(["baseline", "eagle3-topk4", "--levels", "1,2", "--fleet", "lab", "--detach", "--no-ignore-eos",
                "--repeats", "2", "--no-progress", "--one-unit-per-host"])
    assert job_arguments(ctx) == ["baseline", "eagle3-topk4", "--levels", "1,2", "--repeats", "2", "--no-ignore-eos",
                                  "--one-unit-per-host"]


def test_entrypoint_runs_the_cli_with_the_absolute_interpreter_on_the_fleet():
    words = shlex.split(job_entrypoint(_state(), ["baseline", "--levels", "1,2"]))
    assert words[0] == "/opt/wb/bin/python" and words[1] == "-c" and "workbench.cli" in words[2]
    assert words[3:] == ["bench", "baseline", "--levels", "1,2", "--fleet", "auto", "--runs-dir",
                         "/home/u/.workbench/fleet/lab/runs", "--no-progress"]


def test_detach_needs_a_fleet_of_fleet_up():
    runner = CliRunner()
    out = runner.invoke(app, ["bench", "baseline", "--detach"])
    assert out.exit_code == 2 and "give --fleet NAME" in out.output
    out = runner.invoke(app, ["bench", "baseline", "--detach", "--fleet", "nosuch"])
    assert out.exit_code == 2 and "no fleet named 'nosuch'" in out.output
    out = runner.invoke(app, ["fleet", "up"])
    assert out.exit_code == 2

