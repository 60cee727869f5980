"""The ``workbench`` command line, through typer's CliRunner (real notebooks, real kernels)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

import workbench
from workbench.cli import app
from workbench.report.cli import split_report_args
from workbench.errors import ConfigError

runner = CliRunner()

#: Packages the command line must not import before a verb runs (they cost seconds to import).
HEAVY = ("pandas", "numpy", "nbformat", "papermill", "altair", "paramiko", "aiohttp", "jsonschema")


def _heavy_imports(code: str) -> list[str]:
    """The :data:`HEAVY` packages a fresh interpreter has imported after running ``code``."""
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_cli_imports_no_heavy_package() -> None:
    assert _heavy_imports("import workbench.cli") == []


@pytest.mark.parametrize(
    "verb",
    [[], ["report"], ["servers"], ["inspect"], ["host", "check"], ["variants", "check"]],
    ids=lambda v: " ".join(v) or "root",
)
def test_help_of_each_verb_imports_no_heavy_package(verb: list[str]) -> None:
    code = (
        "import contextlib, io\nfrom workbench.cli import app\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    app({[*verb, '--help']!r}, prog_name='workbench')"
    )
    assert _heavy_imports(code) == []


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "report" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and workbench.__version__ in result.output


def test_report_help() -> None:
    result = runner.invoke(app, ["report", "--help"])
    assert result.exit_code == 0
    for text in ("NOTEBOOK", "-p NAME VALUE", "--params-file", "--out", "inspect_source.ipynb"):
        assert text in result.output, text


def test_unknown_parameter_is_a_clear_error_without_traceback(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", parameters="requests_per_level = 4\nhost = 'local'")
    result = runner.invoke(app, ["report", str(nb), "-p", "requests_per_levl", "8", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "requests_per_levl" in result.output and "requests_per_level" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "x"], "needs a NAME and a VALUE"),
        (["-p", "x", "[1, 2"], "not valid YAML"),
        (["--bogus"], "unknown option"),
        (["missing.ipynb"], "not found"),
    ],
)
def test_bad_arguments(args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["report", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_split_report_args() -> None:
    notebooks, pairs = split_report_args(["a.ipynb", "-p", "n", "-1", "b.ipynb", "--param", "m", "[1,2]"])
    assert notebooks == ["a.ipynb", "b.ipynb"]
    assert pairs == [("n", "-1"), ("m", "[1,2]")]
    with pytest.raises(ConfigError):
        split_report_args(["-p", "n"])


def test_report_runs_notebooks_dir_in_order_with_per_notebook_parameters(
    tmp_path: Path, write_notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notebook(tmp_path / "notebooks" / "zz_other.ipynb", parameters="seed = 0", cells=["assert seed == 5"])
    write_notebook(
        tmp_path / "notebooks" / "spec_vs_baseline.ipynb",
        parameters="seed = 0\nrequests_per_level = 4\nlevels = [1]",
        cells=["assert (seed, requests_per_level, levels) == (5, 8, [1, 2, 4]), (seed, requests_per_level, levels)"],
    )
    (tmp_path / "params.yaml").write_text("seed: 5\nrequests_per_level: 2\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app,
        ["report", "--params-file", "params.yaml", "-p", "requests_per_level", "8", "-p", "levels", "[1,2,4]"],
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("spec_vs_baseline.ipynb") < out.index("zz_other.ipynb")
    for stem in ("spec_vs_baseline", "zz_other"):
        html = tmp_path / "reports" / f"{stem}.html"
        assert html.is_file() and str(html) in out
        assert (tmp_path / "reports" / f"{stem}.ipynb").is_file()
    other = nbformat.read(str(tmp_path / "reports" / "zz_other.ipynb"), as_version=4)
    assert set(other.metadata["workbench"]["parameters"]) == {"seed", "report_dir"}
    # neither notebook saves a chart: no line names a chart folder (that would not exist)
    assert "charts:" not in out and not (tmp_path / "reports" / "zz_other").exists()
    assert out.count("  took ") == 2 and "2 of 2 report(s) written to reports in " in out


def test_failing_notebook_exits_nonzero_and_names_the_partial_output(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "bad.ipynb", parameters="x = 1", cells=["1 / 0"])
    result = runner.invoke(app, ["report", str(nb), "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "ZeroDivisionError" in result.output and str(tmp_path / "r" / "bad.ipynb") in result.output
    assert "Traceback" not in result.output


def test_bench_help_imports_no_heavy_package() -> None:
    code = (
        "import contextlib, io\nfrom workbench.cli import app\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    app(['bench', '--help'], prog_name='workbench')"
    )
    assert _heavy_imports(code) == []


def test_bench_bad_input_exits_2(tmp_path: Path) -> None:
    for args in (["--levels", "1,two"], ["--repeats", "0"], ["--requests", "0"]):
        result = runner.invoke(app, ["bench", "baseline", *args, "--runs-dir", str(tmp_path)])
        assert result.exit_code == 2, result.output
    result = runner.invoke(app, ["bench", "no-such-variant", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2 and "no-such-variant" in result.output
    assert not list(tmp_path.iterdir())


def _refused_before_anything_runs(tmp_path: Path, cases: list[tuple[list[str], str]]) -> None:
    """``workbench bench baseline ARGS`` exits 2 with ``message`` (no traceback) for each case, and no run
    is made in ``tmp_path``."""
    for args, message in cases:
        result = runner.invoke(app, ["bench", "baseline", *args, "--runs-dir", str(tmp_path)])
        assert result.exit_code == 2 and message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    assert not list(tmp_path.iterdir())


def test_bench_refuses_duplicate_empty_and_unbounded_sizes_before_anything_runs(tmp_path: Path) -> None:
    _refused_before_anything_runs(
        tmp_path,
        [
            (["--levels", "1,2,2"], "concurrency_levels names 2 more than once"),
            (["--levels", "1,,2"], "--levels has an empty part (position 2)"),
            (["--levels", "1,1000000"], "above 16,384 requests in flight"),
            (["--input-len", "99999999"], "input_len 99,999,999 is above 1,048,576 tokens"),
            (["--time-scale", "1000"], "time scale 1000 is above 20"),
        ],
    )


def test_bench_runs_resumes_and_prints_n_and_intervals(tmp_path: Path) -> None:
    args = [
        "bench",
        "baseline",
        "eagle3-topk4",
        "--levels",
        "1,4",
        "--requests",
        "4",
        "--repeats",
        "2",
        "--max-new-tokens",
        "16",
        "--time-scale",
        "20",
        "--no-progress",
        "--runs-dir",
        str(tmp_path),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "n" in lines[0].split() and "output tok/s (95% CI)" in lines[0]
    rows = [line.split() for line in lines[1:5]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("baseline", "1", "2"),
        ("baseline", "4", "2"),
        ("eagle3-topk4", "1", "2"),
        ("eagle3-topk4", "4", "2"),
    ]
    assert all("–" in line and "(" in line for line in lines[1:5])  # every mean with its interval, (lo–hi)
    assert "  eagle3-topk4, output_throughput_tok_s:" in result.output
    assert "\ncrossovers against baseline:\n" in result.output  # the first variant, as in the notebooks
    assert "figures: SIMULATED: workbench sim engine" in result.output and "time scale 20x" in result.output
    runs = sorted(p.parent for p in tmp_path.glob("*/manifest.json"))
    stamps = [(p / "requests.parquet").stat().st_mtime_ns for p in runs]
    again = runner.invoke(app, args)  # the same sweep: resumed, nothing left to measure
    assert again.exit_code == 0 and [(p / "requests.parquet").stat().st_mtime_ns for p in runs] == stamps
    swapped = ["bench", "eagle3-topk4", "baseline", *args[3:]]
    wrong = runner.invoke(app, [*swapped, "--baseline", "baseline-cap48"])
    assert wrong.exit_code == 2 and "--baseline 'baseline-cap48' is not one of the variants measured" in wrong.output
    named = runner.invoke(app, [*swapped, "--baseline", "baseline"])  # resumed again: the same runs
    assert named.exit_code == 0 and "\ncrossovers against baseline:\n" in named.output
    assert [(p / "requests.parquet").stat().st_mtime_ns for p in runs] == stamps


def test_bench_open_loop_prints_its_levels_per_request_rate(tmp_path: Path) -> None:
    args = [
        "bench",
        "baseline",
        "eagle3-topk4",
        "--request-rates",
        "2,8",
        "--requests",
        "4",
        "--max-new-tokens",
        "8",
        "--time-scale",
        "16",
        "--no-progress",
        "--runs-dir",
        str(tmp_path),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:5] == ["variant", "request", "rate", "(req/s)", "n"]
    assert [line.split()[:3] for line in lines[1:5]] == [
        ["baseline", "2", "1"],
        ["baseline", "8", "1"],
        ["eagle3-topk4", "2", "1"],
        ["eagle3-topk4", "8", "1"],
    ]
    assert "\ncrossovers against baseline:\n" in result.output and "req/s" in result.output.split("crossovers")[1]
    both = runner.invoke(app, [*args, "--levels", "1"])
    assert both.exit_code == 2 and "give --levels (closed loop" in both.output
    bad = runner.invoke(app, ["bench", "baseline", "--request-rates", "fast", "--runs-dir", str(tmp_path)])
    assert bad.exit_code == 2 and "--request-rates must be comma-separated numbers" in bad.output


def test_bench_bad_load_options_exit_2_naming_the_option(tmp_path: Path) -> None:
    _refused_before_anything_runs(
        tmp_path,
        [
            (["--sweep", "batch", "--sweep-values", "1,2"], "--sweep must be one of"),
            (["--sweep", "output_len", "--sweep-values", "x"], "--sweep-values must be"),
            (["--sweep", "output_len"], "--sweep and --sweep-values go together"),
            (["--backend", "grpc"], "--backend must be one of"),
        ],
    )


def test_bench_load_options_reach_the_plan_and_the_table_shows_the_swept_value(tmp_path: Path) -> None:
    import pandas as pd

    sharegpt = tmp_path / "chats.json"
    sharegpt.write_text(
        json.dumps(
            [
                {
                    "id": f"c{i}",
                    "conversations": [
                        {"from": "human", "value": f"Write a haiku about the number {i}."},
                        {"from": "gpt", "value": "..."},
                    ],
                }
                for i in range(3)
            ]
        )
    )
    runs = tmp_path / "runs"
    result = runner.invoke(
        app,
        [
            "bench",
            "baseline",
            "--backend",
            "completions",
            "--sweep",
            "output_len",
            "--sweep-values",
            "8,16",
            "--levels",
            "1",
            "--requests",
            "2",
            "--time-scale",
            "16",
            "--prompt-set",
            f"sharegpt:{sharegpt}",
            "--no-progress",
            "--runs-dir",
            str(runs),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["variant", "output_len", "concurrency", "n"]
    assert [line.split()[:4] for line in lines[1:3]] == [["baseline", "8", "1", "1"], ["baseline", "16", "1", "1"]]
    (run,) = [p.parent for p in runs.glob("*/manifest.json")]
    requests = pd.read_parquet(run / "requests.parquet")
    levels = pd.read_parquet(run / "levels.parquet")
    assert set(requests["backend"]) == {"completions"} and set(requests["prompt_id"]) <= {"c0", "c1", "c2"}
    assert sorted(levels["sweep_value"]) == [8.0, 16.0] and set(levels["sweep"]) == {"output_len"}
    assert sorted(levels["max_new_tokens"]) == [8, 16]
    plan = json.loads((run / "manifest.json").read_text())["plan"]
    assert (plan["backend"], plan["sweep"], plan["sweep_values"]) == ("completions", "output_len", [8, 16])
    assert plan["prompt_set"] == f"sharegpt:{sharegpt}"


def _one_line_error(result, exit_code: int) -> str:
    """The command's single ``error:`` line (asserting the exit status and that no traceback or raw
    Python warning reached the terminal)."""
    assert result.exit_code == exit_code, result.output
    assert "Traceback" not in result.output and "UserWarning" not in result.output, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("error: ")]
    return line


def _bench_one_small_level(runs: Path):
    """``workbench bench baseline`` at one level of two 4-token requests (time scale 10) into ``runs``."""
    options = ["--levels", "1", "--requests", "2", "--max-new-tokens", "4", "--time-scale", "10", "--no-progress"]
    return runner.invoke(app, ["bench", "baseline", *options, "--runs-dir", str(runs)])


def _serve_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, code: str) -> None:
    """Make the simulated engine's server ``python -c code`` instead (its registry under ``tmp_path``)."""
    from workbench.engines import get_engine

    monkeypatch.setattr(
        type(get_engine("sim")),
        "launch_argv",
        lambda self, variant, *, python, port, options=None: [python, "-c", code],
    )
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))


