"""``workbench report --from-runs RUN...``: the spec_vs_baseline report rendered from stored runs, nothing measured.

The runs are measured once here (a tiny sweep on the simulated engine at 8x); the report then
runs in a real papermill kernel with a fresh cache folder, so a server launched by it would
leave an entry in that folder's server registry, and with the runs' files checked byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.report.cli import split_report_args
from report_page import page_problems


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    runs = wb.benchmark_variants(
        ["baseline", "eagle3-topk4"],
        concurrency_levels=[1, 2],
        requests_per_level=2,
        max_new_tokens=8,
        time_scale=8.0,
        runs_dir=str(root),
        progress=False,
    )
    return root, runs


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_report_from_runs_measures_nothing(stored, tmp_path) -> None:
    root, runs = stored
    before = _snapshot(root)
    cache, out = tmp_path / "cache", tmp_path / "reports"
    ids = [runs[0].name, runs[1].name[:-3]]  # an id and a unique prefix
    result = CliRunner().invoke(
        app,
        ["report", "--from-runs", *ids, "--runs-dir", str(root), "--out", str(out)],
        env={"WORKBENCH_CACHE_DIR": str(cache)},
    )  # --runs-dir, as bench, runs and import take
    assert result.exit_code == 0, result.output
    started = [line for line in result.output.splitlines() if line.startswith("running ") and ".ipynb" in line]
    assert len(started) == 1 and "spec_vs_baseline.ipynb" in started[0]  # only the notebook declaring from_runs
    html = (out / "spec_vs_baseline.html").read_text()
    assert page_problems(out / "spec_vs_baseline.html", out / "spec_vs_baseline.ipynb") == []
    assert "SIMULATED" in html and "FAILED" not in html
    assert "Where each unit ran" not in html  # runs from one host: no fleet section at all
    executed = json.loads((out / "spec_vs_baseline.ipynb").read_text())
    assert executed["metadata"]["papermill"]["parameters"]["from_runs"] == ids
    assert executed["metadata"]["papermill"]["parameters"]["runs_dir"] == str(root)
    text = json.dumps(executed["cells"])
    assert runs[0].name in text and runs[1].name in text
    assert not list(cache.glob("servers/*")), "a server was launched"  # the local server registry stays empty
    assert _snapshot(root) == before  # no run resumed, written or added


def test_from_runs_needs_runs_and_names_broken_ones(stored, tmp_path) -> None:
    root, runs = stored
    bad = CliRunner().invoke(app, ["report", "--from-runs", "-p", "seed", "1"])
    assert bad.exit_code == 2 and "--from-runs needs one or more run ids" in bad.output
    assert split_report_args(["--from-runs", "a", "b", "x.ipynb"]) == (["x.ipynb"], [("from_runs", '["a", "b"]')])
    with pytest.raises(ConfigError, match="No run 'nope'"):
        wb.stored_runs(["nope"], runs_dir=root)
    broken = root.parent / "broken-run"
    broken.mkdir(exist_ok=True)
    (broken / "manifest.json").write_text("{")
    with pytest.raises(ConfigError, match="cannot be reported on"):
        wb.stored_runs([runs[0], broken], runs_dir=root)
    assert wb.stored_runs(runs[0].name, runs_dir=root) == [runs[0]]


def test_from_runs_refuses_unknown_runs_and_measuring_parameters_before_a_kernel(stored, tmp_path) -> None:
    root, runs = stored
    out = tmp_path / "reports"
    unknown = CliRunner().invoke(
        app, ["report", "--from-runs", "nosuch", "-p", "runs_dir", str(root), "--out", str(out)]
    )
    assert unknown.exit_code == 2 and "No run 'nosuch'" in unknown.output
    assert "running " not in unknown.output and not out.exists()  # refused before any kernel started
    ignored = CliRunner().invoke(
        app,
        [
            "report",
            "--from-runs",
            runs[0].name,
            runs[1].name,
            "-p",
            "runs_dir",
            str(root),
            "-p",
            "repeats",
            "3",
            "--out",
            str(out),
        ],
    )
    assert ignored.exit_code == 2 and not out.exists()
    assert (
        "--from-runs renders stored runs and measures nothing, so repeats would be ignored" in ignored.output
        and "workbench bench VARIANT... --repeats 3" in ignored.output
    )


def test_a_shared_report_prints_no_absolute_path_of_the_machine(stored, tmp_path) -> None:
    import shutil

    from workbench.paths import PACKAGE_ROOT

    root, runs = stored
    home = tmp_path / "home"
    shutil.copytree(root, home / "runs")
    out = home / "reports"
    result = CliRunner().invoke(
        app,
        ["report", "--from-runs", runs[0].name, runs[1].name, "-p", "runs_dir", "~/runs", "--out", str(out)],
        env={"HOME": str(home), "WORKBENCH_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.output
    html = (out / "spec_vs_baseline.html").read_text()
    assert "~/reports/spec_vs_baseline" in html  # where the charts are, as the reader's own machine would say it
    for private in (str(home), str(tmp_path), str(PACKAGE_ROOT)):
        assert private not in html, f"{private} is printed in the report"


# -- request-rate runs: a real public bench_serving file and the workbench's own open-loop sweep --------------

PUBLIC = Path(__file__).parent / "fixtures" / "imports" / "bench_serving" / "public_h200_llama70b_online.jsonl"


def _render(run_ids: list[str], root: Path, out: Path, *extra: str) -> tuple[str, str]:
    result = CliRunner().invoke(
        app, ["report", "--from-runs", *run_ids, "-p", "runs_dir", str(root), *extra, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    html = (out / "spec_vs_baseline.html").read_text()
    assert "FAILED" not in html and "Traceback" not in html
    return html, json.dumps(json.loads((out / "spec_vs_baseline.ipynb").read_text())["cells"], ensure_ascii=False)


def test_report_from_a_request_rate_file_of_two_workloads(tmp_path) -> None:
    """sglang.bench_serving at 1-16 req/s with no concurrency cap, random and ShareGPT prompts in one file
    (datacrunch-research/h200-benchmarks): it used to stop with ``cannot convert float NaN to integer``."""
    root = tmp_path / "runs"
    run = wb.import_results(PUBLIC, runs_dir=root, engine="sglang").runs["run_id"].iloc[0]
    html, cells = _render([run], root, tmp_path / "reports")
    assert "at request rate 1–16 req/s" in cells and "workload: dataset=random in=1024 out=1024" in cells
    assert "Request rate (req/s, open loop)" in html
    _, shared = _render([run], root, tmp_path / "sharegpt", "-p", "workload", "dataset=sharegpt backend=sglang")
    assert "at request rate 4–8 req/s" in shared and "workload: dataset=sharegpt backend=sglang" in shared


def test_report_from_the_workbenchs_own_open_loop_sweep(tmp_path) -> None:
    root = tmp_path / "runs"
    runs = wb.benchmark_variants(
        ["baseline", "eagle3-topk4"],
        request_rates=[2.0, 8.0],
        requests_per_level=4,
        max_new_tokens=8,
        time_scale=8.0,
        runs_dir=str(root),
        progress=False,
    )
    study = wb.load_study(runs)
    assert study.load == "request_rate_req_s" and list(study.ratios("eagle3-topk4")["request_rate_req_s"]) == [2.0, 8.0]
    html, cells = _render([r.name for r in runs], root, tmp_path / "reports")
    assert "SIMULATED" in html and "eagle3-topk4** against baseline" in cells and "request rate 2" in cells
    assert "Request rate (req/s, open loop)" in html


def test_report_runs_dir_is_checked_like_the_other_commands_before_a_kernel(stored, tmp_path) -> None:
    root, runs = stored
    out = tmp_path / "reports"
    unknown = CliRunner().invoke(app, ["report", "--from-runs", "nosuch", "--runs-dir", str(root), "--out", str(out)])
    assert unknown.exit_code == 2 and f"No run 'nosuch' under {root}" in unknown.output
    both = CliRunner().invoke(
        app,
        [
            "report",
            "--from-runs",
            runs[0].name,
            "--runs-dir",
            str(root),
            "-p",
            "runs_dir",
            str(tmp_path),
            "--out",
            str(out),
        ],
    )
    assert both.exit_code == 2 and "name different runs folders" in both.output
    assert "running " not in unknown.output + both.output and not out.exists()
