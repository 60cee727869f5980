"""workbench calibrate on a host: upload, dry-run plan retrieval, and the clear refusal without
PyTorch, on this machine and through a real sshd (tests/sshd_fixture.py). torch is not installed
here; with it (and a CPU), the tiny shapes are timed and their tables fetched."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from sshd_fixture import any_host, sshd  # noqa: F401  (pytest fixtures)
from typer.testing import CliRunner

from workbench.calibration import CalibrationRequest, load_table, run_calibration
from workbench.cli import app
from workbench.errors import CommandError, ConfigError, HostError
from workbench.hosts import Host, LocalHost
from workbench.paths import PACKAGE_ROOT

HAS_TORCH = importlib.util.find_spec("torch") is not None
TINY = CalibrationRequest(presets=("tiny",), quick=True, device="cpu")


@pytest.fixture
def host(any_host: Host) -> Host:
    """This machine, then the real sshd (tests/sshd_fixture.py ``any_host``)."""
    return any_host


def test_request_is_validated_once() -> None:
    with pytest.raises(ConfigError, match="--preset NAME or --model"):
        CalibrationRequest()
    with pytest.raises(ConfigError, match="one of them"):
        CalibrationRequest(presets=("tiny",), model="qwen3-30b-a3b")
    assert (
        TINY.key()
        == CalibrationRequest(presets=("tiny",), quick=True, device="cpu").key()
        != CalibrationRequest(presets=("tiny",), device="cpu").key()
    )


def test_dry_run_uploads_the_program_and_fetches_the_plans(host: Host, tmp_path) -> None:
    lines: list[str] = []
    run = run_calibration(
        host,
        CalibrationRequest(presets=("tiny", "llama3-8b"), quick=True),
        out_dir=tmp_path,
        python=sys.executable if isinstance(host, LocalHost) else "python3",
        dry_run=True,
        progress=lines.append,
    )
    assert [p["name"] for p in run.plans] == ["tiny", "llama3-8b"]
    assert run.plans[1]["layers_model"] == 32 and run.plans[1]["points"] > 50
    plan = json.loads((tmp_path / "llama3-8b.plan.json").read_text())
    assert plan["target"]["hidden"] == 4096 and {p.name for p in run.tables} == {
        "tiny.plan.json",
        "llama3-8b.plan.json",
    }


def test_a_model_file_travels_as_json(host: Host, tmp_path) -> None:
    run = run_calibration(
        host,
        CalibrationRequest(model="qwen3-30b-a3b", draft="none", quick=True),
        out_dir=tmp_path,
        python=sys.executable if isinstance(host, LocalHost) else "python3",
        dry_run=True,
    )
    assert run.plans[0]["target"] == "Qwen/Qwen3-30B-A3B" and run.plans[0]["draft"] is None


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed here: the refusal without it cannot be seen")
def test_without_torch_the_run_is_refused_clearly(host: Host, tmp_path) -> None:
    lines: list[str] = []
    # the refusal comes as the script's exit, or, when it exits before its start is confirmed (a quiet machine),
    # as the start's error quoting its log: either way the user reads the refusal
    with pytest.raises((CommandError, HostError), match="refused.*PyTorch is not installed"):
        run_calibration(
            host,
            TINY,
            out_dir=tmp_path,
            python=sys.executable if isinstance(host, LocalHost) else "python3",
            progress=lines.append,
            poll_s=0.1,
        )
    assert any("PyTorch is not installed" in line for line in lines)  # the program's own words, shown as progress
    assert (tmp_path / "run.log").is_file() and not list(tmp_path.glob("*.csv"))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed here (never a dependency of the test suite)")
def test_tiny_cpu_run_fetches_the_tables_and_resumes(host: Host, tmp_path) -> None:
    python = sys.executable if isinstance(host, LocalHost) else "python3"
    run = run_calibration(host, TINY, out_dir=tmp_path, python=python, poll_s=0.2)
    table = load_table(run.tables[0])
    assert table.status == "complete" and not table.calibration
    again = run_calibration(host, TINY, out_dir=tmp_path, python=python, poll_s=0.2)
    assert "complete already" in (tmp_path / "run.log").read_text() and again.exit_status == 0


def test_cli_local_refuses_without_torch_or_gpu(tmp_path) -> None:
    result = CliRunner().invoke(
        app, ["calibrate", "--host", "local", "--preset", "tiny", "--quick", "--device", "cpu", "--out", str(tmp_path)]
    )
    if HAS_TORCH:
        pytest.skip("torch is installed here")
    assert result.exit_code == 1 and "PyTorch is not installed" in result.output


def test_cli_fit_prints_residuals_and_knees() -> None:
    result = CliRunner().invoke(
        app, ["calibrate", "fit", str(PACKAGE_ROOT / "data/calibration/h200-2026-12-01/llama3-8b.json")]
    )
    assert result.exit_code == 0, result.output
    assert "hbm_efficiency = " in result.output and "| decode:T1:q1:C0 | fit |" in result.output
    assert "knee" in result.output and "held out" in result.output
