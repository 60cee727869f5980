"""A report never drops a run it was given: runs measured on another workload than the one compared are set aside
by name and reason on the report's first screen (the opening) and on the terminal of `workbench report`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app


@pytest.fixture(scope="module")
def two_workloads(tmp_path_factory):
    """A baseline run and a speculative run measured on different output lengths (8 and 16 tokens)."""
    root = tmp_path_factory.mktemp("runs")
    common = dict(concurrency_levels=[1, 2], requests_per_level=2, time_scale=8.0, runs_dir=str(root), progress=False)
    [base] = wb.benchmark_variants(["baseline"], max_new_tokens=8, **common)
    [spec] = wb.benchmark_variants(["eagle3-topk4"], max_new_tokens=16, **common)
    return root, base, spec


def test_a_run_of_another_workload_is_set_aside_by_name_in_the_opening(two_workloads) -> None:
    root, base, spec = two_workloads
    for order in ([base, spec], [spec, base]):  # whichever comes first, the baseline's workload is the one compared
        study = wb.load_study(order, baseline="baseline")
        assert [r.run_id for r in study.set_aside] == [spec.name] and study.spec_variants == []
        [aside] = study.set_aside
        assert study.workload not in aside.workloads and aside.variant == "eagle3-topk4"
        opening = study.opening()
        lead, rest = opening.split("\n\n**Not compared** — ")
        assert lead.startswith("**In short** — ") and "1 of the runs given is left out of every figure below" in rest
        assert f"run `{spec.name}` (variant `eagle3-topk4`): it measured workload" in rest
        assert "levels of different workloads (output lengths, prompts) are never compared" in rest
    same = wb.load_study([base], baseline="baseline")
    assert same.set_aside == () and "Not compared" not in same.opening()


def test_report_from_runs_says_on_the_terminal_which_run_it_set_aside(two_workloads, tmp_path: Path) -> None:
    root, base, spec = two_workloads
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        app,
        ["report", "--from-runs", base.name, spec.name, "--runs-dir", str(root), "--out", str(out)],
        env={"WORKBENCH_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.output.splitlines() if "set aside" in ln]
    assert len(lines) == 1, result.output  # one line per run set aside
    assert lines[0].startswith(f"  set aside: run {spec.name} (variant eagle3-topk4): it measured workload ")
    html = (out / "spec_vs_baseline.html").read_text()
    text = re.sub(r"<[^>]+>", "", html)
    assert text.index("Not compared") < text.index("Verdict")  # on the first screen, above the verdict
    assert spec.name in text[text.index("Not compared") : text.index("Verdict")]
