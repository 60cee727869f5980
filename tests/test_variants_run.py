"""End to end: a patched variant on the simulated engine, ``workbench variants check``, and the variants notebook.

The patched variant runs locally on the real sim server process (tiny sweep, the
simulated clock at 20x): its patch text and sha256 must be in the run manifest,
its sim_policy must stand in, labelled, in the manifest and in every stored row.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path

import nbformat
from typer.testing import CliRunner

from workbench.cli import app
from workbench import benchmark_variant, load_study
from browser import CHROMIUM, first_screen, on_first_screen
from workbench.paths import PACKAGE_ROOT
from workbench.report import run_notebook
from workbench.variants._variant import load_variant
from workbench.store import load_run
from report_page import page_problems

PATCH = PACKAGE_ROOT / "data" / "patches" / "eagle-spec-off-above.patch"
NOTEBOOK = PACKAGE_ROOT / "notebooks" / "variants.ipynb"
runner = CliRunner()


def test_patched_variant_runs_on_the_sim_with_its_patch_in_the_manifest(tmp_path: Path) -> None:
    run_dir = benchmark_variant("eagle3-topk4-off-above-8", concurrency_levels=[1], requests_per_level=2,
                                max_new_tokens=16, time_scale=20, runs_dir=tmp_path, progress=False)  # fmt: skip
    run = load_run(run_dir)
    m = run.manifest
    assert m["status"] == "complete" and m["simulated"] is True and m["sglang_version"] == "0.5.9"
    prov = m["provenance"]
    patch = prov["patches"][0]
    assert patch["text"] == PATCH.read_text()
    assert patch["sha256"] == hashlib.sha256(PATCH.read_bytes()).hexdigest()
    assert patch["applied"] is False and "runs no SGLang code" in patch["note"]
    assert prov["engine_runs_sglang_code"] is False and prov["base"] == "sglang==0.5.9"
    assert "--sim-spec-off-above" in prov["launch_command"] and prov["launch_env"] == {"SGLANG_SPEC_OFF_ABOVE": "8"}
    assert m["sim_stand_in"].startswith("SIMULATOR STAND-IN for eagle-spec-off-above.patch")
    assert m["server_info"]["simulation"]["spec_off_above"] == 8
    assert m["effective_settings"]["speculative_eagle_topk"] == 4 and m["effective_settings"]["spec_version"] == "v1"
    assert not [f for f in m["effective_findings"] if f["severity"] != "info"]
    assert any(f["check"] == "stand-in" for f in m["effective_findings"])
    assert m["variant_definition"]["sim_policy"] == {"spec_off_above": 8}
    assert (run.requests["sim_stand_in"] == m["sim_stand_in"]).all() and len(run.requests) == 2
    json.dumps(m)  # the manifest stays plain JSON
    study = load_study([run_dir], baseline="eagle3-topk4-off-above-8")
    assert (study.levels["sim_stand_in"] == m["sim_stand_in"]).all() and "STAND-IN" in study.subtitle


def test_cli_check_exit_status_and_lines() -> None:
    ok = runner.invoke(app, ["variants", "check", "baseline", "eagle3-topk4"])
    assert ok.exit_code == 0, ok.output
    assert "eagle3-topk4 vs baseline  --max-running-requests:" in ok.output and "0 error(s)" in ok.output
    bad = runner.invoke(app, ["variants", "check", "adaptive", "--sglang", "0.5.9"])
    assert bad.exit_code == 1
    line = next(ln for ln in bad.output.splitlines() if ln.startswith("error"))
    assert "adaptive  --speculative-adaptive:" in line and "0.5.12" in line and "Fix:" in line
    as_json = runner.invoke(app, ["variants", "check", "adaptive", "--sglang", "0.5.9", "--json"])
    found = json.loads(as_json.output)
    assert as_json.exit_code == 1 and {"severity", "variant", "flag", "message", "fix", "check"} <= set(found[0])
    both = runner.invoke(app, ["variants", "check", "--host", "local", "--sglang", "0.5.9"])
    assert both.exit_code == 2 and "not both" in both.output


def test_notebook_is_committed_without_outputs_and_runs(tmp_path: Path) -> None:
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert "parameters" in code[0].metadata.get("tags", [])
    result = run_notebook(NOTEBOOK, out_dir=tmp_path, parameters={"variants": ["eagle3-topk4", "adaptive",
                                                                              "eagle3-topk4-off-above-8"]})  # fmt: skip
    page = result.html.read_text()
    assert page_problems(result.html, result.executed) == []
    # sglang_version None (the default): each variant against its own release, as the CLI does
    assert "0 error(s)" in page and " note(s)" in page and "info(s)" not in page
    assert "checked against sglang==0.5.12." in page and "checked against sglang==0.5.9." in page
    assert "EAGLEWorker.forward_batch_generation" in page and "SGLANG_SPEC_OFF_ABOVE" in page
    assert "applies cleanly to sglang==0.5.9" in page
    assert "<code></code>" not in page  # findings without a flag have no empty pill
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert re.search(r"eagle3-topk4\s.*?EAGLE3\s+2\s+4\s+16\s", text)  # ints, not 2.0 4.0 16.0
    label = load_variant("eagle3-topk4-off-above-8").sim_stand_in()
    assert label in text  # the whole stand-in label, not cut at 50 characters
    if CHROMIUM.exists():  # the answer on the first laptop screen
        seen = first_screen(result.html, tmp_path / "first.png", "Verdict", "Would start")
        assert on_first_screen(seen["Verdict"]) and on_first_screen(seen["Would start"]) and not seen["fetched"]
    pinned = run_notebook(NOTEBOOK, out_dir=tmp_path / "pinned", parameters={"variants": ["adaptive"],
                                                                             "sglang_version": "0.5.9"})  # fmt: skip
    assert "1 error(s)" in pinned.html.read_text()  # a version given: every variant against it
