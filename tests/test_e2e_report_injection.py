"""Hostile text in every report is shown as text and never runs (issue 24, item 1).

Each report runs in a real papermill kernel (the simulated engine, tiny plans) with markup where
data reaches it, then opens in headless Debian chromium with the network refused: no dialog may
fire, no element that the markup would make may exist, and the text must be on the page as
written. Where the markup comes from:

- stored runs whose variant name and host carry markup: what a workbench before the name rule
  (``workbench.names``) stored from a variant file named ``<img src=x onerror=...>``; made here
  by giving measured runs those names on disk, since every entry now refuses such a name; one of
  them also as a fleet run whose unit's host name, co-tenant and failure carry markup (the
  report's *Where each unit ran*);
- ``workbench import`` of a bench_serving JSONL whose ``tag`` and ``server_info`` carry markup,
  imported under ``--variant`` (the tag as a run name is refused: ``tests/test_names.py``), brings
  its ``server_info`` into the comparability text;
- a variant file with a valid name whose description, model path and flag value carry markup;
- a GPU timing table whose recorded environment (GPU name, torch version) carries markup;
- a source tree whose folder name carries markup;
- parameters that fail (a profile, a stored study) so the error message carries markup (nbconvert
  escapes tracebacks already: these guard it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import workbench as wb
from browser import CHROMIUM, script_probe
from workbench.cli import app
from workbench.errors import ReportError
from report_page import page_problems

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium")]

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: One marker per place, so a dialog says which place let script through.
IMG = "<img src=x onerror=alert(101)>"
SCRIPT = "<script>alert(102)</script>"
LINK = "[click](javascript:alert(103))"
TAG = "<img src=x onerror=alert(104)>"
SERVER_INFO = "<svg onload=alert(105)>"
FLEET = "<img src=x onerror=alert(106)>"


def _rename_run(run: Path, into: Path, *, variant: str, host: str) -> Path:
    """A copy of ``run`` under ``into`` whose variant (manifest and every table) and host carry ``variant``
    and ``host``: the run a workbench stored before names were checked."""
    copy = into / run.name
    shutil.copytree(run, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.update(variant=variant, host=host)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    for table in copy.glob("*.parquet"):
        frame = pd.read_parquet(table)
        if "variant" in frame:
            frame["variant"] = variant
            frame.to_parquet(table)
    return copy


def _assert_safe(html: Path, *texts: str) -> None:
    seen = script_probe(html, *texts)
    assert seen["dialogs"] == [], f"script ran in {html.name}: {seen['dialogs']}"
    assert seen["injected"] == [], f"markup became elements in {html.name}: {seen['injected']}"
    assert seen["fetched"] == []
    missing = [t for t, n in seen["shown"].items() if n == 0]
    assert missing == [], f"{html.name} does not show {missing} as text"


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
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


def test_spec_vs_baseline_shows_hostile_stored_names_as_text(measured, tmp_path) -> None:
    root, (baseline, spec) = measured
    old = tmp_path / "stored-before-the-rule"
    old.mkdir()
    hostile_baseline = _rename_run(baseline, old, variant=IMG, host=f"{SCRIPT} {LINK}")
    manifest = json.loads((hostile_baseline / "manifest.json").read_text())
    manifest["fleet_units"] = [
        {
            "label": f"{IMG} repeat 1/1",
            "repeat": 0,
            "host": "10.0.0.5",
            "hostname": SCRIPT,
            "gpus": "0,1",
            "co_tenants": [LINK],
            "duration_s": 4.0,
            "error": None,
            "outcome": "failed",
            "failure_kind": "killed",
            "failure": f"BenchmarkError: {FLEET}",
        }
    ]
    (hostile_baseline / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "reports"
    result = wb.run_notebook(
        NOTEBOOKS / "spec_vs_baseline.ipynb",
        out_dir=out,
        parameters={"from_runs": [str(hostile_baseline), str(spec)], "runs_dir": str(root)},
    )
    _assert_safe(result.html, IMG, f"{SCRIPT} {LINK}", f"BenchmarkError: {FLEET}")
    assert "Where each unit ran" in result.html.read_text()


def _import(tmp_path: Path, fixture: str, variant: str, *, attention_backend: str | None) -> Path:
    """``fixture`` (a bench_serving JSONL) imported as ``variant`` by ``workbench import``, with a hostile
    tag and, when given, a recorded ``attention_backend``; the stored run's directory."""
    records = [
        json.loads(line)
        for line in (FIXTURES / "imports/bench_serving" / fixture).read_text().splitlines()
        if line.strip()
    ]
    for r in records:
        r["tag"] = TAG
        if attention_backend is not None:
            r["server_info"]["attention_backend"] = attention_backend
    jsonl = tmp_path / f"{variant}.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    runs_root = tmp_path / "imported"  # the tag as the run's name is refused (tests/test_names.py)
    before = set(runs_root.iterdir()) if runs_root.exists() else set()
    done = CliRunner().invoke(app, ["import", str(jsonl), "--variant", variant, "--runs-dir", str(runs_root)])
    assert done.exit_code == 0, done.output
    (run,) = [p for p in set(runs_root.iterdir()) - before if p.is_dir()]
    return run


