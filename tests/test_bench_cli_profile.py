"""`workbench bench --sim-profile`: the simulator models the hardware and model the user names."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app

VARIANT = Path(__file__).resolve().parents[1] / "benchmarks" / "real_sglang" / "variants" / "real-baseline.toml"


def test_the_named_profile_serves_and_is_recorded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            str(VARIANT),
            "--engine",
            "sim",
            "--sim-profile",
            "h200-llama3-8b",
            "--levels",
            "1",
            "--requests",
            "2",
            "--max-new-tokens",
            "4",
            "--time-scale",
            "20",
            "--runs-dir",
            str(runs),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    (manifest,) = runs.glob("*/manifest.json")
    assert json.loads(manifest.read_text())["simulation"]["profile"] == "h200-llama3-8b"
    assert "profile h200-llama3-8b" in result.output


def test_an_unknown_profile_is_refused_before_anything_starts(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            str(VARIANT),
            "--engine",
            "sim",
            "--sim-profile",
            "h200-llama3-8bb",
            "--levels",
            "1",
            "--runs-dir",
            str(runs),
            "--no-progress",
        ],
    )
    assert result.exit_code == 2, result.output
    assert "h200-llama3-8bb" in result.output and "Traceback" not in result.output
    assert not list(runs.glob("*/manifest.json"))