def test_a_runs_folder_that_is_a_file_ends_bench_and_import_with_one_line(tmp_path: Path, monkeypatch) -> None:
    runs_file = tmp_path / "runs"
    runs_file.write_text("not a folder")
    monkeypatch.setenv("WORKBENCH_RUNS_DIR", str(runs_file))
    bench = runner.invoke(app, ["bench", "baseline", "--levels", "1", "--requests", "2", "--no-progress"])
    assert f"runs folder {runs_file} (from $WORKBENCH_RUNS_DIR) is a file" in _one_line_error(bench, 2)
    imported = runner.invoke(app, ["import", str(tmp_path / "results.jsonl")])
    assert "is a file, not a folder" in _one_line_error(imported, 2)
    nested = runner.invoke(
        app, ["bench", "baseline", "--levels", "1", "--no-progress", "--runs-dir", str(runs_file / "below")]
    )
    assert "a part of its path is a file" in _one_line_error(nested, 2)


def test_a_single_failed_server_ends_with_its_classified_failure_and_exit_1(tmp_path: Path, monkeypatch) -> None:
    # a server that loads forever (the simulator itself was sometimes ready at the first look, on a busy machine)
    _serve_with(monkeypatch, tmp_path, "import time; print('Load weight begin.', flush=True); time.sleep(600)")
    monkeypatch.setenv("WORKBENCH_READY_TIMEOUT_S", "0.05")
    result = _bench_one_small_level(tmp_path / "runs")
    line = _one_line_error(result, 1)
    assert (
        line.startswith(
            "error: baseline: the server failed (timeout): It was still starting when the ready "
            "timeout ran out: raise ready_timeout_s"
        )
        and "nothing was measured" in line
    )
    assert "level table lacks columns" not in result.output
    listed = runner.invoke(app, ["runs", "list", "--runs-dir", str(tmp_path / "runs")])
    assert " failed " in listed.output and "failed before any level was measured" in " ".join(listed.output.split())
    again = _bench_one_small_level(tmp_path / "runs")
    assert again.exit_code == 1 and len(list((tmp_path / "runs").iterdir())) == 1  # reused, not a second empty run


