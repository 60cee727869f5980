"""``workbench bench`` from a newcomer's side: the runs folder it writes to ($WORKBENCH_RUNS_DIR like
``workbench runs``), what a resumed sweep says it reused, and plain progress lines when stderr is no
terminal. Real simulated-engine sweeps, small and at a high time scale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.report.cli import reuse_lines

runner = CliRunner()
SMALL = ["--levels", "1,2", "--requests", "2", "--max-new-tokens", "8", "--time-scale", "20"]


@pytest.fixture()
def env_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runs folder named only by $WORKBENCH_RUNS_DIR."""
    root = tmp_path / "env-runs"
    monkeypatch.setenv("WORKBENCH_RUNS_DIR", str(root))
    return root


def test_bench_writes_where_runs_list_reads_and_resumes_saying_what_it_reused(env_runs: Path) -> None:
    first = runner.invoke(app, ["bench", "baseline", *SMALL])
    assert first.exit_code == 0, first.output
    (run,) = [p.parent for p in env_runs.glob("*/manifest.json")]  # $WORKBENCH_RUNS_DIR, no --runs-dir
    assert f"runs: {run}" in first.stdout
    assert "levels: 2 measured now, 0 reused from disk" in first.stdout
    assert "already on disk" not in first.output
    listed = runner.invoke(app, ["runs", "list"])
    assert listed.exit_code == 0 and run.name in listed.stdout

    # the sweep stopped after its first level: the manifest (the commit point) lists one unit
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(units_completed=manifest["units_completed"][:1], status="incomplete")
    (run / "manifest.json").write_text(json.dumps(manifest))
    again = runner.invoke(app, ["bench", "baseline", *SMALL])
    assert again.exit_code == 0, again.output
    since = manifest["started_at"][:16].replace("T", " ")
    assert (
        f"baseline: reusing 1 of 2 levels from run {run.name} (stored since {since} UTC): c=1; measuring now: c=2\n"
    ) in again.stderr  # which levels, from which run, and what is measured now
    assert "levels: 1 measured now, 1 reused from disk" in again.stdout
    assert [p.parent for p in env_runs.glob("*/manifest.json")] == [run]
    resumed = json.loads((run / "manifest.json").read_text())["resumed"]  # for a report made from this run
    assert [(r["units_reused"], r["units_to_measure"]) for r in resumed] == [([[0, 0]], [[0, 1]])]

    done = runner.invoke(app, ["bench", "baseline", *SMALL, "--no-progress"])
    assert (
        "baseline: reusing 2 of 2 levels from run " in done.stderr and "c=1, c=2; measuring now: nothing" in done.stderr
    )
    assert "levels: 0 measured now, 2 reused from disk" in done.stdout
    resumed = json.loads((run / "manifest.json").read_text())["resumed"]
    assert [(r["units_reused"], r["units_to_measure"]) for r in resumed][1] == ([[0, 0], [0, 1]], [])
    assert resumed[0]["at"] < resumed[1]["at"]


def test_a_resumed_sweep_of_repeats_counts_each_level_repeats(tmp_path: Path) -> None:
    args = ["bench", "baseline", *SMALL, "--repeats", "2", "--no-progress", "--runs-dir", str(tmp_path)]
    assert runner.invoke(app, args).exit_code == 0
    (run,) = [p.parent for p in tmp_path.glob("*/manifest.json")]
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(units_completed=manifest["units_completed"][:3], status="incomplete")  # repeat 2 of c=2 left
    (run / "manifest.json").write_text(json.dumps(manifest))
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert f"baseline: reusing 3 of 4 levels x repeats from run {run.name}" in again.stderr
    assert ": c=1 x2, c=2 x1; measuring now: c=2 x1\n" in again.stderr


def test_an_explicit_runs_dir_wins_over_the_environment(env_runs: Path, tmp_path: Path) -> None:
    given = tmp_path / "given"
    result = runner.invoke(app, ["bench", "baseline", *SMALL, "--no-progress", "--runs-dir", str(given)])
    assert result.exit_code == 0, result.output
    assert len(list(given.glob("*/manifest.json"))) == 1 and not env_runs.exists()


def test_without_a_terminal_progress_is_one_line_per_level_not_bars(tmp_path: Path) -> None:
    # CliRunner's stderr is no terminal, like a log file, a pipe or CI
    result = runner.invoke(app, ["bench", "baseline", *SMALL, "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "\r" not in result.output and "it/s" not in result.output  # no tqdm frames
    lines = [line.strip() for line in result.stderr.splitlines()]
    assert "baseline: server ready on local (sim), measuring 2 level(s)" in lines
    assert [line.split(":")[1].strip() for line in lines if " done (" in line] == [
        "concurrency=1 done (1/2)",
        "concurrency=2 done (2/2)",
    ]
    quiet = runner.invoke(app, ["bench", "baseline", *SMALL, "--no-progress", "--fresh", "--runs-dir", str(tmp_path)])
    assert quiet.exit_code == 0 and " done (" not in quiet.output


def test_the_report_terminal_names_the_runs_a_notebook_reused(tmp_path: Path) -> None:
    """What ``workbench report`` prints after a notebook: the runs its sweep reopened while it ran and took
    stored levels from (the manifests' ``resumed`` record), none for a sweep that measured afresh."""
    from datetime import datetime, timezone

    args = ["bench", "baseline", *SMALL, "--no-progress", "--runs-dir", str(tmp_path)]
    first_from = datetime.now(timezone.utc)
    assert runner.invoke(app, args).exit_code == 0
    first_to = datetime.now(timezone.utc)
    assert reuse_lines(tmp_path, first_from, first_to) == []  # a new run: nothing reused
    again_from = datetime.now(timezone.utc)
    assert runner.invoke(app, args).exit_code == 0
    again_to = datetime.now(timezone.utc)
    (run,) = [p.parent for p in tmp_path.glob("*/manifest.json")]
    since = json.loads((run / "manifest.json").read_text())["started_at"][:16].replace("T", " ")
    assert reuse_lines(tmp_path, again_from, again_to) == [
        f"reused: baseline: 2 stored unit(s) (level x repeat) from run {run.name}, stored since {since} UTC; "
        "measured now: 0"
    ]
    assert reuse_lines(tmp_path, first_from, first_to) == []  # another notebook's window: not this one


def test_workbench_report_says_which_stored_runs_a_rerun_reused(
    tmp_path: Path, write_notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real ``workbench report`` of a notebook that sweeps, run twice: the second run's terminal names the run
    it reused and how to measure anew (a notebook that declares ``fresh``)."""
    runs = tmp_path / "runs"
    write_notebook(
        tmp_path / "sweep.ipynb",
        parameters=f"fresh = False\nruns_dir = {str(runs)!r}",
        cells=[
            "import workbench as wb\nwb.benchmark_variants(['baseline'], concurrency_levels=[1], requests_per_level=2, "
            "max_new_tokens=8, time_scale=20, fresh=fresh, runs_dir=runs_dir, progress=False)"
        ],
    )
    monkeypatch.chdir(tmp_path)
    first = runner.invoke(app, ["report", "sweep.ipynb"])
    assert first.exit_code == 0, first.output
    assert "reused:" not in first.output
    again = runner.invoke(app, ["report", "sweep.ipynb"])
    assert again.exit_code == 0, again.output
    (run,) = [p.parent for p in runs.glob("*/manifest.json")]
    assert f"  reused: baseline: 1 stored unit(s) (level x repeat) from run {run.name}, stored since " in again.output
    assert "; measured now: 0\n" in again.output and "-p fresh true measures anew" in again.output
