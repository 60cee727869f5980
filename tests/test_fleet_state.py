"""The parts of ``workbench fleet`` that need no cluster: the fleet file and token, the job's arguments and
entrypoint, and the one-line errors of bad input (tests/test_fleet_ssh.py runs the real thing over SSH)."""

from __future__ import annotations

import dataclasses
import json
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


#: One process as `fleet up` records it.
STARTED = {
    "alias": "gpu1",
    "role": "head",
    "ip": "10.0.0.5",
    "pid": 7,
    "pgid": 7,
    "start_time": 123456,
    "log_path": "/home/u/.workbench/fleet/lab/ray-head-gpu1.log",
    "command": "ray start --head --block",
}


def _state(**changes) -> FleetState:
    fields = dict(
        name="lab",
        head="gpu1",
        address="10.0.0.5:6379",
        dashboard_port=8265,
        python="/opt/wb/bin/python",
        remote_dir="/home/u/.workbench/fleet/lab",
        runs_dir="/home/u/.workbench/fleet/lab/runs",
    )
    return FleetState(**{**fields, **changes})


def test_state_round_trip_and_token_mode(fleet_dir):
    state = _state(started=[STARTED], jobs={"raysubmit_x": {"submitted_at": 1.0}})
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
    ctx = _ctx(
        [
            "baseline",
            "eagle3-topk4",
            "--levels",
            "1,2",
            "--fleet",
            "lab",
            "--detach",
            "--no-ignore-eos",
            "--repeats",
            "2",
            "--no-progress",
            "--one-unit-per-host",
        ]
    )
    assert job_arguments(ctx) == [
        "baseline",
        "eagle3-topk4",
        "--levels",
        "1,2",
        "--repeats",
        "2",
        "--no-ignore-eos",
        "--one-unit-per-host",
    ]


def test_entrypoint_runs_the_cli_with_the_absolute_interpreter_on_the_fleet():
    words = shlex.split(job_entrypoint(_state(), ["baseline", "--levels", "1,2"]))
    assert words[0] == "/opt/wb/bin/python" and words[1] == "-c" and "workbench.cli" in words[2]
    assert words[3:] == [
        "bench",
        "baseline",
        "--levels",
        "1,2",
        "--fleet",
        "auto",
        "--runs-dir",
        "/home/u/.workbench/fleet/lab/runs",
        "--no-progress",
    ]


def test_detach_needs_a_fleet_of_fleet_up():
    runner = CliRunner()
    out = runner.invoke(app, ["bench", "baseline", "--detach"])
    assert out.exit_code == 2 and "give --fleet NAME" in out.output
    out = runner.invoke(app, ["bench", "baseline", "--detach", "--fleet", "nosuch"])
    assert out.exit_code == 2 and "no fleet named 'nosuch'" in out.output
    out = runner.invoke(app, ["fleet", "up"])
    assert out.exit_code == 2


#: Fleet files of wrong shapes, each with what the message says about it.
BAD_RECORDS = {
    "a list": ([1, 2], "it holds a list, not an object"),
    "a string": ("lab", "it holds a string, not an object"),
    "null": (None, "it holds null, not an object"),
    "no address": ({"drop": "address"}, "it lacks address"),
    "port as text": ({"dashboard_port": "8265"}, "dashboard_port is a string ('8265'), not an integer"),
    "port as true": ({"dashboard_port": True}, "dashboard_port is true/false (True), not an integer"),
    "port as list": ({"dashboard_port": [8265]}, "dashboard_port is a list ([8265]), not an integer"),
    "head as number": ({"head": 1e300}, "head is a number (1e+300), not a string"),
    "name as object": ({"name": {"a": 1}}, "name is an object ({'a': 1}), not a string"),
    "ssh_config as list": ({"ssh_config": ["x"]}, "ssh_config is a list (['x']), not a string or null"),
    "started as object": ({"started": {"alias": "gpu1"}}, "started is an object"),
    "started as string": ({"started": "gpu1"}, "started is a string ('gpu1'), not a list"),
    "an entry as number": ({"started": [7]}, "started[0] is an integer (7), not an object"),
    "an entry without pgid": (
        {"started": [{k: v for k, v in STARTED.items() if k != "pgid"}]},
        "started[0] lacks pgid",
    ),
    "pid as text": ({"started": [{**STARTED, "pid": "7"}]}, "started[0].pid is a string ('7'), not an integer"),
    "pid as float": ({"started": [{**STARTED, "pid": 7.5}]}, "started[0].pid is a number (7.5), not an integer"),
    "jobs as list": ({"jobs": ["raysubmit_x"]}, "jobs is a list"),
    "a job as string": ({"jobs": {"raysubmit_x": "now"}}, "jobs['raysubmit_x'] is a string ('now'), not an object"),
    "a job without time": ({"jobs": {"raysubmit_x": {}}}, "jobs['raysubmit_x'].submitted_at is null"),
    "pulled as list": ({"pulled": [1]}, "pulled is a list ([1]), not an object"),
    "a pull as number": ({"pulled": {"/r": {"a": 3}}}, "pulled['/r']['a'] is 3, not a [size, mtime] pair"),
    "another name": ({"name": "other"}, "its name is 'other', not 'lab' (the file's own name)"),
}


def _bad_file(fleet_dir, shape):
    fleet_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(shape, dict):
        data = {**dataclasses.asdict(_state()), **shape}
        data.pop(shape.get("drop", ""), None)
        data.pop("drop", None)
    else:
        data = shape
    (fleet_dir / "lab.json").write_text(json.dumps(data))


@pytest.mark.parametrize("case", list(BAD_RECORDS))
def test_a_fleet_file_of_any_shape_is_one_line_for_status_and_down(fleet_dir, case):
    shape, said = BAD_RECORDS[case]
    runner = CliRunner()
    for verb in ("status", "down"):
        _bad_file(fleet_dir, shape)
        out = runner.invoke(app, ["fleet", verb, "--name", "lab"])
        assert out.exit_code == 2, (verb, out.output, out.exception)
        assert out.exception is None or isinstance(out.exception, SystemExit), repr(out.exception)
        assert "Traceback" not in out.output and len(out.output.strip().splitlines()) == 1, out.output
        assert out.output.startswith(
            f"error: the fleet file {fleet_dir / 'lab.json'} is not a record `fleet up` wrote: {said}"
        ), out.output
        assert "Nothing was stopped; remove the file" in out.output and "run `workbench fleet up` again" in out.output
        assert (fleet_dir / "lab.json").exists()  # kept: the user decides