def test_a_server_that_fails_at_start_prints_its_log_path_and_last_lines(tmp_path: Path, monkeypatch) -> None:
    # a server that logs a few lines and exits with no known failure pattern: "read its tail below" must have a tail
    crash = (
        "; ".join(f"print('startup step {i}', flush=True)" for i in range(30))
        + "; print('odd failure: the frobnicator is missing', flush=True); raise SystemExit(3)"
    )
    _serve_with(monkeypatch, tmp_path, crash)
    result = _bench_one_small_level(tmp_path / "runs")
    assert result.exit_code == 1 and "Traceback (most recent call last)" not in result.output, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert line.startswith(
        "error: baseline: the server failed (unknown): No known failure pattern in the log: read its tail below"
    ), line
    lines = result.output.splitlines()
    head = lines[lines.index(line) + 1]
    assert head.startswith("server log ") and head.endswith(", last 20 lines:"), head
    log_path = Path(head.removeprefix("server log ").removesuffix(", last 20 lines:"))
    assert log_path.is_file() and "the frobnicator is missing" in log_path.read_text()
    tail = lines[lines.index(line) + 2 : lines.index(line) + 22]
    assert tail[-1] == "  | odd failure: the frobnicator is missing" and tail[0] == "  | startup step 11", tail
    (manifest,) = (tmp_path / "runs").glob("*/manifest.json")
    assert json.loads(manifest.read_text())["server_log"] == str(log_path)