def test_spec_vs_baseline_shows_imported_fields_as_text(tmp_path) -> None:
    # Both files hold the same workload (random-ids 256/32), so the study compares them; the spec
    # arm's recorded attention backend is a setting the comparability text names.
    base = _import(tmp_path, "bs059_baseline_details.jsonl", "imported-base", attention_backend="fa3")
    spec = _import(tmp_path, "bs059_eagle3.jsonl", "imported-spec", attention_backend=SERVER_INFO)
    out = tmp_path / "reports"
    result = wb.run_notebook(
        NOTEBOOKS / "spec_vs_baseline.ipynb",
        out_dir=out,
        parameters={
            "from_runs": [str(base), str(spec)],
            "baseline": "imported-base",
            "runs_dir": str(tmp_path / "imported"),
        },
    )
    _assert_safe(result.html, SERVER_INFO)


def test_variants_report_shows_a_variant_files_markup_as_text(tmp_path) -> None:
    variant = tmp_path / "hostile.toml"
    variant.write_text(
        'name = "hostile-fields"\n'
        f"description = {json.dumps(SCRIPT + ' ' + LINK)}\n"
        f"model_path = {json.dumps(IMG)}\n"
        'draft_model_path = "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"\n'
        "[flags]\n"
        f"speculative-algorithm = {json.dumps(SERVER_INFO)}\n"
    )
    out = tmp_path / "reports"
    result = wb.run_notebook(
        NOTEBOOKS / "variants.ipynb",
        out_dir=out,
        parameters={"variants": ["baseline", str(variant)], "baseline": "baseline", "sglang_version": "0.5.9"},
    )
    _assert_safe(result.html, IMG, SCRIPT, SERVER_INFO)


def test_calibration_report_shows_a_tables_recorded_environment_as_text(tmp_path) -> None:
    shipped = Path(__file__).resolve().parents[1] / "data/calibration/h200-2026-12-01/llama3-8b.json"
    table = json.loads(shipped.read_text())
    table["environment"]["gpu_name"] = IMG
    table["environment"]["torch"] = f"{SCRIPT} {LINK}"
    path = tmp_path / "hostile-table.json"
    path.write_text(json.dumps(table))
    out = tmp_path / "reports"
    result = wb.run_notebook(NOTEBOOKS / "calibration.ipynb", out_dir=out, parameters={"table": str(path)})
    _assert_safe(result.html, IMG, f"{SCRIPT} {LINK}")
    assert page_problems(result.html, result.executed) == []  # the calibration report's page, as every report's


def test_inspect_source_report_shows_a_trees_markup_path_as_text(tmp_path) -> None:
    tree = tmp_path / IMG.replace("/", "") / "sglang"
    (tree / "srt").mkdir(parents=True)
    (tree / "srt" / "utils.py").write_text("def get_alloc_len_per_decode(x):\n    return x\n")
    out = tmp_path / "reports"
    result = wb.run_notebook(
        NOTEBOOKS / "inspect_source.ipynb",
        out_dir=out,
        parameters={"sglang_versions": ["0.5.9"], "history_versions": ["0.5.9"], "tree": str(tree)},
    )
    _assert_safe(result.html, IMG)


@pytest.mark.parametrize(("notebook", "parameter"), [("what_if", "profile"), ("dynamic_disable", "stored_study")])
def test_a_failing_reports_error_message_shows_its_markup_as_text(tmp_path, notebook: str, parameter: str) -> None:
    out = tmp_path / "reports"
    with pytest.raises(ReportError):
        wb.run_notebook(NOTEBOOKS / f"{notebook}.ipynb", out_dir=out, parameters={parameter: IMG})
    _assert_safe(out / f"{notebook}.html", IMG)