def test_ctrl_c_of_report_ends_with_one_line_and_status_130(tmp_path: Path, write_notebook) -> None:
    import os
    import signal
    import time

    marker, cleaned = tmp_path / "cell-running", tmp_path / "cell-cleaned-up"
    nb = write_notebook(
        tmp_path / "slow.ipynb",
        parameters="x = 1",
        cells=[
            f"import os, pathlib, time\npathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
            f"try:\n    time.sleep(120)\nfinally:\n    pathlib.Path({str(cleaned)!r}).touch()"
        ],
    )
    workbench_cli = Path(sys.executable).with_name("workbench")  # the console script, as a user runs it
    proc = subprocess.Popen(
        [str(workbench_cli), "report", str(nb), "--out", str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():  # the kernel is inside the cell (its own Ctrl-C handler installed)
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert (
        "Traceback" not in err
        and "exception" not in err
        and err.strip().splitlines()[-1].startswith("interrupted (Ctrl-C)")
    ), err
    # the cell got its own KeyboardInterrupt (its finally/with blocks ran: what stops a notebook's servers)
    assert cleaned.exists()
    kernel_pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):  # and its kernel is gone
        os.kill(kernel_pid, 0)


@pytest.mark.parametrize(
    "rates, message",
    [
        (
            "4,inf",
            "error: request_rates [4.0, inf]: inf (every request at once) measures offline throughput, which has "
            "no place on the request-rate axis the summary, the crossovers and the reports compare open-loop "
            "levels on, so a sweep refuses it before launching anything. Measure it as a closed-loop level with "
            "every request in flight instead (concurrency_levels=[16], requests_per_level=16; `workbench bench "
            "--levels 16 --requests 16`), and drop inf from the rates",
        ),
        (
            "1e-9",
            "error: request_rates: 1e-09 req/s is too low: its level's 16 requests would arrive over about "
            "555,556 hours of wall time (at time scale 8), and a level may take at most 24 hours; give rates of "
            "at least 2.31e-05 req/s (engine time), or fewer requests per level",
        ),
        (
            "0.5,1e400",
            "error: --request-rates: '1e400' is too large for a number (it overflows to infinity, which is not "
            "what was typed); give numbers (requests per second) below 1e308, e.g. 0.5,2,8",
        ),
    ],
)
def test_request_rates_that_cannot_be_reported_are_refused_before_any_run(
    tmp_path: Path, monkeypatch, rates: str, message: str
) -> None:
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    result = runner.invoke(
        app, ["bench", "baseline", "--request-rates", rates, "--no-progress", "--runs-dir", str(tmp_path / "runs")]
    )
    assert _one_line_error(result, 2) == message
    assert not list((tmp_path / "runs").glob("*/manifest.json"))  # nothing was launched, no run was opened
